"""Extract: each comment's inline text and attachments into one ``combined.md`` blob.

The per-item fingerprint is built from facts already in the state DB (the backfill content
hash, which covers the detail record and the attachments' sha256s, plus the extractor
version), so an unchanged item is skipped with zero file reads. Changed items are read in
a process pool; every attachment gets a status (ok, ocr_needed, failed, unsupported).
"""

from __future__ import annotations

import hashlib
import logging
import tempfile
from contextlib import ExitStack
from pathlib import Path

from pipeline.counters import COMBINED_READS, counters
from pipeline.extract.combined import parse_combined, render_combined
from pipeline.extract.pool import FileJob, ItemJob, extract_items, worker_count
from pipeline.extract.readers import EXTRACTOR_VERSION, AttachmentText, ExtractLimits
from pipeline.stages.base import StageContext, StageResult
from pipeline.store import item_states, items
from pipeline.store.blobs import attachment_key, combined_key
from pipeline.store.models import Docket, Item

log = logging.getLogger("docketeer")
STAGE = "extract"
FILE_STAGE = "extract.file"
UPSTREAM = "backfill"
EXTRACTABLE = ("ok", "too_large", "gone")  # an item with its detail, whatever its files did
ITEM_STATE_ORDER = ("failed", "ocr_needed", "unsupported", "too_large", "gone", "ok")


def item_fingerprint(upstream_hash: str | None, version: str = EXTRACTOR_VERSION) -> str:
    return hashlib.sha256(f"{version}\x1f{upstream_hash or ''}".encode()).hexdigest()


def limits_from(settings) -> ExtractLimits:
    return ExtractLimits(
        max_pdf_pages=settings.max_pdf_pages,
        max_docx_uncompressed_bytes=settings.max_docx_bytes,
        file_seconds=settings.file_seconds,
    )


def plan(upstream: dict, mine: dict, force: bool, version: str = EXTRACTOR_VERSION) -> dict[str, str]:
    """item key -> fingerprint for the items with work, from state rows alone (no file)."""
    todo = {}
    for key, row in upstream.items():
        if row.state not in EXTRACTABLE:
            continue
        fingerprint = item_fingerprint(row.content_hash, version)
        done = mine.get(key)
        if force or done is None or done.fingerprint != fingerprint or done.state in ("pending", "stale"):
            todo[key] = fingerprint
    return todo


def extract_docket(ctx: StageContext, docket: Docket, *, version: str = EXTRACTOR_VERSION) -> StageResult:
    if docket.sealed_at and not ctx.force:
        return StageResult(message="sealed")
    upstream = item_states.states_for_docket(UPSTREAM, docket.id)
    mine = item_states.states_for_docket(STAGE, docket.id)
    todo = plan(upstream, mine, ctx.force, version)
    result = StageResult()
    result.add("unchanged", sum(1 for key in mine if key not in todo))
    if not todo:
        return result
    ctx.progress.start(len(todo))
    rows = {item.key: item for item in Item.select().where(Item.key.in_(list(todo)))}
    files = items.attachments_of(list(todo))
    limits = limits_from(ctx.settings)
    with ExitStack() as scratch:
        jobs = [_job(ctx, rows[key], files.get(key, []), scratch) for key in sorted(todo)]
        workers = worker_count(ctx.settings.extract_workers)
        for key, texts in extract_items(jobs, limits, workers):
            state = _write_item(ctx, rows[key], texts, todo[key], version)
            result.add(state)
            ctx.progress.advance(state)
            ctx.check_time()
    return result


def _job(ctx: StageContext, item: Item, attachments, scratch: ExitStack) -> ItemJob:
    file_jobs = []
    for attachment in attachments:
        if not attachment.sha256:
            continue
        key = attachment_key(attachment.sha256)
        path = ctx.blobs.local_path(key)
        if path is None:  # S3: the readers need a real file
            path = _download(ctx, key, attachment.filename, scratch)
        file_jobs.append(FileJob(str(path), attachment.filename))
    return ItemJob(item.key, tuple(file_jobs))


def _download(ctx: StageContext, key: str, filename: str, scratch: ExitStack) -> Path:
    folder = ctx.runtime.data_dir / "tmp"
    folder.mkdir(exist_ok=True)
    handle = scratch.enter_context(
        tempfile.NamedTemporaryFile(dir=folder, suffix="-" + filename)
    )
    with ctx.blobs.open(key) as source:
        while chunk := source.read(1 << 20):
            handle.write(chunk)
    handle.flush()
    return Path(handle.name)


def _write_item(ctx: StageContext, item: Item, texts: list[AttachmentText], fingerprint: str,
                version: str) -> str:
    item_states.mark_pending(STAGE, item.key, item.docket, run_id=ctx.run_id, reason="writing combined.md")
    data = render_combined(
        comment_id=item.key, docket_id=item.docket, inline_text=item.body or "",
        attachments=texts, sources_fingerprint=fingerprint, extractor_version=version,
    )
    ctx.blobs.put_bytes(combined_key(item.docket, item.key), data)
    for text in texts:
        item_states.transition(FILE_STAGE, f"{item.key}/{text.file}", item.docket, text.status,
                               run_id=ctx.run_id, reason=text.reason or None,
                               detail=f"chars={text.chars} pages={text.pages}")
    state = item_state(texts)
    reasons = "; ".join(f"{t.file}: {t.status}" for t in texts if t.status != "ok")
    item_states.transition(STAGE, item.key, item.docket, state, run_id=ctx.run_id,
                           fingerprint=fingerprint, content_hash=hashlib.sha256(data).hexdigest(),
                           reason=reasons or None)
    return state


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
