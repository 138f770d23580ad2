"""The fetch watermark: the latest ``lastModifiedDate`` a clean walk of a docket saw.

One value type owns the cursor, as dlt's ``Incremental`` does: parsing the API's time,
comparing two of them, keeping the later one, capping at the walk's end, rendering the
``filter[lastModifiedDate][ge]`` value the API takes, and the string the store keeps.

Three facts shape it (DESIGN.md, "regulations.gov facts the client must respect"):

* The API answers in UTC, but the lastModifiedDate filter takes US Eastern wall time,
  ``YYYY-MM-DD HH:MM:SS``, whole seconds.
* Times are compared as instants, never as strings: ``...T17:58:29Z`` and
  ``...T13:58:29-04:00`` are the same moment.
* ``Docket.pull_watermark`` stores the API's own string, unchanged, so ``str()`` gives back
  exactly what was parsed and stores written before this type read the same.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta

from pipeline.clock import EASTERN  # the one zone, beside the one day helper (re-exported)

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


@functools.total_ordering
@dataclass(frozen=True, eq=False)
class Watermark:
    """An API time as the fetch cursor: ``Watermark("2025-09-11T17:58:29Z")``.

    Equality, ordering and hashing go by the instant; ``str()`` is the text it was made
    from. ValueError when ``text`` is not an API time.
    """

    text: str
    instant: datetime = field(init=False, repr=False)

    def __post_init__(self) -> None:
        object.__setattr__(self, "instant", parse_api_time(self.text))

    @classmethod
    def of(cls, value: Watermark | str) -> Watermark:
        """``value`` itself, or the watermark its stored (API time) string names."""
        return value if isinstance(value, Watermark) else cls(value)

    @classmethod
    def at(cls, instant: datetime) -> Watermark:
        """The watermark at an aware datetime, to the second, written as the API writes times."""
        return cls(instant.astimezone(UTC).strftime(API_TIME_FORMAT))

    def __str__(self) -> str:
        return self.text

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, Watermark):
            return NotImplemented
        return self.instant == other.instant

    def __lt__(self, other: Watermark) -> bool:
        if not isinstance(other, Watermark):
            return NotImplemented
        return self.instant < other.instant

    def __hash__(self) -> int:
        return hash(self.instant)

    def later(self, other: Watermark | None) -> Watermark:
        """The later of the two; on a tie this one (the stored string does not churn)."""
        return other if other is not None and other > self else self

    def capped(self, now: datetime) -> Watermark:
        """Not after ``now`` (the walk's end): one record dated in the future (a clock error
        upstream) must not push the next walk's start past changes that have not happened yet."""
        return self if self.instant <= now else Watermark.at(now)

    def eastern_filter(self) -> str:
        """The US Eastern ``YYYY-MM-DD HH:MM:SS`` that ``filter[lastModifiedDate][ge]`` takes.

        When DST ends, the wall times 01:00:00-01:59:59 happen twice and the string alone
        does not say which instant is meant; we cannot know which one the server picks. For
        an instant in the *first* (EDT) occurrence we return 00:59:59, the last wall second
        before the repeated hour: under either reading it is at or before the instant, so a
        ``ge`` filter built from it can only re-fetch records (absorbed by upserts), never
        skip them. This keeps the mapping monotonic: a later instant never gives a smaller
        string.
        """
        local = self.instant.replace(microsecond=0).astimezone(EASTERN)
        if _is_first_of_repeated_hour(local):
            # Aware datetimes with the same tzinfo subtract in wall-clock terms: 01:mm:ss -> 00:59:59.
            local = local.replace(minute=0, second=0) - timedelta(seconds=1)
        return local.strftime(EASTERN_FILTER_FORMAT)


def to_eastern_filter(api_time: str) -> str:
    """The Eastern filter value of one API time (``Watermark(api_time).eastern_filter()``)."""
    return Watermark(api_time).eastern_filter()


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
