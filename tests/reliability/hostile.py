"""A hostile corpus: a generated docket whose records and files are turned into what an
attacker (or a broken upload) sends. Each entry names the comment it spoils and what it
did, so a trial can check that item's outcome: a final state with a reason, never a
traceback, a write outside the data folder or a script in the index.

The same spoiled folder serves both sources: the stand-in reads it as the API, and the
pipeline reads it as a mirror (``source = mirror``).
"""

from __future__ import annotations

import io
import json
import zipfile
from pathlib import Path

import fitz  # PyMuPDF

from devtools.mirror_layout import comment_files, replace_json

SCRIPT = "alert('hostile')"  # must never reach the index
DOCX_BOMB_BYTES = 40 * 1024 * 1024  # uncompressed: over the trial's max_docx_bytes (8 MiB)


def pdf_page_bomb(pages: int = 2500) -> bytes:
    """A small PDF with more pages than max_pdf_pages allows."""
    doc = fitz.open()
    for _ in range(pages):
        doc.new_page(width=72, height=72)
    return doc.tobytes(garbage=4, deflate=True)


def pdf_stream_bomb() -> bytes:
    """One page whose content stream inflates from a few KB to 60 MB of drawing operators."""
    doc = fitz.open()
    page = doc.new_page()
    page.insert_text((72, 72), "x")
    xref = page.get_contents()[0]
    doc.update_stream(xref, b"0 0 m 1 1 l S\n" * (60 * 1024 * 1024 // 14))
    return doc.tobytes(deflate=True)


def pdf_encrypted() -> bytes:
    doc = fitz.open()
    doc.new_page().insert_text((72, 72), "secret text " * 50)
    return doc.tobytes(encryption=fitz.PDF_ENCRYPT_AES_256, user_pw="pw", owner_pw="owner")


def docx_bomb() -> bytes:
    """A valid-looking DOCX whose document.xml inflates to DOCX_BOMB_BYTES."""
    out = io.BytesIO()
    with zipfile.ZipFile(out, "w", zipfile.ZIP_DEFLATED, compresslevel=9) as docx:
        docx.writestr("[Content_Types].xml", '<?xml version="1.0"?><Types xmlns="http://schemas.'
                      'openxmlformats.org/package/2006/content-types"/>')
        with docx.open("word/document.xml", "w", force_zip64=True) as member:
            chunk = b" " * (1 << 20)
            for _ in range(DOCX_BOMB_BYTES >> 20):
                member.write(chunk)
    return out.getvalue()


def _attachment(record: dict, url: str, fmt: str, size: int) -> None:
    record.setdefault("included", [{"id": "0900006400000001", "type": "attachments",
                                    "attributes": {"docOrder": 1, "title": "file"}}])
    record["included"][0]["attributes"]["fileFormats"] = [{"fileUrl": url, "format": fmt, "size": size}]


def _detail_types(comment_id: str, record: dict) -> None:
    record["data"]["attributes"].update(comment=["not", "text"], trackingNbr="x" * 2_000_000,
                                        docketId=None, duplicateComments=1e308)
    _attachment(record, f"https://downloads.regulations.gov/{comment_id}/attachment_1.pdf", "pdf", 10**30)
    record["included"][0]["attributes"]["docOrder"] = -(10**40)


def spoil(root: Path) -> dict[str, str]:
    """Spoil the corpus under ``root`` in place; comment id -> what was done to it."""
    files = comment_files(root)
    ids = sorted(files)
    binary = next(root.rglob("comments_attachments"))
    done: dict[str, str] = {}

    def put(comment_id: str, what: str, change) -> None:
        record = json.loads(files[comment_id].read_text())
        change(comment_id, record)
        replace_json(files[comment_id], record)
        done[comment_id] = what

    def file(name: str, fmt: str, content: bytes):
        def change(comment_id: str, record: dict) -> None:
            (binary / f"{comment_id}_{name}").write_bytes(content)
            _attachment(record, f"https://downloads.regulations.gov/{comment_id}/{name}", fmt, len(content))
        return change

    def url(path: str):
        def change(comment_id: str, record: dict) -> None:
            _attachment(record, f"https://downloads.regulations.gov/{comment_id}/{path}".replace("{id}", comment_id),
                        "pdf", 100)
        return change

    def attrs(**values):
        def change(comment_id: str, record: dict) -> None:
            record["data"]["attributes"].update(values)
        return change

    put(ids[0], "PDF page bomb", file("attachment_1.pdf", "pdf", pdf_page_bomb()))
    put(ids[1], "PDF stream bomb", file("attachment_1.pdf", "pdf", pdf_stream_bomb()))
    put(ids[2], "DOCX zip bomb", file("attachment_1.docx", "docx", docx_bomb()))
    put(ids[3], "encrypted PDF", file("attachment_1.pdf", "pdf", pdf_encrypted()))
    put(ids[4], "empty file", file("attachment_1.pdf", "pdf", b""))
    put(ids[5], "scripts in the HTML body", attrs(
        comment=f"<p>Plain words.</p><script>{SCRIPT}</script><style>p{{x:1}}</style>"
                f"<img src=x onerror=\"{SCRIPT}\"><a href=\"javascript:{SCRIPT}\">link</a>"))
    put(ids[6], "traversal in a file name", url("..%2F..%2F..%2Fetc%2Fpasswd.pdf"))
    put(ids[8], "NUL, very long and odd unicode names", url("attachment\x00_1\u202etxt." + "ü" * 300 + ".pdf"))
    # In fields only the detail carries: a list item with a wrong type stops the docket's
    # fetch (docs/RELIABILITY.md, "found").
    put(ids[9], "wrong JSON types and huge values", _detail_types)
    put(ids[7], "absolute path as a file URL", url("/etc/passwd"))
    return done


ANOTHER_DOCKET = "ZZZ-2026-0001"  # a docket the corpus does not have: an item claiming it is an impostor


def spoil_records(root: Path) -> dict[str, str]:
    """A second hostile corpus, of records rather than files: impossible dates, wrong JSON
    types where lists and objects are due, an attachment named ``..`` beside a body, and an
    item whose own record names another docket. Comment id -> what was done to it."""
    files = comment_files(root)
    ids = sorted(files)
    done: dict[str, str] = {}

    def put(comment_id: str, what: str, change) -> None:
        record = json.loads(files[comment_id].read_text())
        change(comment_id, record)
        replace_json(files[comment_id], record)
        done[comment_id] = what

    def attrs(**values):
        return lambda _id, record: record["data"]["attributes"].update(values)

    def included_object(comment_id: str, record: dict) -> None:
        _attachment(record, f"https://downloads.regulations.gov/{comment_id}/attachment_1.pdf", "pdf", 100)
        record["included"] = record["included"][0]  # an object where the list is due

    def dot_dot_name(comment_id: str, record: dict) -> None:
        record["data"]["attributes"]["comment"] = f"The body of {comment_id} is kept whatever its files are."
        _attachment(record, f"https://downloads.regulations.gov/{comment_id}/..", "pdf", 100)

    def file_format_text(comment_id: str, record: dict) -> None:
        _attachment(record, f"https://downloads.regulations.gov/{comment_id}/attachment_1.pdf", "pdf", 100)
        record["included"][0]["attributes"]["fileFormats"] = [f"https://downloads.regulations.gov/{comment_id}/a.pdf"]

    put(ids[0], "posted in year 1", attrs(postedDate="0001-01-01T00:00:00Z"))
    put(ids[1], "received in year 2", attrs(receiveDate="0002-01-01T00:00:00Z"))
    put(ids[2], "included an object, not a list", included_object)
    put(ids[3], "an attachment named .. beside a body", dot_dot_name)
    put(ids[4], "a file format that is text, not an object", file_format_text)
    put(ids[5], "a count that is a huge fraction", attrs(duplicateComments=1e308))
    put(ids[6], "its record names another docket", attrs(docketId=ANOTHER_DOCKET))
    put(ids[7], "lone surrogates and terminal escapes in its title, body and name",
        attrs(title=f"Title {INVALID_TEXT}", comment=f"<p>Body {INVALID_TEXT}</p>", organization=f"Org {INVALID_TEXT}"))
    return done


# A lone UTF-16 surrogate (valid JSON, no character: once a UnicodeEncodeError that stopped the
# docket on every run) beside an OSC sequence that sets a terminal's title, and BEL.
INVALID_TEXT = "\ud800 \x1b]0;owned\x07 end"
