"""The attachment readers on files built here with PyMuPDF and python-docx."""

from __future__ import annotations

import struct
from pathlib import Path

import docx
import pymupdf
import pytest

from devtools.make_corpus import image_only_pdf
from pipeline.counters import PDF_OPENS, counters
from pipeline.extract import (
    EXTRACTOR_VERSION,
    ExtractLimits,
    read_attachment,
)

PROSE = ("Prior authorization delays forced our patients to wait weeks for treatment "
         "that their physicians had already prescribed. ")


# --- fixture builders -------------------------------------------------------------------------


def write_text_pdf(path: Path, pages: list[str]) -> Path:
    doc = pymupdf.open()
    for text in pages:
        doc.new_page().insert_textbox(pymupdf.Rect(72, 72, 540, 720), text, fontsize=11)
    doc.save(path)
    return path


def write_image_only_pdf(path: Path, sentence: str) -> Path:
    path.write_bytes(image_only_pdf(sentence))
    return path


def write_docx(path: Path) -> Path:
    document = docx.Document()
    document.add_paragraph("Paragraph before the table about nurse staffing.")
    table = document.add_table(rows=2, cols=2)
    table.cell(0, 0).text, table.cell(0, 1).text = "Provision", "Recommendation"
    table.cell(1, 0).text, table.cell(1, 1).text = "Ratio", "One nurse to four patients"
    document.add_paragraph("Paragraph after the table, closing the comment letter.")
    document.save(path)
    return path


def declare_huge_sizes(path: Path) -> None:
    """Rewrite the zip central directory so every member claims ~2 GiB uncompressed."""
    data = bytearray(path.read_bytes())
    offset = data.find(b"PK\x01\x02")
    while offset >= 0:
        struct.pack_into("<I", data, offset + 24, 0x7FFFFFFF)
        offset = data.find(b"PK\x01\x02", offset + 4)
    path.write_bytes(bytes(data))


# --- PDF ---------------------------------------------------------------------------------------


def test_text_pdf_pages_joined_and_counted(tmp_path):
    path = write_text_pdf(tmp_path / "a.pdf", ["First page. " + PROSE, "Second page. " + PROSE])
    with counters.measure() as delta:
        result = read_attachment(path, "attachment_1.pdf", ExtractLimits())
    assert result.status == "ok" and result.reason == ""
    assert result.pages == 2
    # The text carries a marker before each page (for chunk page numbers); chars counts text only.
    marker1, first, marker2, second = result.text.split("\n\n")
    assert (marker1, marker2) == ("<!-- page 1 -->", "<!-- page 2 -->")
    assert first.startswith("First page.") and second.startswith("Second page.")
    assert result.chars == len(first) + len(second) + 2 > 50
    assert delta[PDF_OPENS] == 1
    assert EXTRACTOR_VERSION


def test_image_only_pdf_needs_ocr(tmp_path):
    path = write_image_only_pdf(tmp_path / "scan.pdf", "A scanned letter.")
    result = read_attachment(path, "attachment_1.pdf", ExtractLimits())
    assert result.status == "ocr_needed"
    assert result.chars <= 50 and result.pages == 1


def test_encrypted_pdf_fails(tmp_path):
    path = write_text_pdf(tmp_path / "plain.pdf", [PROSE])
    locked = tmp_path / "locked.pdf"
    pymupdf.open(path).save(locked, encryption=pymupdf.PDF_ENCRYPT_AES_256, user_pw="secret",
                            owner_pw="owner")
    result = read_attachment(locked, "attachment_1.pdf", ExtractLimits())
    assert result.status == "failed"
    assert "encrypted" in result.reason


def test_pdf_with_owner_password_only_is_readable(tmp_path):
    path = write_text_pdf(tmp_path / "plain.pdf", [PROSE])
    restricted = tmp_path / "restricted.pdf"
    pymupdf.open(path).save(restricted, encryption=pymupdf.PDF_ENCRYPT_AES_256, owner_pw="owner",
                            permissions=0)
    assert read_attachment(restricted, "attachment_1.pdf", ExtractLimits()).status == "ok"


def test_corrupt_pdf_fails_without_raising(tmp_path):
    good = write_text_pdf(tmp_path / "good.pdf", [PROSE])
    broken = tmp_path / "broken.pdf"
    broken.write_bytes(good.read_bytes()[:200])
    result = read_attachment(broken, "attachment_1.pdf", ExtractLimits())
    assert result.status == "failed"
    assert result.reason.startswith("corrupt PDF")
    assert str(tmp_path) not in result.reason  # no machine-specific path in the reason


def test_garbage_named_pdf_fails(tmp_path):
    path = tmp_path / "x.pdf"
    path.write_bytes(b"<html>not a pdf</html>" * 10)
    assert read_attachment(path, "attachment_1.pdf", ExtractLimits()).status == "failed"


def test_zero_byte_file_fails(tmp_path):
    path = tmp_path / "empty.pdf"
    path.write_bytes(b"")
    result = read_attachment(path, "attachment_1.pdf", ExtractLimits())
    assert (result.status, result.reason) == ("failed", "empty file (0 bytes)")


def test_missing_file_fails(tmp_path):
    result = read_attachment(tmp_path / "nope.pdf", "attachment_1.pdf", ExtractLimits())
    assert result.status == "failed" and "cannot read file" in result.reason


def test_too_many_pages_fails(tmp_path):
    path = write_text_pdf(tmp_path / "long.pdf", [PROSE] * 3)
    result = read_attachment(path, "attachment_1.pdf", ExtractLimits(max_pdf_pages=2))
    assert result.status == "failed"
    assert result.reason == "too many pages (3 > 2)"


def test_pdf_time_limit_checked_between_pages(tmp_path):
    path = write_text_pdf(tmp_path / "slow.pdf", [PROSE] * 5)
    result = read_attachment(path, "attachment_1.pdf", ExtractLimits(file_seconds=0))
    assert result.status == "failed" and result.reason.startswith("time limit exceeded")


# --- DOCX --------------------------------------------------------------------------------------


def test_docx_paragraphs_and_table_in_document_order(tmp_path):
    result = read_attachment(write_docx(tmp_path / "c.docx"), "attachment_1.docx", ExtractLimits())
    assert result.status == "ok" and result.pages is None
    text = result.text
    before, cell, after = (text.index("before the table"), text.index("One nurse to four patients"),
                           text.index("after the table"))
    assert before < cell < after
    assert "Ratio | One nurse to four patients" in text


def test_docx_zip_bomb_refused_before_parsing(tmp_path, monkeypatch):
    path = write_docx(tmp_path / "bomb.docx")
    declare_huge_sizes(path)

    def must_not_parse(*args, **kwargs):
        raise AssertionError("python-docx was asked to parse a zip bomb")

    monkeypatch.setattr(docx, "Document", must_not_parse)
    result = read_attachment(path, "attachment_1.docx", ExtractLimits())
    assert result.status == "failed"
    assert result.reason.startswith("DOCX too large uncompressed")


def test_docx_that_is_not_a_zip_fails(tmp_path):
    path = tmp_path / "x.docx"
    path.write_bytes(b"plain text pretending to be a docx" * 4)
    result = read_attachment(path, "attachment_1.docx", ExtractLimits())
    assert result.status == "failed" and result.reason.startswith("corrupt DOCX")


def test_ole2_docx_reported_as_encrypted_or_legacy(tmp_path):
    path = tmp_path / "x.docx"
    path.write_bytes(b"\xd0\xcf\x11\xe0\xa1\xb1\x1a\xe1" + b"\0" * 600)
    result = read_attachment(path, "attachment_1.docx", ExtractLimits())
    assert result.status == "failed" and "OLE2" in result.reason


# --- TXT, HTML, other --------------------------------------------------------------------------


def test_html_visible_text_only(tmp_path):
    path = tmp_path / "c.html"
    path.write_text(
        "<html><head><title>Hidden title</title><style>p {color: red}</style></head>"
        "<body><script>var secret = 'script text';</script>"
        "<h1>Comment on telehealth</h1><p>Telehealth visits &amp; audio-only calls matter"
        " to rural patients who lack broadband.</p><noscript>enable js</noscript></body></html>"
    )
    result = read_attachment(path, "attachment_1.html", ExtractLimits())
    assert result.status == "ok"
    assert "Telehealth visits & audio-only calls" in result.text
    assert "Comment on telehealth" in result.text
    for hidden in ("secret", "script text", "color: red", "Hidden title", "enable js"):
        assert hidden not in result.text


def test_txt_utf8_and_cp1252_fallback(tmp_path):
    utf8 = tmp_path / "a.txt"
    utf8.write_text("Café owners support drug price transparency for every prescription.", "utf-8")
    assert "Café" in read_attachment(utf8, "attachment_1.txt", ExtractLimits()).text
    legacy = tmp_path / "b.txt"
    legacy.write_bytes("Smart quotes \u201cmatter\u201d in old Windows letters about staffing.".encode("cp1252"))
    result = read_attachment(legacy, "attachment_1.txt", ExtractLimits())
    assert result.status == "ok" and "\u201cmatter\u201d" in result.text


def test_short_txt_is_ok_and_empty_txt_fails(tmp_path):
    short = tmp_path / "short.txt"
    short.write_text("I support this rule.")
    assert read_attachment(short, "attachment_1.txt", ExtractLimits()).status == "ok"
    blank = tmp_path / "blank.txt"
    blank.write_text("   \n\n ")
    assert read_attachment(blank, "attachment_1.txt", ExtractLimits()).status == "failed"


def test_unknown_extension_unsupported(tmp_path):
    path = tmp_path / "archive.zip"
    path.write_bytes(b"PK\x03\x04" + b"\0" * 100)
    result = read_attachment(path, "attachment_1.zip", ExtractLimits())
    assert result.status == "unsupported" and "zip" in result.reason


# --- hard per-file time limit in a child process ---------------------------------------------


@pytest.mark.parametrize("name", ["attachment_1.PDF", "attachment_1.Pdf"])
def test_extension_is_case_insensitive(tmp_path, name):
    path = write_text_pdf(tmp_path / "a.pdf", [PROSE])
    assert read_attachment(path, name, ExtractLimits()).status == "ok"
