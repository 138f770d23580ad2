"""A scanned file that OCR read is "read" on its comment's page, as in `explain` and the export,
not still "waiting for OCR" (extract's own row keeps saying ocr_needed)."""

from __future__ import annotations

from pipeline.store.models import ItemState
from pipeline.web import pages
from tests.fixtures.pipeline_fixtures import built_store


def test_a_scan_ocr_read_is_read_on_its_comment_page(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=2, comments=6) as store:  # IndexAll: OCR too
        scans = [a for a in store.manifest.attachments() if a.kind == "image_pdf"]
        assert scans
        for scan in scans:
            extract_row = ItemState.get((ItemState.stage == "extract.file")
                                        & (ItemState.item == f"{scan.comment_id}/{scan.file}"))
            assert extract_row.state == "ocr_needed"  # what extract said stays; OCR's word is final
            summary = pages.comment_page(store.runtime, scan.comment_id).attachments_summary
            assert "waiting for OCR" not in summary and "read" in summary, summary
