"""Where backfill reads an item's detail record and files: the API, the mirror (and the
hybrid of ``pipeline.backfill.hybrid``), each a ``BackfillSource``; and how a detail
record's declared files are named, the same for every source.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Protocol

from pipeline.clock import iso, utcnow
from pipeline.counters import counters
from pipeline.engine.stage import StageResult
from pipeline.errors import BadRecord, Gone, InvalidIdentifier, NotMirroredYet
from pipeline.extract.readers import can_read
from pipeline.ids import validate_filename
from pipeline.sources import records
from pipeline.sources.mirror import DocketListing, ListedObject, default_agency, item_of, listing_of
from pipeline.store import mirror_objects
from pipeline.store.blobs import IngestResult, attachment_key
from pipeline.store.models import Docket, Item


@dataclass(frozen=True)
class FileRef:
    """One attachment file to have: where it comes from and what it will be called."""

    filename: str
    ordinal: int
    format: str
    size: int | None
    url: str | None = None  # API download
    mirror_key: str | None = None  # mirror binary
    mirror_size: int | None = None  # its size in the mirror listing
    tombstoned: bool = False  # the mirror marked it _UNAVAILABLE
    title: str | None = None  # the included attachment's own title
    declared_url: str | None = None  # the record's fileUrl, whichever source the bytes come from
    refused: str | None = None  # why this declared file is not fetched (an unsafe name): its own failure


RECORD_BATCH = 100  # decided items whose rows are written in one transaction (mirror sources)


MIRROR_HELD = "backfill.mirror_objects_held"  # peak: the most listed objects one pass held


class ReadInStageThread(Exception):  # noqa: N818 - a hand-over, not an error
    """A reader thread met a read only the stage's thread may make (the API's)."""


def ranked_formats(formats, preference: list[str]) -> list[dict]:
    usable = [f for f in formats or [] if isinstance(f, dict) and isinstance(f.get("fileUrl"), str)]
    return sorted(usable, key=lambda f: _rank(str(f.get("format", "")).lower(), preference))


def _rank(fmt: str, preference: list[str]) -> tuple[bool, int]:
    """Formats this installation can read come first (a .doc without antiword would come out
    ``unsupported`` while the PDF beside it reads); then the configured preference."""
    return not can_read(fmt), preference.index(fmt) if fmt in preference else len(preference)


def declared_files(body: dict, preference: list[str]) -> list[list[FileRef]]:
    """Per file the detail record declares, its candidate refs, best format first.

    A document's own ``fileFormats`` is its content file (``content.<ext>``); each
    included attachment is ``attachment_<n>.<ext>`` as its download URL names it.
    """
    files = []
    own = records.attributes_of(body.get("data"), "data").get("fileFormats")
    if isinstance(own, list) and own:
        files.append(_candidates(own, preference, 0, "content"))
    for n, attachment in enumerate(records.included_attachments(body), start=1):
        attrs = records.attributes_of(attachment, f"included attachment {n}")
        order = records.bounded_int(attrs, "docOrder", records.MAX_ORDINAL)
        refs = _candidates(attrs.get("fileFormats"), preference, n if order is None else order, None)
        title = records.text(attrs, "title")
        files.append([replace(ref, title=title) for ref in refs])
    return [candidates for candidates in files if candidates]


def _candidates(formats, preference: list[str], ordinal: int, stem: str | None) -> list[FileRef]:
    """The file's formats as refs, best first. A format whose URL names no safe file (``..``,
    a NUL) is left out; when every format is unsafe the file is one ref that names why, under
    a safe name of its own (``unsafe_name_<ordinal>``): that file's failure, not the item's,
    so the comment's body and its other files are still kept."""
    refs, unsafe = [], []
    for chosen in ranked_formats(formats, preference):
        url = records.file_url(chosen)
        name = url.rstrip("/").rsplit("/", 1)[-1]
        if stem:
            name = f"{stem}.{name.rsplit('.', 1)[-1]}" if "." in name else f"{stem}.bin"
        size = records.bounded_int(chosen, "size", records.MAX_SIZE)
        fmt = str(chosen.get("format", "")).lower()
        try:
            refs.append(FileRef(validate_filename(name.lower()), ordinal, fmt, size, url=url, declared_url=url))
        except InvalidIdentifier as exc:
            unsafe.append(FileRef(f"unsafe_name_{ordinal}", ordinal, fmt, size, refused=str(exc)[:300],
                                  declared_url=url))
    return refs or unsafe[:1]


def _stem(filename: str) -> str:
    return filename.rsplit(".", 1)[0]


class BackfillSource(Protocol):
    """What backfill asks of a source, a todo page at a time: ``ApiSource``, ``MirrorSource``
    and ``pipeline.backfill.hybrid.HybridSource`` are each one; the stage knows no other."""

    concurrency: int  # readers at once (1: the stage's own thread only)
    record_batch: int  # decided items whose rows are written in one transaction

    def expect(self, todo: list[Item]) -> None:
        """The page's items, before any is read (a source may list or load their objects)."""

    def record_for(self, item: Item) -> str | None:
        """The detail record already read for ``item`` (handed over by fetch), if any."""

    def release(self) -> None:
        """The page is done: what was held for it may go."""

    def detail(self, item: Item, record: str | None = None) -> dict:
        """The item's detail record (``record``: the one handed over, when there is one)."""

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        """The files to have for the item, named as every source names them."""

    def lists_attachments(self, item: Item, body: dict, refs: list[FileRef]) -> bool:
        """Do ``refs`` name every attachment the item has (else their number is unknown)?"""

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir) -> IngestResult:
        """The file's bytes in the blob store (stored once by content)."""

    def add_calls(self, result: StageResult) -> None:
        """The requests this source made, counted on the stage's result."""


class ApiSource:
    """Details from ``/comments/{id}?include=attachments``, files from their fileUrl.

    One request at a time: the API is paced and budgeted per key, so reading ahead would
    buy nothing but a harder budget to keep; each item is recorded as soon as it is decided
    (a kill loses no request of the key's budget)."""

    concurrency = 1
    record_batch = 1

    def __init__(self, api) -> None:
        self.api = api

    def expect(self, todo: list[Item]) -> None:
        pass

    def record_for(self, item: Item) -> None:
        return None  # nothing is handed over: every detail is asked for

    def release(self) -> None:
        pass

    def detail(self, item: Item, record: str | None = None) -> dict:
        if item.kind == "document":
            return self.api.get_document(item.key)
        return self.api.get_comment(item.key)

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        return [candidates[0] for candidates in declared_files(body, preference)]

    def lists_attachments(self, item: Item, body: dict, refs: list[FileRef]) -> bool:
        return True  # asked with include=attachments: a response without ``included`` has none

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir) -> IngestResult:
        (data_dir / "tmp").mkdir(exist_ok=True)
        # An unnamed temporary file vanishes with the process: a kill leaves nothing behind.
        with tempfile.TemporaryFile(dir=data_dir / "tmp") as spool:
            # The client retries a truncated body from scratch and checks Content-Length.
            got = self.api.download(ref.url, spool, max_bytes=max_bytes)
            key = attachment_key(got.sha256)
            if blobs.exists(key):  # the same bytes are stored already: no second copy
                return IngestResult(got.sha256, got.size, key, created=False)
            spool.seek(0)
            return blobs.ingest(spool, max_bytes=max_bytes, expected_size=got.size)

    def add_calls(self, result: StageResult) -> None:
        for endpoint, n in self.api.stats().items():
            result.add(f"api.{endpoint}", n)


class MirrorSource:
    """Details and files from a mirrulations-layout mirror; the docket is listed once, lazily.

    Only a docket with items to do gets here, so a docket with nothing to do lists nothing.
    With ``stored_listing`` (fetch listed the docket from the mirror) the listing is the one
    fetch recorded, read from the state DB in the stage's thread, and the records fetch read
    are handed over (``record_for``): neither is asked of the mirror again.

    No listing is held whole. Each todo page reads the objects of its own items alone and
    files them with ``listing_of``, as a listing of the whole docket would have filed them:
    from the stored listing by item (``mirror_object.item``, filed by the mirror fetch; rows
    an older fetch left unfiled are filed here once, in keyset pages), so a backfill of 40 new
    comments reads their objects and writes nothing for the rest of the docket; or, without
    a stored listing, from the mirror's walk, recorded at the first todo page as it comes into
    ``mirror_scan``, each object under its item (``pipeline.sources.mirror.item_of``), in
    batches. What is held at once: one LIST page or directory entry and one write batch while
    recording or filing, then one todo page's objects.
    """

    def __init__(self, mirror, docket: Docket, concurrency: int = 1, *, stored_listing: bool = False,
                 clock: Callable | None = None) -> None:
        self.mirror = mirror
        self.docket = docket
        self.agency = docket.agency or default_agency(docket.id)
        self.concurrency = concurrency  # readers at once: S3 and folder reads mostly wait
        self.record_batch = RECORD_BATCH
        self.stored_listing = stored_listing
        self._clock = clock or utcnow
        self._scan: str | None = None  # the run's recorded walk, once recorded
        self._filed = False  # the stored listing's rows all filed by item
        self._page = DocketListing(self.agency, docket.id, "")  # the todo page's objects, filed
        self._gone_items: set[str] = set()
        self._gone_files: set[tuple[str, str]] = set()
        self._handover = HandedOver() if stored_listing else None

    def _record_listing(self) -> str:
        """The docket's walk recorded by item, as it comes (stage thread)."""
        now = iso(self._clock())
        scan = mirror_objects.new_scan(self.docket.id, now)
        entries = self.mirror.docket_entries(self.docket.id, self.docket.agency)
        owned = ((item_id, entry) for entry in entries
                 if (item_id := item_of(self.docket.id, self.agency, entry.key)))
        self._scan = scan  # set first: a walk that breaks off leaves rows release() drops
        mirror_objects.record_scan(scan, self.docket.id, owned, now)
        return scan

    def _file_stored_listing(self) -> None:
        """The stored rows no fetch filed (left by an older fetch) filed by item, a
        keyset page at a time (stage thread); a docket's rows are filed once."""
        for keys in mirror_objects.unfiled(self.docket.id):
            owners = listing_of(self.docket.id, self.agency,
                                (ListedObject(key, 0, None, "") for key in keys)).owners()
            mirror_objects.file([(owners.get(key, ""), key) for key in keys])
        self._filed = True

    def _objects_of(self, todo: list[Item]) -> list[tuple[str, int, str | None, str]]:
        keys = [item.key for item in todo]
        if self.stored_listing:
            if not self._filed:
                self._file_stored_listing()
            return mirror_objects.objects_of(self.docket.id, keys)
        if self._scan is None:
            self._record_listing()
        return mirror_objects.scanned(self._scan, keys)

    def _record_key(self, item: Item) -> str | None:
        table = self._page.documents if item.kind == "document" else self._page.comments
        return table.get(item.key)

    def expect(self, todo: list[Item]) -> None:
        """The items in the order their jobs will be made (stage thread), before any of them
        is handed out: the docket is listed at the first page (a refused listing stops the
        run with no item marked), and each page's objects are read for its items."""
        rows = self._objects_of(todo)
        page = listing_of(self.docket.id, self.agency, (ListedObject(*row) for row in rows))
        counters.note_peak(MIRROR_HELD, len(page.objects))
        self._gone_items, self._gone_files = page.gone_items(), page.gone_attachments()
        self._page = page  # the readers of the page before are done (read_ahead waits for them)
        if self._handover is not None:
            self._handover.expect([self._record_key(item) for item in todo])

    def record_for(self, item: Item) -> str | None:
        """The record fetch read for the item, if it is still held (stage thread)."""
        if self._handover is None or item.key in self._gone_items:
            return None
        return self._handover.take(self._record_key(item))

    def release(self) -> None:
        try:
            if self._handover is not None:
                self._handover.release()
        finally:
            if self._scan is not None:
                mirror_objects.drop_scan(self._scan)
                self._scan = None

    def detail(self, item: Item, record: str | None = None) -> dict:
        table = self._page.documents if item.kind == "document" else self._page.comments
        if item.key in self._gone_items:
            raise Gone(f"{item.key}: marked unavailable in the mirror")
        if item.key not in table:
            raise NotMirroredYet(f"{item.key}: not in the mirror yet")
        if record is not None:
            body = self.mirror.parse_json(record, table[item.key])
        else:
            body = self.mirror.read_json(table[item.key])
        if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
            raise BadRecord(f"{item.key}: mirror JSON has no data object")
        return body

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        held = {a.stored_name: a for a in self._page.attachments.get(item.key, [])}
        gone = {stem for key, stem in self._gone_files if key == item.key}
        refs = [self._pick(candidates, held, gone) for candidates in declared_files(body, preference)]
        named = {_stem(ref.filename) for ref in refs}
        refs.extend(self._undeclared(held, named, preference))
        refs.extend(FileRef(stem, 0, "", None, tombstoned=True)
                    for stem in sorted(gone - named - {_stem(n) for n in held}))
        return refs

    def lists_attachments(self, item: Item, body: dict, refs: list[FileRef]) -> bool:
        """The record lists them (``records.lists_attachments``), or the binary folder holds
        the item's files (a record without ``included``): those are the rows."""
        return records.lists_attachments(body) or any(ref.mirror_key or ref.tombstoned for ref in refs)

    @staticmethod
    def _pick(candidates: list[FileRef], held: dict, gone: set[str]) -> FileRef:
        """The best declared format the mirror holds; else the best one, gone or not yet there."""
        for ref in candidates:
            if ref.filename in held:
                found = held[ref.filename]
                return replace(ref, url=None, mirror_key=found.key, mirror_size=found.size)
        return replace(candidates[0], url=None, tombstoned=_stem(candidates[0].filename) in gone)

    @staticmethod
    def _undeclared(held: dict, named: set[str], preference: list[str]) -> list[FileRef]:
        """Binaries the detail record does not mention (some mirror documents): kept as found."""
        by_stem: dict[str, list] = {}
        for name, attachment in held.items():
            if _stem(name) not in named:
                by_stem.setdefault(_stem(name), []).append(attachment)
        refs = []
        for _stem_name, choices in sorted(by_stem.items()):
            best = min(choices, key=lambda a: _rank(a.ext.lower(), preference))
            # No declared size: the record says nothing of it (the listing's size is checked).
            refs.append(FileRef(validate_filename(best.stored_name), best.n or 0, best.ext.lower(),
                                None, mirror_key=best.key, mirror_size=best.size))
        return refs

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir) -> IngestResult:
        if ref.tombstoned:
            raise Gone("marked unavailable in the mirror")
        if ref.mirror_key is None:
            raise NotMirroredYet(f"{ref.filename}: not in the mirror yet")
        with self.mirror.open_binary(ref.mirror_key) as stream:
            # The listed size is what the mirror holds: a stream ending early is never stored.
            return blobs.ingest(stream, max_bytes=max_bytes, expected_size=ref.mirror_size)

    def add_calls(self, result: StageResult) -> None:
        pass


class HandedOver:
    """The JSON fetch read for backfill (``mirror_object.body``), read a page at a time in
    the order the items are handled, and dropped once used: memory holds one page, and the
    keys used of one todo page (dropped in the store when the next page starts, its page's
    rows written by then; the run's whole list of them grew with the docket)."""

    PAGE = 500

    def __init__(self) -> None:
        self._order: list[str] = []
        self._position: dict[str, int] = {}
        self._next = 0
        self._loaded: dict[str, str] = {}
        self._used: list[str] = []

    def expect(self, keys: list[str | None]) -> None:
        # Called once per todo page (backfill pages its todo): each page starts afresh.
        self.release()
        self._order = [key for key in keys if key]
        self._position = {key: n for n, key in enumerate(self._order)}
        self._next, self._loaded = 0, {}

    def take(self, key: str | None) -> str | None:
        position = self._position.get(key) if key else None
        if position is None:
            return None
        while self._next <= position:
            page = self._order[self._next:self._next + self.PAGE]
            self._next += self.PAGE
            self._loaded.update(mirror_objects.handed_over(page))
        record = self._loaded.pop(key, None)
        if record is not None:
            self._used.append(key)
        return record

    def release(self) -> None:
        if self._used:
            mirror_objects.release_handed_over(self._used)
            self._used = []
