"""regulations.gov's times: answers in UTC, the ``lastModifiedDate`` filter in US Eastern.

Facts of the API (DESIGN.md, "regulations.gov facts the client must respect"), shared by
the records that read its times and the client that builds its filters; the fetch stage's
cursor (``pipeline.fetch.watermark.Watermark``) is made of them.

* The API answers in UTC, but the lastModifiedDate filter takes US Eastern wall time,
  ``YYYY-MM-DD HH:MM:SS``, whole seconds.
* Times are compared as instants, never as strings: ``...T17:58:29Z`` and
  ``...T13:58:29-04:00`` are the same moment.
"""

from __future__ import annotations

from datetime import UTC, datetime, timedelta

from pipeline.clock import EASTERN

EASTERN_FILTER_FORMAT = "%Y-%m-%d %H:%M:%S"
API_TIME_FORMAT = "%Y-%m-%dT%H:%M:%SZ"


def parse_api_time(s: str) -> datetime:
    """Parse an API timestamp (``2025-09-11T17:58:29Z``, UTC) into an aware UTC datetime."""
    if not isinstance(s, str) or not s:
        raise ValueError(f"not an API timestamp: {s!r}")
    parsed = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        # The API always answers in UTC; a bare value is taken as UTC, never as local time.
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def eastern_filter(instant: datetime) -> str:
    """The US Eastern ``YYYY-MM-DD HH:MM:SS`` that ``filter[lastModifiedDate][ge]`` takes.

    When DST ends, the wall times 01:00:00-01:59:59 happen twice and the string alone
    does not say which instant is meant; we cannot know which one the server picks. For
    an instant in the *first* (EDT) occurrence we return 00:59:59, the last wall second
    before the repeated hour: under either reading it is at or before the instant, so a
    ``ge`` filter built from it can only re-fetch records (absorbed by upserts), never
    skip them. This keeps the mapping monotonic: a later instant never gives a smaller
    string.
    """
    local = instant.replace(microsecond=0).astimezone(EASTERN)
    if _is_first_of_repeated_hour(local):
        # Aware datetimes with the same tzinfo subtract in wall-clock terms: 01:mm:ss -> 00:59:59.
        local = local.replace(minute=0, second=0) - timedelta(seconds=1)
    return local.strftime(EASTERN_FILTER_FORMAT)


def to_eastern_filter(api_time: str) -> str:
    """The Eastern filter value of one API time."""
    return eastern_filter(parse_api_time(api_time))


def next_filter_second(eastern: str) -> str:
    """The Eastern filter string one wall second later, jumping over the spring-forward gap.

    The list walk steps here when more than one query's worth of records share one filter
    value: the filter's own scale (Eastern wall seconds) has no finer step.
    """
    wall = datetime.strptime(eastern, EASTERN_FILTER_FORMAT) + timedelta(seconds=1)
    # A wall time in the gap (02:00-02:59 on spring-forward day) does not exist; the round
    # trip through UTC moves it to the first real second after the gap (03:00:00).
    real = wall.replace(tzinfo=EASTERN).astimezone(UTC).astimezone(EASTERN)
    return max(real.replace(tzinfo=None), wall).strftime(EASTERN_FILTER_FORMAT)


def _is_first_of_repeated_hour(local: datetime) -> bool:
    if local.fold:
        return False
    later = local.replace(fold=1)
    return later.utcoffset() != local.utcoffset()
