"""The attachment formats regulations.gov carries beyond PDF and DOCX: one generated file per
format reads to the text written into it; images go to OCR (every frame of a TIFF); a
format whose library or program is missing is ``unsupported`` naming the package; a broken
file is that file's failure; the preferred *readable* format is the one downloaded."""

from __future__ import annotations

import shutil
from datetime import datetime

import pytest

from devtools.format_samples import write_sample
from devtools.msg_file import write_msg
from pipeline.backfill.sources import declared_files
from pipeline.extract import readers
from pipeline.extract.combined import combined_sections
from pipeline.extract.readers import ExtractLimits, read_attachment
from pipeline.extract.stage import FILE_STAGE
from pipeline.ocr import tesseract as ocr_lib
from tests.fixtures.extract_inputs import DOCKET, combined, rows, run_extract, setup_docket
from tests.fixtures.ocr_inputs import extract_with_marker, run_ocr

LINES = ["Comments of the Rural Water Association on the proposed rule.",
         "We ask the agency to extend the comment period by sixty days.",
         "Small systems cannot meet the monitoring schedule."]
ACCENTED = "Café owners in Québec agree."  # the non-ASCII line (WordPerfect 5.1 sample is ASCII)
TEXT_FORMATS = ["rtf", "xlsx", "xls", "pptx", "wpd", "msg", "htm", "csv", "txt", "docx", "pdf"]
IMAGE_FORMATS = ["png", "jpg", "gif", "tif"]
needs_tesseract = pytest.mark.skipif(not ocr_lib.tesseract_available(),
                                     reason="Tesseract language data not found: apt-get install tesseract-ocr")


def words(text: str) -> str:
    return " ".join(text.split())


@pytest.mark.parametrize("fmt", TEXT_FORMATS)
def test_one_generated_file_per_format_reads_to_its_text(tmp_path, fmt):
    if fmt == "xls":
        pytest.importorskip("xlwt", reason="xlwt (the test extra) writes the .xls fixture")
    if readers.missing_program(fmt):
        pytest.skip(readers.missing_program(fmt))
    lines = LINES if fmt == "wpd" else [*LINES, ACCENTED]
    # Named as a blob is (its sha256, no extension): only the attachment's name says the format.
    path = write_sample(tmp_path / f"sample.{fmt}", lines).rename(tmp_path / "0f1e2d")
    result = read_attachment(path, f"attachment_1.{fmt}")
    assert (result.status, result.reason) == ("ok", "")
    for line in lines:
        assert line in words(result.text) or line in result.text


def test_xlsx_cells_as_text_under_their_sheet_names(tmp_path):
    import openpyxl

    book = openpyxl.Workbook()
    book.active.title = "Signatories"
    book.active.append(["Name", "Members", "Joined"])
    book.active.append(["Ohio Rural Water", 412, datetime(2021, 3, 4)])
    book.active.append(["Meeting", None, datetime(2021, 3, 5, 14, 30)])
    book.active.append([None, None, None])  # an empty row is left out
    book.create_sheet("Costs").append(["Monitoring", 12500.5, 3.0])
    book.save(tmp_path / "a.xlsx")
    result = read_attachment(tmp_path / "a.xlsx", "attachment_1.xlsx")
    assert result.text == ("Sheet: Signatories\nName | Members | Joined\nOhio Rural Water | 412 | 2021-03-04\nMeeting |  | 2021-03-05 14:30:00"
                           "\n\nSheet: Costs\nMonitoring | 12500.5 | 3")


def test_xls_dates_and_numbers_as_a_spreadsheet_shows_them(tmp_path):
    xlwt = pytest.importorskip("xlwt", reason="xlwt (the test extra) writes the .xls fixture")
    book = xlwt.Workbook()
    sheet = book.add_sheet("Letters")
    sheet.write(0, 0, "Received")
    sheet.write(0, 1, datetime(2015, 9, 22), xlwt.easyxf(num_format_str="YYYY-MM-DD"))
    sheet.write(0, 2, 7.0)
    sheet.write(0, 3, True)
    book.save(str(tmp_path / "a.xls"))
    result = read_attachment(tmp_path / "a.xls", "attachment_1.xls")
    assert result.text == "Sheet: Letters\nReceived | 2015-09-22 | 7 | TRUE"


def test_pptx_slides_carry_their_numbers_as_page_markers(tmp_path):
    import pptx
    from pptx.util import Inches

    deck = pptx.Presentation()
    first = deck.slides.add_slide(deck.slide_layouts[5])
    first.shapes.title.text = "Hearing testimony"
    first.notes_slide.notes_text_frame.text = "Speaker notes: cite the 2014 survey."
    deck.slides.add_slide(deck.slide_layouts[6])  # a blank slide: no marker of its own
    third = deck.slides.add_slide(deck.slide_layouts[6])
    table = third.shapes.add_table(2, 2, Inches(1), Inches(1), Inches(4), Inches(1)).table
    for (r, c), value in {(0, 0): "State", (0, 1): "Systems", (1, 0): "Ohio", (1, 1): "1,204"}.items():
        table.cell(r, c).text = value
    deck.save(str(tmp_path / "a.pptx"))
    result = read_attachment(tmp_path / "a.pptx", "attachment_1.pptx")
    assert result.pages == 3
    assert result.text == ("<!-- page 1 -->\n\nHearing testimony\n\nSpeaker notes: cite the 2014 survey.\n\n"
                           "<!-- page 3 -->\n\nState | Systems\nOhio | 1,204")


def test_msg_headers_then_body(tmp_path):
    path = write_msg(tmp_path / "a.msg", subject="Docket USTR-2015-0010", body="Please see my views.\r\nThanks.",
                     sender_name="Jane Roe", sender_email="jane@example.org", to="comments@ustr.gov",
                     cc="counsel@example.org", sent=datetime.fromisoformat("2015-09-22T18:30:00+00:00"))
    result = read_attachment(path, "attachment_1.msg")
    assert result.text == ("From: Jane Roe <jane@example.org>\nTo: comments@ustr.gov\nCc: counsel@example.org\n"
                           "Date: 2015-09-22 18:30:00+00:00\nSubject: Docket USTR-2015-0010\n\n"
                           "Please see my views.\nThanks.")


@pytest.mark.parametrize("fmt", IMAGE_FORMATS)
def test_an_image_is_left_for_ocr_with_its_frame_count(tmp_path, fmt):
    path = write_sample(tmp_path / f"scan.{fmt}", LINES)
    result = read_attachment(path, f"attachment_1.{fmt}")
    assert (result.status, result.chars, result.text) == ("ocr_needed", 0, "")
    assert result.pages == (len(LINES) if fmt == "tif" else 1)  # a TIFF frame per line


@needs_tesseract
@pytest.mark.parametrize("fmt", IMAGE_FORMATS)
def test_ocr_reads_an_image_and_every_frame_of_a_tiff(tmp_path, fmt):
    path = write_sample(tmp_path / f"scan.{fmt}", LINES).rename(tmp_path / "0f1e2d")
    result = ocr_lib.ocr_attachment(path, f"attachment_1.{fmt}")
    assert result.status == "ok", result.reason
    assert all(line in words(result.text) for line in LINES)


@needs_tesseract
def test_the_ocr_stage_merges_a_scanned_image_into_combined_md(rt, tmp_path):
    tiff = write_sample(tmp_path / "scan.tif", LINES).read_bytes()
    png = write_sample(tmp_path / "scan.png", LINES[:1]).read_bytes()
    key = f"{DOCKET}-0001"
    setup_docket(rt, {key: ("See attached file(s)", {"attachment_1.tif": tiff, "attachment_2.png": png})})
    extract_with_marker(rt)
    assert {k: r.state for k, r in rows(FILE_STAGE).items()} == {
        f"{key}/attachment_1.tif": "ocr_needed", f"{key}/attachment_2.png": "ocr_needed"}
    result, _ = run_ocr(rt)
    assert result.counts == {"merged": 1, "ocr_ok": 2}
    sections = dict(combined_sections(combined(rt, key)[1]))
    assert words(sections["attachment_1.tif"]) == " ".join(LINES)
    assert words(sections["attachment_2.png"]) == LINES[0]


@pytest.mark.parametrize("fmt", sorted(readers.LIBRARIES))
def test_without_its_library_a_format_is_unsupported_naming_the_pip_package(tmp_path, monkeypatch, fmt):
    if fmt == "xls":
        pytest.importorskip("xlwt", reason="xlwt (the test extra) writes the .xls fixture")
    path = write_sample(tmp_path / f"a.{fmt}", LINES)
    module, package = readers.LIBRARIES[fmt]
    monkeypatch.setitem(readers.LIBRARIES, fmt, (f"no_such_module_{module}", package))
    result = read_attachment(path, f"attachment_1.{fmt}")
    assert result.status == "unsupported" and f"Python package {package}" in result.reason
    assert not readers.can_read(fmt)


@pytest.mark.parametrize("fmt", sorted(readers.PROGRAMS))
def test_without_its_program_a_format_is_unsupported_naming_the_debian_package(tmp_path, monkeypatch, fmt):
    path = write_sample(tmp_path / f"a.{fmt}", LINES) if fmt != "doc" else tmp_path / "a.doc"
    if fmt == "doc":  # no writer of Word 97 files: a compound file's signature is enough here
        path.write_bytes(b"\xd0\xcf\x11\xe0" * 50)
    monkeypatch.setenv("PATH", str(tmp_path / "nothing"))  # the program is nowhere
    program, package = readers.PROGRAMS[fmt]
    result = read_attachment(path, f"attachment_1.{fmt}")
    assert result.status == "unsupported" and f"Debian package {package}" in result.reason
    assert f"`{program}`" in result.reason and not readers.can_read(fmt)


USTR_TEXT = "mirror/raw-data/USTR/USTR-2015-0010/text-USTR-2015-0010/documents"


def test_the_real_htm_of_a_federal_register_notice_reads_as_text(realdata):
    """USTR-2015-0010-0001's notice as the GPO's HTML page (a <pre> with links in it)."""
    result = read_attachment(realdata / USTR_TEXT / "USTR-2015-0010-0001_content.htm", "content.htm")
    assert result.status == "ok", result.reason
    assert result.text.startswith("[Federal Register Volume 80, Number 153 (Monday, August 10, 2015)]\n[Notices]")
    assert "From the Federal Register Online via the Government Publishing Office [www.gpo.gov]" in result.text
    assert "OFFICE OF THE UNITED STATES TRADE REPRESENTATIVE" in result.text
    assert "<" not in result.text and "&amp;" not in result.text


def test_without_wpd2text_a_wpd_is_unsupported_and_the_pdf_beside_it_is_taken(tmp_path, monkeypatch):
    files = [{"fileUrl": f"https://downloads.regulations.gov/X-1/content.{f}", "format": f, "size": 10}
             for f in ("wpd", "pdf")]
    record = {"data": {"id": "X-1", "attributes": {"fileFormats": files}}}
    if shutil.which("wpd2text"):
        assert declared_files(record, ["wpd", "pdf"])[0][0].filename == "content.wpd"
    monkeypatch.setenv("PATH", str(tmp_path))  # no wpd2text anywhere
    path = write_sample(tmp_path / "a.wpd", LINES)
    result = read_attachment(path, "attachment_1.wpd")
    assert result.status == "unsupported" and "libwpd-tools" in result.reason
    assert declared_files(record, ["wpd", "pdf"])[0][0].filename == "content.pdf"


@pytest.mark.parametrize("fmt", ["rtf", "xlsx", "xls", "pptx", "msg", "wpd", "png", "tif"])
def test_a_broken_file_of_each_format_fails_with_a_reason(tmp_path, fmt):
    if readers.missing_program(fmt):
        pytest.skip(readers.missing_program(fmt))
    path = tmp_path / f"broken.{fmt}"
    path.write_bytes(b"<html>Service Unavailable</html>" * 10)  # an error page saved as the file
    result = read_attachment(path, f"attachment_1.{fmt}")
    assert result.status == "failed" and result.reason
    assert str(tmp_path) not in result.reason


@pytest.mark.parametrize("fmt", ["xlsx", "pptx"])
def test_office_zip_bombs_are_refused_before_parsing(tmp_path, fmt):
    path = write_sample(tmp_path / f"a.{fmt}", LINES)
    result = read_attachment(path, f"attachment_1.{fmt}", ExtractLimits(max_docx_uncompressed_bytes=1000))
    assert result.status == "failed" and result.reason.startswith(f"{fmt.upper()} too large uncompressed")


def test_an_extraction_of_the_new_formats_is_a_new_extractor_version(rt, tmp_path):
    """Items extracted by the previous version (an xlsx was `unsupported` then) are redone."""
    key = f"{DOCKET}-0001"
    setup_docket(rt, {key: ("See attached.", {"attachment_1.xlsx": write_sample(tmp_path / "a.xlsx", LINES).read_bytes()})})
    result, _ = run_extract(rt, version="extract-3")
    assert result.counts == {"ok": 1}
    assert run_extract(rt, run_id="run-2", version="extract-3")[0].counts == {"unchanged": 1}
    result, _ = run_extract(rt, run_id="run-3")  # the current version
    assert result.counts == {"ok": 1}
    assert rows(FILE_STAGE)[f"{key}/attachment_1.xlsx"].state == "ok"
    assert words(dict(combined_sections(combined(rt, key)[1]))["attachment_1.xlsx"]) == (
        "Sheet: Comments " + " ".join(f"{n} | {line}" for n, line in enumerate(LINES, 1)))



def test_a_long_msg_body_read_whole(tmp_path):
    """Over 4096 bytes a stream leaves the compound file's mini stream: both layouts read."""
    body = "\r\n".join(f"Paragraph {n} of a long emailed comment about water monitoring." for n in range(400))
    path = write_msg(tmp_path / "long.msg", subject="Long", body=body, sender_name="A", sender_email="a@example.org",
                     to="comments@agency.gov")
    result = read_attachment(path, "attachment_1.msg")
    assert result.status == "ok" and result.text.endswith(body.replace("\r\n", "\n"))


def test_reading_an_msg_adds_no_lines_to_the_runs_log(tmp_path, caplog):
    path = write_sample(tmp_path / "a.msg", LINES)
    with caplog.at_level("INFO"):
        assert read_attachment(path, "attachment_1.msg").status == "ok"
    assert [r for r in caplog.records if r.name.startswith("extract_msg")] == []


def test_an_image_is_rendered_for_ocr_at_no_more_than_its_own_pixels(tmp_path):
    import pymupdf
    from PIL import Image

    Image.new("L", (2550, 3300), 255).save(tmp_path / "a.jpg", dpi=(72, 72))  # says 72 dpi
    Image.new("L", (2550, 3300), 255).save(tmp_path / "b.png", dpi=(600, 600))
    for name, expected in (("a.jpg", 72), ("b.png", 300)):
        with pymupdf.open(tmp_path / name) as image, pymupdf.open("pdf", image.convert_to_pdf()) as doc:
            assert ocr_lib.page_dpi(doc[0], 300) == expected, name
    assert ocr_lib.page_dpi(pymupdf.open().new_page(), 300) == 300  # a PDF page without one image
