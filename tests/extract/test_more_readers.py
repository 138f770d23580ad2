"""Word 97 ``.doc`` through antiword (the real USTR files), CSV, and the readable format first."""

from __future__ import annotations

import shutil
import stat

import pytest

from pipeline.backfill.sources import declared_files
from pipeline.config import load_settings
from pipeline.extract import readers
from pipeline.extract.readers import ExtractLimits, read_attachment

USTR = "mirror/raw-data/USTR/USTR-2015-0010/binary-USTR-2015-0010/documents_attachments"
needs_antiword = pytest.mark.skipif(shutil.which("antiword") is None, reason="antiword is not installed")


@needs_antiword
def test_the_real_ustr_doc_files_read_as_text(realdata):
    agenda = read_attachment(realdata / USTR / "USTR-2015-0010-0016_content.doc", "content.doc")
    assert agenda.status == "ok", agenda.reason
    assert agenda.text.startswith("Public Hearing before the Trade\nPolicy Staff Committee on China’s WTO")
    assert "Craig Thorn\nU.S. Rice, Wheat and Grains Council" in agenda.text
    transcript = read_attachment(realdata / USTR / "USTR-2015-0010-0017_content.doc", "content.doc")
    assert transcript.status == "ok" and transcript.chars > 100_000
    assert "OFFICE OF THE UNITED STATES TRADE REPRESENTATIVE" in transcript.text


@needs_antiword
def test_a_file_that_is_not_a_word_document_fails_with_antiwords_reason(tmp_path):
    path = tmp_path / "x.doc"
    path.write_bytes(b"not a word file " * 20)
    result = read_attachment(path, "attachment_1.doc")
    assert result.status == "failed" and "not a Word Document" in result.reason
    assert str(tmp_path) not in result.reason


def test_a_hanging_antiword_is_stopped_at_the_time_limit(tmp_path, monkeypatch):
    fake = tmp_path / "bin" / "antiword"
    fake.parent.mkdir()
    fake.write_text("#!/bin/sh\nexec /bin/sleep 30\n")
    fake.chmod(fake.stat().st_mode | stat.S_IEXEC)
    monkeypatch.setenv("PATH", str(fake.parent))
    path = tmp_path / "slow.doc"
    path.write_bytes(b"\xd0\xcf\x11\xe0" * 50)
    result = read_attachment(path, "attachment_1.doc", ExtractLimits(file_seconds=0.5))
    assert result.status == "failed" and "time limit" in result.reason


def test_without_antiword_a_doc_is_unsupported_naming_the_package(tmp_path, monkeypatch):
    monkeypatch.setenv("PATH", str(tmp_path))  # no antiword anywhere
    path = tmp_path / "a.doc"
    path.write_bytes(b"\xd0\xcf\x11\xe0" * 50)
    result = read_attachment(path, "attachment_1.doc")
    assert result.status == "unsupported" and "antiword" in result.reason and "Debian package" in result.reason
    assert not readers.can_read("doc") and readers.can_read("pdf")


def _record(*formats: str) -> dict:
    files = [{"fileUrl": f"https://downloads.regulations.gov/X-1/content.{f}", "format": f, "size": 10}
             for f in formats]
    return {"data": {"id": "X-1", "attributes": {"fileFormats": files}}}


def test_the_preferred_readable_format_is_taken(tmp_path, monkeypatch):
    preference = ["doc", "pdf", "htm"]  # a preference that puts doc first
    if shutil.which("antiword"):
        assert declared_files(_record("htm", "pdf", "doc"), preference)[0][0].filename == "content.doc"
    monkeypatch.setenv("PATH", str(tmp_path))
    [candidates] = declared_files(_record("htm", "pdf", "doc"), preference)
    assert [ref.filename for ref in candidates] == ["content.pdf", "content.htm", "content.doc"]
    [candidates] = declared_files(_record("doc", "htm"), ["doc", "pdf", "htm"])
    assert candidates[0].filename == "content.htm"


def test_a_doc_with_a_pdf_beside_it_takes_the_pdf_by_default():
    [candidates] = declared_files(_record("doc", "pdf"), load_settings({}).formats)
    assert candidates[0].filename == "content.pdf"


def test_a_csv_reads_as_rows_of_cells(tmp_path):
    import csv

    path = tmp_path / "a.csv"
    with path.open("w", newline="", encoding="utf-8") as fh:
        csv.writer(fh).writerows([["Commenter", "Position"], ["Acme, Inc.", "supports the rule"], [], ["Zeta", "opposes"]])
    result = read_attachment(path, "attachment_1.csv")
    assert result.status == "ok"
    assert result.text == "Commenter | Position\nAcme, Inc. | supports the rule\nZeta | opposes"
