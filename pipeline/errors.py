"""Exceptions with a one-line meaning for operators."""


class DocketeerError(Exception):
    """Base class: the message is meant to be shown to an operator as one line."""


class ConfigError(DocketeerError):
    """A setting is missing, malformed or points somewhere unusable."""


class InvalidIdentifier(DocketeerError):
    """An id or filename from outside would be unsafe as a path or key."""


class BudgetSpent(DocketeerError):
    """The run's request or time budget is spent; stop at the next item boundary."""


class LeaseHeld(DocketeerError):
    """Another run holds the (stage, docket) lease; ``holder`` names it when known."""

    def __init__(self, message: str, holder: str = "") -> None:
        super().__init__(message)
        self.holder = holder


class PermanentHTTPError(DocketeerError):
    """A 4xx that retrying cannot fix (400, 401, 403, 404, 410, 413)."""

    def __init__(self, status: int, message: str, url: str = "") -> None:
        super().__init__(f"HTTP {status}: {message}" + (f" ({url})" if url else ""))
        self.status = status
        self.url = url


class TransientHTTPError(DocketeerError):
    """5xx, 408, 429, a reset connection or a truncated body: worth retrying."""

    def __init__(self, message: str, retry_after: float | None = None, status: int | None = None) -> None:
        super().__init__(message)
        self.retry_after = retry_after
        self.status = status


class BadResponse(DocketeerError):
    """The server answered, but not with what the API promises (HTML, bad JSON, bad fields)."""


class BadRecord(DocketeerError):
    """A record that parsed but cannot be used as it is (wrong types, out-of-range values,
    nested too deeply): the same bytes will fail the same way, so it is permanent."""


class Gone(DocketeerError):
    """The source says the thing is gone for good (a mirror tombstone, HTTP 404/410)."""


class NotMirroredYet(DocketeerError):
    """The mirror has neither the thing nor a tombstone for it: it may arrive later."""


class InputTooLarge(DocketeerError):
    """A file or record is over a configured size cap."""


class BlobTooLarge(InputTooLarge):
    """A stream into the blob store passed its byte limit."""


class BlobSizeMismatch(DocketeerError):
    """A stream ended before (or after) the size its source declared: a truncated read."""


class RunStopping(DocketeerError):
    """Nothing more can be done in this run (the key was rejected, the quota is spent, the
    disk is full, a database is unreachable): stop at an item boundary, mark no item, write
    no marker, exit non-zero with one line."""


class KeyRejected(RunStopping, PermanentHTTPError):
    """The API answered 401/403 about the key: the key's fault, never the item's."""


class QuotaSpent(RunStopping):
    """The API kept answering 429 (its hourly quota is spent): no item can be fetched now."""


class AccessRefused(DocketeerError):
    """S3 refused to let us read one object (403 AccessDenied): the item's, not the run's.
    Access is a matter of configuration, which can change, so the item waits to retry."""


class BucketRefused(RunStopping):
    """S3 refused to list the bucket: nothing in it can be read, so the run stops with one
    line saying how the request was made (signed or not) and what to change."""
