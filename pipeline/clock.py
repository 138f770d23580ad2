"""Time as the store writes it: ISO-8601 UTC text with microseconds and a trailing Z."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from datetime import UTC, datetime, timedelta

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


def window_start(now: datetime, seconds: int) -> str:
    """The start of the fixed window holding ``now``: cron runs in one window share it."""
    epoch = int(now.timestamp())
    return iso(datetime.fromtimestamp(epoch - epoch % seconds, UTC))
