"""The fetch watermark: the latest ``lastModifiedDate`` a clean walk of a docket saw.

One value type owns the cursor, as dlt's ``Incremental`` does: comparing two API times,
keeping the later one, capping at the walk's end, rendering the
``filter[lastModifiedDate][ge]`` value the API takes, and the string the store keeps. The
API's own time facts (UTC answers, an Eastern filter) are ``pipeline.sources.api_time``'s.

* Times are compared as instants, never as strings: ``...T17:58:29Z`` and
  ``...T13:58:29-04:00`` are the same moment.
* ``Docket.pull_watermark`` stores the API's own string, unchanged, so ``str()`` gives back
  exactly what was parsed and stores written before this type read the same.
"""

from __future__ import annotations

import functools
from dataclasses import dataclass, field
from datetime import UTC, datetime

from pipeline.sources.api_time import API_TIME_FORMAT, eastern_filter, parse_api_time


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
        """The US Eastern ``YYYY-MM-DD HH:MM:SS`` that ``filter[lastModifiedDate][ge]`` takes
        (``pipeline.sources.api_time.eastern_filter``: at or before the instant, even in the
        repeated hour when DST ends)."""
        return eastern_filter(self.instant)
