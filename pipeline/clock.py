"""Time as the store writes it: ISO-8601 UTC text with microseconds and a trailing Z; and
the one way a stored instant becomes the date people read: its US Eastern calendar date.

regulations.gov sets its deadlines and days in Washington: a ``commentEndDate`` of
``2025-09-23T03:59:59Z`` is the September 22 deadline, and a comment posted at 02:00 UTC was
posted the day before. An instant shown to a person is ``eastern_instant``: Eastern wall
time with the zone named (EST/EDT). Wherever a date is shown (``docketeer dockets``, ``explain``, search
results, the web pages) or counted (the seal's quiet period) it is ``eastern_day`` of the
instant; the instant itself stays what is stored and what JSON carries."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, date, datetime, time, timedelta
from zoneinfo import ZoneInfo

EASTERN = ZoneInfo("America/New_York")

# Tests move the whole pipeline's clock forward (a retry comes due, a quiet period ends)
# without sleeping; production never sets it.
_shift = timedelta(0)


def utcnow() -> datetime:
    return datetime.now(UTC) + _shift


@contextmanager
def shifted(delta: timedelta) -> Iterator[None]:
    """Every ``utcnow()`` in this process runs ``delta`` ahead while the block runs."""
    global _shift
    before, _shift = _shift, _shift + delta
    try:
        yield
    finally:
        _shift = before


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def eastern_day(moment: datetime | str) -> date:
    """The US Eastern calendar date of an instant (an aware datetime, or an ISO string; a
    naive one is UTC, as every time docketeer stores is)."""
    if isinstance(moment, str):
        moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    return moment.astimezone(EASTERN).date()


def eastern_date(stamp: str | None) -> str:
    """A stored instant as the Eastern date people read ('YYYY-MM-DD'); '' when absent or
    unreadable. A value that is already a date (a comment period's end) is that date."""
    if not stamp:
        return ""
    try:
        return (eastern_day(stamp) if "T" in stamp else date.fromisoformat(stamp[:10])).isoformat()
    except (ValueError, OverflowError):  # OverflowError: year 1's instant has no Eastern date
        return ""


def eastern_instant(moment: datetime | str | None, *, seconds: bool = False) -> str:
    """A stored instant as people read it: Washington's wall clock to the minute with the
    zone named, '2026-12-02 00:12 EST' ('EDT' in summer; to the second with ``seconds``, for
    a cursor such as fetch's watermark); '' when absent or unreadable. Machine-readable output
    (JSON, exported files) keeps the stored UTC instant instead."""
    if not moment:
        return ""
    try:
        if isinstance(moment, str):
            moment = datetime.fromisoformat(moment.replace("Z", "+00:00"))
    except ValueError:
        return ""
    if moment.tzinfo is None:
        moment = moment.replace(tzinfo=UTC)
    try:
        return moment.astimezone(EASTERN).strftime("%Y-%m-%d %H:%M:%S %Z" if seconds else "%Y-%m-%d %H:%M %Z")
    except OverflowError:  # a stored instant at the edge of the calendar (year 1)
        return ""


def eastern_day_bounds(first: str | None, last: str | None) -> tuple[str | None, str | None]:
    """Eastern calendar days ``first``..``last`` (YYYY-MM-DD, inclusive; either may be None:
    open) as the UTC instants a stored instant is compared with: (from, inclusive; before,
    exclusive). People give the dates they read: September 22 in Washington runs from
    ``2025-09-22T04:00:00Z`` to ``2025-09-23T04:00:00Z`` (EDT), January 15 from 05:00Z (EST)."""
    def midnight(day: str, after: int) -> str | None:
        try:
            start = datetime.combine(date.fromisoformat(day) + timedelta(days=after), time(), EASTERN)
            moment = start.astimezone(UTC)
        except OverflowError:  # the day after 9999-12-31: nothing stored is that late
            return None
        # As instants are stored, the year in four digits (strftime leaves 999 unpadded).
        return f"{moment.year:04d}-{moment:%m-%dT%H:%M:%SZ}"

    return (midnight(first, 0) if first else None, midnight(last, 1) if last else None)


def window_start(now: datetime, seconds: int) -> str:
    """The start of the fixed window holding ``now``: cron runs in one window share it."""
    epoch = int(now.timestamp())
    return iso(datetime.fromtimestamp(epoch - epoch % seconds, UTC))
