"""The one failure taxonomy: what an exception while one item is handled means for it.

Every stage and both sources decide here, and nowhere else, whether a failure is

* **permanent** — gone (404/410, a mirror tombstone), an invalid id (400), over a size cap,
  an unusable record, a corrupt file, any unexpected exception: the item gets a final state
  (``gone``, ``too_large``, ``failed``) until ``Redrive`` or a version bump;
* **transient** — 5xx, 408, 429, timeouts, resets, truncated bodies, HTML where JSON was
  due, malformed JSON, not in the mirror yet, an S3 object refused (403): the item goes to ``retry`` with an attempt
  count and a next-attempt time, and later runs retry it by themselves until the retry
  horizon turns it permanent;
* **run-stopping** — the key was rejected, the quota is spent, the disk is full, a database
  is unreachable: the stage stops at an item boundary, marks no item and writes no marker.
"""

from __future__ import annotations

import errno
from dataclasses import dataclass
from datetime import datetime, timedelta

from pipeline.errors import (
    AccessRefused,
    BadRecord,
    BadResponse,
    BlobSizeMismatch,
    BudgetSpent,
    ConfigError,
    Gone,
    InputTooLarge,
    InvalidIdentifier,
    NotMirroredYet,
    PermanentHTTPError,
    RunStopping,
    TransientHTTPError,
)

PERMANENT = "permanent"
TRANSIENT = "transient"
RUN_STOPPING = "run-stopping"

RETRY = "retry"  # the state of an item that waits for its next attempt
GONE_STATUSES = (404, 410)
# A disk that cannot take a byte more stops the run: every next item would fail the same way.
_DISK_ERRNOS = frozenset({errno.ENOSPC, errno.EDQUOT, errno.EROFS})
# FileNotFoundError: a mirror object listed a moment ago and gone now (the mirror is updating).
# AccessRefused: S3 refused one object; access is configuration, which can be fixed.
_TRANSIENT = (TransientHTTPError, BadResponse, NotMirroredYet, BlobSizeMismatch, TimeoutError,
              ConnectionError, FileNotFoundError, AccessRefused)


@dataclass(frozen=True)
class Failure:
    kind: str  # PERMANENT | TRANSIENT | RUN_STOPPING
    state: str  # the item's state: gone | too_large | failed | retry ('' when run-stopping)
    reason: str  # one line, at most 500 characters

    @property
    def stops_run(self) -> bool:
        return self.kind == RUN_STOPPING


def classify(exc: BaseException) -> Failure:
    """The kind of ``exc`` and the state it gives the item it happened to."""
    reason = describe(exc)
    if _stops_run(exc):
        return Failure(RUN_STOPPING, "", reason)
    if isinstance(exc, InputTooLarge):
        return Failure(PERMANENT, "too_large", reason)
    if isinstance(exc, Gone) or (isinstance(exc, PermanentHTTPError) and exc.status in GONE_STATUSES):
        return Failure(PERMANENT, "gone", reason)
    if isinstance(exc, _TRANSIENT) or _s3_transient(exc):
        return Failure(TRANSIENT, RETRY, reason)
    # PermanentHTTPError (400, 413...), InvalidIdentifier, BadRecord and anything unexpected
    # (RecursionError, OverflowError, AttributeError...): the same input fails the same way.
    return Failure(PERMANENT, "failed", reason)


def item_failure(exc: Exception) -> Failure:
    """What ``exc`` means for the item in hand, or ``exc`` raised again when it is not the
    item's: a spent budget (the run stops cleanly) or a run-stopping cause."""
    if isinstance(exc, BudgetSpent):
        raise exc
    failure = classify(exc)
    if failure.stops_run:
        raise exc
    return failure


def original_error(exc: BaseException) -> BaseException:
    """The first run-stopping error in ``exc``'s chain, else ``exc``: SQLite on a full disk
    rolls its transaction back itself, so the ``cannot rollback`` raised while unwinding
    hides the "database or disk is full" that caused it."""
    chain: list[BaseException] = []
    found: BaseException | None = exc
    while found is not None and found not in chain:
        chain.append(found)
        found = found.__cause__ or found.__context__
    return next((e for e in reversed(chain) if _stops_run(e)), exc)


def _stops_run(exc: BaseException) -> bool:
    if isinstance(exc, (RunStopping, ConfigError, MemoryError)):
        return True
    if isinstance(exc, OSError) and exc.errno in _DISK_ERRNOS:
        return True
    return _database_unreachable(exc)


def _database_unreachable(exc: BaseException) -> bool:
    # The state DB (peewee) or the index DB (psycopg2) is gone or broken: every item would
    # fail. Data errors of one item (a value out of range) are that item's, not the run's.
    import peewee
    import psycopg2

    if isinstance(exc, (peewee.OperationalError, peewee.InterfaceError)):
        return True
    return isinstance(exc, (psycopg2.OperationalError, psycopg2.InterfaceError))


def _s3_transient(exc: BaseException) -> bool:
    """botocore's connection errors, throttling and 5xx (it has retried them already)."""
    if not type(exc).__module__.startswith("botocore"):
        return False
    from botocore.exceptions import ClientError, HTTPClientError
    from botocore.exceptions import ConnectionError as BotoConnectionError

    if isinstance(exc, (BotoConnectionError, HTTPClientError)):
        return True
    if isinstance(exc, ClientError):
        status = exc.response.get("ResponseMetadata", {}).get("HTTPStatusCode") or 0
        code = exc.response.get("Error", {}).get("Code", "")
        return status >= 500 or status == 429 or code in ("SlowDown", "Throttling", "RequestTimeout")
    return False


def describe(exc: BaseException) -> str:
    """One line naming the exception: its class (unless ours say it all) and its message."""
    text = " ".join(str(exc).split())
    ours = isinstance(exc, (PermanentHTTPError, TransientHTTPError, BadResponse, BadRecord, Gone,
                            NotMirroredYet, InputTooLarge, InvalidIdentifier, RunStopping, AccessRefused))
    line = text if ours and text else f"{type(exc).__name__}: {text}" if text else type(exc).__name__
    return line[:500]


# --------------------------------------------------------------------------- retries


@dataclass(frozen=True)
class RetryPolicy:
    """When a transient failure is tried again, and when it stops being transient.

    Waits grow by ``factor`` from ``base_seconds`` (1 h, 4 h, 16 h, 2.7 d, 10.7 d with the
    defaults); an item becomes permanent once it has failed ``max_attempts`` times *and*
    its first failure is ``horizon_days`` old — mirror lag can last days, and six quick
    attempts in an afternoon prove nothing.
    """

    base_seconds: int = 3600
    factor: float = 4.0
    max_attempts: int = 6
    horizon_days: float = 14.0

    @classmethod
    def from_settings(cls, settings) -> RetryPolicy:
        return cls(base_seconds=settings.retry_base_seconds, max_attempts=settings.retry_max_attempts,
                   horizon_days=settings.retry_horizon_days)

    def next_attempt(self, attempts: int, first_failed_at: datetime, now: datetime) -> datetime | None:
        """After the ``attempts``-th failure: when to try again, or None to give up."""
        if attempts >= self.max_attempts and now - first_failed_at >= timedelta(days=self.horizon_days):
            return None
        wait = self.base_seconds * self.factor ** max(attempts - 1, 0)
        return now + timedelta(seconds=min(wait, self.horizon_days * 86400))


def gave_up_reason(attempts: int, first_failed_at: datetime, now: datetime, last: str) -> str:
    days = (now - first_failed_at).total_seconds() / 86400
    return f"gave up after {attempts} attempts over {days:.1f} days: {last}"[:500]
