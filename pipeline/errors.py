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
    """Another run holds the (stage, docket) lease."""


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
