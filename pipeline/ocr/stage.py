"""OCR: attachments extract left ``ocr_needed`` (image-only PDFs) through Tesseract.

Per attachment the stage records an ``ocr`` row keyed ``<comment>/<file>`` (ok, or failed
with the reason) and re-renders the comment's ``combined.md`` with the OCR text merged in
(``render_combined(ocr=...)``). The other attachments' texts come from the combined.md
being replaced, so no other file is opened again.

Deciding the work reads state rows only. An attachment is done when its ``ocr`` row holds
the fingerprint of (OCR version, extract's item fingerprint, file name) *and* the content
hash of the combined.md it merged into is still the one extract's row records. The second
half matters: when extract re-renders an item (an extractor upgrade, ``--force``) the OCR
text is gone from combined.md and the attachment is OCRed again.

The merge writes extract's item row in place with the new content hash, and refreshes the
output fingerprint of extract's docket marker, so ``IndexDocket`` (whose input is extract's
output, see ``merges_into_upstream`` in the declaration) re-indexes exactly the comments
whose text OCR changed.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING

from pipeline.counters import COMBINED_READS, counters
from pipeline.engine import markers
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.errors import BudgetSpent
from pipeline.extract import stage as extract
from pipeline.extract.combined import (
    DOCUMENT_HEADING,
    INLINE_HEADING,
    capped_of,
    combined_sections,
    kind_of,
    parse_combined,
    render_combined,
    uncapped_texts,
)
from pipeline.extract.readers import STATUS_OCR_NEEDED, STATUS_OK, AttachmentText
from pipeline.extract.stage import REDO_STATES
from pipeline.extract.text_caps import ItemSizes, caps_biting, sizes_of, with_caps
from pipeline.fingerprints import bytes_digest, digest
from pipeline.ocr import tesseract as ocr_lib
from pipeline.store import item_states, items
from pipeline.store.blobs import combined_key
from pipeline.store.models import Docket, database

if TYPE_CHECKING:  # the pool imports PyMuPDF: loaded when a run has scans to read
    from pipeline.extract.pool import ItemJob

log = logging.getLogger("docketeer")
STAGE = "ocr"


def ocr_fingerprint(extract_fingerprint: str, filename: str, version: str = ocr_lib.OCR_VERSION) -> str:
    return digest(version, extract_fingerprint, filename)


@dataclass
class ItemWork:
    """One comment whose scans need OCR: what extract recorded and which files to read."""

    key: str
    extract_row: item_states.StateRow
    files: list[str] = field(default_factory=list)


def plan(extract_rows: dict, file_rows: dict, ocr_rows: dict, force: bool) -> dict[str, ItemWork]:
    """item key -> its work, from state rows alone. A comment with any scan to redo is
    redone whole, so all of its ``ocr`` rows vouch for the same combined.md. A seal changes
    nothing here (as in extract): the scans of a sealed docket still get read."""
    work: dict[str, ItemWork] = {}
    for key in sorted(k for k, row in file_rows.items() if row.state == STATUS_OCR_NEEDED):
        item_key, filename = key.rsplit("/", 1)
        row = extract_rows.get(item_key)
        if row is None or row.state in REDO_STATES or not row.fingerprint:
            continue  # extract has not finished this item: it comes back next run
        work.setdefault(item_key, ItemWork(item_key, row)).files.append(filename)
    return {key: w for key, w in work.items() if force or _needs_ocr(w, ocr_rows)}


def unfinished(docket_id: str) -> int:
    """Scans extract vouches for whose comment has no OCR state for its current text
    (0 without Tesseract: the stage then changes nothing and says so)."""
    if not ocr_lib.tesseract_available():
        return 0
    return len(plan(item_states.states_for_docket(extract.STAGE, docket_id),
                    item_states.states_for_docket(extract.FILE_STAGE, docket_id),
                    item_states.states_for_docket(STAGE, docket_id), False))


def _needs_ocr(work: ItemWork, ocr_rows: dict) -> bool:
    for filename in work.files:
        done = ocr_rows.get(extract.file_key(work.key, filename))
        if (done is None or done.state in REDO_STATES
                or done.fingerprint != ocr_fingerprint(work.extract_row.fingerprint, filename)
                or done.content_hash != work.extract_row.content_hash):
            return True
    return False


def ocr_docket(ctx: StageContext, docket: Docket) -> StageResult:
    file_rows = item_states.states_for_docket(extract.FILE_STAGE, docket.id)
    if not ocr_lib.tesseract_available():
        return _without_tesseract(docket, file_rows)
    ocr_rows = item_states.states_for_docket(STAGE, docket.id)
    _drop_orphans(ocr_rows, file_rows)
    work = plan(item_states.states_for_docket(extract.STAGE, docket.id), file_rows, ocr_rows,
                ctx.force)
    result = StageResult()
    if not work:
        return result
    ctx.progress.start(len(work))
    try:
        _run(ctx, docket, work, result)
    except BudgetSpent as exc:  # merged items are kept; the next run goes on
        result.budget_spent, result.message = True, str(exc)
    if result.counts.get("merged"):
        refresh_extract_marker(docket.id)
    return result


def _without_tesseract(docket: Docket, file_rows: dict) -> StageResult:
    waiting = sum(1 for row in file_rows.values() if row.state == STATUS_OCR_NEEDED)
    if not waiting:  # no scans in this docket: nothing is missing, nothing to say
        return StageResult()
    message = (f"Tesseract is not installed (no eng.traineddata; apt-get install tesseract-ocr): "
               f"{waiting} attachments stay ocr_needed")
    log.warning("ocr %s: %s", docket.id, message)
    return StageResult(message=message)


def _drop_orphans(ocr_rows: dict, file_rows: dict) -> None:
    # A scan replaced by a text PDF (or removed) must not keep counting in `docketeer stats`.
    orphans = [key for key in ocr_rows
               if key not in file_rows or file_rows[key].state != STATUS_OCR_NEEDED]
    item_states.drop(STAGE, orphans)
    for key in orphans:
        del ocr_rows[key]


def _run(ctx: StageContext, docket: Docket, work: dict[str, ItemWork], result: StageResult) -> None:
    from pipeline.extract.pool import ExtractPool, worker_count

    bodies = items.bodies_of(docket.id, work)
    attachments = items.attachments_of(work, docket.id)
    workers = min(worker_count(ctx.settings.extract_workers), len(work))
    limits = extract.limits_from(ctx.settings)
    with tempfile.TemporaryDirectory(**extract.scratch_args(ctx)) as scratch, \
            ExtractPool(limits, workers, reader=ocr_lib.ocr_attachment) as pool:
        jobs = (_job(ctx, w, attachments.get(w.key, []), Path(scratch)) for w in work.values())
        for done in pool.map(jobs):  # OCR takes seconds a page: one item at a time is fine
            outcome = merge_item(ctx, docket.id, work[done.key], bodies.get(done.key) or "", done.texts)
            result.add(outcome)
            for text in done.texts:
                result.add(f"ocr_{text.status}")
            ctx.progress.advance(outcome)
            ctx.check_time()


def _job(ctx: StageContext, work: ItemWork, attachments, scratch: Path) -> ItemJob:
    wanted = [a for a in attachments if a.filename in work.files]
    return extract.item_job(ctx, work.key, wanted, scratch)


def merge_item(ctx: StageContext, docket_id: str, work: ItemWork, body: str,
               texts: list[AttachmentText]) -> str:
    """Re-render the comment's combined.md with the OCR texts; record every row."""
    key = combined_key(docket_id, work.key)
    recorded = ctx.blobs.get(key)
    counters.incr(COMBINED_READS)
    row = work.extract_row
    if bytes_digest(recorded) != row.content_hash:
        log.warning("ocr %s: combined.md is not the one extract recorded; left for the next run", work.key)
        return "stale"
    frontmatter, markdown = parse_combined(recorded)
    attachments = recorded_attachments(frontmatter, markdown)
    ocr = {t.file: t for t in texts}
    caps = extract.caps_from(ctx.settings)
    for text in texts:
        item_states.mark_pending(STAGE, extract.file_key(work.key, text.file), docket_id,
                                 run_id=ctx.run_id, reason="merging into combined.md")
    data = render_combined(
        comment_id=work.key, docket_id=docket_id, inline_text=body, attachments=attachments,
        sources_fingerprint=frontmatter["sources"], extractor_version=frontmatter["extractor"],
        ocr=ocr, kind=kind_of(frontmatter), caps=caps, title=frontmatter.get("title"),
    )
    ctx.blobs.put_bytes(key, data)
    content_hash = bytes_digest(data)
    # The item's sizes now count the OCR text, and its fingerprint the caps that bite it
    # with it (extract's rule, extract's base: combined.md's sources), so that a changed cap
    # redoes exactly the OCR'd items it bites or bit, and an unchanged one none.
    sizes = sizes_with_ocr(row.detail, attachments, ocr)
    fingerprint = with_caps(frontmatter["sources"], caps_biting(sizes, caps))
    with database.atomic():  # the new combined.md's hash and the OCR rows that made it, together
        item_states.transition(extract.STAGE, work.key, docket_id, row.state, run_id=ctx.run_id,
                               fingerprint=fingerprint, content_hash=content_hash,
                               reason=_reason(row.reason, capped_of(recorded), capped_of(data)),
                               detail=sizes.detail() if sizes is not None else row.detail)
        for text in texts:
            item_states.transition(STAGE, extract.file_key(work.key, text.file), docket_id, text.status,
                                   run_id=ctx.run_id, fingerprint=ocr_fingerprint(fingerprint, text.file),
                                   content_hash=content_hash, reason=text.reason or None,
                                   detail=f"chars={text.chars} pages={text.pages}")
    return "merged"


def sizes_with_ocr(detail: str | None, attachments: list[AttachmentText],
                   ocr: dict[str, AttachmentText]) -> ItemSizes | None:
    """Extract's recorded sizes of the item (``detail``) with the OCR'd sections added (a
    scan's section was empty when extract measured it); None when extract recorded none."""
    measured = ItemSizes.from_detail(detail)
    if measured is None:
        return None
    scans = [a for a in attachments if a.file in ocr]
    return measured.with_files(sizes_of(uncapped_texts("", scans, ocr), list(ocr.values())))


def _reason(extract_reason: str | None, capped_before: list[str], capped_now: list[str]) -> str | None:
    """Extract's reason with the cuts of the merged text in place of the cuts before it."""
    kept = [part for part in (extract_reason or "").split("; ") if part and part not in capped_before]
    return "; ".join(kept + capped_now) or None


def recorded_attachments(frontmatter: dict, markdown: str) -> list[AttachmentText]:
    """The attachments as extract rendered them: statuses from the frontmatter, the text of
    ok ones from their sections (one section per attachment, in frontmatter order)."""
    sections = combined_sections(markdown)
    if not sections or sections[0][0] not in (INLINE_HEADING, DOCUMENT_HEADING):
        raise ValueError("combined.md has no inline section")
    recorded = []
    for entry, (_heading, text) in zip(frontmatter.get("attachments") or [], sections[1:], strict=True):
        recorded.append(AttachmentText(
            entry["file"], entry["status"], entry.get("reason") or "", entry.get("chars") or 0,
            entry.get("pages"), text if entry["status"] == STATUS_OK else "",
        ))
    return recorded


def refresh_extract_marker(docket_id: str) -> None:
    """Extract's output changed under its marker: record the new output fingerprint, so
    IndexDocket sees the change. The marker's input and version stay as extract left them."""
    markers.refresh_output(docket_id, extract.STAGE)


# --- the declaration -------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream=extract.STAGE, run=ocr_docket, task="OcrText", wrapper="OcrAll",
    doc="""Image-only PDFs (extract.file ocr_needed) through Tesseract, merged into combined.md.

    Without Tesseract it says so in one line and changes nothing (and counts as done: after
    installing Tesseract, run `OcrAll --force` once).""",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id),
    enabled=lambda settings: settings.ocr,  # off: the index requires extract directly
    # On or off changes what the stages after it read: turned on, IndexAll reaches OCR.
    terms=lambda settings: "" if settings.ocr else "ocr:off",
    merges_into_upstream=True,
)
