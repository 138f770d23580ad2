"""A read-only mirrulations mirror: the public ``mirrulations`` S3 bucket, a private copy, or a folder.

Layout (relative to the mirror root)::

    raw-data/<agency>/<docket>/text-<docket>/{docket|dockets}/<docket>.json
    raw-data/<agency>/<docket>/text-<docket>/documents/<documentId>.json
    raw-data/<agency>/<docket>/text-<docket>/comments/<commentId>.json
    raw-data/<agency>/<docket>/binary-<docket>/comments_attachments/<commentId>_attachment_<n>.<ext>
    raw-data/<agency>/<docket>/binary-<docket>/documents_attachments/<documentId>_content[_<n>].<ext>

A failed fetch leaves ``<name>_UNAVAILABLE`` in place of the file: the thing named before
the suffix is gone. Every id and filename taken from a listing is validated with
``pipeline.ids`` and a bad one is reported in ``DocketListing.rejected``, never used as a
path or key.

The collector keeps a record it downloaded again beside the first copy, as
``<id>(1).json``, ``<id>(2).json``, …: of a record's copies the highest N is the record,
the others are ``DocketListing.superseded`` (filed under the item, never read).
"""

from __future__ import annotations

import errno
import logging
import os
import re
import stat
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import BinaryIO

from pipeline.counters import counters
from pipeline.errors import InvalidIdentifier
from pipeline.ids import (
    agency_of_docket,
    validate_filename,
    validate_id,
    validate_key,
    validate_prefix,
)
from pipeline.sources.payloads import DEFAULT_MAX_BYTES, DEFAULT_MAX_DEPTH, parse_json_object
from pipeline.sources.s3 import (
    BucketAccess,
    get_object,
    head_object,
    normalise_bucket_prefix,
    parse_store_url,
    s3_client,
)

log = logging.getLogger(__name__)

RAW_DATA = "raw-data/"
PUBLIC_BUCKET = "mirrulations"
TOMBSTONE_SUFFIX = "_UNAVAILABLE"
# Local-folder I/O; the same work on S3 counts as S3_GET / S3_LIST.
MIRROR_READS = "mirror_reads"
MIRROR_WALKS = "mirror_walks"

_COMMENT_BINARY = re.compile(r"^(?P<id>.+)_attachment_(?P<n>\d+)(?:\.(?P<ext>[A-Za-z0-9]+))?$")
# ``<id>.json`` or a re-downloaded copy ``<id>(<N>).json``, N a positive number without
# leading zeros; anything else in the brackets stays part of the id and fails its check.
_RECORD_JSON = re.compile(r"(?P<id>.+?)(?:\((?P<copy>[1-9][0-9]{0,5})\))?\.json", re.DOTALL)
_DOCUMENT_BINARY = re.compile(r"^(?P<id>.+)_content(?:_(?P<n>\d+))?(?:\.(?P<ext>[A-Za-z0-9]+))?$")


def _free() -> None:
    """No budget: a request costs nothing to ask for."""


@dataclass(frozen=True)
class DocketRef:
    agency: str
    docket_id: str


@dataclass(frozen=True)
class BinaryName:
    """A mirror binary file name, parsed: whose it is and what the pipeline calls it."""

    item_id: str
    kind: str  # "comment" or "document"
    n: int | None  # attachment number; None for a document's plain ``_content``
    ext: str  # lower case, without the dot; "" when the name has none

    @property
    def stem(self) -> str:
        if self.kind == "comment":
            return f"attachment_{self.n}"
        return "content" if self.n is None else f"content_{self.n}"

    @property
    def stored_name(self) -> str:
        """The file name the pipeline stores: ``attachment_<n>.<ext>``, ``content[_<n>].<ext>``."""
        return f"{self.stem}.{self.ext}" if self.ext else self.stem


def parse_binary_name(name: str, kind: str | None = None) -> BinaryName:
    """Parse ``<commentId>_attachment_<n>.<ext>`` or ``<docId>_content[_<n>].<ext>``.

    ``kind`` ("comment"/"document") restricts the pattern when the folder says which it is.
    Raises InvalidIdentifier when the name does not fit or its parts are unsafe.
    """
    for candidate_kind, pattern in (("comment", _COMMENT_BINARY), ("document", _DOCUMENT_BINARY)):
        if kind not in (None, candidate_kind):
            continue
        match = pattern.match(name)
        if match:
            parsed = BinaryName(
                item_id=validate_id(match["id"], f"{candidate_kind} id"),
                kind=candidate_kind,
                n=int(match["n"]) if match["n"] is not None else None,
                ext=(match["ext"] or "").lower(),
            )
            validate_filename(parsed.stored_name)
            return parsed
    raise InvalidIdentifier(f"not a mirror attachment name: {name!r}")


def stored_filename(mirror_name: str) -> str:
    """Map a mirror binary name to the stored filename, e.g. ``X_attachment_1.pdf`` → ``attachment_1.pdf``."""
    return parse_binary_name(mirror_name).stored_name


@dataclass(frozen=True)
class MirrorAttachment:
    item_id: str
    kind: str  # "comment" or "document"
    n: int | None
    ext: str
    key: str
    size: int

    @property
    def stored_name(self) -> str:
        return BinaryName(self.item_id, self.kind, self.n, self.ext).stored_name


@dataclass(frozen=True)
class Tombstone:
    """A ``_UNAVAILABLE`` marker: the mirror tried to fetch this thing and could not."""

    kind: str  # "docket", "document", "comment", or "attachment"
    item_id: str
    key: str
    attachment: str | None = None  # stored-name stem ("attachment_1", "content") for attachments


@dataclass(frozen=True)
class ListedObject:
    """One object as a listing shows it. S3 gives size, ETag and LastModified; a folder
    gives size and mtime (``etag`` None)."""

    key: str
    size: int
    etag: str | None
    modified: str  # S3 LastModified (ISO) or the file's mtime in nanoseconds

    @property
    def version(self) -> str:
        """What says the bytes changed: the ETag (a same-bytes rewrite keeps it), else mtime."""
        return f"etag:{self.etag}" if self.etag else f"mtime:{self.modified}"


@dataclass(frozen=True)
class Rejected:
    key: str
    reason: str


@dataclass
class DocketListing:
    agency: str
    docket_id: str
    prefix: str
    docket_key: str | None = None
    documents: dict[str, str] = field(default_factory=dict)  # document id → json key
    comments: dict[str, str] = field(default_factory=dict)  # comment id → json key
    attachments: dict[str, list[MirrorAttachment]] = field(default_factory=dict)  # item id → files
    tombstones: list[Tombstone] = field(default_factory=list)
    rejected: list[Rejected] = field(default_factory=list)
    ignored: list[str] = field(default_factory=list)  # keys outside what the pipeline reads
    # key -> item id: an older copy of a record a higher ``(N)`` copy replaces
    superseded: dict[str, str] = field(default_factory=dict)
    copies: dict[str, int] = field(default_factory=dict, compare=False)  # record key -> its N
    # every listed object by key: what change detection compares (mirror_listing)
    objects: dict[str, ListedObject] = field(default_factory=dict, compare=False)

    def gone_items(self) -> set[str]:
        return {t.item_id for t in self.tombstones if t.kind in ("comment", "document")}

    def owners(self) -> dict[str, str]:
        """Key -> the comment or document the object belongs to (its record, a file of it,
        a tombstone of either), for every object so filed; the rest (the docket's JSON or
        tombstone, a rejected or ignored key) belong to no item."""
        owned = {key: item_id for table in (self.comments, self.documents) for item_id, key in table.items()}
        owned.update((a.key, item_id) for item_id, files in self.attachments.items() for a in files)
        owned.update((t.key, t.item_id) for t in self.tombstones if t.kind != "docket")
        owned.update(self.superseded)
        return owned

    def gone_attachments(self) -> set[tuple[str, str]]:
        """(item id, stem) pairs, e.g. ("X-0004", "attachment_1")."""
        return {(t.item_id, t.attachment) for t in self.tombstones if t.kind == "attachment"}


def default_agency(docket_id: str) -> str:
    """The mirror files a docket under its agency (``pipeline.ids.agency_of_docket``)."""
    return agency_of_docket(docket_id)


class Mirror(ABC):
    """Read-only access to a mirror; keys are relative to the mirror root."""

    @abstractmethod
    def _list_entries(self, prefix: str, spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        """Every object under ``prefix`` with its size and version, in key order;
        ``spend()`` before each request (a run's budget: it raises ``BudgetSpent``)."""

    def _list_objects(self, prefix: str) -> Iterator[tuple[str, int]]:
        """(key, size) for every object under ``prefix``, in key order."""
        for entry in self._list_entries(prefix):
            yield entry.key, entry.size

    @abstractmethod
    def _list_folders(self, prefix: str) -> list[str]:
        """Names of the immediate sub-folders of ``prefix`` (which ends with '/')."""

    @abstractmethod
    def open_binary(self, key: str) -> BinaryIO: ...

    @abstractmethod
    def binary_size(self, key: str) -> int | None: ...

    @abstractmethod
    def _read_bytes(self, key: str) -> bytes: ...

    # Set from the settings by connect.mirror(); the defaults suit tests and tools.
    max_json_bytes = DEFAULT_MAX_BYTES
    max_json_depth = DEFAULT_MAX_DEPTH

    def read_json(self, key: str) -> dict:
        """A mirror JSON file within the size and depth limits (``parse_json_object``)."""
        return self.parse_json(self._read_bytes(validate_key(key)), key)

    def read_record(self, key: str) -> tuple[dict, bytes]:
        """A mirror JSON file parsed, and its bytes as read (fetch hands them to backfill
        through the store, so the object is read once)."""
        raw = self._read_bytes(validate_key(key))
        return self.parse_json(raw, key), raw

    def parse_json(self, raw: bytes, key: str) -> dict:
        return parse_json_object(raw, f"mirror file {key}", max_bytes=self.max_json_bytes,
                                 max_depth=self.max_json_depth)

    def list_dockets(self) -> list[DocketRef]:
        """Every docket folder in the mirror; unsafe folder names are logged and skipped."""
        refs = []
        for agency in self._safe_folders(RAW_DATA, "agency"):
            for docket_id in self._safe_folders(f"{RAW_DATA}{agency}/", "docket id"):
                refs.append(DocketRef(agency, docket_id))
        return refs

    def list_agency_dockets(self, agency: str) -> list[DocketRef]:
        """The dockets of one agency (``raw-data/<agency>/``): one delimited LIST."""
        agency = validate_id(agency, "agency")
        return [DocketRef(agency, d) for d in self._safe_folders(f"{RAW_DATA}{agency}/", "docket id")]

    def _safe_folders(self, prefix: str, what: str) -> list[str]:
        names = []
        for name in self._list_folders(prefix):
            try:
                names.append(validate_id(name, what))
            except InvalidIdentifier as error:
                log.warning("mirror: skipping %s%s: %s", prefix, name, error)
        return names

    def docket_listing(self, docket_id: str, agency: str | None = None, *,
                       spend: Callable[[], None] = _free) -> DocketListing:
        """One walk of the docket's folder, classified; call it only for open dockets."""
        agency = validate_id(agency or default_agency(docket_id), "agency")
        prefix = f"{RAW_DATA}{agency}/{validate_id(docket_id, 'docket id')}/"
        return listing_of(docket_id, agency, self._list_entries(prefix, spend))

    def docket_entries(self, docket_id: str, agency: str | None = None, *,
                       spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        """The objects of one walk of the docket's folder as they come, in no promised order,
        holding no more than the walk's page (S3: one LIST page; a folder: one directory
        entry at a time): what a caller that records the walk as it goes iterates."""
        agency = validate_id(agency or default_agency(docket_id), "agency")
        prefix = f"{RAW_DATA}{agency}/{validate_id(docket_id, 'docket id')}/"
        return self._stream_entries(prefix, spend)

    def _stream_entries(self, prefix: str, spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        """``_list_entries`` without the key order where keeping it costs memory."""
        return self._list_entries(prefix, spend)


def listing_of(docket_id: str, agency: str, entries: Iterable[ListedObject]) -> DocketListing:
    """A docket's objects classified: from a walk of its folder, or as the state DB recorded
    its last walk (``pipeline.store.mirror_objects``: backfill after a mirror fetch lists
    nothing again)."""
    validate_id(docket_id, "docket id")
    prefix = f"{RAW_DATA}{validate_id(agency, 'agency')}/{docket_id}/"
    listing = DocketListing(agency=agency, docket_id=docket_id, prefix=prefix)
    for entry in entries:
        listing.objects[entry.key] = entry
        _classify(listing, entry.key, entry.size)
    for files in listing.attachments.values():
        files.sort(key=lambda a: (a.n or 0, a.ext, a.key))
    return listing


def item_of(docket_id: str, agency: str, key: str) -> str:
    """The comment or document one object of the docket's folder belongs to (its record,
    a file of it, a tombstone of either), as ``listing_of`` files it; "" for any other
    object (the docket's JSON or tombstone, a rejected or ignored key). ``listing_of`` over
    the objects of some items alone gives those items what a listing of the whole docket
    gives them: an object is filed by its own key, never by another's."""
    listing = DocketListing(agency=agency, docket_id=docket_id, prefix=f"{RAW_DATA}{agency}/{docket_id}/")
    _classify(listing, key, 0)
    return listing.owners().get(key, "")


def _classify(listing: DocketListing, key: str, size: int) -> None:
    """File one object of a docket walk into the listing (or its rejected/ignored lists)."""
    try:
        validate_key(key)
    except InvalidIdentifier as error:
        listing.rejected.append(Rejected(key, str(error)))
        return
    parts = key[len(listing.prefix) :].split("/")
    docket = listing.docket_id
    if len(parts) != 3 or parts[0] not in (f"text-{docket}", f"binary-{docket}"):
        listing.ignored.append(key)
        return
    _, folder, name = parts
    try:
        if name.endswith(TOMBSTONE_SUFFIX):
            _add_tombstone(listing, folder, name.removesuffix(TOMBSTONE_SUFFIX), key)
        elif folder in ("docket", "dockets"):
            _add_docket_json(listing, name, key)
        elif folder in ("documents", "comments"):
            _add_item_file(listing, folder, name, key, size)
        elif folder in ("comments_attachments", "documents_attachments"):
            _add_attachment(listing, parse_binary_name(name, _FOLDER_KIND[folder]), key, size)
        else:
            listing.ignored.append(key)
    except InvalidIdentifier as error:
        listing.rejected.append(Rejected(key, str(error)))


_FOLDER_KIND = {
    "comments": "comment",
    "comments_attachments": "comment",
    "documents": "document",
    "documents_attachments": "document",
    "docket": "docket",
    "dockets": "docket",
}


def _add_docket_json(listing: DocketListing, name: str, key: str) -> None:
    if name != f"{listing.docket_id}.json":
        raise InvalidIdentifier(f"docket file for another docket: {name!r}")
    listing.docket_key = key


def _add_item_file(listing: DocketListing, folder: str, name: str, key: str, size: int) -> None:
    record = _RECORD_JSON.fullmatch(name)  # any character in the id: validate_id judges it
    if record:
        item_id = validate_id(record["id"], f"{_FOLDER_KIND[folder]} id")
        copy = int(record["copy"] or 0)
        target = listing.comments if folder == "comments" else listing.documents
        held = target.get(item_id)
        if held is not None and listing.copies.get(held, 0) > copy:
            listing.superseded[key] = item_id
            return
        if held is not None:
            listing.superseded[held] = item_id
        target[item_id] = key
        listing.copies[key] = copy
    elif _COMMENT_BINARY.match(name) or _DOCUMENT_BINARY.match(name):
        # Some mirror dockets keep a document's HTML content next to its JSON.
        _add_attachment(listing, parse_binary_name(name, _FOLDER_KIND[folder]), key, size)
    else:
        listing.ignored.append(key)


def _add_attachment(listing: DocketListing, binary: BinaryName, key: str, size: int) -> None:
    attachment = MirrorAttachment(binary.item_id, binary.kind, binary.n, binary.ext, key, size)
    listing.attachments.setdefault(binary.item_id, []).append(attachment)


def _add_tombstone(listing: DocketListing, folder: str, marked: str, key: str) -> None:
    """``marked`` is the name before ``_UNAVAILABLE``: an id, ``<id>.json`` or a binary name."""
    kind = _FOLDER_KIND.get(folder)
    if kind is None:
        listing.ignored.append(key)
        return
    if folder.endswith("_attachments") or _is_binary_name(marked, kind):
        binary = parse_binary_name(marked, kind)
        listing.tombstones.append(Tombstone("attachment", binary.item_id, key, binary.stem))
        return
    item_id = validate_id(marked.removesuffix(".json"), f"{kind} id")
    listing.tombstones.append(Tombstone(kind, item_id, key))


def _is_binary_name(name: str, kind: str) -> bool:
    pattern = {"comment": _COMMENT_BINARY, "document": _DOCUMENT_BINARY}.get(kind)
    return bool(pattern and pattern.match(name))


class LocalMirror(Mirror):
    """A folder with the mirror layout (e.g. a synced copy of part of the bucket)."""

    def __init__(self, root: Path) -> None:
        self.root = Path(root).resolve()
        self._root = str(self.root)

    def __repr__(self) -> str:
        return f"LocalMirror({str(self.root)!r})"

    def _path(self, key: str) -> str:
        # A plain string: pathlib interns every part of every path it builds, and a docket's
        # file names (one per comment) would fill the interpreter's table of interned strings
        # for the life of the process (a mirror backfill's memory grew with the docket).
        return os.path.join(self._root, validate_key(key))

    def _list_entries(self, prefix: str, spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        # The one walk of the folder (``_stream_entries``), in key order, as S3 lists.
        yield from sorted(self._stream_entries(prefix, spend), key=lambda entry: entry.key)

    def _stream_entries(self, prefix: str, spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        """The folder's objects as ``os.scandir`` gives them: one directory entry at a time
        (``os.walk`` would hold a directory's names, the docket's comments folder whole). A
        symlinked folder is neither entered nor listed; lstat never follows a link or blocks
        on a FIFO, and whatever is not a regular file is listed as found and refused when
        read (``_open_regular``), so its item fails with a reason instead of vanishing;
        unreadable folders are skipped."""
        validate_prefix(prefix)
        spend()  # one walk of the folder
        folders = [(os.path.join(self._root, prefix), "" if not prefix else prefix.rstrip("/") + "/")]
        while folders:
            folder, base = folders.pop()
            try:
                scan = os.scandir(folder)
            except OSError:
                continue
            with scan:
                for entry in scan:
                    try:
                        is_dir = entry.is_dir()
                    except OSError:
                        is_dir = False
                    if is_dir:
                        if not entry.is_symlink():
                            folders.append((entry.path, f"{base}{entry.name}/"))
                        continue
                    info = entry.stat(follow_symlinks=False)  # os.lstat, as the walk does
                    yield ListedObject(base + entry.name, info.st_size, None, str(info.st_mtime_ns))
        counters.incr(MIRROR_WALKS)

    def _open_regular(self, key: str) -> BinaryIO:
        """The mirror is data, not a file system to walk: a regular file inside the root only
        — no symlink (anywhere on the path), FIFO, device or path resolving outside."""
        path = self._path(key)
        parent = os.path.dirname(path)
        inside = parent == self._root or parent.startswith(self._root + os.sep)
        if os.path.realpath(parent) != parent or not inside:
            raise InvalidIdentifier(f"mirror object {key} is reached through a symlinked folder")
        try:
            # O_NONBLOCK: opening a FIFO must not wait for a writer; O_NOFOLLOW: no symlink.
            fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
        except OSError as error:
            if error.errno == errno.ELOOP:
                raise InvalidIdentifier(f"mirror object {key} is a symlink, not a file") from None
            raise
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise InvalidIdentifier(f"mirror object {key} is not a regular file")
        os.set_blocking(fd, True)
        return os.fdopen(fd, "rb")

    def _list_folders(self, prefix: str) -> list[str]:
        folder = self.root / validate_prefix(prefix)
        if not folder.is_dir():
            return []
        return sorted(entry.name for entry in os.scandir(folder) if entry.is_dir())

    def _read_bytes(self, key: str) -> bytes:
        counters.incr(MIRROR_READS)
        with self._open_regular(key) as handle:
            return handle.read()

    def open_binary(self, key: str) -> BinaryIO:
        counters.incr(MIRROR_READS)
        return self._open_regular(key)

    def binary_size(self, key: str) -> int | None:
        try:
            return os.lstat(self._path(key)).st_size
        except FileNotFoundError:
            return None


class S3Mirror(Mirror):
    """The mirror in S3: the public ``mirrulations`` bucket or a private copy, read through
    one ``BucketAccess`` (one boto3 client, shared by every reader thread; signed or not as
    the bucket allows, see ``pipeline.sources.s3``)."""

    def __init__(
        self, bucket: str, prefix: str = "", *, client=None, access: BucketAccess | None = None,
        page_size: int = 1000,
    ) -> None:
        self.bucket = bucket
        self.prefix = normalise_bucket_prefix(prefix)
        # A client given as it is is used as it is: no unsigned-first, no second try.
        self.access = access or BucketAccess(bucket, lambda unsigned: client, unsigned=False)
        self.page_size = page_size  # S3's own maximum is 1000 keys per LIST

    def __repr__(self) -> str:
        return f"S3Mirror('s3://{self.bucket}/{self.prefix}')"

    @property
    def client(self):
        return self.access.client

    def _pages(self, prefix: str, spend: Callable[[], None] = _free, **extra) -> Iterator[dict]:
        return self.access.pages(
            self.prefix + validate_prefix(prefix),
            Bucket=self.bucket,
            Prefix=self.prefix + validate_prefix(prefix),
            PaginationConfig={"PageSize": self.page_size},
            spend=spend,
            **extra,
        )

    def _list_entries(self, prefix: str, spend: Callable[[], None] = _free) -> Iterator[ListedObject]:
        for page in self._pages(prefix, spend):
            for item in page.get("Contents", []):
                yield ListedObject(item["Key"][len(self.prefix) :], int(item["Size"]),
                                   item.get("ETag") or None, item["LastModified"].isoformat())

    def _list_folders(self, prefix: str) -> list[str]:
        start = len(self.prefix + prefix)
        return [
            common["Prefix"][start:].rstrip("/")
            for page in self._pages(prefix, Delimiter="/")
            for common in page.get("CommonPrefixes", [])
        ]

    def _get(self, key: str) -> dict:
        full = self.prefix + validate_key(key)
        return self.access.call(lambda client: get_object(client, self.bucket, full), full)

    def _read_bytes(self, key: str) -> bytes:
        with self._get(key)["Body"] as body:
            return body.read()

    def open_binary(self, key: str) -> BinaryIO:
        return self._get(key)["Body"]

    def binary_size(self, key: str) -> int | None:
        full = self.prefix + validate_key(key)
        head = self.access.call(lambda client: head_object(client, self.bucket, full), full)
        return None if head is None else int(head["ContentLength"])


def open_mirror(
    url: str, *, s3_endpoint_url: str | None = None, unsigned: bool | None = None,
    concurrency: int = 16, retry_mode: str = "standard", max_attempts: int = 8,
) -> Mirror:
    """``s3://bucket[/prefix]``, ``file:///path`` or a plain path.

    ``unsigned``: None (auto) reads a bucket unsigned first and signs with boto3's usual
    credentials (environment, profile) once the bucket refuses (``BucketAccess``); True or
    False forces one way. ``concurrency`` sizes the client's connection pool to the
    readers that share it; ``retry_mode`` and ``max_attempts`` are botocore's retries.
    """
    where = parse_store_url(url, "mirror URL")
    if isinstance(where, Path):
        return LocalMirror(where)
    bucket, prefix = where

    def make_client(unsigned: bool):
        return s3_client(endpoint_url=s3_endpoint_url, unsigned=unsigned, max_connections=concurrency,
                         retry_mode=retry_mode, max_attempts=max_attempts)

    return S3Mirror(bucket, prefix, access=BucketAccess(bucket, make_client, unsigned, s3_endpoint_url))
