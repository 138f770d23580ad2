"""combined.md rendering: deterministic bytes, a parse round trip, sections for the chunker."""

from __future__ import annotations

import re

import pytest

from pipeline.extract import AttachmentText, combined_sections, parse_combined, render_combined

PDF_TEXT = "Telehealth visits allowed our patients to see a specialist.\n\nSecond page text here."
ATTACHMENTS = [
    AttachmentText("attachment_1.pdf", "ok", "", len(PDF_TEXT), 2, PDF_TEXT),
    AttachmentText("attachment_2.pdf", "ocr_needed", "no text layer", 0, 1, ""),
    AttachmentText("attachment_3.docx", "failed", "corrupt DOCX: File is not a zip file", 0, None, ""),
]


def render(**overrides) -> bytes:
    arguments = dict(comment_id="CMS-2026-0001-0002", docket_id="CMS-2026-0001",
                     inline_text="See attached file(s)", attachments=ATTACHMENTS,
                     sources_fingerprint="sha256:abc", extractor_version="extract-1")
    return render_combined(**{**arguments, **overrides})


def test_same_inputs_same_bytes():
    assert render() == render()
    assert render() != render(sources_fingerprint="sha256:def")


def test_frontmatter_round_trip():
    frontmatter, body = parse_combined(render())
    assert list(frontmatter) == ["comment_id", "docket_id", "chars", "attachments", "sources", "extractor"]
    assert frontmatter["comment_id"] == "CMS-2026-0001-0002"
    assert frontmatter["sources"] == "sha256:abc" and frontmatter["extractor"] == "extract-1"
    assert frontmatter["chars"] == len("See attached file(s)") + len(PDF_TEXT)
    assert frontmatter["attachments"] == [
        {"file": a.file, "status": a.status, "reason": a.reason, "chars": a.chars, "pages": a.pages}
        for a in ATTACHMENTS
    ]
    assert body.startswith("## Inline comment\n\nSee attached file(s)\n\n## attachment_1.pdf\n\n")


def test_sections_and_placeholders():
    _, body = parse_combined(render())
    assert combined_sections(body) == [
        ("Inline comment", "See attached file(s)"),
        ("attachment_1.pdf", PDF_TEXT),
        ("attachment_2.pdf", "_(ocr_needed — 0 characters extracted)_"),
        ("attachment_3.docx", "_(failed — corrupt DOCX: File is not a zip file)_"),
    ]
    assert [h for h, _ in combined_sections(body, skip_placeholders=True)] == [
        "Inline comment", "attachment_1.pdf"]


def test_heading_lines_inside_text_do_not_split_sections():
    tricky = "Intro line\n## Not a heading\n\\## already escaped\nend"
    attachment = AttachmentText("attachment_1.pdf", "ok", "", len(tricky), 1, tricky)
    _, body = parse_combined(render(attachments=[attachment], inline_text=""))
    assert combined_sections(body) == [
        ("Inline comment", "_(no inline comment)_"),
        ("attachment_1.pdf", tricky),
    ]


def test_ocr_result_fills_the_section_and_is_recorded():
    scanned = "Rural hospitals in our county need stable funding to keep the emergency room open."
    ocr = {"attachment_2.pdf": AttachmentText("attachment_2.pdf", "ok", "", len(scanned), 1, scanned)}
    frontmatter, body = parse_combined(render(ocr=ocr))
    entry = frontmatter["attachments"][1]
    assert entry["status"] == "ocr_needed"
    assert entry["ocr"] == {"status": "ok", "reason": "", "chars": len(scanned)}
    assert dict(combined_sections(body))["attachment_2.pdf"] == scanned
    assert frontmatter["chars"] == len("See attached file(s)") + len(PDF_TEXT) + len(scanned)
    assert render(ocr=ocr) == render(ocr=ocr)


def test_unicode_and_yaml_special_values_survive():
    frontmatter, body = parse_combined(render(comment_id="ACF-2025-0038-0004",
                                              inline_text="Café — “quoted”: yes\r\nno"))
    assert frontmatter["comment_id"] == "ACF-2025-0038-0004"
    assert dict(combined_sections(body))["Inline comment"] == "Café — “quoted”: yes\nno"


@pytest.mark.parametrize("data", [b"no frontmatter", b"---\ncomment_id: x\n", b"---\n- a list\n---\n"])
def test_malformed_combined_rejected(data):
    with pytest.raises(ValueError):
        parse_combined(data)


def test_a_documents_combined_md_is_labelled_as_a_document():
    from pipeline.extract.combined import kind_of

    frontmatter, body = parse_combined(render(comment_id="CMS-2026-0001-0001", inline_text="", kind="document"))
    assert list(frontmatter)[0] == "document_id" and "comment_id" not in frontmatter
    assert frontmatter["document_id"] == "CMS-2026-0001-0001" and kind_of(frontmatter) == "document"
    assert "Inline comment" not in body and body.startswith("## Document\n\n_(no document text)_\n\n")
    sections = combined_sections(body, skip_placeholders=True)
    assert [heading for heading, _ in sections] == ["attachment_1.pdf"]
    assert kind_of(parse_combined(render())[0]) == "comment"


@pytest.mark.parametrize("text", ["a\r\nb", "a\rb", "a\r\r\nb\n\r", "\x00a\x00", "  a\r\n\x00 ", "plain", "",
                                  "## a\n#b\n ## c", "x ## y"])
def test_the_text_clean_up_is_the_same_as_ever(text):
    from pipeline.extract.combined import _clean, _escape_headings

    expected = text.replace("\r\n", "\n").replace("\r", "\n").replace("\x00", "").strip()
    assert _clean(text) == expected
    assert _escape_headings(expected) == "\n".join(
        "\\" + line if re.match(r"\\*## ", line) else line for line in expected.split("\n"))
