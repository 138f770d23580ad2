"""A local stand-in for regulations.gov v4, downloads.regulations.gov and the Federal Register search.

It serves any folder in the mirrulations layout (``raw-data/<agency>/<docket>/text-<docket>/...``
and ``binary-<docket>/...``) over real HTTP on loopback, answering like the real services do
(see ../shared/realdata/api-recordings): JSON:API content type, list ``meta`` blocks, summary-only
list items, page caps with 400s in the recorded error shape, US Eastern lastModifiedDate
filters, per-key hourly rate limits with ``X-Ratelimit-*`` headers, 403/429 api.data.gov bodies.

Fault switches (attributes, safe to set from a test while the server runs) make it misbehave
for the next N requests of any kind, in this order of precedence: ``reset_next`` (abort the
connection), ``fail_next_5xx`` (503), ``burst_429`` (429 with Retry-After: 1), ``html_error_next``
(200 with an HTML page), plus ``fail_5xx_rate`` (seeded random 503s), ``slow_seconds`` (delay
every answer) and ``truncate_next`` (send a Content-Length larger than the body, then close).
Per path, for as long as the entry stays: ``path_faults[path]`` = ``"html"`` (200 with an HTML
page), ``"truncate"`` (half the body, then close), ``"malformed"`` (200 with broken JSON),
``"403"`` (the key rejected, API_KEY_INVALID) or ``"redirect:URL"`` (302 to URL), and
``path_bodies[path]`` = bytes served as the JSON answer (a hostile record, exactly as given).

    python -m devtools.standin_server --root DIR --port 8765
"""

from __future__ import annotations

import argparse
import json
import mimetypes
import os
import random
import re
import signal
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime
from http.server import BaseHTTPRequestHandler
from pathlib import Path
from urllib.parse import parse_qs, urlencode, urlsplit
from zoneinfo import ZoneInfo

from devtools.loopback_http import LoopbackHttpServer

EASTERN = ZoneInfo("America/New_York")
JSONAPI_TYPE = "application/vnd.api+json;charset=utf-8"
REAL_API = "https://api.regulations.gov/v4"
REAL_DOWNLOADS = "https://downloads.regulations.gov"
UNAVAILABLE = "_UNAVAILABLE"

PAGE_SIZE_RANGE = (5, 250)
PAGE_NUMBER_RANGE = (1, 20)
DEFAULT_PAGE_SIZE = 25
FR_MAX_PER_PAGE = 1000

COMMENT_FILTERS = {
    "commentOnId",
    "docketId",
    "agencyId",
    "searchTerm",
    "lastModifiedDate",
    "postedDate",
}
DOCUMENT_FILTERS = {
    "docketId",
    "agencyId",
    "documentType",
    "searchTerm",
    "lastModifiedDate",
    "postedDate",
    "commentEndDate",
    "frDocNum",
    "withinCommentPeriod",
    "subtype",
}
SORT_FIELDS = {"lastModifiedDate", "documentId", "postedDate", "title"}

OVER_RATE_LIMIT = {
    "error": {
        "code": "OVER_RATE_LIMIT",
        "message": (
            "You have exceeded your rate limit. Try again later or contact us at "
            "https://api.data.gov:443/contact/ for assistance"
        ),
    }
}
API_KEY_INVALID = {
    "error": {
        "code": "API_KEY_INVALID",
        "message": ("An invalid api_key was supplied. Get one at https://api.data.gov:443"),
    }
}
API_KEY_MISSING = {
    "error": {
        "code": "API_KEY_MISSING",
        "message": ("No api_key was supplied. Get one at https://api.data.gov:443"),
    }
}
HTML_ERROR_PAGE = (
    b"<!DOCTYPE html><html><head><title>Service Temporarily Unavailable</title></head>"
    b"<body><h1>Service Temporarily Unavailable</h1><p>Please try again later.</p></body></html>"
)


# --------------------------------------------------------------------------- index


@dataclass
class IndexedItem:
    """One comment or document, with what list queries need; the full file is read on demand."""

    id: str
    kind: str  # "comments" | "documents"
    docket_id: str
    agency_id: str
    object_id: str
    comment_on: str | None  # the commented document's objectId (comments only)
    last_modified: str  # UTC ISO, as the API shows it
    last_modified_at: datetime
    posted_date: str | None
    title: str
    summary: dict
    path: Path


@dataclass
class MirrorIndex:
    dockets: dict[str, Path] = field(default_factory=dict)
    documents: dict[str, IndexedItem] = field(default_factory=dict)
    comments: dict[str, IndexedItem] = field(default_factory=dict)
    files: dict[tuple[str, str], Path] = field(
        default_factory=dict
    )  # (id, "attachment_1.pdf") -> path
    unavailable: set[str] = field(
        default_factory=set
    )  # ids and (id/filename) with _UNAVAILABLE markers
    comments_sorted: list[IndexedItem] = field(default_factory=list)
    comments_by_target: dict[str, list[IndexedItem]] = field(
        default_factory=dict
    )  # objectId -> sorted


def _utc_z(value: datetime) -> str:
    return value.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ")


def _parse_utc(value: str) -> datetime:
    return datetime.fromisoformat(value.replace("Z", "+00:00")).astimezone(UTC)


def _comment_summary(attrs: dict, last_modified: str) -> dict:
    # Key order as in the recorded real list items.
    return {
        "documentType": attrs.get("documentType"),
        "lastModifiedDate": last_modified,
        "highlightedContent": "",
        "withdrawn": bool(attrs.get("withdrawn")),
        "agencyId": attrs.get("agencyId"),
        "title": attrs.get("title"),
        "objectId": attrs.get("objectId"),
        "postedDate": attrs.get("postedDate"),
    }


def _document_summary(attrs: dict, last_modified: str) -> dict:
    keys = (
        "docketId",
        "documentType",
        "frDocNum",
        "subtype",
        "commentStartDate",
        "highlightedContent",
        "withdrawn",
        "agencyId",
        "commentEndDate",
        "title",
        "openForComment",
        "postedDate",
        "objectId",
    )
    summary = {key: attrs.get(key) for key in keys}
    summary["highlightedContent"] = ""
    summary["withdrawn"] = bool(attrs.get("withdrawn"))
    summary["openForComment"] = bool(attrs.get("openForComment"))
    summary["lastModifiedDate"] = last_modified
    return summary


class MirrorScanner:
    """Builds a MirrorIndex; keeps parsed entries keyed by (path, mtime, size) so reloads are cheap."""

    def __init__(self) -> None:
        self._cache: dict[Path, tuple[int, int, IndexedItem | None]] = {}

    def scan(self, root: Path) -> MirrorIndex:
        index = MirrorIndex()
        for text_dir in sorted(root.rglob("text-*")):
            if text_dir.is_dir():
                self._scan_text_dir(text_dir, index)
        for binary_dir in sorted(root.rglob("binary-*")):
            if binary_dir.is_dir():
                self._scan_binary_dir(binary_dir, index)
        index.comments_sorted = sorted(
            index.comments.values(), key=lambda c: (c.last_modified_at, c.id)
        )
        for comment in index.comments_sorted:
            index.comments_by_target.setdefault(comment.comment_on or "", []).append(comment)
        return index

    def _scan_text_dir(self, text_dir: Path, index: MirrorIndex) -> None:
        docket_id = text_dir.name[len("text-") :]
        for sub in ("docket", "dockets"):
            for path in _json_files(text_dir / sub, index):
                index.dockets[path.stem] = path
        for path in _json_files(text_dir / "documents", index):
            item = self._load(path, "documents", docket_id)
            if item is not None:
                index.documents[item.id] = item
        for path in _json_files(text_dir / "comments", index):
            item = self._load(path, "comments", docket_id)
            if item is not None:
                index.comments[item.id] = item

    def _scan_binary_dir(self, binary_dir: Path, index: MirrorIndex) -> None:
        for sub, marker in (
            ("comments_attachments", "_attachment_"),
            ("documents_attachments", "_content"),
        ):
            folder = binary_dir / sub
            if not folder.is_dir():
                continue
            for entry in os.scandir(folder):
                owner, sep, rest = entry.name.partition(marker)
                if not sep:
                    continue
                filename = marker.lstrip("_") + rest  # attachment_1.pdf / content.pdf
                if filename.endswith(UNAVAILABLE):
                    index.unavailable.add(f"{owner}/{filename[: -len(UNAVAILABLE)]}")
                else:
                    index.files[(owner, filename)] = Path(entry.path)

    def _load(self, path: Path, kind: str, docket_id: str) -> IndexedItem | None:
        stat = path.stat()
        cached = self._cache.get(path)
        if cached and cached[:2] == (stat.st_mtime_ns, stat.st_size):
            return cached[2]
        item = _read_item(path, kind, docket_id)
        self._cache[path] = (stat.st_mtime_ns, stat.st_size, item)
        return item


def _json_files(folder: Path, index: MirrorIndex) -> Iterable[Path]:
    if not folder.is_dir():
        return []
    found = []
    for entry in os.scandir(folder):
        if entry.name.endswith(UNAVAILABLE):
            index.unavailable.add(entry.name[: -len(UNAVAILABLE)])
        elif entry.name.endswith(".json"):
            found.append(Path(entry.path))
    # The collector keeps a re-downloaded record as ``<id>(<N>).json`` beside ``<id>.json``:
    # loaded in copy order, the highest copy is the one served.
    return sorted(found, key=_copy_order)


_COPY = re.compile(r"^(.*)\(([1-9][0-9]*)\)\.json$")


def _copy_order(path: Path) -> tuple[str, int]:
    match = _COPY.match(path.name)
    return (match[1], int(match[2])) if match else (path.name.removesuffix(".json"), 0)


def _read_item(path: Path, kind: str, docket_id: str) -> IndexedItem | None:
    try:
        data = json.loads(path.read_text(encoding="utf-8"))["data"]
        attrs = data["attributes"]
    except (ValueError, KeyError, TypeError):
        return None  # a broken mirror file is served as absent, like a failed fetch
    last_modified = (
        attrs.get("lastModifiedDate") or attrs.get("modifyDate") or attrs.get("postedDate")
    )
    if not last_modified:
        return None
    at = _parse_utc(last_modified)
    last_modified = _utc_z(at)
    summarise = _comment_summary if kind == "comments" else _document_summary
    return IndexedItem(
        id=data["id"],
        kind=kind,
        docket_id=attrs.get("docketId") or docket_id,
        agency_id=attrs.get("agencyId") or docket_id.split("-")[0],
        object_id=attrs.get("objectId") or "",
        comment_on=attrs.get("commentOn") if kind == "comments" else None,
        last_modified=last_modified,
        last_modified_at=at,
        posted_date=attrs.get("postedDate"),
        title=attrs.get("title") or "",
        summary=summarise(attrs, last_modified),
        path=path,
    )


# --------------------------------------------------------------------------- replies


@dataclass
class Reply:
    status: int
    body: bytes = b""
    content_type: str = JSONAPI_TYPE
    headers: dict[str, str] = field(default_factory=dict)


class ApiError(Exception):
    """Raised inside request handling; becomes a reply with the given status and body."""

    def __init__(self, status: int, body: dict) -> None:
        super().__init__(status)
        self.status = status
        self.body = body


def json_reply(status: int, body: dict, content_type: str = JSONAPI_TYPE) -> Reply:
    return Reply(status, json.dumps(body).encode("utf-8"), content_type)


def jsonapi_error(status: int, title: str, detail: str | None = None) -> ApiError:
    # The recorded 400 is {"errors":[{"status":"400","title":"Invalid filter field name: X"}]}.
    error = {"status": str(status), "title": title}
    if detail:
        error["detail"] = detail
    return ApiError(status, {"errors": [error]})


# --------------------------------------------------------------------------- server


class _Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive, as the real services (clients reuse connections)
    server_version = "standin"
    sys_version = ""
    # Headers and body go out as separate writes; without this each reply waits ~40 ms for
    # a delayed ACK (Nagle), which makes a backfill three times slower than it should be.
    disable_nagle_algorithm = True

    def do_GET(self) -> None:  # noqa: N802 (http.server naming)
        self.server.standin.handle(self)

    def log_message(self, format: str, *args) -> None:  # noqa: A002
        pass  # tests assert on request_log instead of stderr noise


class StandinServer(LoopbackHttpServer):
    """regulations.gov v4 + downloads + Federal Register search, answering from a mirror folder."""

    HANDLER = _Handler
    THREAD_NAME = "standin"

    def __init__(
        self,
        root: Path,
        *,
        host: str = "127.0.0.1",
        port: int = 0,
        api_keys: Iterable[str] = ("DEMO_KEY", "test-key"),
        hourly_limit: int = 1000,
        seed: int = 1234,
    ) -> None:
        self.root = Path(root)
        self.host = host
        self.port = port
        self.api_keys = set(api_keys)
        self.hourly_limit = hourly_limit
        # Fault switches (see module docstring).
        self.fail_5xx_rate = 0.0
        self.fail_next_5xx = 0
        self.burst_429 = 0
        self.slow_seconds = 0.0
        self.reset_next = 0
        self.truncate_next = 0
        self.html_error_next = 0
        # Which instant an ambiguous Eastern wall time (DST end) means: 0 = first (EDT), 1 = second.
        self.dst_fold = 0
        # Ids whose detail and files answer 404, as if they vanished upstream.
        self.gone: set[str] = set()
        # Per-path faults and raw bodies (see module docstring), e.g. "/v4/comments/X-0001".
        self.path_faults: dict[str, str] = {}
        self.path_bodies: dict[str, bytes] = {}
        self.request_log: list[tuple[str, str, dict[str, list[str]]]] = []
        self._rng = random.Random(seed)
        self._lock = threading.Lock()
        self._key_hits: dict[str, deque[float]] = {}
        self._scanner = MirrorScanner()
        self.index = MirrorIndex()

    # -- lifecycle

    def start(self) -> StandinServer:
        self.reload()
        return super().start()

    def reload(self) -> None:
        """Re-scan the folder (after a test changed it); unchanged files are not re-read."""
        index = self._scanner.scan(self.root)
        with self._lock:
            self.index = index

    @property
    def api_base(self) -> str:
        return self.url + "/v4"

    @property
    def downloads_base(self) -> str:
        return self.url + "/downloads"

    @property
    def fr_base(self) -> str:
        return self.url + "/fr/api/v1"

    # -- assertions

    def calls(self, endpoint_prefix: str) -> int:
        """How many logged requests have a path starting with ``endpoint_prefix`` (e.g. "/v4/comments")."""
        return sum(1 for _, path, _ in list(self.request_log) if path.startswith(endpoint_prefix))

    def reset_log(self) -> None:
        with self._lock:
            self.request_log.clear()

    # -- request handling

    def handle(self, handler: BaseHTTPRequestHandler) -> None:
        parts = urlsplit(handler.path)
        query = parse_qs(parts.query, keep_blank_values=True)
        with self._lock:
            logged = {k: v for k, v in query.items() if k != "api_key"}  # never keep keys around
            self.request_log.append((handler.command, parts.path, logged))
            fault = self._take_fault() or self.path_faults.get(parts.path)
            truncate = fault == "truncate" or (fault != "reset" and self._take("truncate_next"))
            raw = self.path_bodies.get(parts.path)
        if fault == "reset":
            _abort_connection(handler)
            return
        if self.slow_seconds:
            time.sleep(self.slow_seconds)
        reply = self._fault_reply(fault) or (Reply(200, raw) if raw is not None else None) \
            or self._route(handler, parts.path, query)
        _send(handler, reply, truncate)

    def _take(self, switch: str) -> bool:
        if getattr(self, switch) > 0:
            setattr(self, switch, getattr(self, switch) - 1)
            return True
        return False

    def _take_fault(self) -> str | None:
        for switch, fault in (
            ("reset_next", "reset"),
            ("fail_next_5xx", "503"),
            ("burst_429", "429"),
            ("html_error_next", "html"),
        ):
            if self._take(switch):
                return fault
        if self.fail_5xx_rate and self._rng.random() < self.fail_5xx_rate:
            return "503"
        return None

    @staticmethod
    def _fault_reply(fault: str | None) -> Reply | None:
        if fault == "503":
            return Reply(503, HTML_ERROR_PAGE, "text/html; charset=utf-8")
        if fault == "429":
            reply = json_reply(429, OVER_RATE_LIMIT, "application/json")
            reply.headers["Retry-After"] = "1"
            return reply
        if fault == "html":
            return Reply(200, HTML_ERROR_PAGE, "text/html; charset=utf-8")
        if fault == "malformed":
            return Reply(200, b'{"data": {"id": "x", "attributes": {"comment": "cut', JSONAPI_TYPE)
        if fault == "403":
            return json_reply(403, API_KEY_INVALID, "application/json")
        if fault and fault.startswith("redirect:"):
            reply = Reply(302, b"", "text/plain")
            reply.headers["Location"] = fault.removeprefix("redirect:")
            return reply
        return None

    def _route(self, handler: BaseHTTPRequestHandler, path: str, query: dict) -> Reply:
        try:
            if path.startswith("/v4/"):
                return self._api(handler, path, query)
            if path.startswith("/downloads/"):
                return self._download(path)
            if path == "/fr/api/v1/documents.json":
                return json_reply(200, self._fr_search(query), "application/json; charset=utf-8")
            if path.startswith("/fr/api/v1/documents/") and path.endswith(".json"):
                number = path[len("/fr/api/v1/documents/"):-len(".json")]
                return json_reply(200, self._fr_document(number), "application/json; charset=utf-8")
            raise jsonapi_error(404, "Not Found", f"no such endpoint: {path}")
        except ApiError as exc:
            return json_reply(exc.status, exc.body)

    # -- regulations.gov API

    def _api(self, handler: BaseHTTPRequestHandler, path: str, query: dict) -> Reply:
        key = handler.headers.get("X-Api-Key") or _last(query, "api_key")
        if not key:
            return json_reply(403, API_KEY_MISSING, "application/json")
        if key not in self.api_keys:
            return json_reply(403, API_KEY_INVALID, "application/json")
        remaining = self._count_hit(key)
        limit_headers = {
            "X-Ratelimit-Limit": str(self.hourly_limit),
            "X-Ratelimit-Remaining": str(max(remaining, 0)),
        }
        if remaining < 0:
            reply = json_reply(429, OVER_RATE_LIMIT, "application/json")
        else:
            try:
                reply = json_reply(200, self._api_body(path.split("/")[2:], query))
            except ApiError as exc:
                reply = json_reply(exc.status, exc.body)
        reply.headers.update(limit_headers)
        reply.headers["Access-Control-Allow-Origin"] = "*"
        return reply

    def _count_hit(self, key: str) -> int:
        """Record one request for ``key`` in its rolling hour; the remaining count, -1 when over."""
        now = time.monotonic()
        with self._lock:
            hits = self._key_hits.setdefault(key, deque())
            while hits and hits[0] <= now - 3600:
                hits.popleft()
            if len(hits) >= self.hourly_limit:
                return -1
            hits.append(now)
            return self.hourly_limit - len(hits)

    def _api_body(self, segments: list[str], query: dict) -> dict:
        match segments:
            case ["dockets", docket_id]:
                return self._docket(docket_id)
            case ["documents"]:
                return self._list(self._documents_matching(query), query, "documents")
            case ["comments"]:
                return self._list(self._comments_matching(query), query, "comments")
            case ["documents" | "comments" as kind, item_id]:
                return self._detail(kind, item_id, _last(query, "include") == "attachments")
        raise jsonapi_error(404, "Not Found", "/" + "/".join(["v4", *segments]))

    def _docket(self, docket_id: str) -> dict:
        path = self.index.dockets.get(docket_id)
        if path is None or docket_id in self.gone:
            raise jsonapi_error(404, "Not Found", f"Docket {docket_id} was not found")
        body = json.loads(self._rewrite_links(path.read_text(encoding="utf-8")))
        return {"data": body["data"]}

    def _detail(self, kind: str, item_id: str, include_attachments: bool) -> dict:
        item = getattr(self.index, kind).get(item_id)
        if item is None or item_id in self.gone:
            raise jsonapi_error(404, "Not Found", f"{kind[:-1].title()} {item_id} was not found")
        body = json.loads(self._rewrite_links(item.path.read_text(encoding="utf-8")))
        if not include_attachments:
            body.pop("included", None)
        return body

    def _rewrite_links(self, text: str) -> str:
        # Mirror files point at the real hosts; a client following fileUrl must land here.
        return text.replace(REAL_DOWNLOADS, self.downloads_base).replace(REAL_API, self.api_base)

    # -- lists

    def _comments_matching(self, query: dict) -> list[IndexedItem]:
        filters = _filters(query, COMMENT_FILTERS)
        items = self.index.comments_sorted
        if "commentOnId" in filters:
            items = self.index.comments_by_target.get(filters["commentOnId"], [])
        return self._common_filters(items, filters)

    def _documents_matching(self, query: dict) -> list[IndexedItem]:
        filters = _filters(query, DOCUMENT_FILTERS)
        items = sorted(self.index.documents.values(), key=lambda d: (d.last_modified_at, d.id))
        if "documentType" in filters:
            items = [d for d in items if d.summary.get("documentType") == filters["documentType"]]
        return self._common_filters(items, filters)

    def _common_filters(self, items: list[IndexedItem], filters: dict) -> list[IndexedItem]:
        if "docketId" in filters:
            items = [i for i in items if i.docket_id == filters["docketId"]]
        if "agencyId" in filters:
            items = [i for i in items if i.agency_id == filters["agencyId"]]
        if "searchTerm" in filters:
            term = filters["searchTerm"].lower()
            items = [i for i in items if term in i.title.lower() or term in i.id.lower()]
        if "lastModifiedDate[ge]" in filters:
            ge = self._eastern_to_utc(filters["lastModifiedDate[ge]"])
            items = [i for i in items if i.last_modified_at >= ge]
        if "lastModifiedDate[le]" in filters:
            le = self._eastern_to_utc(filters["lastModifiedDate[le]"])
            items = [i for i in items if i.last_modified_at <= le]
        return items

    def _eastern_to_utc(self, value: str) -> datetime:
        """The API reads lastModifiedDate filters as US Eastern wall time, YYYY-MM-DD HH:MM:SS."""
        try:
            wall = datetime.strptime(value, "%Y-%m-%d %H:%M:%S")
        except ValueError:
            raise jsonapi_error(400, f"Invalid date format for lastModifiedDate: {value}") from None
        return wall.replace(tzinfo=EASTERN, fold=self.dst_fold).astimezone(UTC)

    def _list(self, items: list[IndexedItem], query: dict, kind: str) -> dict:
        size = _int_param(query, "page[size]", DEFAULT_PAGE_SIZE, PAGE_SIZE_RANGE)
        number = _int_param(query, "page[number]", 1, PAGE_NUMBER_RANGE)
        items = _sorted(items, _last(query, "sort"))
        total = len(items)
        page = items[(number - 1) * size : number * size]
        total_pages = -(-total // size)
        return {
            "data": [self._list_item(item) for item in page],
            "meta": {
                "aggregations": _aggregations(items),
                "filters": {},
                "hasNextPage": number < total_pages,
                "hasPreviousPage": number > 1,
                "numberOfElements": len(page),
                "pageNumber": number,
                "pageSize": size,
                "totalElements": total,
                "totalPages": total_pages,
                "firstPage": number == 1,
                "lastPage": number >= total_pages,
            },
        }

    def _list_item(self, item: IndexedItem) -> dict:
        return {
            "id": item.id,
            "type": item.kind,
            "attributes": item.summary,
            "links": {"self": f"{self.api_base}/{item.kind}/{item.id}"},
        }

    # -- downloads

    def _download(self, path: str) -> Reply:
        segments = path.split("/")
        if len(segments) != 4:
            raise jsonapi_error(404, "Not Found")
        _, _, owner, filename = segments
        path_on_disk = self.index.files.get((owner, filename))
        if (
            path_on_disk is None
            or owner in self.gone
            or f"{owner}/{filename}" in self.index.unavailable
        ):
            return Reply(404, b"<Error><Code>NoSuchKey</Code></Error>", "application/xml")
        ctype = mimetypes.guess_type(filename)[0] or "application/octet-stream"
        return Reply(200, path_on_disk.read_bytes(), ctype)

    # -- Federal Register

    def _fr_search(self, query: dict) -> dict:
        # The real search takes agency slugs ("environmental-protection-agency"); the stand-in
        # has no slug table and matches the regulations.gov agencyId ("EPA"), case-insensitively.
        agencies = {a.lower() for a in query.get("conditions[agencies][]", [])}
        types = set(query.get("conditions[type][]", []))
        per_page = min(_int_param(query, "per_page", 20, (1, 10**9)), FR_MAX_PER_PAGE)
        page = _int_param(query, "page", 1, (1, 10**9))
        rules = [r for r in self._fr_rules() if not types or "PRORULE" in types]
        rules = [r for r in rules if not agencies or r["_agency"].lower() in agencies]
        rules = _fr_date_filter(rules, query)
        total_pages = -(-len(rules) // per_page)
        fields = query.get("fields[]") or ["document_number", "title", "publication_date", "type"]
        body: dict = {
            "count": len(rules),
            "description": "Documents matching your search (stand-in)",
            "total_pages": total_pages,
            "results": [
                {k: r.get(k) for k in fields}
                for r in rules[(page - 1) * per_page : page * per_page]
            ],
        }
        if page < total_pages:
            next_query = [(k, v) for k, vs in query.items() if k != "page" for v in vs] + [
                ("page", str(page + 1))
            ]
            body["next_page_url"] = f"{self.fr_base}/documents.json?{urlencode(next_query)}"
        return body

    def _fr_document(self, number: str) -> dict:
        """One Federal Register document: the dockets whose documents carry its number and
        their RINs, plus what a test added in ``fr_documents`` (a final rule naming the
        proposed rule's docket, as real records do)."""
        docs = [d for d in self.index.documents.values() if d.summary.get("frDocNum") == number]
        extra = getattr(self, "fr_documents", {}).get(number, {})
        if not docs and not extra:
            raise jsonapi_error(404, "Not Found", f"no Federal Register document {number}")
        dockets = list(dict.fromkeys([d.docket_id for d in docs] + list(extra.get("docket_ids", []))))
        rins = []
        for docket_id in dockets:
            path = self.index.dockets.get(docket_id)
            rin = json.loads(path.read_text(encoding="utf-8"))["data"]["attributes"].get("rin") if path else None
            if rin:
                rins.append(rin)
        rins = list(dict.fromkeys(rins + list(extra.get("regulation_id_numbers", []))))
        return {"document_number": number, "docket_ids": dockets, "regulation_id_numbers": rins,
                "regulations_dot_gov_info": {"document_id": docs[0].id} if docs else {}}

    def _fr_rules(self) -> list[dict]:
        """One PRORULE per comment-bearing document (it has comments or a comment period)."""
        commented = {c.comment_on for c in self.index.comments.values()}
        rules = []
        for doc in self.index.documents.values():
            attrs = doc.summary
            if doc.object_id not in commented and not attrs.get("commentStartDate"):
                continue
            rules.append(
                {
                    "_agency": doc.agency_id,
                    "document_number": attrs.get("frDocNum") or f"SI-{doc.id}",
                    "title": doc.title,
                    "type": "Proposed Rule",
                    "publication_date": _eastern_date(doc.posted_date),
                    "comments_close_on": _eastern_date(attrs.get("commentEndDate")),
                    "regulations_dot_gov_info": {
                        "agency_id": doc.agency_id,
                        "docket_id": doc.docket_id,
                        "document_id": doc.id,
                    },
                }
            )
        rules.sort(key=lambda r: (r["publication_date"] or "", r["document_number"]), reverse=True)
        return rules


# --------------------------------------------------------------------------- small pieces


def _last(query: dict, name: str) -> str | None:
    values = query.get(name)
    return values[-1] if values else None


def _filters(query: dict, allowed: set[str]) -> dict[str, str]:
    """``filter[x]`` / ``filter[x][ge]`` params as {"x": v, "x[ge]": v}; 400 for unknown names."""
    found = {}
    for name, values in query.items():
        if not name.startswith("filter["):
            continue
        inner = name[len("filter[") :]
        field_name, _, op = inner.partition("]")
        if field_name not in allowed:
            raise jsonapi_error(400, f"Invalid filter field name: {field_name}")
        found[field_name + op] = values[-1]
    return found


def _int_param(query: dict, name: str, default: int, bounds: tuple[int, int]) -> int:
    raw = _last(query, name)
    if raw is None:
        return default
    if not raw.strip().lstrip("-").isdigit() or not bounds[0] <= int(raw) <= bounds[1]:
        raise jsonapi_error(
            400, f"Invalid {name}: {raw}", f"{name} must be between {bounds[0]} and {bounds[1]}"
        )
    return int(raw)


def _sorted(items: list[IndexedItem], sort: str | None) -> list[IndexedItem]:
    if not sort or sort == "lastModifiedDate,documentId":
        return items  # the index keeps every list in this order already
    keys = [k.strip() for k in sort.split(",") if k.strip()]
    for key in reversed(keys):  # stable sorts, least significant key first
        name = key.lstrip("-")
        if name not in SORT_FIELDS:
            raise jsonapi_error(400, f"Invalid sort field: {name}")
        items = sorted(items, key=_sort_key(name), reverse=key.startswith("-"))
    return items


def _sort_key(name: str):
    return {
        "lastModifiedDate": lambda i: i.last_modified_at,
        "documentId": lambda i: i.id,
        "postedDate": lambda i: i.posted_date or "",
        "title": lambda i: i.title,
    }[name]


def _aggregations(items: list[IndexedItem]) -> dict:
    by_agency: dict[str, int] = {}
    for item in items:
        by_agency[item.agency_id] = by_agency.get(item.agency_id, 0) + 1
    return {
        "agencyId": [{"docCount": n, "value": a} for a, n in sorted(by_agency.items())],
        "postedDate": [],
    }


def _eastern_date(value: str | None) -> str | None:
    # regulations.gov stores dates as Eastern midnights / 23:59:59 in UTC; the FR shows the Eastern date.
    return _parse_utc(value).astimezone(EASTERN).date().isoformat() if value else None


def _fr_date_filter(rules: list[dict], query: dict) -> list[dict]:
    gte = _last(query, "conditions[publication_date][gte]")
    lte = _last(query, "conditions[publication_date][lte]")
    return [
        r
        for r in rules
        if (not gte or (r["publication_date"] or "") >= gte)
        and (not lte or (r["publication_date"] or "") <= lte)
    ]


def _send(handler: BaseHTTPRequestHandler, reply: Reply, truncate: bool) -> None:
    body = reply.body
    try:
        handler.send_response(reply.status)
        handler.send_header("Content-Type", reply.content_type)
        handler.send_header("Content-Length", str(len(body)))
        for name, value in reply.headers.items():
            handler.send_header(name, value)
        if truncate:
            # Promise the whole body, deliver half, hang up: a truncated transfer.
            handler.send_header("Connection", "close")
            handler.close_connection = True
            body = body[: len(body) // 2]
        handler.end_headers()
        handler.wfile.write(body)
        handler.wfile.flush()
    except (BrokenPipeError, ConnectionResetError):
        handler.close_connection = True


def _abort_connection(handler: BaseHTTPRequestHandler) -> None:
    """Close with a TCP RST (SO_LINGER 0): the client sees 'connection reset by peer'."""
    handler.close_connection = True
    try:
        handler.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
        handler.connection.close()
    except OSError:
        pass


def _interrupted(signum, frame) -> None:
    raise KeyboardInterrupt


def _stop_on_signals() -> None:
    """Ctrl-C (SIGINT) or a kill (SIGTERM) stops the server cleanly, also when it was started
    with SIGINT ignored: a background job of a non-interactive shell inherits that, and Python
    then installs no handler of its own (the CLI outlived its SIGINT in such a CI run)."""
    signal.signal(signal.SIGINT, _interrupted)
    signal.signal(signal.SIGTERM, _interrupted)


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument(
        "--root", type=Path, required=True, help="a folder in the mirrulations layout"
    )
    parser.add_argument("--host", default="127.0.0.1")
    parser.add_argument("--port", type=int, default=8765)
    parser.add_argument("--hourly-limit", type=int, default=1000)
    args = parser.parse_args(argv)
    _stop_on_signals()
    server = StandinServer(
        args.root, host=args.host, port=args.port, hourly_limit=args.hourly_limit
    ).start()
    print(
        f"stand-in serving {args.root} at {server.url} (API {server.api_base}, FR {server.fr_base})",
        flush=True,
    )
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        server.stop()


if __name__ == "__main__":
    main()
