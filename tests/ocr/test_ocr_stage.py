"""The OCR stage: scans extract left ``ocr_needed`` come back as text in combined.md."""

from __future__ import annotations

import hashlib
import logging

from pipeline.counters import COMBINED_READS, PDF_OPENS
from pipeline.engine import markers
from pipeline.extract.combined import combined_sections
from pipeline.extract.stage import FILE_STAGE
from pipeline.extract.stage import STAGE as EXTRACT
from pipeline.ocr import tesseract as ocr_lib
from pipeline.ocr.stage import STAGE as OCR
from pipeline.store import item_states
from pipeline.store.blobs import combined_key
from tests.fixtures.extract_inputs import (
    DOCKET,
    PROSE,
    SCAN_SENTENCE,
    combined,
    dump_blobs,
    dump_tables,
    pdf_of,
    rows,
    run_extract,
    setup_docket,
)
from tests.fixtures.ocr_inputs import (
    BLANK,
    SCANNED,
    TYPED,
    comments,
    extract_with_marker,
    needs_tesseract,
    normalised,
    run_ocr,
)


@needs_tesseract
def test_ocr_merges_the_scan_text_into_combined_md_and_the_index_sees_it(rt):
    setup_docket(rt, comments())
    before_output = extract_with_marker(rt)
    typed_row = rows(EXTRACT)[TYPED]

    result, io_done = run_ocr(rt)

    assert result.complete and result.counts == {"merged": 2, "ocr_ok": 1, "ocr_failed": 1}
    assert io_done[PDF_OPENS] == 2 and io_done[COMBINED_READS] == 2  # only the two scans
    frontmatter, body = combined(rt, SCANNED)
    sections = dict(combined_sections(body))
    assert SCAN_SENTENCE in normalised(sections["attachment_1.pdf"])
    assert PROSE in normalised(sections["attachment_2.pdf"])  # the typed file is kept
    assert frontmatter["attachments"][0]["status"] == "ocr_needed"  # what extract found ...
    assert frontmatter["attachments"][0]["ocr"]["status"] == "ok"  # ... and what OCR added
    ocr_rows = rows(OCR)
    assert {k: (r.state, r.reason) for k, r in ocr_rows.items()} == {
        f"{SCANNED}/attachment_1.pdf": ("ok", None),
        f"{BLANK}/attachment_1.pdf": ("failed", "ocr found no text"),
    }
    assert combined(rt, BLANK)[0]["attachments"][0]["ocr"]["reason"] == "ocr found no text"
    # Extract's row now vouches for the merged bytes, so the index re-reads exactly these.
    extract_rows = rows(EXTRACT)
    for key in (SCANNED, BLANK):
        data = rt.blobs.get(combined_key(DOCKET, key))
        assert extract_rows[key].content_hash == hashlib.sha256(data).hexdigest()
    assert extract_rows[TYPED] == typed_row
    assert rows(FILE_STAGE)[f"{SCANNED}/attachment_1.pdf"].state == "ocr_needed"
    marker = markers.read_marker(DOCKET, EXTRACT)
    assert marker.output_fingerprint == item_states.docket_output_fingerprint(EXTRACT, DOCKET)
    assert marker.output_fingerprint != before_output and marker.input_fingerprint == "backfill-fp"


@needs_tesseract
def test_second_ocr_run_and_a_no_op_extract_change_nothing(rt):
    setup_docket(rt, comments())
    extract_with_marker(rt)
    run_ocr(rt)
    tables, blobs = dump_tables(), dump_blobs(rt)
    marker = markers.read_marker(DOCKET, EXTRACT).__data__

    again, io_done = run_ocr(rt, run_id="ocr-2")
    _, extract_io = run_extract(rt, run_id="run-2")  # keeps the merged combined.md

    assert again.counts == {} and not io_done and not extract_io
    assert dump_tables() == tables and dump_blobs(rt) == blobs
    assert markers.read_marker(DOCKET, EXTRACT).__data__ == marker


@needs_tesseract
def test_re_extraction_brings_the_scan_back_to_ocr_once(rt):
    setup_docket(rt, comments())
    extract_with_marker(rt)
    run_ocr(rt)
    extract_with_marker(rt, run_id="run-2", version="extract-test-2")  # OCR text is gone
    assert SCAN_SENTENCE not in normalised(combined(rt, SCANNED)[1])

    result, io_done = run_ocr(rt, run_id="ocr-2")
    assert result.counts["merged"] == 2 and io_done[PDF_OPENS] == 2
    assert SCAN_SENTENCE in normalised(combined(rt, SCANNED)[1])
    assert combined(rt, SCANNED)[0]["extractor"] == "extract-test-2"

    result, io_done = run_ocr(rt, run_id="ocr-3")
    assert result.counts == {} and not io_done


def test_without_tesseract_one_line_and_nothing_changes(rt, monkeypatch, caplog):
    setup_docket(rt, comments())
    extract_with_marker(rt)
    tables, blobs = dump_tables(), dump_blobs(rt)
    monkeypatch.setattr(ocr_lib, "tesseract_available", lambda language="eng": False)

    caplog.clear()  # only what the OCR run says counts
    with caplog.at_level(logging.INFO, logger="docketeer"):
        result, io_done = run_ocr(rt)

    lines = [r.getMessage() for r in caplog.records if r.name == "docketeer"]
    assert len(lines) == 1 and "Tesseract is not installed" in lines[0]
    assert "2 attachments stay ocr_needed" in lines[0]
    assert result.clean and not io_done
    assert dump_tables() == tables and dump_blobs(rt) == blobs


def test_without_tesseract_a_docket_without_scans_gets_no_warning(rt, monkeypatch, caplog):
    setup_docket(rt, {TYPED: ("Typed.", {"attachment_1.pdf": pdf_of(PROSE)})})
    extract_with_marker(rt)
    monkeypatch.setattr(ocr_lib, "tesseract_available", lambda language="eng": False)
    caplog.clear()
    with caplog.at_level(logging.INFO, logger="docketeer"):
        result, _ = run_ocr(rt)
    assert result.clean and not result.message
    assert "Tesseract" not in caplog.text
