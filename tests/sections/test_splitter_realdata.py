"""The splitter on the real notices' text as extract reads it (../shared/realdata, skipped
without it), no Luigi: the ACF notice's parts I–IV and its questions under each, the NIST
RFI's five numbered questions, the USTR notice's three numbered parts; the other documents
printed on the same Federal Register pages kept apart; the printer's lines dropped."""

from __future__ import annotations

from pathlib import Path

import pytest

from pipeline.extract.readers import read_attachment
from pipeline.sections.splitter import split_sections
from pipeline.sections.stage import _pages

CONTENT = {
    "ACF-2025-0038-0001": "ACF/ACF-2025-0038/binary-ACF-2025-0038/documents_attachments/ACF-2025-0038-0001_content.pdf",
    "NIST-2021-0006-0001": "NIST/NIST-2021-0006/binary-NIST-2021-0006/documents_attachments/"
                           "NIST-2021-0006-0001_content.pdf",
    "USTR-2015-0010-0001": "USTR/USTR-2015-0010/binary-USTR-2015-0010/documents_attachments/"
                           "USTR-2015-0010-0001_content.pdf",
}


@pytest.fixture(scope="module")
def split(realdata):
    def of(document: str):
        text = read_attachment(Path(realdata / "mirror/raw-data" / CONTENT[document]), "content.pdf").text
        return {s.id: s for s in split_sections(_pages(text))}
    return of


def test_the_acf_notice_has_its_parts_and_the_questions_under_each(split):
    sections = split("ACF-2025-0038-0001")
    parts = {i: sections[i] for i in ("I", "II", "III", "IV")}
    assert {i: (s.heading, s.page, s.parent) for i, s in parts.items()} == {
        "I": ("I. Technical Assistance Related to ICWA", 1, "background"),
        "II": ("II. Reducing Administrative Burden", 2, "background"),
        "III": ("III. The Court Improvement Program", 2, "background"),
        "IV": ("IV. Increasing Studies of Programs and Services Eligible for Review by the Title IV–E "
               "Prevention Services Clearinghouse", 2, "background"),
    }
    assert "Section 422(b)(9) of the Act" in parts["I"].text and "section 441 of the Act" in parts["II"].text
    # The questions repeat the parts' numbers: the second of each is told apart, its questions keep "I.a".
    assert [sections[f"{p}~2"].parent for p in ("I", "II", "III", "IV")] == ["questions-for-comment"] * 4
    questions = sorted(i for i, s in sections.items() if s.kind == "lower")
    assert len(questions) == 7 + 7 + 4 + 2
    assert sections["I.a"].parent == "I~2" and sections["I.a"].heading.startswith("a. What barriers has your State")
    assert sections["III.d"].heading == "d. Currently, Court Improvement grants for Tribes have a $150,000 award ceiling"
    assert sections["III.d"].page == 4 and sections["IV.b"].parent == "IV~2"
    assert sections["summary"].text.startswith("The Administration for")
    # The DHS notice printed after it on page 4: one section of its own, not parts of this one.
    assert sections["other-1"].kind == "other" and "computer matching" in sections["other-1"].text
    assert all("VerDate" not in s.text and "Federal Register / Vol." not in s.text for s in sections.values())


def test_the_nist_rfi_has_its_five_questions(split):
    sections = split("NIST-2021-0006-0001")
    questions = [s for s in sections.values() if s.id.startswith("q")]
    assert [(s.id, s.page, s.parent) for s in questions] == [
        (f"q{n}", 2, "request-for-information") for n in range(1, 6)]
    assert questions[0].heading.startswith("1. The participation of the People’s Republic of China in international")
    assert questions[4].text.endswith("international standards-setting bodies.\nAlicia Chambers,\n"
                                      "NIST Executive Secretariat.\n[FR Doc. 2021–24090 Filed 11–3–21; 8:45 am]\n"
                                      "BILLING CODE 3510–13–P")
    # The steps of ADDRESSES are that caption's own list, not questions.
    assert [sections[f"addresses.{n}"].parent for n in (1, 2, 3)] == ["addresses"] * 3
    assert sections["addresses.3"].heading == "3. Enter or attach your comments"
    assert {s.id for s in sections.values() if s.kind == "other"} == {"other-1", "other-2"}


def test_the_ustr_notice_has_its_three_numbered_parts(split):
    sections = split("USTR-2015-0010-0001")
    assert [(i, sections[i].heading, sections[i].page) for i in ("q1", "q2", "q3")] == [
        ("q1", "1. Background", 2), ("q2", "2. Public Comment and Hearing", 2),
        ("q3", "3. Requirements for Submissions", 2)]
    assert sections["q1"].text.splitlines()[1].startswith("China became a Member of the WTO")
    # Three short notices precede it on its first page; the longest document is the notice.
    assert [s for s in sections if s.startswith("other-")] == ["other-1", "other-2", "other-3"]
    assert sections["summary"].text.startswith("The interagency Trade Policy")
