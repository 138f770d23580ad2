"""The splitter on small written texts, no Luigi: RFI questions numbered "1.a", "1.b", "2.a" with
no "1." line of their own are the letters under their numbers."""

from __future__ import annotations

from pipeline.sections.splitter import split_sections


def test_questions_numbered_1a_are_the_letters_under_their_numbers():
    pages = [(1, "Request for Information\nWe ask the following.\n1.a. How do you report costs today?\n"
                 "Some words.\n1.b. What would you change?\n2.a. Who pays for the filings?\n2.b) What else?\n"
                 "3. Anything more to add?")]
    sections = {s.id: s for s in split_sections(pages)}
    assert [(i, s.parent, s.heading) for i, s in sections.items() if i.startswith("q")] == [
        ("q1", "request-for-information", "1."), ("q1.a", "q1", "1.a How do you report costs today?"),
        ("q1.b", "q1", "1.b What would you change?"), ("q2", "request-for-information", "2."),
        ("q2.a", "q2", "2.a Who pays for the filings?"), ("q2.b", "q2", "2.b What else?"),
        ("q3", "request-for-information", "3. Anything more to add?")]
