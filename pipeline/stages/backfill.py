"""Backfill: per-item detail records and attachment bytes, from the API or the mirror.

An item needs work when its detail was never fetched, its list summary changed since, or
its row was left ``pending``/``stale``. Attachment rows are keyed ``(item, filename)``
and blobs by sha256: a rerun creates no row and copies no byte, and a file attached to two
comments is stored once.

Both sources name files the same way, from the detail record's ``fileFormats`` URLs
(``attachment_1.pdf``, ``content.pdf``), so a docket backfilled from the API and one
backfilled from the mirror end with the same attachment rows and file states.

A sealed docket is not skipped here: the target already prunes a docket whose backfill
completed under its seal, and one that sealed while items were still left (a run stopped
at its budget, then fetch sealed the docket) must still finish them. Either way the item
selection is one query, so a docket with nothing to do costs no request, LIST or GET.
"""

from __future__ import annotations

import logging
import tempfile
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass, replace
from operator import attrgetter

from pipeline.clock import iso, utcnow
from pipeline.counters import counters
from pipeline.errors import BadRecord, BudgetSpent, Gone, NotMirroredYet
from pipeline.extract.readers import can_read
from pipeline.failures import PERMANENT, RETRY, Failure, RetryPolicy, classify, item_failure
from pipeline.ids import validate_filename
from pipeline.read_ahead import read_ahead
from pipeline.sources import connect, records
from pipeline.sources.mirror import DocketListing, ListedObject, default_agency, item_of, listing_of
from pipeline.stages.base import Stage, StageContext, StageResult
from pipeline.store import item_states, items, mirror_objects
from pipeline.store.blobs import IngestResult, attachment_key
from pipeline.store.models import Attachment, Docket, Item, database

log = logging.getLogger("docketeer")
STAGE = "backfill"
FILE_STAGE = "backfill.file"
# Worst first: the item takes the worst state of its files ("retry": one waits to be tried again).
FILE_STATE_ORDER = (RETRY, "failed", "too_large", "gone")


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


def backfill_docket(ctx: StageContext, docket: Docket, *, api=None, mirror=None) -> StageResult:
    now = iso(ctx.clock())
    owed = sum(len(page) for page in _todo_pages(docket.id, ctx.force, now))
    result = StageResult()
    if not owed:
        return result
    if docket.sealed_at:
        log.info("%s: sealed %s with %d items left to backfill", docket.id, docket.sealed_at, owed)
    source = _make_source(ctx, docket, api, mirror)
    reader = ItemReader(ctx, source)
    decided = DecidedRows(source.record_batch, ctx.claims)
    ctx.progress.start(owed)
    try:
        for todo in _todo_pages(docket.id, ctx.force, now):
            counters.note_peak(BACKFILL_HELD, len(todo))
            reader.read_stored(docket.id, todo)
            source.expect(todo)
            # The reads of the next items overlap (pipeline/read_ahead.py); each item's
            # decision and rows are taken here, in order, as a plain loop would.
            for job, read in read_ahead(reader.read, _taken(ctx, todo), source.concurrency, ctx.check_time,
                                        reader.job, reader.before_reading):
                outcome = backfill_item(ctx, job, reader.in_stage_thread(job, read), result, decided)
                decided.item_done(job.item.key)
                ctx.progress.advance(outcome)
            decided.write()
    except BudgetSpent as exc:
        # Items handed out and not decided stay pending: the next run picks them up.
        result.budget_spent, result.message = True, str(exc)
    finally:
        try:
            decided.write()  # what was decided is kept, whatever stopped the run
        finally:
            source.add_calls(result)
            source.release()
    return result


def _taken(ctx: StageContext, todo: list[Item]) -> Iterable[Item]:
    """The page's items this worker works: all of them, or, when the run shares its items
    with other workers (``ctx.claims``), those it claims, in the page's (key) order."""
    return todo if ctx.claims is None else ctx.claims.work_of(todo, attrgetter("key"))


RECORD_BATCH = 100  # decided items whose rows are written in one transaction (mirror sources)


class DecidedRows:
    """The rows of decided items not written yet, written together: ``size`` items' attachment
    rows, detail updates and state rows in one transaction of a few prepared statements
    (statements per item were most of backfill's CPU). An item's rows are all in one batch,
    so a kill leaves an item wholly recorded or left ``pending`` (marked before its reads),
    which the next run redoes; only the last batch's work is lost.

    With ``claims`` (the run shares its items with other workers) the items of a batch are
    marked done in one statement once the batch is committed (an item whose failure was
    written at once, with the batch after it): a claimer that dies before that loses its
    items to the others when its claims expire, never an item whose rows are not written."""

    def __init__(self, size: int, claims=None) -> None:
        self.size = size
        self.claims = claims
        self._decided: list[str] = []  # item keys whose rows are all here or written already
        self._clear()

    def _clear(self) -> None:
        self.attachments: list[tuple] = []
        self.states: list[dict] = []
        self.details: list[items.Detail] = []
        self.items = 0

    def attachment(self, item_key: str, filename: str, values: dict) -> None:
        self.attachments.append((item_key, filename, *(values[c] for c in items.ATTACHMENT_COLUMNS[2:])))

    def state(self, stage: str, key: str, docket_id: str, state: str, *, run_id: str, **values) -> None:
        self.states.append({"stage": stage, "item": key, "docket": docket_id, "state": state,
                            "run_id": run_id, **values})

    def detail(self, detail: items.Detail) -> None:
        self.details.append(detail)

    def item_done(self, key: str) -> None:
        self.items += 1
        if self.claims is not None:
            self._decided.append(key)
        if self.items >= self.size:
            self.write()

    def write(self) -> None:
        attachments, states, details = self.attachments, self.states, self.details
        decided, self._decided = self._decided, []
        self._clear()  # taken first: a failed write is not tried again by the caller's finally
        if attachments or states or details:
            with database.atomic():
                items.upsert_attachments(attachments)
                items.record_details(details)
                item_states.transition_many(states)
        if decided:  # one statement per batch, after its commit: no other worker takes them again
            self.claims.done(decided)


TODO_PAGE = 2000  # items (and their attachment rows) one backfill pass holds at once
BACKFILL_HELD = "backfill.items_held"  # peak: the most items one pass held
MIRROR_HELD = "backfill.mirror_objects_held"  # peak: the most listed objects one pass held


def _todo_pages(docket_id: str, force: bool, now: str) -> Iterator[list[Item]]:
    """Items without a decided state for their current summary: never fetched, changed,
    left pending, re-driven, or waiting to retry and due; at most ``TODO_PAGE`` at a time.
    Items whose retry is not due yet wait (``--force`` does not wait)."""
    # Only rows that wait or ask to be redone decide anything here: an index range of them,
    # not every row of a docket of a million comments.
    rows = item_states.rows_in_states(STAGE, docket_id, (RETRY, "pending", "stale"))
    waiting = set() if force else {key for key, row in rows.items() if row.waits(now)}
    # Rows left pending, re-driven, or due to retry: those whose item's detail is current come
    # after the others (a re-driven item whose file fails transiently again waits with its
    # detail stored). An item taken from the first pages is not taken again: recorded there,
    # its detail is current by the time the second loop reads it.
    redo = {key for key, row in rows.items()
            if row.state in ("pending", "stale") or (row.state == RETRY and key not in waiting)}
    for page in items.items_needing_detail(docket_id, force, TODO_PAGE):
        if todo := [item for item in page if item.key not in waiting]:
            redo.difference_update(item.key for item in todo)
            yield todo
    ordered = sorted(redo)
    for start in range(0, len(ordered), TODO_PAGE):
        found = items.items_by_key(ordered[start:start + TODO_PAGE])
        if todo := sorted((item for item in found if not force and items.has_current_detail(item)),
                          key=lambda item: item.key):
            yield todo


def unfinished(docket_id: str, now: str) -> int:
    """Items backfill still owes the docket now (0 before its marker may be written)."""
    return sum(len(page) for page in _todo_pages(docket_id, False, now))


def _make_source(ctx: StageContext, docket: Docket, api, mirror):
    if ctx.settings.source == "mirror":
        # Fetch listed the docket from the mirror: its listing is in the state DB (no LIST
        # again), with the JSON fetch read (no GET again).
        stored = connect.list_source(ctx.settings) == "mirror" and mirror_objects.has_listing(docket.id)
        from_mirror = MirrorSource(mirror or connect.mirror(ctx.settings), docket, ctx.settings.mirror_concurrency,
                                   stored_listing=stored, clock=ctx.clock)
        if not (ctx.settings.mirror_fallback and ctx.settings.api_key):
            return from_mirror
        from pipeline.stages.backfill_hybrid import HybridSource  # it builds on this module

        return HybridSource(from_mirror, _api_source(ctx, api))
    return _api_source(ctx, api)


def _api_source(ctx: StageContext, api) -> ApiSource:
    budget = connect.request_budget(ctx.settings, ctx.deadline)
    return ApiSource(api or connect.regulations_gov(ctx.settings, budget))


def backfill_item(ctx: StageContext, job: ItemJob, read, result: StageResult, decided: DecidedRows) -> str:
    """One item to a decided state from what was read for it (``read()`` returns the
    ``ItemRead`` or raises what reading it raised), whatever went wrong: one bad record
    never stops the docket. Run-stopping failures and a spent budget go up to the stage.
    Its rows go to ``decided`` (written with the batch), a failure's at once."""
    try:
        return _backfill(ctx, job, read(), result, decided)
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        log.warning("backfill %s: %s (%s)", job.item.key, failure.reason, failure.kind)
        decided.write()
        return _finish(ctx, job.item, result, failure)


def _backfill(ctx: StageContext, job: ItemJob, got: ItemRead, result: StageResult, decided: DecidedRows) -> str:
    item = job.item
    # The item's files as its rows will say once this batch is written (filename -> sha256).
    files = {row.filename: row.sha256 for row in job.rows}
    series = RetrySeries(ctx, item)
    outcomes = [_have_file(ctx, item, fetched, result, decided, files, series) for fetched in got.files]
    state = _item_state([file_state for file_state, _reason in outcomes])
    if state == RETRY:
        if item.kind == "document":  # see items.update_waiting_detail: a comment waits whole
            items.update_waiting_detail(item.key, got.fields)
        why = "; ".join(reason for file_state, reason in outcomes if file_state == RETRY)
        decided.write()
        return _finish(ctx, item, result, Failure("transient", RETRY, why[:500]), series.step)
    # Past the retry horizon the files that kept failing are failed for good (_have_file):
    # the item, whose record was read, is recorded like any item with a failed file.
    _record_detail(ctx, item, got.fields, state, decided, files)
    result.add(state)
    return state


def _record_detail(ctx: StageContext, item: Item, fields: dict, state: str, decided: DecidedRows,
                   files: dict[str, str | None]) -> None:
    """Detail fields and the item's terminal state, in the batch with its file rows: a kill
    cannot split them."""
    detail_hash = items.content_digest(fields)
    stored = [[name, files[name]] for name in sorted(files)]  # items.stored_files, as it will be
    content = items.content_digest({"detail": detail_hash, "files": stored})
    decided.detail(items.Detail(item, fields, detail_hash, item.summary_hash))
    decided.state(STAGE, item.key, item.docket, state, run_id=ctx.run_id, content_hash=content,
                  reason=None if state == "ok" else "see files")


def _item_state(file_states: list[str]) -> str:
    for worst in FILE_STATE_ORDER:
        if worst in file_states:
            return worst
    return "ok"


class RetrySeries:
    """The item's retry series (``item_states.next_retry``), read once, and only when one of
    its files fails transiently: an item whose files all come reads nothing more."""

    def __init__(self, ctx: StageContext, item: Item) -> None:
        self.ctx, self.item = ctx, item
        self.step: item_states.RetryStep | None = None

    def next(self) -> item_states.RetryStep:
        if self.step is None:
            self.step = item_states.next_retry(STAGE, self.item.key, policy=RetryPolicy.from_settings(self.ctx.settings),
                                               now=self.ctx.clock())
        return self.step


def _finish(ctx, item: Item, result: StageResult, failure: Failure,
            step: item_states.RetryStep | None = None) -> str:
    """The item's state after a failure: waiting to retry, or final (gone, too_large, failed).
    ``step``: its retry series as read already (a file failed transiently)."""
    if failure.state == RETRY:
        # The detail is not recorded, so the item is selected again once its time has come.
        with database.atomic():  # the final state and the item's "failed" mark together
            state = item_states.retry_later(STAGE, item.key, item.docket, failure.reason,
                                            run_id=ctx.run_id, policy=RetryPolicy.from_settings(ctx.settings),
                                            now=ctx.clock(), step=step)
            # Past the retry horizon with no record read (a file given up is decided in
            # _have_file, and its item recorded with its detail): failed for good, no detail.
            if state != RETRY:
                items.update_detail(item.key, {}, items.NO_DETAIL_FAILED, item.summary_hash)
        result.add(state)
        return state
    marker = items.NO_DETAIL_GONE if failure.state == "gone" else items.NO_DETAIL_FAILED
    with database.atomic():  # never retried by default runs; Redrive can send it back
        items.update_detail(item.key, {}, marker, item.summary_hash)
        item_states.transition(STAGE, item.key, item.docket, failure.state, run_id=ctx.run_id,
                               reason=failure.reason, content_hash=marker if marker == items.NO_DETAIL_GONE else None,
                               detail=failure.kind)
    result.add(failure.state)
    return failure.state


def _have_file(ctx, item: Item, fetched: FileFetch, result: StageResult, decided: DecidedRows,
               files: dict[str, str | None], series: RetrySeries) -> tuple[str, str | None]:
    """Make sure one file is stored and has its row (in ``decided``, and in ``files``);
    returns the file's state (RETRY when it failed transiently: the item then waits to be
    tried again; ``failed`` once the item's retry series is past its horizon) and why it is
    not ok."""
    ref, existing = fetched.ref, fetched.existing
    key = f"{item.key}/{ref.filename}"
    if existing and not ctx.force:
        if existing.title != ref.title:  # a re-read record may name the file now: no download
            decided.attachment(item.key, ref.filename, {**_row_values(existing), "title": ref.title})
        result.add("files_unchanged")
        return "ok", None
    reason = over_the_cap(ref, ctx.settings.max_attachment_bytes)
    if reason:
        return _file_state(ctx, item, key, "too_large", reason, result, decided), reason
    try:
        stored = fetched.result()
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        if failure.state == RETRY:
            step = series.next()
            if step.gives_up:  # past the retry horizon: the file is failed for good
                reason = step.gave_up_reason(failure.reason)
                return _file_state(ctx, item, key, "failed", reason, result, decided, detail=PERMANENT), reason
            # Not a final state of the file: "missing" (the mirror lags) or a transient failure.
            state = "missing" if isinstance(exc, NotMirroredYet) else "failed"
            _file_state(ctx, item, key, state, failure.reason, result, decided, detail="transient")
            return RETRY, failure.reason
        return (_file_state(ctx, item, key, failure.state, failure.reason, result, decided, detail=failure.kind),
                failure.reason)
    # One decision, two rows, in one batch: a kill between them would leave a row whose
    # file state a rerun never writes (it sees the attachment stored and skips the file).
    _upsert_attachment(decided, item.key, ref, stored)
    decided.state(FILE_STAGE, key, item.docket, "ok", run_id=ctx.run_id, content_hash=stored.sha256)
    files[ref.filename] = stored.sha256
    result.add("files_stored" if stored.created else "files_deduplicated")
    return "ok", None


def over_the_cap(ref: FileRef, max_bytes: int) -> str | None:
    """Why a file is refused from its declared size alone (no request is spent on it)."""
    declared = ref.size if ref.size is not None else ref.mirror_size
    if declared is not None and declared > max_bytes:
        return f"declared size {declared} exceeds the limit of {max_bytes} bytes"
    return None


def _upsert_attachment(decided: DecidedRows, item_key: str, ref: FileRef, stored: IngestResult) -> None:
    """One row per (item, filename), written only after its blob is whole and in place."""
    decided.attachment(item_key, ref.filename, {
        "ordinal": ref.ordinal, "format": ref.format, "source_url": ref.url or ref.mirror_key,
        "declared_size": ref.size, "sha256": stored.sha256, "size": stored.size, "title": ref.title})


def _row_values(row: Attachment) -> dict:
    return {name: getattr(row, name) for name in items.ATTACHMENT_COLUMNS[2:]}


def _file_state(ctx, item: Item, key: str, state: str, reason: str, result: StageResult, decided: DecidedRows,
                detail: str | None = None) -> str:
    decided.state(FILE_STAGE, key, item.docket, state, run_id=ctx.run_id, reason=reason[:500], detail=detail)
    result.add(f"files_{state}")
    return state


# --------------------------------------------------------------------------- reading an item


class ReadInStageThread(Exception):  # noqa: N818 - a hand-over, not an error
    """A reader thread met a read only the stage's thread may make (the API's)."""


@dataclass(frozen=True)
class ItemJob:
    """One item to read, with its stored files as the state DB held them when the stage began."""

    item: Item
    stored: dict[str, Attachment]  # its files already stored: filename -> row (with a sha256); none when forced
    record: str | None = None  # its JSON as fetch read it from the mirror (handed over)
    rows: tuple[Attachment, ...] = ()  # every attachment row of the item (what its content hash names)


@dataclass
class FileFetch:
    """One file as a reader left it: stored, failed, or not fetched (already stored, or
    over the cap by its declared size: the stage decides those without a request)."""

    ref: FileRef
    existing: Attachment | None = None  # its row, when the file is stored already
    stored: IngestResult | None = None
    error: Exception | None = None
    later: Callable[[], IngestResult] | None = None

    def result(self) -> IngestResult:
        if isinstance(self.error, ReadInStageThread):  # the stage's thread fetches it now
            return self.later()
        if self.error is not None:
            raise self.error
        if self.stored is None:  # the reader skipped it, the stage wants it: fetch it now
            return self.later()
        return self.stored


@dataclass
class ItemRead:
    fields: dict  # the detail record's stored fields
    files: list[FileFetch]


def _mark_pending(ctx: StageContext, todo: list[Item]) -> None:
    item_states.mark_pending_many(STAGE, [(item.key, item.docket) for item in todo], run_id=ctx.run_id,
                                  reason="downloading")


class ItemReader:
    """The I/O of one item, safe in a reader thread (``pipeline/read_ahead.py``): its detail
    record, its file list, its files into the blob store. Nothing here touches the state
    DB but what the stage's own thread may do: ``job`` and ``before_reading`` as items are
    handed to the readers, and ``read`` itself when there is no pool (one reader: the
    stage's thread)."""

    def __init__(self, ctx: StageContext, source) -> None:
        self.ctx, self.source, self.force = ctx, source, ctx.force
        self.inline = source.concurrency <= 1  # read_ahead runs ``read`` in the stage's thread
        self.formats, self.max_bytes = ctx.settings.formats, ctx.settings.max_attachment_bytes
        self.blobs, self.data_dir = ctx.blobs, ctx.runtime.data_dir  # opened in the stage's thread
        self._stored: dict[str, list[Attachment]] = {}

    def read_stored(self, docket_id: str, todo: list[Item]) -> None:
        """The todo items' attachment rows, in one query: only recording an item changes its
        rows, and no other run records it meanwhile (the lease keeps other runs out; a helper
        on a shared state DB works only the items it claims), so they hold until each item
        is recorded. (A helper that died between its commit and marking its claims done
        leaves items this run redoes with these rows: their files are stored again, the
        same blobs and rows.)"""
        self._stored = items.attachments_of([item.key for item in todo], docket_id)

    def job(self, item: Item) -> ItemJob:
        rows = self._stored.pop(item.key, [])
        stored = {} if self.force else {row.filename: row for row in rows if row.sha256}
        return ItemJob(item, stored, self.source.record_for(item), tuple(rows))

    def before_reading(self, jobs: list[ItemJob]) -> None:
        """On a pool: pending before any of the jobs' downloads, one statement for the batch
        handed out. A row left ``pending`` says a process died while it read the item."""
        if not self.inline:
            _mark_pending(self.ctx, [job.item for job in jobs])

    def in_stage_thread(self, job: ItemJob, read):
        """``read``, or, when its reader thread left the item to the stage's thread
        (``ReadInStageThread``: the API side of a hybrid source), the item read here."""
        def result() -> ItemRead:
            try:
                return read()
            except ReadInStageThread:
                return self.read(job)
        return result

    def read(self, job: ItemJob) -> ItemRead:
        body = self.source.detail(job.item, job.record)
        fields = records.detail_fields(body)
        refs = self.source.files(job.item, body, self.formats)
        if self.inline:  # as before any pool: pending once the record is in hand, before downloads
            _mark_pending(self.ctx, [job.item])
        fetches = []
        for ref in refs:
            fetches.append(self._file(ref, job.stored))
            if fetches[-1].error is not None and _stops_item(fetches[-1].error):
                break  # the stage stops at this file, as it would have without reading ahead
        return ItemRead(fields, fetches)

    def _file(self, ref: FileRef, stored: dict[str, Attachment]) -> FileFetch:
        def fetch() -> IngestResult:
            return self.source.fetch_file(ref, self.blobs, self.max_bytes, self.data_dir)

        existing = stored.get(ref.filename)
        if existing or over_the_cap(ref, self.max_bytes):
            return FileFetch(ref, existing, later=fetch)
        try:
            return FileFetch(ref, stored=fetch())
        except Exception as exc:  # noqa: BLE001 - the stage classifies it, in its thread
            return FileFetch(ref, error=exc, later=fetch)


def _stops_item(exc: Exception) -> bool:
    """A spent budget or a run-stopping failure: nothing more is read for the item."""
    return isinstance(exc, BudgetSpent) or classify(exc).stops_run


# --------------------------------------------------------------------------- file names


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
    refs = []
    for chosen in ranked_formats(formats, preference):
        url = records.file_url(chosen)
        name = url.rstrip("/").rsplit("/", 1)[-1]
        if stem:
            name = f"{stem}.{name.rsplit('.', 1)[-1]}" if "." in name else f"{stem}.bin"
        size = records.bounded_int(chosen, "size", records.MAX_SIZE)
        refs.append(FileRef(validate_filename(name.lower()), ordinal,
                            str(chosen.get("format", "")).lower(), size, url=url))
    return refs


def _stem(filename: str) -> str:
    return filename.rsplit(".", 1)[0]


# --------------------------------------------------------------------------- sources


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
    recorded before schema v11 are filed here once, in keyset pages), so a backfill of 40 new
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
        """The stored rows no fetch filed (recorded before schema v11) filed by item, a
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
            refs.append(FileRef(validate_filename(best.stored_name), best.n or 0, best.ext.lower(),
                                best.size, mirror_key=best.key, mirror_size=best.size))
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


# --- the declaration -------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="fetch", run=backfill_docket, task="BackfillComments", wrapper="BackfillAll",
    doc="Details and attachments for new or changed items, from the API or the mirror.",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id, now),
    splits_items=True,
)
