"""Time as the store writes it: ISO-8601 UTC text with microseconds and a trailing Z."""

from __future__ import annotations

from datetime import UTC, datetime


def utcnow() -> datetime:
    return datetime.now(UTC)


def iso(moment: datetime) -> str:
    return moment.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


def parse_iso(text: str) -> datetime:
    return datetime.fromisoformat(text.replace("Z", "+00:00")).astimezone(UTC)


def window_start(now: datetime, seconds: int) -> str:
    """The start of the fixed window holding ``now``: cron runs in one window share it."""
    epoch = int(now.timestamp())
    return iso(datetime.fromtimestamp(epoch - epoch % seconds, UTC))
