"""Extract: each comment's inline text and attachments into one ``combined.md`` blob.

The per-item fingerprint is built from facts already in the state DB (backfill's content
hash, which covers the detail record — so the inline body — and every attachment's
filename and sha256, plus the extractor version), so an unchanged item is skipped with zero
file reads. Changed items are read in a pool of worker processes (``pipeline.extract.pool``);
every attachment gets a status (ok, ocr_needed, failed, unsupported) in its own
``extract.file`` row, keyed ``<comment>/<file>``.
"""

from __future__ import annotations

import itertools
import logging
import os
import shutil
import tempfile
from collections.abc import Iterable, Iterator
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.counters import COMBINED_READS, counters
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.errors import BudgetSpent
from pipeline.extract.combined import capped_of, parse_combined, render_combined, uncapped_texts
from pipeline.extract.readers import EXTRACTOR_VERSION, AttachmentText, ExtractLimits, Reader
from pipeline.extract.text_caps import ItemSizes, TextCaps, caps_biting, sizes_of, with_caps
from pipeline.fingerprints import bytes_digest, digest
from pipeline.store import item_states, items, leftovers
from pipeline.store.blobs import attachment_key, combined_key
from pipeline.store.models import Attachment, Docket, database

if TYPE_CHECKING:  # the pool imports PyMuPDF: loaded when a run has files to read
    from pipeline.extract.pool import ItemJob, ItemResult

log = logging.getLogger("docketeer")
STAGE = "extract"
FILE_STAGE = "extract.file"
UPSTREAM = "backfill"
EXTRACTABLE = ("ok", "too_large", "gone")  # an item with its detail, whatever its files did
# ... and a "failed" or "retry" one with its detail (``has_detail``): a file failed for good,
# or files that wait for the mirror (the record is stored at once; each file that arrives
# changes backfill's content hash, and the item is extracted again).
# An item whose record itself waits (retry) or never came (failed) is rendered once, from
# what it has (its list fields), so that the index finds it by its title; an item already
# extracted keeps its text while it waits. When backfill completes, its row's new content
# hash changes the fingerprint: redone.
WAITING = ("retry", "failed")
ITEM_STATE_ORDER = ("failed", "ocr_needed", "unsupported", "too_large", "gone", "ok")
BATCH = 32  # results whose rows are committed together


def item_fingerprint(upstream_hash: str | None, version: str = EXTRACTOR_VERSION) -> str:
    return digest(version, upstream_hash or "")


def file_key(item_key: str, filename: str) -> str:
    """The item of an ``extract.file`` (and ``ocr``) row."""
    return f"{item_key}/{filename}"


def limits_from(settings) -> ExtractLimits:
    return ExtractLimits(
        max_pdf_pages=settings.max_pdf_pages,
        max_docx_uncompressed_bytes=settings.max_docx_bytes,
        file_seconds=settings.file_seconds,
        max_file_chars=settings.max_file_chars,
    )


def caps_from(settings) -> TextCaps:
    return TextCaps(max_body_chars=settings.max_body_chars, max_item_chars=settings.max_item_chars,
                    max_file_chars=settings.max_file_chars)


REDO_STATES = ("pending", "stale")  # a process died mid-item, or Redrive asked again


def plan(upstream: dict, mine: dict, force: bool, version: str = EXTRACTOR_VERSION,
         caps: TextCaps | None = None) -> dict[str, str]:
    """item key -> fingerprint (before caps: ``with_caps``) for the items with work, from
    state rows alone (no file). A done item's recorded fingerprint carries the caps that bit
    it; it is compared with the caps that would bite it now, judged by its recorded sizes,
    so a changed cap redoes exactly the items whose text it changes.

    A seal changes nothing here: it says no new comments will come, not that this stage
    has done its work (a docket can seal while backfill's items are still arriving)."""
    todo = {}
    for key, row in upstream.items():
        done = mine.get(key)
        redo = done is not None and done.state in REDO_STATES
        if not has_detail(row) and not (row.state in WAITING and (done is None or redo)):
            continue
        fingerprint = item_fingerprint(row.content_hash, version)
        if redo or force or done is None or done.fingerprint != _capped_fingerprint(fingerprint, done, caps):
            todo[key] = fingerprint
    return todo


def has_detail(row) -> bool:
    """Backfill recorded the item's detail, whatever its files did: ``ok``, ``too_large``,
    ``gone``, or ``failed``/``retry`` with a content hash (backfill writes one with the
    detail only): a file failed for good (a 400, or one given up past the retry horizon), or
    files waiting for the mirror, beside its body and other files, extracted like any item.
    A ``failed`` or ``retry`` row without one never had its record."""
    return row.state in EXTRACTABLE or (row.state in WAITING and row.content_hash is not None)


def _capped_fingerprint(fingerprint: str, done, caps: TextCaps | None) -> str:
    if caps is None:
        return fingerprint
    return with_caps(fingerprint, caps_biting(ItemSizes.from_detail(done.detail), caps))


def unfinished(docket_id: str, caps: TextCaps | None = None) -> int:
    """Items backfill vouches for that have no decided extract state for their input."""
    return sum(len(todo) for todo, _ in planned(docket_id, False, EXTRACTOR_VERSION, caps))


def planned(docket_id: str, force: bool, version: str,
            caps: TextCaps | None = None) -> Iterator[tuple[dict[str, str], int]]:
    """``plan`` one page of state rows at a time: (its todo, how many of those have a row)."""
    for upstream, mine in item_states.paired_pages(UPSTREAM, STAGE, docket_id):
        todo = plan(upstream, mine, force, version, caps)
        yield todo, sum(1 for key in todo if key in mine)


def extract_docket(ctx: StageContext, docket: Docket, *, version: str = EXTRACTOR_VERSION,
                   reader: Reader | None = None) -> StageResult:
    """Extract the docket's new and changed items. ``version`` and ``reader`` exist for
    tests and benchmarks; the pipeline always runs the current extractor."""
    owed = redone = 0  # items to do, and those of them that have a row of this stage
    # The todo is kept while it fits in one work page, so that the common run (a few new
    # items, or a docket's first thousand) is planned once, not once to count it and again
    # to do it: planning reads every state row of the docket.
    held: dict[str, str] | None = {}
    for page_todo, with_row in planned(docket.id, ctx.force, version, caps_from(ctx.settings)):
        owed += len(page_todo)
        redone += with_row
        if held is not None:
            held.update(page_todo)
            if len(held) > WORK_PAGE:
                held = None  # too many to hold: planned again a page at a time
    result = StageResult()
    unchanged = item_states.count_rows(STAGE, docket.id) - redone
    if unchanged:
        result.add("unchanged", unchanged)
    if owed:
        ctx.progress.start(owed)
        try:
            _extract(ctx, docket, version, reader, result, owed, held)
        except BudgetSpent as exc:  # the items written so far are kept; the next run goes on
            result.budget_spent, result.message = True, str(exc)
    return result


WORK_PAGE = 2000  # items whose bodies, files and results one extract pass holds at once


def work_pages(docket_id: str, force: bool, version: str,
               size: int | None = None, caps: TextCaps | None = None) -> Iterator[dict[str, str]]:
    """The docket's todo (item key -> fingerprint) in key order, at most ``size`` items at a
    time: a first extract of 200,000 comments holds a page of them, not the docket."""
    size = size or WORK_PAGE
    todo: dict[str, str] = {}  # planned in key order, so its first keys are the lowest
    for page_todo, _ in planned(docket_id, force, version, caps):
        todo.update(page_todo)
        while len(todo) >= size:
            page = {key: todo.pop(key) for key in list(itertools.islice(todo, size))}
            counters.note_peak(EXTRACT_HELD, len(page))
            yield page
    if todo:
        counters.note_peak(EXTRACT_HELD, len(todo))
        yield todo


EXTRACT_HELD = "extract.items_held"  # peak: the most items one pass held


def _extract(ctx: StageContext, docket: Docket, version: str, reader: Reader | None,
             result: StageResult, owed: int, held: dict[str, str] | None = None) -> None:
    """``held``: the whole todo when it fits in one work page (else planned again)."""
    from pipeline.extract.pool import ExtractPool, worker_count

    workers = min(worker_count(ctx.settings.extract_workers), owed)
    # combined.md is rendered where a core is free: by this process beside fewer workers
    # than cores, else by the workers, so that this process never holds up their reads.
    workers_render = workers >= (os.cpu_count() or 1)
    with tempfile.TemporaryDirectory(**scratch_args(ctx)) as scratch, \
            ExtractPool(limits_from(ctx.settings), workers, reader=reader) as pool:
        if held is not None:
            counters.note_peak(EXTRACT_HELD, len(held))
        pages = [held] if held is not None else work_pages(docket.id, ctx.force, version,
                                                           caps=caps_from(ctx.settings))
        for todo in pages:
            _extract_page(ctx, docket, todo, version, pool, Path(scratch), workers_render, result)


def _extract_page(ctx: StageContext, docket: Docket, todo: dict[str, str], version: str, pool,
                  scratch: Path, workers_render: bool, result: StageResult) -> None:
    bodies = items.bodies_of(docket.id, todo)
    kinds = items.kinds_of(docket.id, todo)
    titles = items.titles_of(docket.id, todo)
    files = items.attachments_of(todo, docket.id)
    writer = _Writer(ctx, docket.id, version, _file_rows_by_item(docket.id, todo.keys()), kinds, titles)
    caps = caps_from(ctx.settings)
    jobs = (
        item_job(ctx, key, files.get(key, []), scratch,
                 render=render_args(docket.id, key, bodies.get(key), todo[key], version,
                                    kinds.get(key, "comment"), caps, titles.get(key))
                 if workers_render else None)
        for key in (ctx.claims.take(todo) if ctx.claims else sorted(todo))
    )
    for batch in pool.batches(jobs, BATCH):
        written = []
        for key, state in writer.write(batch, bodies, todo):
            written.append(key)
            copies = os.path.join(scratch, key)  # S3 copies of its files (a local store makes none)
            if os.path.isdir(copies):
                shutil.rmtree(copies, ignore_errors=True)
            result.add(state)
            ctx.progress.advance(state)
        if ctx.claims:  # one statement per batch: no other worker takes them again
            ctx.claims.done(written)
        ctx.check_time()


def render_args(docket_id: str, item_key: str, body: str | None, fingerprint: str,
                version: str, kind: str = "comment", caps: TextCaps | None = None,
                title: str | None = None) -> dict:
    """render_combined's arguments but the attachments."""
    return {"comment_id": item_key, "docket_id": docket_id, "inline_text": body or "",
            "sources_fingerprint": fingerprint, "extractor_version": version, "kind": kind,
            "caps": caps, "title": title}


# --- files to read ------------------------------------------------------------------------


def item_job(ctx: StageContext, item_key: str, attachments: Iterable[Attachment], scratch: Path,
             render: dict | None = None) -> ItemJob:
    """The item's readable files as paths; attachments without bytes are not read."""
    from pipeline.extract.pool import FileJob, ItemJob

    return ItemJob(item_key, tuple(
        FileJob(str(attachment_path(ctx, a.sha256, a.filename, scratch / item_key)), a.filename)
        for a in attachments if a.sha256
    ), render)


def attachment_path(ctx: StageContext, sha256: str, filename: str, folder: Path) -> Path:
    """A real file holding the attachment: the blob itself on a local store, else a copy."""
    key = attachment_key(sha256)
    path = ctx.blobs.local_path(key)
    if path is not None:
        return path
    # S3: the readers need a real file. The caller removes the folder once the item is done.
    folder.mkdir(parents=True, exist_ok=True)
    target = folder / filename
    with ctx.blobs.open(key) as source, target.open("wb") as out:
        shutil.copyfileobj(source, out, 1 << 20)
    return target


def scratch_root(ctx: StageContext) -> Path:
    folder = ctx.runtime.data_dir / "tmp"
    folder.mkdir(exist_ok=True)
    return folder


def scratch_args(ctx: StageContext) -> dict:
    """Where a scratch folder goes, named with its owner so that only a dead run's is removed."""
    folder = scratch_root(ctx)
    return {"dir": folder, "prefix": leftovers.scratch_prefix(folder)}


# --- results ------------------------------------------------------------------------------


def _file_rows_by_item(docket_id: str, item_keys) -> dict[str, list[str]]:
    """item key -> its ``extract.file`` row keys, for one page of items (to drop rows of
    removed files), in one query."""
    by_item: dict[str, list[str]] = {}
    for key in item_states.keys_under(FILE_STAGE, docket_id, set(item_keys)):
        by_item.setdefault(key.rsplit("/", 1)[0], []).append(key)
    return by_item


class _Writer:
    """Writes a batch of results: pending rows, then the blobs, then the terminal rows.

    Each step's rows go in one statement and one transaction, and the batch's blobs in one
    ``put_many`` (one flush of the disk, or S3 PUTs side by side): per comment, a commit,
    the SQL built, or an fsync would each cost more than reading a short PDF. A crash
    between the steps leaves ``pending`` rows, which the next run redoes.
    """

    def __init__(self, ctx: StageContext, docket_id: str, version: str,
                 known_files: dict[str, list[str]], kinds: dict[str, str],
                 titles: dict[str, str | None] | None = None) -> None:
        self.ctx = ctx
        self.docket_id = docket_id
        self.kinds = kinds
        self.titles = titles or {}
        self.version = version
        self.known_files = known_files
        self.caps = caps_from(ctx.settings)

    def write(self, batch: list[ItemResult], bodies: dict[str, str | None], todo: dict[str, str]):
        """Returns (item key, item state) for each result, once the whole batch is committed."""
        item_states.transition_many([self._row(STAGE, done.key, "pending", reason="writing combined.md")
                                     for done in batch])
        blobs = [done.combined or self._render(done.key, bodies.get(done.key), done.texts, todo[done.key])
                 for done in batch]
        keys = [combined_key(self.docket_id, done.key) for done in batch]
        self.ctx.blobs.put_many(list(zip(keys, blobs, strict=True)))
        states, final, gone = [], [], set()
        for done, data in zip(batch, blobs, strict=True):
            state = item_state(done.texts)
            states.append((done.key, state))
            final.extend(self._file_row(done.key, text) for text in done.texts)
            final.append(self._item_row(done.key, bodies.get(done.key), done.texts, state, todo[done.key], data))
            gone |= set(self.known_files.get(done.key, ())) - {file_key(done.key, t.file) for t in done.texts}
        with database.atomic():
            item_states.transition_many(final)
            # An attachment the comment no longer has must not keep counting in `docketeer stats`.
            item_states.drop(FILE_STAGE, gone)
        return states

    def _render(self, item_key: str, body: str | None, texts: list[AttachmentText],
                fingerprint: str) -> bytes:
        # Not asked of the workers (see _extract), or the worker died or overran.
        return render_combined(attachments=texts, **render_args(
            self.docket_id, item_key, body, fingerprint, self.version, self.kinds.get(item_key, "comment"),
            self.caps, self.titles.get(item_key)))

    def _row(self, stage: str, item: str, state: str, *, fingerprint: str | None = None,
             content_hash: str | None = None, reason: str | None = None, detail: str | None = None) -> dict:
        return {"stage": stage, "item": item, "docket": self.docket_id, "fingerprint": fingerprint,
                "content_hash": content_hash, "state": state, "reason": reason, "detail": detail,
                "run_id": self.ctx.run_id}

    def _file_row(self, item_key: str, text: AttachmentText) -> dict:
        return self._row(FILE_STAGE, file_key(item_key, text.file), text.status, reason=text.reason or None,
                         detail=f"chars={text.chars} pages={text.pages}")

    def _item_row(self, item_key: str, body: str | None, texts: list[AttachmentText], state: str,
                  fingerprint: str, data: bytes) -> dict:
        # A cap that bit is said on the item's row too (the file rows say only their own cuts).
        reasons = "; ".join([f"{t.file}: {t.status}" for t in texts if t.status != "ok"] + capped_of(data))
        # Its sizes and the caps biting it now, so that a changed cap finds exactly this item.
        sizes = sizes_of(uncapped_texts(body or "", texts), texts)
        biting = caps_biting(sizes, self.caps)
        return self._row(STAGE, item_key, state, fingerprint=with_caps(fingerprint, biting),
                         content_hash=bytes_digest(data), reason=reasons or None, detail=sizes.detail())


def item_state(texts: list[AttachmentText]) -> str:
    statuses = {t.status for t in texts}
    for state in ITEM_STATE_ORDER:
        if state in statuses:
            return state
    return "ok"


def read_combined(blobs, docket_id: str, item_key: str) -> tuple[dict, str]:
    """Load one combined.md (counted: a no-op run must read none)."""
    counters.incr(COMBINED_READS)
    return parse_combined(blobs.get(combined_key(docket_id, item_key)))


# --- the declaration -------------------------------------------------------------------------


def caps_config(caps: TextCaps) -> str:
    """The caps as the stage's terms: empty under the defaults."""
    if caps == caps_from(_DEFAULT_SETTINGS):
        return ""
    return f"caps:{caps.max_body_chars}:{caps.max_item_chars}:{caps.max_file_chars}"


class _Defaults:
    """The caps' default values, as settings (what ``ExtractMarkers`` leaves out)."""

    def __getattr__(self, name: str):
        from pipeline.config import SETTINGS

        return next(s.default for s in SETTINGS if s.name == name)


_DEFAULT_SETTINGS = _Defaults()


DECLARATION = Stage(
    name=STAGE, upstream=UPSTREAM, run=extract_docket, task="ExtractText", wrapper="ExtractAll",
    doc="Text of every new or changed comment into combined.md, in a process pool.",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id, caps_from(runtime.settings)),
    splits_items=True,
    terms=lambda settings: caps_config(caps_from(settings)),
)
