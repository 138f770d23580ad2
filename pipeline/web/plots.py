"""Plots drawn on the server as SVG: no script, no chart library, no CDN (works offline).

Every label passes through ``markupsafe.escape``; the numbers are formatted here. The SVG
is returned as ``Markup`` so the template embeds it as it is.
"""

from __future__ import annotations

from datetime import date, timedelta

from markupsafe import Markup, escape

WIDTH, HEIGHT, MARGIN = 720, 180, 28
# A plot never has more bars than this, whatever span its dates cover: a docket whose
# comments run over years is drawn by week, month or year (a stored date far in the past
# would otherwise be one bar per day since then: hundreds of megabytes of SVG).
MAX_BARS = 400


def daily_series(per_day: dict[str, int]) -> list[tuple[str, int]]:
    """Every day from the first to the last with its count (0 on quiet days), in order."""
    return dated_series(per_day)[1]


def dated_series(per_day: dict[str, int]) -> tuple[str, list[tuple[str, int]]]:
    """(unit, points): the counts per day ('YYYY-MM-DD'), or per week (named by its Monday),
    month ('YYYY-MM'), year ('YYYY') or span of years ('YYYY-YYYY'), the first of these that
    fits in MAX_BARS; quiet buckets are 0. Work and size are bounded by MAX_BARS and the
    number of days given, never by the span between them."""
    if not per_day:
        return "day", []
    days = {date.fromisoformat(d): n for d, n in per_day.items()}
    first, last = min(days), max(days)
    if (last - first).days < MAX_BARS:
        return "day", _filled(days, first, last, lambda d: d, lambda d: d + timedelta(days=1), date.isoformat)
    monday = first - timedelta(days=first.weekday())
    if (last - monday).days // 7 < MAX_BARS:
        return "week", _filled(days, monday, last, lambda d: d - timedelta(days=d.weekday()),
                               lambda d: d + timedelta(days=7), date.isoformat)
    months = (last.year - first.year) * 12 + last.month - first.month
    if months < MAX_BARS:
        return "month", _filled(days, first.replace(day=1), last, lambda d: d.replace(day=1), _next_month,
                                lambda d: f"{d.year:04d}-{d.month:02d}")
    years = -(-(last.year - first.year + 1) // MAX_BARS)  # years per bar, rounded up

    def start(d: date) -> date:
        return date(first.year + (d.year - first.year) // years * years, 1, 1)

    return ("year" if years == 1 else f"{years} years"), _filled(
        days, start(first), last, start, lambda d: date(min(d.year + years, 9999), 1, 1)
        if d.year + years <= 9999 else date.max,
        lambda d: f"{d.year:04d}" if years == 1 else f"{d.year:04d}-{min(d.year + years - 1, 9999):04d}")


def _filled(days: dict[date, int], start: date, last: date, bucket, following, name) -> list[tuple[str, int]]:
    """Each bucket from ``start`` to the one holding ``last`` with the sum of its days."""
    sums: dict[date, int] = {}
    for day, n in days.items():
        sums[bucket(day)] = sums.get(bucket(day), 0) + n
    points, current = [], start
    while current <= last and len(points) < MAX_BARS:
        points.append((name(current), sums.get(current, 0)))
        if current == date.max:
            break
        current = following(current)
    return points


def _next_month(d: date) -> date:
    return date(d.year + d.month // 12, d.month % 12 + 1, 1) if (d.year, d.month) != (9999, 12) else date.max


def bar_chart(points: list[tuple[str, int]], *, label: str) -> Markup:
    """One bar per point (at most MAX_BARS: the last ones are left out), its label and value
    in a tooltip; the axis shows the extremes."""
    if not points:
        return Markup("<p class='empty'>nothing to plot</p>")
    points = points[:MAX_BARS]
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
