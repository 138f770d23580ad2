"""The one HTML-to-text rule (``pipeline/html_text.py``) pinned on real bodies and files: the
record normaliser's bodies (``RECORD``) and an HTML attachment's extracted text
(``EXTRACTED``, extract-5) are byte for byte what the two parsers it replaced made (each
output's ``fingerprints.digest``, first 16 hex digits, taken before they became one)."""

from __future__ import annotations

import json

import pytest

from pipeline.extract.readers import read_attachment
from pipeline.fingerprints import digest
from pipeline.html_text import EXTRACTED, RECORD, html_to_text
from pipeline.sources.records import detail_fields
from tests.fixtures.paths import REALDATA

RAW = REALDATA / "mirror" / "raw-data"
needs_realdata = pytest.mark.skipif(not RAW.is_dir(), reason="no ../shared/realdata")

# "<docket>/<comment>": (its stored body's digest, its comment as EXTRACTED lays it out)
BODIES = {
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-090000648446ee9e": ("27139652ab004c5b", "20447a78dd3bbeea"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-0900006484474af9": ("066dbdd35bac934a", "32ba5ae6b7ae17ac"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-09000064844755cc": ("e1b173a1748ffd2a", "d5d461ccd34dbd3c"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-0900006484567cd5": ("42e9325d462892d8", "b2b49cf39ab5fb82"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-090000648458b541": ("e681ceaf8727b01c", "6ea5c060fd952c99"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-090000648462a237": ("ffb069a3c1275165", "7eeece12218a1fe8"),
    "EPA-HQ-OA-2018-0259/EPA-HQ-OA-2018-0259-row93220052": ("f190ca34c082d979", "6b56ff9b085138e9"),
    "EPA-HQ-OPP-2015-0481/EPA-HQ-OPP-2015-0481-090000648471d725": ("8ff2001a9890fa63", "8ff2001a9890fa63"),
    "EPA-HQ-OPP-2015-0481/EPA-HQ-OPP-2015-0481-0900006484725a5a": ("b6a7a30744fdd8e0", "b6a7a30744fdd8e0"),
    "EPA-HQ-OPP-2015-0481/EPA-HQ-OPP-2015-0481-row00500010": ("9059de095a108f56", "9059de095a108f56"),
    "NIST-2021-0006/NIST-2021-0006-0002": ("fd4e45907a16d029", "bd753d7f32f28159"),
    "NIST-2021-0006/NIST-2021-0006-0004": ("3eeb7ce75c21c144", "3eeb7ce75c21c144"),
    "NIST-2021-0006/NIST-2021-0006-0006": ("7cffefb9401fd298", "56f998d8ea779a5a"),
    "NIST-2021-0006/NIST-2021-0006-0010": ("e3630c6a06ab4ee2", "e3630c6a06ab4ee2"),
    "NIST-2021-0006/NIST-2021-0006-0011": ("c60d598b84620776", "693c2c32150c1157"),
    "NIST-2021-0006/NIST-2021-0006-0014": ("864a109515867bd5", "864a109515867bd5"),
    "NIST-2021-0006/NIST-2021-0006-0015": ("4980c2066ad6496b", "4980c2066ad6496b"),
    "NIST-2021-0006/NIST-2021-0006-0018": ("06a0b2b04dda70c1", "06a0b2b04dda70c1"),
    "NIST-2021-0006/NIST-2021-0006-0021": ("f362e6295661cf68", "03c9d806505b04a8"),
    "NIST-2021-0006/NIST-2021-0006-0029": ("9b91916418ef9381", "9b91916418ef9381"),
    "NIST-2021-0006/NIST-2021-0006-0031": ("5e1e4fbed19e9dc7", "252c29a7086354f6"),
    "NIST-2021-0006/NIST-2021-0006-0033": ("efc7a37fe19ced63", "de7b337bfbb9e3b0"),
    "USDA-2020-0009/USDA-2020-0009-0900006484347e2d": ("6e77e543eb909127", "f1e4642c86f879e5"),
    "USTR-2015-0010/USTR-2015-0010-0003": ("91772bde8187d218", "91772bde8187d218"),
    "USTR-2015-0010/USTR-2015-0010-0004": ("70280e5f2e6b919e", "866b32d1e7873247"),
    "USTR-2015-0010/USTR-2015-0010-0005": ("4a06dcca46f185a3", "4a06dcca46f185a3"),
}
# A document's content file: (as RECORD lays it out, the extract reader's text)
FILES = {
    "USTR/USTR-2015-0010/text-USTR-2015-0010/documents/USTR-2015-0010-0001_content.htm": ("d1455295f5608970", "150c56c1c6bdffc6"),
}


def real_comments() -> dict[str, dict]:
    """Every real comment record whose comment holds markup or an entity."""
    records = {}
    for path in sorted(RAW.glob("*/*/text-*/comments/*.json")):
        record = json.loads(path.read_text(encoding="utf-8"))
        comment = record["data"]["attributes"].get("comment")
        if isinstance(comment, str) and ("<" in comment or "&" in comment):
            records[f"{path.parents[2].name}/{path.stem}"] = record
    return records


@needs_realdata
def test_every_real_body_with_markup_is_pinned():
    assert sorted(real_comments()) == sorted(BODIES)


@needs_realdata
def test_the_record_normaliser_stores_the_bodies_it_stored():
    stored = {key: digest(detail_fields(record)["body"])[:16] for key, record in real_comments().items()}
    assert stored == {key: pins[0] for key, pins in BODIES.items()}


@needs_realdata
def test_the_extracted_layout_of_the_real_bodies():
    laid_out = {key: digest(html_to_text(record["data"]["attributes"]["comment"], EXTRACTED))[:16]
                for key, record in real_comments().items()}
    assert laid_out == {key: pins[1] for key, pins in BODIES.items()}


@needs_realdata
@pytest.mark.parametrize("name", sorted(FILES))
def test_an_html_file_reads_as_it_did(name):
    path = RAW / name
    as_record = html_to_text(path.read_bytes().decode("utf-8-sig"), RECORD)
    assert (digest(as_record)[:16], digest(read_attachment(path, path.name).text)[:16]) == FILES[name]


@needs_realdata
def test_line_breaks_and_entities_of_a_real_body_in_both_layouts():
    comment = real_comments()["USTR-2015-0010/USTR-2015-0010-0004"]["data"]["attributes"]["comment"]
    assert comment.startswith("See attached file(s)<br/><br/>Notice of intent to testify:<br/><br/>Craig Thorn<br/>")
    assert html_to_text(comment, RECORD).startswith(
        "See attached file(s)\n\nNotice of intent to testify:\n\nCraig Thorn\nDTB Associates\n")
    assert html_to_text(comment, EXTRACTED).startswith(
        "See attached file(s)\nNotice of intent to testify:\nCraig Thorn\nDTB Associates\n")
    bullets = real_comments()["NIST-2021-0006/NIST-2021-0006-0002"]["data"]["attributes"]["comment"]
    assert bullets.startswith("&bull;<span style='padding-left: 30px'></span>Government subsidized")
    for layout in (RECORD, EXTRACTED):
        assert html_to_text(bullets, layout).startswith("•Government subsidized with incentives")


def test_plain_text_passes_through_a_record_unchanged_only():
    plain = "  Two  spaces\r\n\r\n\r\nand three breaks "
    assert html_to_text(plain, RECORD) == plain
    assert html_to_text(plain, EXTRACTED) == "Two spaces\nand three breaks"


def test_a_record_reads_markup_as_repaired_an_attachment_tag_by_tag():
    # A stray end tag: libxml2 drops it, the attachment's reading breaks the line there.
    assert html_to_text("a</p>b", RECORD) == "ab"
    assert html_to_text("a</p>b", EXTRACTED) == "a\nb"
    # Both: what a browser hides is no text; a paragraph is a blank line or a line break.
    markup = "<head><title>T</title><style>p {}</style></head><p>One&rsquo;s</p><p>Two<br>lines</p>"
    assert html_to_text(markup, RECORD) == "One’s\n\nTwo\nlines"
    assert html_to_text(markup, EXTRACTED) == "One’s\nTwo\nlines"


@pytest.mark.parametrize("markup", ["<html> ", "<html>", "<html><head></head>", " <head> "])
def test_markup_with_nothing_to_show_is_empty_text_in_both_layouts(markup):
    # lxml parses these to a document without a body, and asserts on it.
    assert html_to_text(markup, RECORD) == ""
    assert html_to_text(markup, EXTRACTED) == ""
