"""The failure taxonomy, the retry policy, JSON limits, and the rules that use them (no servers)."""

from __future__ import annotations

import errno
from datetime import UTC, datetime, timedelta

import peewee
import psycopg2
import pytest

from pipeline.engine.completion import Completion, is_done
from pipeline.engine.markers import Probe
from pipeline.errors import (
    BadRecord,
    BadResponse,
    BlobSizeMismatch,
    BlobTooLarge,
    ConfigError,
    Gone,
    InputTooLarge,
    InvalidIdentifier,
    KeyRejected,
    NotMirroredYet,
    PermanentHTTPError,
    QuotaSpent,
    TransientHTTPError,
)
from pipeline.failures import PERMANENT, RETRY, RUN_STOPPING, TRANSIENT, RetryPolicy, classify
from pipeline.seals import SealFacts, should_seal
from pipeline.sources.payloads import parse_json_object
from pipeline.sources.regulations_gov import TooLarge

T0 = datetime(2026, 12, 1, 12, 0, tzinfo=UTC)


@pytest.mark.parametrize(("exc", "kind", "state"), [
    (PermanentHTTPError(404, "not found"), PERMANENT, "gone"),
    (PermanentHTTPError(410, "gone"), PERMANENT, "gone"),
    (Gone("marked unavailable in the mirror"), PERMANENT, "gone"),
    (PermanentHTTPError(400, "bad id"), PERMANENT, "failed"),
    (InvalidIdentifier("unsafe id"), PERMANENT, "failed"),
    (BadRecord("data.attributes is a str"), PERMANENT, "failed"),
    (TooLarge(10, 5), PERMANENT, "too_large"),
    (BlobTooLarge("too big"), PERMANENT, "too_large"),
    (InputTooLarge("JSON too big"), PERMANENT, "too_large"),
    (RecursionError("deep"), PERMANENT, "failed"),
    (OverflowError("Python int too large to convert to SQLite INTEGER"), PERMANENT, "failed"),
    (AttributeError("'str' object has no attribute 'get'"), PERMANENT, "failed"),
    (TransientHTTPError("HTTP 503"), TRANSIENT, RETRY),
    (BadResponse("got an HTML page instead of JSON"), TRANSIENT, RETRY),
    (NotMirroredYet("not in the mirror yet"), TRANSIENT, RETRY),
    (BlobSizeMismatch("truncated"), TRANSIENT, RETRY),
    (TimeoutError("timed out"), TRANSIENT, RETRY),
    (KeyRejected(403, "the key was rejected"), RUN_STOPPING, ""),
    (QuotaSpent("rate limit spent"), RUN_STOPPING, ""),
    (ConfigError("no key"), RUN_STOPPING, ""),
    (OSError(errno.ENOSPC, "No space left on device"), RUN_STOPPING, ""),
    (peewee.OperationalError("unable to open database file"), RUN_STOPPING, ""),
    (psycopg2.OperationalError("connection refused"), RUN_STOPPING, ""),
])
def test_every_failure_has_one_kind(exc, kind, state):
    failure = classify(exc)
    assert (failure.kind, failure.state) == (kind, state)
    assert failure.reason and "\n" not in failure.reason and len(failure.reason) <= 500


def test_unexpected_exceptions_are_named_by_their_class():
    assert classify(RecursionError("maximum recursion depth exceeded")).reason.startswith("RecursionError: ")
    assert classify(BadRecord("x" * 2000)).reason == "x" * 500


def test_a_key_rejection_is_still_an_http_error_with_its_status():
    exc = KeyRejected(401, "the key was rejected")
    assert isinstance(exc, PermanentHTTPError) and exc.status == 401


# --------------------------------------------------------------------------- retry policy


def test_waits_grow_and_the_horizon_needs_both_attempts_and_days():
    policy = RetryPolicy(base_seconds=3600, factor=4, max_attempts=6, horizon_days=14)
    waits = [policy.next_attempt(n, T0, T0) - T0 for n in range(1, 6)]
    assert waits == [timedelta(hours=h) for h in (1, 4, 16, 64, 256)]
    # Six quick failures in an afternoon are not enough to give up: mirror lag lasts days.
    assert policy.next_attempt(6, T0, T0 + timedelta(hours=5)) is not None
    # Fourteen days of failures with few attempts are not enough either.
    assert policy.next_attempt(3, T0, T0 + timedelta(days=20)) is not None
    assert policy.next_attempt(6, T0, T0 + timedelta(days=14)) is None


def test_waits_are_capped_by_the_horizon():
    policy = RetryPolicy(base_seconds=86400, factor=10, max_attempts=50, horizon_days=3)
    assert policy.next_attempt(10, T0, T0) - T0 == timedelta(days=3)


# --------------------------------------------------------------------------- JSON limits


def test_json_limits():
    assert parse_json_object(b'{"data": {"id": "X"}}', "t") == {"data": {"id": "X"}}
    with pytest.raises(BadRecord, match="nested"):
        parse_json_object(b'{"a": ' + b"[" * 200_000 + b"]" * 200_000 + b"}", "t")
    with pytest.raises(BadRecord, match="nested 6 levels"):
        parse_json_object(b'{"a": [[[[{"b": 1}]]]]}', "t", max_depth=5)
    with pytest.raises(InputTooLarge):
        parse_json_object(b'{"a": "' + b"x" * 2000 + b'"}', "t", max_bytes=1000)
    with pytest.raises(BadResponse, match="not JSON"):
        parse_json_object(b'{"data": {"comment": "cut', "t")
    with pytest.raises(BadResponse, match="not an object"):
        parse_json_object(b"[1, 2]", "t")


# --------------------------------------------------------------------------- rules that use them


def _probe(**kw) -> Probe:
    base = dict(docket_exists=True, last_pull_at="2026-12-01T12:00:00Z", marker_version=1,
                marker_input="fp", expected_input="fp", marker_output="out")
    return Probe(**{**base, **kw})


def test_a_due_retry_makes_every_stage_after_fetch_incomplete_open_or_sealed():
    window, now = "2026-12-01T12:00:00Z", "2026-12-01T12:30:00Z"
    later, earlier = "2026-12-01T13:00:00Z", "2026-12-01T12:10:00Z"
    extract, fetch = Completion("extract", "backfill"), Completion("fetch", None, after_fetch=False)
    assert is_done(_probe(retry_due_at=later), extract, 1, window, now)
    assert not is_done(_probe(retry_due_at=earlier), extract, 1, window, now)
    assert is_done(_probe(retry_due_at=earlier), fetch, 1, window, now)  # fetch: no items
    sealed = dict(docket_sealed_at="S", marker_sealed_at="S")
    assert is_done(_probe(retry_due_at=later, **sealed), extract, 1, window, now)
    assert not is_done(_probe(retry_due_at=earlier, **sealed), extract, 1, window, now)


def test_auto_seal_waits_for_items_waiting_to_retry():
    facts = SealFacts("2026-01-01", "2026-12-01T00:00:00Z", 0, None)
    today = datetime(2026, 12, 1).date()
    assert should_seal(facts, today, 30)
    assert not should_seal(SealFacts("2026-01-01", "2026-12-01T00:00:00Z", 0, None, waiting=1), today, 30)


def test_a_rollback_error_while_unwinding_names_the_full_disk_that_caused_it():
    import sqlite3

    import peewee

    from pipeline.failures import original_error

    try:
        try:
            raise peewee.OperationalError("database or disk is full") from sqlite3.OperationalError("full")
        except peewee.OperationalError:
            raise peewee.OperationalError("cannot rollback - no transaction is active")  # noqa: B904
    except peewee.OperationalError as exc:
        assert "disk is full" in str(original_error(exc))
    plain = ValueError("x")
    assert original_error(plain) is plain
