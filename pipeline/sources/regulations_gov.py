"""Client for the regulations.gov v4 API and downloads.regulations.gov.

The rules it respects are in DESIGN.md ("regulations.gov facts the client must respect"):
the key travels in the ``X-Api-Key`` header only, list walks past 5,000 records re-query
with an *US Eastern* ``filter[lastModifiedDate][ge]`` (``api_time.eastern_filter``),
transient failures are retried, permanent ones fail at once, and a run stops cleanly
(``BudgetSpent``) when its request/time budget or the hourly rate limit is nearly spent.

Budget, pacing, retries, status mapping, JSON reading and secret masking are the
transport's (``pipeline.sources.http``); this module knows regulations.gov's paths, list
paging and records.
"""

from __future__ import annotations

import hashlib
import json
import logging
import time
from collections.abc import Callable, Iterator
from typing import IO
from urllib.parse import urljoin, urlsplit

import requests

from pipeline.config import check_secret
from pipeline.errors import (
    BadRecord,
    BadResponse,
    ConfigError,
    InputTooLarge,
    InvalidIdentifier,
    PermanentHTTPError,
    TransientHTTPError,
)
from pipeline.ids import validate_id
from pipeline.sources.api_time import next_filter_second, parse_api_time, to_eastern_filter
from pipeline.sources.http import KEY_HEADER, MASK, DownloadResult, HttpTransport
from pipeline.sources.records import flag

log = logging.getLogger(__name__)

# regulations.gov list limits: one query returns at most 20 pages of 250 = 5,000 records.
MAX_PAGE_SIZE = 250
MAX_PAGE_NUMBER = 20
COMMENT_SORT = "lastModifiedDate,documentId"


# --------------------------------------------------------------------------- errors


class TooLarge(PermanentHTTPError, InputTooLarge):
    """A download is bigger than the caller allows; never retried (callers: state ``too_large``)."""

    def __init__(self, size: int, max_bytes: int, url: str = "") -> None:
        super().__init__(413, f"file is larger than {max_bytes} bytes (at least {size})", url)
        self.size = size
        self.max_bytes = max_bytes


class MalformedItem(BadResponse):
    """One list item does not look like the API promises; ``item_id`` names it if it can,
    ``raw`` is the item as listed (for a short rendering and its lastModifiedDate)."""

    def __init__(self, message: str, item_id: str | None = None, raw: object = None) -> None:
        super().__init__(message)
        self.item_id = item_id
        self.raw = raw


# --------------------------------------------------------------------------- client


DOWNLOAD_HOST = "downloads.regulations.gov"
UNBOUNDED = 2**62  # downloads check their own size limit (TooLarge names the file)
MAX_REDIRECTS = 3
# CloudFront in front of the download host refuses requests that do not look like a browser's;
# the API host is told the truth (``http.user_agent``). ``download_headers`` replaces these.
BROWSER_HEADERS = {
    "User-Agent": ("Mozilla/5.0 (Windows NT 10.0; Win64; x64) AppleWebKit/537.36 "
                   "(KHTML, like Gecko) Chrome/136.0.0.0 Safari/537.36"),
    "Accept": "text/html,application/xhtml+xml,application/xml;q=0.9,application/pdf,*/*;q=0.8",
    "Accept-Language": "en-US,en;q=0.9",
}


def download_headers_of(text: str) -> dict[str, str]:
    """The ``download_headers`` setting: "" for ``BROWSER_HEADERS``, else a JSON object of
    header names to values. The API key header is refused: downloads never carry the key."""
    if not text.strip():
        return dict(BROWSER_HEADERS)
    try:
        headers = json.loads(text)
    except ValueError as error:
        raise ConfigError(f"download_headers is not a JSON object: {error}") from None
    if not isinstance(headers, dict) or not all(
            isinstance(k, str) and isinstance(v, str) for k, v in headers.items()):
        raise ConfigError("download_headers must be a JSON object of header names to string values")
    if any(name.strip().lower() == KEY_HEADER.lower() for name in headers):
        raise ConfigError(f"download_headers may not carry {KEY_HEADER}: the download host never gets the key")
    return headers


def origin_of(url: str) -> tuple[str, str, int | None]:
    """(scheme, host, port) with the scheme's default port made explicit."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    try:
        port = parts.port or {"https": 443, "http": 80}.get(scheme)
    except ValueError:  # a port that is not a number
        port = -1
    return scheme, (parts.hostname or "").lower(), port


def allowed_origins(api_base: str, hosts: tuple[str, ...]) -> frozenset:
    """The API's own origin plus each configured host (https unless a scheme is given)."""
    origins = {origin_of(api_base)}
    for host in hosts:
        host = host.strip()
        if host:
            origins.add(origin_of(host if "://" in host else f"https://{host}"))
    return frozenset(origins)


class RegulationsGovClient:
    """regulations.gov v4: dockets, documents, comments, and attachment downloads."""

    def __init__(self, base_url: str, api_key: str | None, *, min_remaining: int = 5,
                 download_hosts: tuple[str, ...] = (DOWNLOAD_HOST,),
                 download_headers: dict[str, str] | None = None, **transport_options) -> None:
        """``transport_options``: HttpTransport's (session, timeout, pace_seconds, budget, ...).
        ``download_hosts``: where attachment files may come from besides the API's own host
        (``host`` means https://host; ``http://host:port`` allows plain HTTP there).
        ``download_headers``: sent with every download request (default ``BROWSER_HEADERS``)."""
        if not api_key or not api_key.strip():
            raise ConfigError(
                "REGULATIONS_GOV_API_KEY is not set (get a key at https://api.data.gov/signup/)"
            )
        check_secret(api_key, "REGULATIONS_GOV_API_KEY")
        self.base_url = base_url.rstrip("/")
        self._api_key = api_key
        self.download_origins = allowed_origins(self.base_url, download_hosts)
        self.download_headers = dict(BROWSER_HEADERS if download_headers is None else download_headers)
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

    def list_documents(
        self, docket_id: str, *, on_bad_item: Callable[[MalformedItem], None] | None = None
    ) -> list[dict]:
        """Every document of a docket (list items, summary attributes). A malformed item
        raises MalformedItem, unless ``on_bad_item`` is given: then it is called with the
        error and the rest are listed."""
        docket_id = validate_id(docket_id, "docket id")
        documents: list[dict] = []
        for page in range(1, MAX_PAGE_NUMBER + 1):
            params = {
                "filter[docketId]": docket_id,
                "page[size]": MAX_PAGE_SIZE,
                "page[number]": page,
            }
            items, has_next = self._get_page("documents.list", "/documents", params)
            documents.extend(_checked_items(items, check_document_item, on_bad_item))
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
        since: object | None = None,
        *,
        on_bad_item: Callable[[MalformedItem], None] | None = None,
    ) -> Iterator[dict]:
        """Comment list items on one document (its ``objectId``), oldest change first.

        ``since`` (an API time, or what gives one as its ``str()``: the fetch's Watermark)
        starts the walk at that lastModifiedDate. Past 5,000 records the walk re-queries
        from page 1 with ``filter[lastModifiedDate][ge]`` set to the last record's time in
        US Eastern; records at the boundary come back again (callers' upserts absorb them). A malformed item
        raises MalformedItem, unless ``on_bad_item`` is given: then it is called with the
        error and the walk goes on.
        """
        object_id = validate_id(object_id, "objectId")
        ge = to_eastern_filter(str(since)) if since else None
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
            for item in _checked_items(items, check_comment_item, on_bad_item):
                lmd = item["attributes"].get("lastModifiedDate")
                if lmd is not None:
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
        self.check_download_url(url)

        def attempt() -> DownloadResult:
            return self._download_once(url, fileobj, max_bytes)

        try:
            return self.transport.call_with_retries(url, attempt)
        except BaseException:
            _empty(fileobj)
            raise

    def check_download_url(self, url: str) -> None:
        """Files come only from allowed origins: anything else is the item's permanent failure."""
        if origin_of(url) not in self.download_origins:
            raise InvalidIdentifier(f"attachment URL not on an allowed download host: {url[:200]!r}")

    def _download_once(self, url: str, fileobj: IO[bytes], max_bytes: int) -> DownloadResult:
        _empty(fileobj)
        deadline = time.monotonic() + self.transport.request_seconds
        resp = self._follow_allowed_redirects(url)
        with resp:
            self.transport.raise_for_status(resp, url)
            declared = _content_length(resp)
            if declared is not None and declared > max_bytes:
                raise TooLarge(declared, max_bytes, url)
            digest, size = hashlib.sha256(), 0
            # Broken-off, slow-drip and overlong transfers end as TransientHTTPError in iter_body.
            for chunk in self.transport.iter_body(resp, f"download of {url}", deadline, UNBOUNDED):
                size += len(chunk)
                if size > max_bytes:
                    raise TooLarge(size, max_bytes, url)
                digest.update(chunk)
                fileobj.write(chunk)
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

    def _follow_allowed_redirects(self, url: str):
        """GET ``url`` (no key: the download host does not need it), following a redirect
        only to an allowed origin: a file is never fetched from anywhere else."""
        for _hop in range(MAX_REDIRECTS + 1):
            resp = self.transport.send("downloads", url, headers=self.download_headers, stream=True,
                                       allow_redirects=False)
            if not resp.is_redirect:
                return resp
            resp.close()
            url = urljoin(url, resp.headers["Location"])
            self.check_download_url(url)
        raise InvalidIdentifier(f"more than {MAX_REDIRECTS} redirects for an attachment: {url[:200]!r}")

    # -- plumbing

    def _get(self, endpoint: str, path: str, params: dict | None = None) -> dict:
        return self.transport.get_json(
            endpoint, self.base_url + path, params=params, headers={KEY_HEADER: self._api_key}
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


def _checked_items(raws: list, check: Callable[[object], dict], on_bad_item) -> Iterator[dict]:
    """The list page's items that pass ``check``; the others go to ``on_bad_item`` (or raise)."""
    for raw in raws:
        try:
            yield check(raw)
        except MalformedItem as exc:
            if on_bad_item is None:
                raise
            exc.raw = raw
            on_bad_item(exc)


def check_document_item(raw: object) -> dict:
    return _check_list_item(raw, "documents")


def check_comment_item(raw: object) -> dict:
    """A comment list item with a safe id and a parseable lastModifiedDate if it has one
    (older responses have none: such items are kept, they only cannot move the watermark),
    else MalformedItem."""
    item = _check_list_item(raw, "comments")
    lmd = item["attributes"].get("lastModifiedDate")
    if lmd is None:
        return _check_withdrawn(item)
    try:
        parse_api_time(lmd)
    except (TypeError, ValueError):
        raise MalformedItem(
            f"comment {item['id']}: bad lastModifiedDate {str(lmd)[:40]!r}", item["id"]
        ) from None
    return _check_withdrawn(item)


def _check_withdrawn(item: dict) -> dict:
    try:
        flag(item["attributes"], "withdrawn")
    except BadRecord as exc:
        raise MalformedItem(f"comment {item['id']}: {exc}", item["id"]) from None
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
