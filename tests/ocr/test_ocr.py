"""OCR of image-only PDFs through PyMuPDF's Tesseract (needs the eng language data)."""

from __future__ import annotations

from pathlib import Path

import pytest

from devtools.make_corpus import image_only_pdf
from pipeline.counters import PDF_OPENS, counters
from pipeline.extract import ExtractLimits, read_attachment
from pipeline.ocr.tesseract import ocr_attachment, ocr_pdf, tesseract_available

pytestmark = pytest.mark.skipif(
    not tesseract_available(),
    reason="Tesseract language data (eng.traineddata) not found: apt-get install tesseract-ocr",
)

SENTENCE = "Rural hospitals need stable funding to keep the emergency room open."


def write_scan(path: Path, lines: list[str]) -> Path:
    path.write_bytes(image_only_pdf(" ".join(lines)))
    return path


def normalised(text: str) -> str:
    return " ".join(text.split())


def test_ocr_reads_the_sentence_the_reader_could_not(tmp_path):
    path = write_scan(tmp_path / "scan.pdf", ["Rural hospitals need stable funding", "to keep the emergency room open."])
    assert read_attachment(path, "attachment_1.pdf", ExtractLimits()).status == "ocr_needed"
    with counters.measure() as delta:
        result = ocr_pdf(path)
    assert result.status == "ok", result.reason
    assert SENTENCE in normalised(result.text)
    assert result.pages == 1 and result.file == "scan.pdf"
    assert delta[PDF_OPENS] == 1


def test_blank_scan_finds_no_text(tmp_path):
    path = write_scan(tmp_path / "blank.pdf", [""])
    result = ocr_pdf(path)
    assert (result.status, result.reason) == ("failed", "ocr found no text")


def test_ocr_of_a_corrupt_file_fails_cleanly(tmp_path):
    path = tmp_path / "broken.pdf"
    path.write_bytes(b"%PDF-1.7\n garbage")
    assert ocr_pdf(path).status == "failed"


def test_ocr_runs_in_an_extract_pool_worker(tmp_path):
    from pipeline.extract.pool import ExtractPool, FileJob, ItemJob

    path = write_scan(tmp_path / "scan.pdf", ["Rural hospitals need stable funding", "to keep the emergency room open."])
    with ExtractPool(ExtractLimits(file_seconds=60), 1, reader=ocr_attachment) as pool:
        [item] = list(pool.map([ItemJob("C-1", (FileJob(str(path), "attachment_1.pdf"),))]))
    [result] = item.texts
    assert result.status == "ok" and result.file == "attachment_1.pdf"
    assert SENTENCE in normalised(result.text)
