"""When a docket seals: a pure rule, so its boundaries are tested without a database.

The rule counts in US Eastern calendar days, the days regulations.gov's deadlines are set
in: the comment period's end is stored as its Eastern date, and "today" and the day of the
last pull are Eastern too. At 02:00 UTC it is still the previous day in Washington, so a
UTC "today" would seal a docket (and stop fetching it) a day early.
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, datetime, timedelta

from pipeline.clock import eastern_day


@dataclass(frozen=True)
class SealFacts:
    """What the rule needs to know about a docket, all already in the state DB."""

    comment_end_date: str | None  # YYYY-MM-DD, US Eastern
    last_pull_at: str | None  # ISO UTC of the last *clean* pull
    last_pull_new: int | None
    sealed_at: str | None
    waiting: int = 0  # items waiting to retry, in any stage


def should_seal(facts: SealFacts, now: datetime | date, quiet_days: int) -> bool:
    """Seal once the comment period closed ``quiet_days`` ago and a clean pull since found nothing.

    ``now`` is the current instant (its Eastern date is "today"); a plain ``date`` is taken
    as the Eastern date already. The last clean pull must itself have happened (on an
    Eastern day) after the quiet period ended: a pull made while the docket could still
    change proves nothing about what came after it. Nor does a docket seal while an item of
    it waits to retry: a file the mirror does not have yet may still come (past the retry
    horizon the item is failed for good and stops waiting).
    """
    if facts.sealed_at or not facts.comment_end_date or facts.last_pull_at is None:
        return False
    if facts.waiting:
        return False
    today = eastern_day(now) if isinstance(now, datetime) else now
    quiet_end = _deadline_day(facts.comment_end_date) + timedelta(days=quiet_days)
    pulled_on = eastern_day(facts.last_pull_at)
    return today >= quiet_end and pulled_on >= quiet_end and facts.last_pull_new == 0


def _deadline_day(comment_end: str) -> date:
    # A store written before comment periods were kept as Eastern dates may hold the
    # instant itself (2025-09-23T03:59:59Z): its day is the Eastern one, September 22.
    return eastern_day(comment_end) if "T" in comment_end else date.fromisoformat(comment_end[:10])
