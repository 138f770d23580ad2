"""The extract stage over items written straight into the state DB and the blob store.

Every test asserts the work done (PDF opens, combined.md reads, rows, blob bytes), never
wall time. Attachments are generated here: text PDFs, a scan, an encrypted and a corrupt
PDF, an empty file, a DOCX with a table, an HTML page with a script, an unknown format.
"""

from __future__ import annotations

import multiprocessing
from pathlib import Path

import pytest

from pipeline.counters import COMBINED_READS, PDF_OPENS, counters
from pipeline.extract.combined import combined_sections
from pipeline.extract.readers import AttachmentText, ExtractLimits, read_attachment
from pipeline.extract.stage import FILE_STAGE, STAGE, unfinished
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.blobs import attachment_key, combined_key
from pipeline.store.models import Attachment
from tests.fixtures.extract_inputs import (
    DOCKET,
    PROSE,
    _sha,
    combined,
    dump_blobs,
    dump_tables,
    pdf_of,
    put_item,
    record_backfill,
    rows,
    run_extract,
    set_attachment,
    setup_docket,
)
from tests.fixtures.state_fixtures import make_runtime

# --- fixture builders -----------------------------------------------------------------------


EXPECTED_FILES = {
    "0001/attachment_1.pdf": ("ok", None),
    "0002/attachment_1.pdf": ("ok", None),
    "0002/attachment_2.docx": ("ok", None),
    "0003/attachment_1.pdf": ("ocr_needed", "no text layer"),
    "0004/attachment_1.pdf": ("failed", "encrypted PDF (password required)"),
    "0005/attachment_1.pdf": ("failed", "corrupt PDF"),
    "0006/attachment_1.pdf": ("failed", "empty file (0 bytes)"),
    "0007/attachment_1.html": ("ok", None),
    "0008/attachment_1.zip": ("unsupported", "zip extension is not read"),
}
EXPECTED_ITEMS = {"0001": "ok", "0002": "ok", "0003": "ocr_needed", "0004": "failed",
                  "0005": "failed", "0006": "failed", "0007": "ok", "0008": "unsupported",
                  "0009": "ok"}


# --- statuses ---------------------------------------------------------------------------------


def test_every_kind_of_file_gets_its_status_and_the_run_completes(rt):
    rt.settings.values["extract_workers"] = 2  # the pool, not a lone worker
    setup_docket(rt)
    result, io_done = run_extract(rt)

    assert result.complete
    files = rows(FILE_STAGE)
    assert {key.removeprefix(f"{DOCKET}-"): row.state for key, row in files.items()} == \
        {key: expected for key, (expected, _reason) in EXPECTED_FILES.items()}
    for key, (_state, reason) in EXPECTED_FILES.items():
        recorded = files[f"{DOCKET}-{key}"].reason
        assert (recorded or "").startswith(reason or ""), (key, recorded)
    assert {key.removeprefix(f"{DOCKET}-"): row.state for key, row in rows(STAGE).items()} == EXPECTED_ITEMS
    # 5 PDFs open (the empty one is refused before PyMuPDF), each exactly once.
    assert io_done[PDF_OPENS] == 5
    assert sum(result.counts.values()) == len(EXPECTED_ITEMS)
    check_combined(rt)


def check_combined(rt) -> None:
    """combined.md carries each attachment's status and the texts, in order."""
    frontmatter, body = combined(rt, f"{DOCKET}-0002")
    assert [(a["file"], a["status"]) for a in frontmatter["attachments"]] == \
        [("attachment_1.pdf", "ok"), ("attachment_2.docx", "ok")]
    assert frontmatter["attachments"][0]["pages"] == 2
    sections = dict(combined_sections(body))
    assert "Page two." in sections["attachment_1.pdf"]
    assert "Ratio | One nurse to four patients" in sections["attachment_2.docx"]  # the table
    assert frontmatter["extractor"] and frontmatter["sources"] == rows(STAGE)[f"{DOCKET}-0002"].fingerprint

    frontmatter, body = combined(rt, f"{DOCKET}-0007")
    assert PROSE in body and "SCRIPT-TEXT-MUST-NOT-APPEAR" not in body and "color: red" not in body
    frontmatter, _ = combined(rt, f"{DOCKET}-0004")
    assert frontmatter["attachments"][0]["reason"] == "encrypted PDF (password required)"
    frontmatter, body = combined(rt, f"{DOCKET}-0009")
    assert frontmatter["attachments"] == [] and "long enough to stand on its own" in body
    # The content hash extract records is the hash of the bytes it wrote.
    for key, row in rows(STAGE).items():
        assert row.content_hash == _sha(rt.blobs.get(combined_key(DOCKET, key)))


# --- reruns ----------------------------------------------------------------------------------


def test_second_run_reads_nothing_and_changes_nothing(state):
    rt = state
    setup_docket(rt)
    first, _ = run_extract(rt)
    assert first.counts.get("unchanged", 0) == 0
    tables, blobs = dump_tables(), dump_blobs(rt)

    second, io_done = run_extract(rt, run_id="run-2")

    assert io_done.get(PDF_OPENS, 0) == 0 and io_done.get(COMBINED_READS, 0) == 0
    assert io_done == {}  # no row written, no blob read or written either
    assert second.counts == {"unchanged": len(EXPECTED_ITEMS)}
    assert dump_tables() == tables
    assert dump_blobs(rt) == blobs


def test_changing_one_attachment_re_extracts_exactly_that_comment(rt):
    setup_docket(rt)
    run_extract(rt)
    before = dump_tables()["item_state"]
    blobs = dump_blobs(rt)
    changed = f"{DOCKET}-0002"
    set_attachment(rt, changed, "attachment_1.pdf", pdf_of("A revised letter. " + PROSE))
    Attachment.delete().where((Attachment.item == changed) & (Attachment.filename == "attachment_2.docx")).execute()
    record_backfill(changed)

    result, io_done = run_extract(rt, run_id="run-2")

    assert io_done[PDF_OPENS] == 1  # that comment's one PDF
    assert result.counts == {"ok": 1, "unchanged": len(EXPECTED_ITEMS) - 1}
    # Only that comment's rows moved; the removed DOCX no longer counts in the stats.
    assert rewritten_rows(before, dump_tables()["item_state"]) == {
        ("backfill", changed), (STAGE, changed), (FILE_STAGE, f"{changed}/attachment_1.pdf")}
    assert f"{changed}/attachment_2.docx" not in rows(FILE_STAGE)
    frontmatter, body = combined(rt, changed)
    assert [a["file"] for a in frontmatter["attachments"]] == ["attachment_1.pdf"]
    assert "A revised letter." in body
    new_pdf = Attachment.get((Attachment.item == changed) & (Attachment.filename == "attachment_1.pdf"))
    now = dump_blobs(rt)
    assert {k for k, v in now.items() if blobs.get(k) != v} == \
        {combined_key(DOCKET, changed), attachment_key(new_pdf.sha256)}


def rewritten_rows(before: list[tuple], after: list[tuple]) -> set[tuple[str, str]]:
    """(stage, item) of the item_state rows that differ between two dumps (or are gone)."""
    old = {(r[0], r[1]): r for r in before}
    new = {(r[0], r[1]): r for r in after}
    return {key for key in new if old.get(key) != new[key]}


def test_extractor_version_bump_re_extracts_everything_once(rt):
    setup_docket(rt)
    run_extract(rt, version="extract-test-1")

    bumped, io_done = run_extract(rt, run_id="run-2", version="extract-test-2")
    assert io_done[PDF_OPENS] == 5
    assert bumped.counts.get("unchanged", 0) == 0
    assert {combined(rt, key)[0]["extractor"] for key in rows(STAGE)} == {"extract-test-2"}

    again, io_done = run_extract(rt, run_id="run-3", version="extract-test-2")
    assert io_done.get(PDF_OPENS, 0) == 0
    assert again.counts == {"unchanged": len(EXPECTED_ITEMS)}


# --- time limit ------------------------------------------------------------------------------


# Module-level so a worker process can unpickle it. The loop runs inside one C call (sum
# over a range), where no Python signal handler gets control: only a kill stops it. It is
# bounded (tens of seconds) so that a broken limit fails the test instead of hanging it.
def runaway_reader(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    if "runaway" in filename:
        sum(range(3 * 10**9))
    return read_attachment(path, filename, limits)


def test_time_limit_fails_a_runaway_file_and_the_run_goes_on(tmp_path):
    rt = make_runtime(tmp_path, extract_workers=1, file_seconds=1)
    rt.state  # noqa: B018
    previous = set_runtime(rt)
    try:
        setup_docket(rt, {
            f"{DOCKET}-0001": ("Stuck.", {"runaway.pdf": pdf_of(PROSE)}),
            f"{DOCKET}-0002": ("Fine.", {"attachment_1.pdf": pdf_of(PROSE)}),
        })
        result, io_done = run_extract(rt, reader=runaway_reader)
        # Read while this runtime is installed: restoring the previous one rebinds the models.
        files = {key: (row.state, row.reason) for key, row in rows(FILE_STAGE).items()}
    finally:
        set_runtime(previous)
        rt.close()

    assert result.complete and result.counts == {"failed": 1, "ok": 1}
    assert files == {f"{DOCKET}-0001/runaway.pdf": ("failed", "time limit exceeded (1 s)"),
                     f"{DOCKET}-0002/attachment_1.pdf": ("ok", None)}
    assert io_done[PDF_OPENS] == 1  # the one worker was replaced and read the next file


def test_a_runaway_file_between_two_good_ones_fails_alone(tmp_path):
    """The limit is per file: the worker is replaced mid-item, the item's next file is
    read by the replacement, and combined.md holds both good texts."""
    rt = make_runtime(tmp_path, extract_workers=1, file_seconds=1)
    rt.state  # noqa: B018
    previous = set_runtime(rt)
    try:
        setup_docket(rt, {f"{DOCKET}-0001": ("Three files.", {
            "attachment_1.pdf": pdf_of("First letter. " + PROSE),
            "attachment_2_runaway.pdf": pdf_of(PROSE),
            "attachment_3.pdf": pdf_of("Third letter. " + PROSE),
        })})
        result, io_done = run_extract(rt, reader=runaway_reader)
        files = {key: (row.state, row.reason) for key, row in rows(FILE_STAGE).items()}
        frontmatter, body = combined(rt, f"{DOCKET}-0001")
    finally:
        set_runtime(previous)
        rt.close()

    assert result.counts == {"failed": 1}
    assert files == {f"{DOCKET}-0001/attachment_1.pdf": ("ok", None),
                     f"{DOCKET}-0001/attachment_2_runaway.pdf": ("failed", "time limit exceeded (1 s)"),
                     f"{DOCKET}-0001/attachment_3.pdf": ("ok", None)}
    assert [a["status"] for a in frontmatter["attachments"]] == ["ok", "failed", "ok"]
    assert "First letter." in body and "Third letter." in body
    assert io_done[PDF_OPENS] == 2


def test_workers_and_this_process_render_the_same_combined_md(rt, monkeypatch):
    """combined.md is rendered by the workers when they take every core, else by the
    stage's own process; either way the bytes are the same."""
    rt.settings.values["extract_workers"] = 2
    setup_docket(rt)
    monkeypatch.setattr("pipeline.extract.stage.os.cpu_count", lambda: 2)  # workers render
    run_extract(rt)
    by_workers = dump_blobs(rt)
    monkeypatch.setattr("pipeline.extract.stage.os.cpu_count", lambda: 8)  # this process does
    result, io_done = run_extract(rt, run_id="run-2", force=True)

    assert io_done[PDF_OPENS] == 5 and sum(result.counts.values()) == len(EXPECTED_ITEMS)
    assert dump_blobs(rt) == by_workers
    check_combined(rt)


def _extract_in_fork(data_dir: str) -> None:
    runtime = make_runtime(Path(data_dir))
    set_runtime(runtime)
    result, _ = run_extract(runtime, run_id="forked")
    raise SystemExit(0 if result.counts == {"ok": 1, "unchanged": 1} else 1)


def test_a_forked_process_extracts_after_its_parent_started_workers(rt, tmp_path):
    """Luigi runs each task in a fork when --workers > 1; the parent may have extracted."""
    setup_docket(rt, {f"{DOCKET}-0001": ("One.", {"attachment_1.pdf": pdf_of(PROSE)})})
    run_extract(rt)  # workers exist in this process now
    put_item(rt, f"{DOCKET}-0002", "Two.", {"attachment_1.pdf": pdf_of("Second letter. " + PROSE)})

    child = multiprocessing.get_context("fork").Process(target=_extract_in_fork, args=(str(tmp_path),))
    child.start()
    child.join(120)

    assert child.exitcode == 0
    assert rows(STAGE)[f"{DOCKET}-0002"].state == "ok"


def test_sealed_docket_still_gets_the_work_backfill_recorded_under_the_seal(rt):
    """A seal says no new comments will come; it never says extract is done. Backfill can
    finish items after the seal (a budget stop, mirror lag): extract must read them."""
    setup_docket(rt)
    run_extract(rt)
    sealed_at = dockets.seal(DOCKET, "manual")
    set_attachment(rt, f"{DOCKET}-0001", "attachment_1.pdf", pdf_of("Changed after the seal. " + PROSE))
    record_backfill(f"{DOCKET}-0001")  # backfill finished this item under the seal

    result, io_done = run_extract(rt, run_id="run-2")
    assert result.counts == {"ok": 1, "unchanged": len(EXPECTED_ITEMS) - 1}
    assert io_done[PDF_OPENS] == 1
    assert unfinished(DOCKET) == 0

    redriven = item_states.mark_stale(STAGE, DOCKET, ["failed"], 1, run_id="redrive")
    assert unfinished(DOCKET) == 1  # a re-driven row is owed work again
    result, io_done = run_extract(rt, run_id="run-3")
    assert result.counts == {"failed": 1, "unchanged": len(EXPECTED_ITEMS) - 1}
    assert rows(STAGE)[redriven[0]].state == "failed" and io_done[PDF_OPENS] == 1
    assert dockets.require_docket(DOCKET).sealed_at == sealed_at


# --- real files ------------------------------------------------------------------------------


def test_the_real_pdfs_extract_ok_with_their_text(rt, realdata):
    binary = realdata / "mirror/raw-data/ACF/ACF-2025-0038/binary-ACF-2025-0038"
    comment = binary / "comments_attachments/ACF-2025-0038-0004_attachment_1.pdf"
    notice = binary / "documents_attachments/ACF-2025-0038-0001_content.pdf"
    if not (comment.is_file() and notice.is_file()):
        pytest.skip("the real PDFs are absent")
    setup_docket(rt, {
        f"{DOCKET}-0001": ("Notice", {"content.pdf": notice.read_bytes()}),
        f"{DOCKET}-0004": ("See attached file(s)", {"attachment_1.pdf": comment.read_bytes()}),
    })

    result, _ = run_extract(rt)

    assert result.counts == {"ok": 2}
    assert {row.state for row in rows(FILE_STAGE).values()} == {"ok"}
    notice_md, comment_md = combined(rt, f"{DOCKET}-0001"), combined(rt, f"{DOCKET}-0004")
    assert notice_md[0]["attachments"][0]["pages"] == 4
    assert "Indian Child Welfare Act" in notice_md[1]
    assert comment_md[0]["attachments"][0]["pages"] == 2
    assert "Division of Safety and Permanence" in comment_md[1]


def test_a_big_todo_is_extracted_a_page_at_a_time(rt, monkeypatch):
    """Bodies, files and results of one page of items are held at once, never the docket's:
    every item is done, and no pass held more than a page (noted by the stage itself)."""
    from pipeline.extract import stage as extract

    comments = {f"{DOCKET}-{n:04d}": (f"Comment {n}. {PROSE}", {"attachment_1.txt": b"Plain text."})
                for n in range(1, 26)}
    setup_docket(rt, comments)
    monkeypatch.setattr(extract, "WORK_PAGE", 6)
    # A removed file's row is dropped by the page that holds its item.
    run_extract(rt)
    gone = f"{DOCKET}-0013"
    Attachment.delete().where(Attachment.item == gone).execute()
    record_backfill(gone)
    with counters.peaks() as first_peaks:
        rerun, _ = run_extract(rt, run_id="run-2", force=True)
    assert rerun.counts == {"ok": 25}
    assert first_peaks[extract.EXTRACT_HELD] == 6
    assert f"{gone}/attachment_1.txt" not in rows(FILE_STAGE)
    assert len(rows(FILE_STAGE)) == 24 and len(rows(STAGE)) == 25


def test_a_run_that_fits_in_one_work_page_plans_once(rt, monkeypatch):
    """Planning reads every state row of the docket: a todo that fits in one work page is
    planned once (not once to count it and again to do it), and each PDF is opened once."""
    from pipeline.extract import stage as extract

    setup_docket(rt)
    passes = []
    real = item_states.paired_pages

    def counted(*args, **kwargs):
        passes.append(args[:2])
        return real(*args, **kwargs)

    monkeypatch.setattr(item_states, "paired_pages", counted)
    with counters.peaks() as peaks:
        first, io_done = run_extract(rt)
    assert passes == [("backfill", STAGE)]
    assert io_done[PDF_OPENS] == 5  # the five PDF attachments, each opened once
    assert sum(first.counts.values()) == len(EXPECTED_ITEMS) == len(rows(STAGE))
    assert peaks[extract.EXTRACT_HELD] == len(EXPECTED_ITEMS)

    passes.clear()
    monkeypatch.setattr(extract, "WORK_PAGE", 4)  # too many to hold: planned again by pages
    again, io_done = run_extract(rt, run_id="run-2", force=True)
    assert passes == [("backfill", STAGE)] * 2
    assert io_done[PDF_OPENS] == 5
    assert sum(again.counts.values()) == len(EXPECTED_ITEMS)
