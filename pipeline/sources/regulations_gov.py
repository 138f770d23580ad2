"""Client for the regulations.gov v4 API and downloads.regulations.gov.

The rules it respects are in DESIGN.md ("regulations.gov facts the client must respect"):
the key travels in the ``X-Api-Key`` header only, list walks past 5,000 records re-query
with an *US Eastern* ``filter[lastModifiedDate][ge]``, transient failures are retried
(tenacity, capped exponential backoff honouring ``Retry-After``), permanent ones fail at
once, and a run stops cleanly (``BudgetSpent``) when its request/time budget or the
hourly rate limit is nearly spent.

``HttpTransport`` holds everything that is not regulations.gov specific (budget, pacing,
retries, status mapping, JSON reading, secret masking); the Federal Register client
reuses it.
"""

from __future__ import annotations

import email.utils
import hashlib
import logging
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from datetime import UTC, datetime, timedelta
from typing import IO, Any
from zoneinfo import ZoneInfo

import requests
import tenacity

from pipeline.counters import API_CALLS, counters
from pipeline.errors import (
    BadResponse,
    BudgetSpent,
    ConfigError,
    DocketeerError,
    InputTooLarge,
    InvalidIdentifier,
    KeyRejected,
    PermanentHTTPError,
    QuotaSpent,
    TransientHTTPError,
)
from pipeline.ids import validate_id
from pipeline.sources.payloads import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, parse_json_object

log = logging.getLogger(__name__)

EASTERN = ZoneInfo("America/New_York")
EASTERN_FILTER_FORMAT = "%Y-%m-%d %H:%M:%S"

# regulations.gov list limits: one query returns at most 20 pages of 250 = 5,000 records.
MAX_PAGE_SIZE = 250
MAX_PAGE_NUMBER = 20
COMMENT_SORT = "lastModifiedDate,documentId"

# Worth retrying: these and every 5xx. Every other non-2xx (400, 401, 403, 404, 410, 413, ...)
# is permanent and fails at once.
TRANSIENT_STATUSES = frozenset({408, 429})
DOWNLOAD_CHUNK = 64 * 1024
MASK = "***"


# --------------------------------------------------------------------------- time


def parse_api_time(s: str) -> datetime:
    """Parse an API timestamp (``2025-09-11T17:58:29Z``, UTC) into an aware UTC datetime."""
    if not isinstance(s, str) or not s:
        raise ValueError(f"not an API timestamp: {s!r}")
    parsed = datetime.fromisoformat(s.replace("Z", "+00:00"))
    if parsed.tzinfo is None:
        # The API always answers in UTC; a bare value is taken as UTC, never as local time.
        parsed = parsed.replace(tzinfo=UTC)
    return parsed.astimezone(UTC)


def to_eastern_filter(utc_iso: str) -> str:
    """UTC ISO timestamp -> the US Eastern ``YYYY-MM-DD HH:MM:SS`` that lastModifiedDate filters take.

    When DST ends, the wall times 01:00:00-01:59:59 happen twice and the string alone does
    not say which instant is meant; we cannot know which one the server picks. For an
    instant in the *first* (EDT) occurrence we return 00:59:59, the last wall second before
    the repeated hour: under either reading it is at or before the instant, so a ``ge``
    filter built from it can only re-fetch records (absorbed by upserts), never skip them.
    This keeps the mapping monotonic: a later instant never gives a smaller string.
    """
    instant = parse_api_time(utc_iso).replace(microsecond=0)
    local = instant.astimezone(EASTERN)
    if _is_first_of_repeated_hour(local):
        # Aware datetimes with the same tzinfo subtract in wall-clock terms: 01:mm:ss -> 00:59:59.
        local = local.replace(minute=0, second=0) - timedelta(seconds=1)
    return local.strftime(EASTERN_FILTER_FORMAT)


def next_filter_second(eastern: str) -> str:
    """The Eastern filter string one wall second later, jumping over the spring-forward gap."""
    wall = datetime.strptime(eastern, EASTERN_FILTER_FORMAT) + timedelta(seconds=1)
    # A wall time in the gap (02:00-02:59 on spring-forward day) does not exist; the round
    # trip through UTC moves it to the first real second after the gap (03:00:00).
    real = wall.replace(tzinfo=EASTERN).astimezone(UTC).astimezone(EASTERN)
    return max(real.replace(tzinfo=None), wall).strftime(EASTERN_FILTER_FORMAT)


def _is_first_of_repeated_hour(local: datetime) -> bool:
    if local.fold:
        return False
    later = local.replace(fold=1)
    return later.utcoffset() != local.utcoffset()


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


# --------------------------------------------------------------------------- results


@dataclass(frozen=True)
class DownloadResult:
    sha256: str
    size: int
    content_type: str


class TooLarge(PermanentHTTPError, InputTooLarge):
    """A download is bigger than the caller allows; never retried (callers: state ``too_large``)."""

    def __init__(self, size: int, max_bytes: int, url: str = "") -> None:
        super().__init__(413, f"file is larger than {max_bytes} bytes (at least {size})", url)
        self.size = size
        self.max_bytes = max_bytes


class MalformedItem(BadResponse):
    """One list item does not look like the API promises; ``item_id`` names it if it can."""

    def __init__(self, message: str, item_id: str | None = None) -> None:
        super().__init__(message)
        self.item_id = item_id


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


class HttpTransport:
    """One requests.Session plus budget, pacing, counting, retries and error mapping.

    Not regulations.gov specific: the Federal Register client uses it too. ``secrets``
    are replaced by ``***`` in every message this class raises or logs.
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
    ) -> None:
        if session is None:
            session = requests.Session()
            session.headers["User-Agent"] = "docketeer/0.1"
        self.session = session
        self.timeout = timeout
        self.pace_seconds = pace_seconds
        self.max_attempts = max_attempts
        self.backoff_cap = backoff_cap
        self.budget = budget
        self.min_remaining = min_remaining
        self.sleep = sleep
        self.service = service
        self.max_json_bytes, self.max_json_depth = max_json_bytes, max_json_depth
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
    ) -> requests.Response:
        """One HTTP GET after budget, rate-limit and pacing checks; network errors are transient."""
        self._check_before_call()
        self._pace()
        counters.incr(API_CALLS)
        counters.incr(f"api.{endpoint}")
        self._stats[endpoint] += 1
        try:
            resp = self.session.get(
                url, params=params, headers=headers, timeout=self.timeout, stream=stream
            )
        except (
            requests.ConnectionError,
            requests.Timeout,
            requests.exceptions.ChunkedEncodingError,
            requests.exceptions.ContentDecodingError,
        ) as exc:
            raise TransientHTTPError(
                self.mask(f"{self.service} request failed: {_one_line(exc)}")
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
            resp = self.send(endpoint, url, params=params, headers=headers)
            self.raise_for_status(resp, _describe(url, params))
            return self.read_json(resp, _describe(url, params))

        return self.call_with_retries(_describe(url, params), attempt)


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
    return code, _one_line(message)[:300]


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


def _one_line(value: object) -> str:
    return " ".join(str(value).split())


def _describe(url: str, params: Any) -> str:
    if not params:
        return url
    pairs = params.items() if isinstance(params, dict) else params
    return url + "?" + "&".join(f"{k}={v}" for k, v in pairs)


# --------------------------------------------------------------------------- client


class RegulationsGovClient:
    """regulations.gov v4: dockets, documents, comments, and attachment downloads."""

    def __init__(self, base_url: str, api_key: str | None, *, min_remaining: int = 5,
                 **transport_options) -> None:
        """``transport_options``: HttpTransport's (session, timeout, pace_seconds, budget, ...)."""
        if not api_key or not api_key.strip():
            raise ConfigError(
                "REGULATIONS_GOV_API_KEY is not set (get a key at https://api.data.gov/signup/)"
            )
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key.strip()
        self.transport = HttpTransport(
            min_remaining=min_remaining, secrets=(self._api_key,), service="regulations.gov",
            **transport_options,
        )

    def __repr__(self) -> str:
        return f"RegulationsGovClient(base_url={self.base_url!r}, api_key={MASK!r})"

    def stats(self) -> dict[str, int]:
        """Requests made by this client, per endpoint (also counted in pipeline.counters)."""
        return self.transport.stats()

    # -- single objects

    def get_docket(self, docket_id: str) -> dict:
        docket_id = validate_id(docket_id, "docket id")
        body = self._get("dockets.detail", f"/dockets/{docket_id}")
        return self._data_object(body, f"docket {docket_id}")

    def get_document(self, document_id: str) -> dict:
        """The full response (``data`` and ``included`` attachments)."""
        document_id = validate_id(document_id, "document id")
        body = self._get(
            "documents.detail", f"/documents/{document_id}", {"include": "attachments"}
        )
        self._data_object(body, f"document {document_id}")
        return body

    def get_comment(self, comment_id: str) -> dict:
        """The full response (``data`` and ``included`` attachments)."""
        comment_id = validate_id(comment_id, "comment id")
        body = self._get("comments.detail", f"/comments/{comment_id}", {"include": "attachments"})
        data = self._data_object(body, f"comment {comment_id}")
        if data.get("id") != comment_id:
            raise BadResponse(f"comment {comment_id}: response is for {str(data.get('id'))[:80]!r}")
        return body

    # -- lists

    def list_documents(self, docket_id: str) -> list[dict]:
        """Every document of a docket (list items, summary attributes)."""
        docket_id = validate_id(docket_id, "docket id")
        documents: list[dict] = []
        for page in range(1, MAX_PAGE_NUMBER + 1):
            params = {
                "filter[docketId]": docket_id,
                "page[size]": MAX_PAGE_SIZE,
                "page[number]": page,
            }
            items, has_next = self._get_page("documents.list", "/documents", params)
            documents.extend(_check_list_item(item, "documents") for item in items)
            if not has_next:
                return documents
        log.warning(
            "docket %s has more than %d documents; the rest are not listed",
            docket_id,
            len(documents),
        )
        return documents

    def iter_comments(
        self,
        object_id: str,
        since: str | None = None,
        *,
        on_bad_item: Callable[[MalformedItem], None] | None = None,
    ) -> Iterator[dict]:
        """Comment list items on one document (its ``objectId``), oldest change first.

        ``since`` (UTC ISO) starts the walk at that lastModifiedDate. Past 5,000 records the
        walk re-queries from page 1 with ``filter[lastModifiedDate][ge]`` set to the last
        record's time in US Eastern; records at the boundary come back again (callers' upserts
        absorb them). A malformed item raises MalformedItem, unless ``on_bad_item`` is given:
        then it is called with the error and the walk goes on.
        """
        object_id = validate_id(object_id, "objectId")
        ge = to_eastern_filter(since) if since else None
        while True:
            first_lmd, last_lmd, more = yield from self._walk_one_query(object_id, ge, on_bad_item)
            if not more or last_lmd is None:
                return
            ge = self._next_boundary(object_id, ge, first_lmd, last_lmd)

    def _walk_one_query(self, object_id, ge, on_bad_item):
        """Pages 1..20 of one query; returns (first lastModifiedDate, last one, more to come)."""
        first_lmd = last_lmd = None
        for page in range(1, MAX_PAGE_NUMBER + 1):
            params = {
                "filter[commentOnId]": object_id,
                "sort": COMMENT_SORT,
                "page[size]": MAX_PAGE_SIZE,
                "page[number]": page,
            }
            if ge:
                params["filter[lastModifiedDate][ge]"] = ge
            items, has_next = self._get_page("comments.list", "/comments", params)
            for raw in items:
                try:
                    item = check_comment_item(raw)
                except MalformedItem as exc:
                    if on_bad_item is None:
                        raise
                    on_bad_item(exc)
                    continue
                lmd = item["attributes"]["lastModifiedDate"]
                first_lmd = first_lmd or lmd
                last_lmd = lmd
                yield item
            if not has_next:
                return first_lmd, last_lmd, False
        return first_lmd, last_lmd, True

    @staticmethod
    def _next_boundary(object_id: str, ge: str | None, first_lmd: str, last_lmd: str) -> str:
        """The ge filter for the next query, guaranteed to move forward.

        If a whole 5,000-record query maps to one filter value (one second, or the clamped
        DST hour), re-querying from it would return the same records forever. Then we step
        to the next wall second and log that records can be missed: the API offers no finer
        way to page through more than 5,000 records sharing one filter value.
        """
        boundary = to_eastern_filter(last_lmd)
        if to_eastern_filter(first_lmd) != boundary and (ge is None or boundary > ge):
            return boundary
        stepped = next_filter_second(max(boundary, ge or boundary))
        log.warning(
            "comments on %s: more than %d records share the filter value %s (Eastern); continuing "
            "from %s, records beyond the first %d may be missed",
            object_id,
            MAX_PAGE_SIZE * MAX_PAGE_NUMBER,
            boundary,
            stepped,
            MAX_PAGE_SIZE * MAX_PAGE_NUMBER,
        )
        return stepped

    # -- downloads

    def download(self, url: str, fileobj: IO[bytes], *, max_bytes: int) -> DownloadResult:
        """Stream ``url`` into ``fileobj`` (from its start), hashing as it goes.

        A truncated body is retried from scratch; a too-large file raises TooLarge at once.
        On any error ``fileobj`` is left empty, so a partial file is never mistaken for a whole one.
        """
        if not url.startswith(("http://", "https://")):
            raise InvalidIdentifier(f"not an http(s) URL: {url[:200]!r}")

        def attempt() -> DownloadResult:
            return self._download_once(url, fileobj, max_bytes)

        try:
            return self.transport.call_with_retries(url, attempt)
        except BaseException:
            _empty(fileobj)
            raise

    def _download_once(self, url: str, fileobj: IO[bytes], max_bytes: int) -> DownloadResult:
        _empty(fileobj)
        # No key header: downloads.regulations.gov does not need it, and it must not leak to other hosts.
        resp = self.transport.send("downloads", url, stream=True)
        with resp:
            self.transport.raise_for_status(resp, url)
            declared = _content_length(resp)
            if declared is not None and declared > max_bytes:
                raise TooLarge(declared, max_bytes, url)
            digest, size = hashlib.sha256(), 0
            try:
                for chunk in resp.iter_content(DOWNLOAD_CHUNK):
                    size += len(chunk)
                    if size > max_bytes:
                        raise TooLarge(size, max_bytes, url)
                    digest.update(chunk)
                    fileobj.write(chunk)
            except (requests.ConnectionError, requests.exceptions.ChunkedEncodingError) as exc:
                raise TransientHTTPError(
                    f"download of {url} broke off after {size} bytes: {_one_line(exc)}"
                ) from None
            # Only comparable when the bytes were not content-decoded on the way.
            if (
                declared is not None
                and not resp.headers.get("Content-Encoding")
                and size != declared
            ):
                raise TransientHTTPError(f"download of {url} truncated: {size} of {declared} bytes")
        fileobj.flush()
        content_type = resp.headers.get("Content-Type", "").split(";")[0].strip().lower()
        return DownloadResult(sha256=digest.hexdigest(), size=size, content_type=content_type)

    # -- plumbing

    def _get(self, endpoint: str, path: str, params: dict | None = None) -> dict:
        return self.transport.get_json(
            endpoint, self.base_url + path, params=params, headers={"X-Api-Key": self._api_key}
        )

    def _get_page(self, endpoint: str, path: str, params: dict) -> tuple[list, bool]:
        body = self._get(endpoint, path, params)
        data, meta = body.get("data"), body.get("meta")
        if not isinstance(data, list):
            raise BadResponse(f"{path}: list response has no `data` list")
        if not isinstance(meta, dict) or not isinstance(meta.get("hasNextPage"), bool):
            raise BadResponse(f"{path}: list response has no `meta.hasNextPage`")
        return data, meta["hasNextPage"]

    @staticmethod
    def _data_object(body: dict, what: str) -> dict:
        data = body.get("data")
        if not isinstance(data, dict):
            raise BadResponse(f"{what}: response has no `data` object")
        return data


def check_comment_item(raw: object) -> dict:
    """A comment list item with a safe id and a parseable lastModifiedDate, else MalformedItem."""
    item = _check_list_item(raw, "comments")
    lmd = item["attributes"].get("lastModifiedDate")
    try:
        parse_api_time(lmd)
    except (TypeError, ValueError):
        raise MalformedItem(
            f"comment {item['id']}: bad lastModifiedDate {str(lmd)[:40]!r}", item["id"]
        ) from None
    withdrawn = item["attributes"].get("withdrawn")
    if withdrawn is not None and not isinstance(withdrawn, bool):
        raise MalformedItem(f"comment {item['id']}: `withdrawn` is not a boolean", item["id"])
    return item


def _check_list_item(raw: object, kind: str) -> dict:
    if not isinstance(raw, dict):
        raise MalformedItem(f"{kind} list item is a {type(raw).__name__}, not an object")
    raw_id = raw.get("id")
    try:
        item_id = validate_id(raw_id, f"{kind} id")
    except InvalidIdentifier as exc:
        raise MalformedItem(f"{kind} list item: {exc}") from None
    if raw.get("type", kind) != kind:
        raise MalformedItem(
            f"{kind} list item {item_id}: type is {str(raw.get('type'))[:40]!r}", item_id
        )
    if not isinstance(raw.get("attributes"), dict):
        raise MalformedItem(f"{kind} list item {item_id}: no attributes object", item_id)
    return raw


def _content_length(resp: requests.Response) -> int | None:
    value = resp.headers.get("Content-Length", "")
    return int(value) if value.strip().isdigit() else None


def _empty(fileobj: IO[bytes]) -> None:
    fileobj.seek(0)
    fileobj.truncate()
