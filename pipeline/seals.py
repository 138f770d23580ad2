"""When a docket seals: a pure rule, so its boundaries are tested without a database."""

from __future__ import annotations

from dataclasses import dataclass
from datetime import date, timedelta


@dataclass(frozen=True)
class SealFacts:
    """What the rule needs to know about a docket, all already in the state DB."""

    comment_end_date: str | None  # YYYY-MM-DD
    last_pull_at: str | None  # ISO UTC of the last *clean* pull
    last_pull_new: int | None
    sealed_at: str | None
    waiting: int = 0  # items waiting to retry, in any stage


def should_seal(facts: SealFacts, today: date, quiet_days: int) -> bool:
    """Seal once the comment period closed ``quiet_days`` ago and a clean pull since found nothing.

    The last clean pull must itself have happened after the quiet period ended: a pull made
    while the docket could still change proves nothing about what came after it. Nor does a
    docket seal while an item of it waits to retry: a file the mirror does not have yet may
    still come (past the retry horizon the item is failed for good and stops waiting).
    """
    if facts.sealed_at or not facts.comment_end_date or facts.last_pull_at is None:
        return False
    if facts.waiting:
        return False
    quiet_end = date.fromisoformat(facts.comment_end_date[:10]) + timedelta(days=quiet_days)
    pulled_on = date.fromisoformat(facts.last_pull_at[:10])
    return today >= quiet_end and pulled_on >= quiet_end and facts.last_pull_new == 0
