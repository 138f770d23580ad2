"""Plots drawn on the server as SVG: no script, no chart library, no CDN (works offline).

Every label passes through ``markupsafe.escape``; the numbers are formatted here. The SVG
is returned as ``Markup`` so the template embeds it as it is.
"""

from __future__ import annotations

from datetime import date, timedelta

from markupsafe import Markup, escape

WIDTH, HEIGHT, MARGIN = 720, 180, 28


def daily_series(per_day: dict[str, int]) -> list[tuple[str, int]]:
    """Every day from the first to the last with its count (0 on quiet days), in order."""
    if not per_day:
        return []
    first, last = date.fromisoformat(min(per_day)), date.fromisoformat(max(per_day))
    days = (first + timedelta(days=n) for n in range((last - first).days + 1))
    return [(d.isoformat(), per_day.get(d.isoformat(), 0)) for d in days]


def bar_chart(points: list[tuple[str, int]], *, label: str) -> Markup:
    """One bar per point, its label and value in a tooltip; the axis shows the extremes."""
    if not points:
        return Markup("<p class='empty'>nothing to plot</p>")
    top = max(value for _, value in points) or 1
    step = (WIDTH - 2 * MARGIN) / len(points)
    bars = "".join(_bar(n, name, value, step, top) for n, (name, value) in enumerate(points))
    return Markup(
        f'<svg class="chart" role="img" viewBox="0 0 {WIDTH} {HEIGHT}" width="100%" '
        f'xmlns="http://www.w3.org/2000/svg" aria-label="{escape(label)}">'
        f"<title>{escape(label)}</title>{bars}"
        f'<text x="{MARGIN}" y="{HEIGHT - 6}" class="axis">{escape(points[0][0])}</text>'
        f'<text x="{WIDTH - MARGIN}" y="{HEIGHT - 6}" class="axis" text-anchor="end">{escape(points[-1][0])}</text>'
        f'<text x="{MARGIN - 4}" y="{MARGIN - 10}" class="axis">{top:,} max</text></svg>'
    )


def _bar(n: int, name: str, value: int, step: float, top: int) -> str:
    height = (HEIGHT - 2 * MARGIN) * value / top
    x, y = MARGIN + n * step, HEIGHT - MARGIN - height
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(step - 1, 1):.1f}" height="{height:.1f}">'
            f"<title>{escape(name)}: {value:,}</title></rect>")


SPARK_WIDTH, SPARK_HEIGHT = 120, 22


def sparkline(points: list[tuple[str, int]], *, label: str) -> Markup:
    """A small line of the per-day counts (the home page's one per docket): its first and last
    day and its peak in the tooltip."""
    if not points:
        return Markup("<span class='empty'>—</span>")
    top = max(value for _, value in points) or 1
    step = SPARK_WIDTH / max(len(points) - 1, 1)
    coords = " ".join(f"{n * step:.1f},{SPARK_HEIGHT - 1 - (SPARK_HEIGHT - 2) * value / top:.1f}"
                      for n, (_, value) in enumerate(points))
    if len(points) == 1:
        coords += f" {SPARK_WIDTH:.1f},{coords.split(',')[1]}"
    title = f"{label}: {points[0][0]} to {points[-1][0]}, at most {top:,} a day"
    return Markup(
        f'<svg class="spark" role="img" viewBox="0 0 {SPARK_WIDTH} {SPARK_HEIGHT}" width="{SPARK_WIDTH}" '
        f'height="{SPARK_HEIGHT}" xmlns="http://www.w3.org/2000/svg" aria-label="{escape(title)}">'
        f'<title>{escape(title)}</title><polyline points="{coords}"/></svg>')
