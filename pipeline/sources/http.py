"""HTTP transport shared by the API clients: budget, pacing, counting, retries, error mapping.

Nothing here is specific to one service: ``HttpTransport`` is one ``requests.Session``
with the run's ``RequestBudget``, pacing between calls, per-endpoint counting, tenacity
retries of transient failures (capped exponential backoff honouring ``Retry-After``), the
mapping of statuses to the failure taxonomy (``pipeline.failures``) and JSON reading within
limits. The regulations.gov and Federal Register clients each own one. Secrets given to it
never appear in a message it raises or logs.
"""

from __future__ import annotations

import email.utils
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime
from typing import Any

import requests
import tenacity
import urllib3

from pipeline.counters import API_CALLS, counters
from pipeline.errors import (
    BadResponse,
    BudgetSpent,
    DocketeerError,
    InputTooLarge,
    KeyRejected,
    PermanentHTTPError,
    QuotaSpent,
    TransientHTTPError,
)
from pipeline.sources.payloads import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, parse_json_object
from pipeline.version import installed_version

log = logging.getLogger(__name__)

# Worth retrying: these and every 5xx. Every other non-2xx (400, 401, 403, 404, 410, 413, ...)
# is permanent and fails at once.
TRANSIENT_STATUSES = frozenset({408, 429})
MASK = "***"


# --------------------------------------------------------------------------- budget


class RequestBudget:
    """A run's allowance of requests and wall time, shared by all its clients.

    ``spend()`` is called before every HTTP request (retries included) and raises
    BudgetSpent instead of letting the request go out.
    """

    def __init__(self, max_requests: int | None = None, deadline: float | None = None) -> None:
        self.max_requests = max_requests
        self.deadline = deadline  # a time.monotonic() value
        self.used = 0
        self._lock = threading.Lock()

    def spend(self) -> None:
        with self._lock:
            if self.max_requests is not None and self.used >= self.max_requests:
                raise BudgetSpent(f"request budget spent ({self.used} requests)")
            if self.deadline is not None and time.monotonic() >= self.deadline:
                raise BudgetSpent("time budget spent")
            self.used += 1

    def would_pass_deadline(self, seconds: float) -> bool:
        return self.deadline is not None and time.monotonic() + seconds >= self.deadline

    def __repr__(self) -> str:
        return f"RequestBudget(max_requests={self.max_requests}, deadline={self.deadline}, used={self.used})"


@dataclass(frozen=True)
class DownloadResult:
    """What a streamed download wrote: its sha256, its size, and the served content type."""

    sha256: str
    size: int
    content_type: str


# --------------------------------------------------------------------------- transport


class WaitRetryAfterOrBackoff(tenacity.wait.wait_base):
    """Capped exponential backoff (0.5 s, 1 s, 2 s, ...), but never shorter than Retry-After."""

    def __init__(self, cap: float, first: float = 0.5) -> None:
        self.cap = cap
        self.first = first

    def __call__(self, retry_state: tenacity.RetryCallState) -> float:
        backoff = min(self.cap, self.first * 2 ** (retry_state.attempt_number - 1))
        exc = retry_state.outcome.exception() if retry_state.outcome else None
        retry_after = getattr(exc, "retry_after", None)
        if retry_after is not None:
            return max(backoff, min(float(retry_after), self.cap))
        return backoff


KEY_HEADER = "X-Api-Key"


def user_agent() -> str:
    """``docketeer/<version>``: what the API host is told is calling."""
    return f"docketeer/{installed_version()}"


class KeySafeSession(requests.Session):
    """A session that never carries the API key to another host.

    requests drops ``Authorization`` on a redirect to another host or port
    (``Session.rebuild_auth``), but knows nothing of api.data.gov's ``X-Api-Key`` header.
    """

    def rebuild_auth(self, prepared_request, response) -> None:
        super().rebuild_auth(prepared_request, response)
        if self.should_strip_auth(response.request.url, prepared_request.url):
            prepared_request.headers.pop(KEY_HEADER, None)


BODY_CHUNK = 64 * 1024


class HttpTransport:
    """One requests.Session plus budget, pacing, counting, retries and error mapping.

    ``secrets`` are replaced by ``***`` in every message this class raises or logs.
    """

    def __init__(
        self,
        *,
        session: requests.Session | None = None,
        timeout: tuple[float, float] = (10, 60),
        pace_seconds: float = 0.0,
        max_attempts: int = 6,
        backoff_cap: float = 60.0,
        budget: RequestBudget | None = None,
        min_remaining: int | None = None,
        sleep: Callable[[float], None] = time.sleep,
        secrets: tuple[str, ...] = (),
        service: str = "API",
        max_json_bytes: int = DEFAULT_MAX_BYTES,
        max_json_depth: int = DEFAULT_MAX_DEPTH,
        request_seconds: float = 600.0,
    ) -> None:
        if session is None:
            session = KeySafeSession()
            session.headers["User-Agent"] = user_agent()
        self.session = session
        self.pace_seconds = pace_seconds
        self.max_attempts = max_attempts
        self.backoff_cap = backoff_cap
        self.budget = budget
        self.min_remaining = min_remaining
        self.sleep = sleep
        self.service = service
        self.max_json_bytes, self.max_json_depth = max_json_bytes, max_json_depth
        self.request_seconds = request_seconds
        # No single wait (connect, or one read) may outlast the request's whole deadline.
        self.timeout = tuple(min(part, request_seconds) for part in timeout)
        self.rate_remaining: int | None = None
        self._secrets = tuple(s for s in secrets if s)
        self._last_call: float | None = None
        self._pace_lock = threading.Lock()
        self._stats: Counter[str] = Counter()

    # -- masking

    def mask(self, text: object) -> str:
        out = str(text)
        for secret in self._secrets:
            out = out.replace(secret, MASK)
        return out

    def stats(self) -> dict[str, int]:
        return dict(self._stats)

    # -- retries

    def call_with_retries(self, what: str, attempt: Callable[[], Any]) -> Any:
        """Run ``attempt`` until it succeeds, raises a non-transient error or retries run out."""
        retrying = tenacity.Retrying(
            retry=tenacity.retry_if_exception_type(TransientHTTPError),
            wait=WaitRetryAfterOrBackoff(self.backoff_cap),
            stop=tenacity.stop_after_attempt(self.max_attempts) | self._stop_at_deadline,
            sleep=self.sleep,
            before_sleep=lambda state: self._log_retry(what, state),
            retry_error_callback=self._give_up,
        )
        return retrying(attempt)

    def _stop_at_deadline(self, retry_state: tenacity.RetryCallState) -> bool:
        # No point sleeping into the end of the run's time budget.
        upcoming = retry_state.upcoming_sleep or 0.0
        return self.budget is not None and self.budget.would_pass_deadline(upcoming)

    def _give_up(self, retry_state: tenacity.RetryCallState) -> Any:
        exc = retry_state.outcome.exception()
        if self._stop_at_deadline(retry_state):
            raise BudgetSpent("time budget spent") from exc
        if isinstance(exc, TransientHTTPError) and exc.status == 429:
            # Still over the rate limit after every retry: the quota, not the item.
            raise QuotaSpent(f"the {self.service} rate limit is spent ({exc})") from exc
        raise exc

    def _log_retry(self, what: str, state: tenacity.RetryCallState) -> None:
        # The exception text already names the URL; ``what`` is for errors that do not.
        error = self.mask(state.outcome.exception())
        log.warning(
            "%s%s; retrying in %.1fs (attempt %d of %d)",
            "" if self.mask(what) in error else f"{self.mask(what)}: ",
            error,
            state.upcoming_sleep,
            state.attempt_number,
            self.max_attempts,
        )

    # -- one request

    def send(
        self,
        endpoint: str,
        url: str,
        *,
        params: Any = None,
        headers: dict[str, str] | None = None,
        stream: bool = False,
        allow_redirects: bool = True,
        json_body: Any = None,
    ) -> requests.Response:
        """One HTTP GET (a POST of ``json_body`` when given) after budget, rate-limit and pacing
        checks; network errors are transient."""
        self._check_before_call()
        self._pace()
        counters.incr(API_CALLS)
        counters.incr(f"api.{endpoint}")
        self._stats[endpoint] += 1
        try:
            if json_body is not None:
                resp = self.session.post(url, json=json_body, headers=headers, timeout=self.timeout, stream=stream,
                                         allow_redirects=allow_redirects)
            else:
                resp = self.session.get(
                    url, params=params, headers=headers, timeout=self.timeout, stream=stream,
                    allow_redirects=allow_redirects,
                )
        except (
            requests.ConnectionError,
            requests.Timeout,
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError,
        ) as exc:
            raise TransientHTTPError(
                self.mask(f"{self.service} request failed: {one_line(exc)}")
            ) from None
        self._note_rate_limit(resp)
        return resp

    def _check_before_call(self) -> None:
        if self.budget is not None:
            self.budget.spend()
        if self.min_remaining is not None and self.rate_remaining is not None:
            if self.rate_remaining < self.min_remaining:
                raise BudgetSpent(
                    f"rate limit nearly spent: {self.rate_remaining} requests left this hour"
                )

    def _pace(self) -> None:
        with self._pace_lock:
            now = time.monotonic()
            if self._last_call is not None and self.pace_seconds > 0:
                wait = self._last_call + self.pace_seconds - now
                if wait > 0:
                    self.sleep(wait)
            self._last_call = time.monotonic()

    def _note_rate_limit(self, resp: requests.Response) -> None:
        value = resp.headers.get("X-Ratelimit-Remaining")
        if value is not None and value.strip().lstrip("-").isdigit():
            self.rate_remaining = int(value)

    # -- response checks

    def raise_for_status(self, resp: requests.Response, what: str) -> None:
        """Map a non-2xx response to PermanentHTTPError / TransientHTTPError (one line, masked)."""
        status = resp.status_code
        if 200 <= status < 300:
            return
        code, message = api_error(resp)
        detail, where = self.mask(message), self.mask(what)
        if status == 401 or (status == 403 and code and code.startswith("API_KEY_")):
            # The key's fault, not the item's: the run stops, no item is marked.
            raise KeyRejected(status, f"the {self.service} API key was rejected ({status} {code or 'unauthorized'})")
        if status in TRANSIENT_STATUSES or status >= 500:
            retry_after = parse_retry_after(resp.headers.get("Retry-After"))
            if retry_after is not None and retry_after > self.backoff_cap:
                # Sleeping longer than the cap inside a batch run helps nobody: stop, come back later.
                raise BudgetSpent(
                    f"{self.service} asked to wait {retry_after:.0f}s (HTTP {status}); stopping"
                )
            raise TransientHTTPError(
                f"HTTP {status} from {where}: {detail}", retry_after=retry_after, status=status
            )
        raise PermanentHTTPError(status, detail, where)

    def read_json(self, resp: requests.Response, what: str) -> dict:
        """The body as a JSON object within the size and depth limits (``parse_json_object``);
        BadResponse with a one-line reason for an HTML page or a body that is not JSON."""
        ctype = resp.headers.get("Content-Type", "")
        text = resp.content.decode(resp.encoding or "utf-8", errors="replace")
        if "html" in ctype.lower() or text.lstrip()[:1] == "<":
            raise BadResponse(
                self.mask(
                    f"{what}: got an HTML page instead of JSON ({ctype or 'no content type'})"
                )
            )
        try:
            return parse_json_object(text, self.mask(what), max_bytes=self.max_json_bytes,
                                     max_depth=self.max_json_depth)
        except DocketeerError as exc:
            raise type(exc)(self.mask(exc)) from None

    def get_json(
        self, endpoint: str, url: str, *, params: Any = None, headers: dict | None = None
    ) -> dict:
        """GET + status mapping + JSON, with retries."""

        def attempt() -> dict:
            deadline = time.monotonic() + self.request_seconds
            with self.send(endpoint, url, params=params, headers=headers, stream=True) as resp:
                # The whole body within the deadline and the size cap, then read as usual.
                resp._content = b"".join(self.iter_body(resp, _describe(url, params), deadline,
                                                        self.max_json_bytes))
            self.raise_for_status(resp, _describe(url, params))
            return self.read_json(resp, _describe(url, params))

        return self.call_with_retries(_describe(url, params), attempt)

    def post_json(self, endpoint: str, url: str, body: dict, *, headers: dict | None = None) -> dict:
        """POST ``body`` as JSON + status mapping + JSON answer, with retries (as ``get_json``)."""

        def attempt() -> dict:
            deadline = time.monotonic() + self.request_seconds
            with self.send(endpoint, url, headers=headers, stream=True, json_body=body) as resp:
                resp._content = b"".join(self.iter_body(resp, url, deadline, self.max_json_bytes))
            self.raise_for_status(resp, url)
            return self.read_json(resp, url)

        return self.call_with_retries(url, attempt)

    def iter_body(self, resp: requests.Response, what: str, deadline: float,
                  max_bytes: int) -> Iterator[bytes]:
        """The body as it arrives, bounded: a total deadline per request (a server that drips
        a byte at a time never trips a per-read timeout) and a size cap.

        ``read1`` returns whatever one socket read brings, so the deadline is checked between
        reads; each read itself is bounded by the read timeout.
        """
        size = 0
        try:
            while chunk := resp.raw.read1(BODY_CHUNK, decode_content=True):
                size += len(chunk)
                if size > max_bytes:
                    raise InputTooLarge(self.mask(f"{what}: body over the limit of {max_bytes} bytes"))
                if time.monotonic() > deadline:
                    raise TransientHTTPError(self.mask(
                        f"{what}: no whole answer within {self.request_seconds:.0f}s ({size} bytes so far)"))
                yield chunk
        except (urllib3.exceptions.HTTPError, requests.RequestException, OSError) as exc:
            raise TransientHTTPError(self.mask(
                f"{what}: the answer broke off after {size} bytes: {one_line(exc)}")) from None


def api_error(resp: requests.Response) -> tuple[str | None, str]:
    """(api.data.gov error code, one-line message) from JSON:API ``errors[].detail``/``title``
    or api.data.gov ``{"error": {"code", "message"}}``; the HTTP reason when there is neither."""
    try:
        body = resp.json()
    except ValueError:
        body = None
    code, parts = None, []
    if isinstance(body, dict):
        for err in body.get("errors") if isinstance(body.get("errors"), list) else []:
            if isinstance(err, dict) and (err.get("detail") or err.get("title")):
                parts.append(str(err.get("detail") or err.get("title")))
        error = body.get("error")
        if isinstance(error, dict):
            code = str(error["code"]) if error.get("code") else None
            parts.append(" ".join(str(p) for p in (code, error.get("message")) if p))
    message = "; ".join(p for p in parts if p) or (resp.reason or "no error message")
    return code, one_line(message)[:300]


def parse_retry_after(value: str | None) -> float | None:
    """Retry-After as seconds (either delta-seconds or an HTTP date); None if absent or unreadable."""
    if not value:
        return None
    value = value.strip()
    if value.isdigit():
        return float(value)
    try:
        when = email.utils.parsedate_to_datetime(value)
    except (TypeError, ValueError):
        return None
    return max(0.0, (when - datetime.now(UTC)).total_seconds())


def one_line(value: object) -> str:
    """``value`` as text on one line (error bodies and exception texts may hold newlines)."""
    return " ".join(str(value).split())


def _describe(url: str, params: Any) -> str:
    if not params:
        return url
    pairs = params.items() if isinstance(params, dict) else params
    return url + "?" + "&".join(f"{k}={v}" for k, v in pairs)
