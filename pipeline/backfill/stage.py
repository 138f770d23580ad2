"""Backfill: per-item detail records and attachment bytes, from the API or the mirror.

An item needs work when its detail was never fetched, its list summary changed since, or
its row was left ``pending``/``stale``. Attachment rows are keyed ``(item, filename)``
and blobs by sha256: a rerun creates no row and copies no byte, and a file attached to two
comments is stored once.

Nothing of a record waits for its files: an item's detail is recorded as soon as its record
is read, with a row per declared file (from the record: ordinal, title, format, declared size,
URL; its sha256 once stored). A file the mirror does not hold yet waits on its own
``backfill.file`` row, and the item stays ``retry`` *with* its content hash, so extract and the
index take its body at once; the file's arrival changes that hash, and the item alone is
redone downstream.

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
from collections.abc import Callable, Iterable, Iterator
from dataclasses import dataclass
from operator import attrgetter

from pipeline.backfill.hybrid import HybridSource
from pipeline.backfill.sources import (
    ApiSource,
    BackfillSource,
    FileRef,
    MirrorSource,
    ReadInStageThread,
)
from pipeline.clock import eastern_instant, iso
from pipeline.counters import counters
from pipeline.engine.read_ahead import read_ahead
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.errors import BadRecord, BudgetSpent, NotMirroredYet
from pipeline.failures import PERMANENT, RETRY, Failure, RetryPolicy, classify, item_failure
from pipeline.sources import connect, record_checks, records
from pipeline.store import item_states, items, mirror_objects
from pipeline.store.blobs import IngestResult
from pipeline.store.models import Attachment, Docket, Item, database

log = logging.getLogger("docketeer")
STAGE = "backfill"
FILE_STAGE = "backfill.file"
# Worst first: the item takes the worst state of its files ("retry": one waits to be tried again).
FILE_STATE_ORDER = (RETRY, "failed", "too_large", "gone")




def backfill_docket(ctx: StageContext, docket: Docket, *, api=None, mirror=None) -> StageResult:
    now = iso(ctx.clock())
    owed = sum(len(page) for page in _todo_pages(docket.id, ctx.force, now))
    result = StageResult()
    if not owed:
        return result
    if docket.sealed_at:
        log.info("%s: sealed %s with %d items left to backfill", docket.id, eastern_instant(docket.sealed_at), owed)
    source = _make_source(ctx, docket, api, mirror)
    reader = ItemReader(ctx, source)
    decided = DecidedRows(source.record_batch, ctx.claims)
    ctx.progress.start(owed)
    try:
        for todo in _todo_pages(docket.id, ctx.force, now):
            counters.note_peak(BACKFILL_HELD, len(todo))
            reader.read_stored(docket.id, todo)
            source.expect(todo)
            # The reads of the next items overlap (pipeline/engine/read_ahead.py); each item's
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


def _make_source(ctx: StageContext, docket: Docket, api, mirror) -> BackfillSource:
    if ctx.settings.source == "mirror":
        # Fetch listed the docket from the mirror: its listing is in the state DB (no LIST
        # again), with the JSON fetch read (no GET again).
        stored = connect.list_source(ctx.settings) == "mirror" and mirror_objects.has_listing(docket.id)
        from_mirror = MirrorSource(mirror or connect.mirror(ctx.settings), docket, ctx.settings.mirror_concurrency,
                                   stored_listing=stored, clock=ctx.clock)
        if not (ctx.settings.mirror_fallback and ctx.settings.api_key):
            return from_mirror
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
    # The item's files as its rows will say once this batch is written (filename -> sha256,
    # None: declared, its bytes not stored yet).
    files = {row.filename: row.sha256 for row in job.rows}
    rows = {row.filename: row for row in job.rows}
    series = RetrySeries(ctx, item)
    outcomes = [_have_file(ctx, item, fetched, result, decided, files, series, rows) for fetched in got.files]
    state = _item_state([file_state for file_state, _reason in outcomes])
    # The record is stored whatever its files did: a comment's body, submitter and dates are
    # extracted and indexed now, while a file the mirror lacks waits to retry on its own row.
    # When it arrives, the item's content hash (which names every file's sha256) changes, and
    # extract and the index redo that item alone. Past the retry horizon the files that kept
    # failing are failed for good (_have_file), and the item is recorded like any item with
    # a failed file.
    retry = None
    if state == RETRY:
        why = "; ".join(reason for file_state, reason in outcomes if file_state == RETRY)
        retry = (why[:500], series.step)
    _record_detail(ctx, item, got.fields, state, decided, files, retry, repaired=got.repaired)
    result.add(state)
    return state


def _record_detail(ctx: StageContext, item: Item, fields: dict, state: str, decided: DecidedRows,
                   files: dict[str, str | None], retry: tuple[str, item_states.RetryStep] | None = None,
                   repaired: int = 0) -> None:
    """Detail fields and the item's state, in the batch with its file rows: a kill cannot
    split them. ``retry``: why and when its waiting files are tried again (state ``retry``).
    ``repaired``: the lone surrogates its record held, said in its reason."""
    detail_hash = items.content_digest(fields)
    stored = [[name, files[name]] for name in sorted(files)]  # items.stored_files, as it will be
    # Backfill's output is the item as the stages after it read it: its listed fields too
    # (a title changed upstream is a new input to extract and the index in the same run).
    content = items.content_digest({"detail": detail_hash, "files": stored, "listed": item.summary_hash})
    decided.detail(items.Detail(item, fields, detail_hash, item.summary_hash))
    if retry is not None:
        why, step = retry
        decided.state(STAGE, item.key, item.docket, RETRY, run_id=ctx.run_id, content_hash=content,
                      reason=why, detail="transient", attempts=step.attempts,
                      first_failed_at=iso(step.first_failed_at), next_attempt_at=iso(step.next_attempt_at))
        return
    reasons = [] if state == "ok" else ["see files"]
    if repaired:
        reasons.append(f"{repaired} invalid character(s) (lone UTF-16 surrogates) in its record "
                       "stored as U+FFFD")
    decided.state(STAGE, item.key, item.docket, state, run_id=ctx.run_id, content_hash=content,
                  reason="; ".join(reasons) or None)


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
               files: dict[str, str | None], series: RetrySeries,
               rows: dict[str, Attachment] | None = None) -> tuple[str, str | None]:
    """Make sure one file is stored and has its row (in ``decided``, and in ``files``);
    returns the file's state (RETRY when it failed transiently: the item then waits to be
    tried again; ``failed`` once the item's retry series is past its horizon) and why it is
    not ok. A file not stored still gets its row from the record (declared, no sha256)."""
    outcome = _file_outcome(ctx, item, fetched, result, decided, files, series)
    ref = fetched.ref
    if outcome[0] != "ok" and files.get(ref.filename) is None:
        _declare_attachment(decided, item.key, ref, (rows or {}).get(ref.filename))
        files[ref.filename] = None
    return outcome


def _declare_attachment(decided: DecidedRows, item_key: str, ref: FileRef, known: Attachment | None) -> None:
    """The row of a file the record declares whose bytes are not stored (waiting for the
    mirror, gone, over the cap, failed): what the record says of it, written only when that
    differs from the row already there (a rerun writes nothing)."""
    values = {"ordinal": ref.ordinal, "format": ref.format, "source_url": source_of(ref),
              "declared_size": ref.size, "sha256": None, "size": None, "title": ref.title}
    if known is None or _row_values(known) != values:
        decided.attachment(item_key, ref.filename, values)


def _file_outcome(ctx, item: Item, fetched: FileFetch, result: StageResult, decided: DecidedRows,
                  files: dict[str, str | None], series: RetrySeries) -> tuple[str, str | None]:
    ref, existing = fetched.ref, fetched.existing
    key = f"{item.key}/{ref.filename}"
    if existing and not ctx.force:
        # A re-read record may name the file now, or say where it is from: no download.
        if (existing.title, existing.source_url) != (ref.title, source_of(ref)):
            decided.attachment(item.key, ref.filename,
                               {**_row_values(existing), "title": ref.title, "source_url": source_of(ref)})
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
        "ordinal": ref.ordinal, "format": ref.format, "source_url": source_of(ref),
        "declared_size": ref.size, "sha256": stored.sha256, "size": stored.size, "title": ref.title})


def source_of(ref: FileRef) -> str | None:
    """Where a file comes from, as its row says: the record's fileUrl, whichever source the
    bytes came from; the mirror object for a file only the binary folder shows."""
    return ref.declared_url or ref.url or ref.mirror_key


def _row_values(row: Attachment) -> dict:
    return {name: getattr(row, name) for name in items.ATTACHMENT_COLUMNS[2:]}


def _file_state(ctx, item: Item, key: str, state: str, reason: str, result: StageResult, decided: DecidedRows,
                detail: str | None = None) -> str:
    decided.state(FILE_STAGE, key, item.docket, state, run_id=ctx.run_id, reason=reason[:500], detail=detail)
    result.add(f"files_{state}")
    return state


# --------------------------------------------------------------------------- reading an item




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
    repaired: int = 0  # lone surrogates its record held, stored as U+FFFD


def _mark_pending(ctx: StageContext, todo: list[Item]) -> None:
    item_states.mark_pending_many(STAGE, [(item.key, item.docket) for item in todo], run_id=ctx.run_id,
                                  reason="downloading")


class ItemReader:
    """The I/O of one item, safe in a reader thread (``pipeline/engine/read_ahead.py``): its detail
    record, its file list, its files into the blob store. Nothing here touches the state
    DB but what the stage's own thread may do: ``job`` and ``before_reading`` as items are
    handed to the readers, and ``read`` itself when there is no pool (one reader: the
    stage's thread)."""

    def __init__(self, ctx: StageContext, source: BackfillSource) -> None:
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
        owner = record_checks.docket_named(job.item.key, body["data"].get("attributes"))
        if owner is not None and owner != job.item.docket:  # its own record says whose it is
            raise BadRecord(f"its record says it belongs to docket {owner}, not {job.item.docket}")
        refs = self.source.files(job.item, body, self.formats)
        fields["attachments_listed"] = self.source.lists_attachments(job.item, body, refs)
        if self.inline:  # as before any pool: pending once the record is in hand, before downloads
            _mark_pending(self.ctx, [job.item])
        fetches = []
        for ref in refs:
            fetches.append(self._file(ref, job.stored))
            if fetches[-1].error is not None and _stops_item(fetches[-1].error):
                break  # the stage stops at this file, as it would have without reading ahead
        return ItemRead(fields, fetches, records.lone_surrogates_in(body))

    def _file(self, ref: FileRef, stored: dict[str, Attachment]) -> FileFetch:
        def fetch() -> IngestResult:
            return self.source.fetch_file(ref, self.blobs, self.max_bytes, self.data_dir)

        if ref.refused:  # never requested: this file's own failure (BadRecord: permanent)
            return FileFetch(ref, error=BadRecord(ref.refused), later=fetch)
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












# --------------------------------------------------------------------------- sources








# --- the declaration -------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="fetch", run=backfill_docket, task="BackfillComments", wrapper="BackfillAll",
    doc="Details and attachments for new or changed items, from the API or the mirror.",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id, now),
    splits_items=True,
)
