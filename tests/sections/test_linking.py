"""Linking without stores: a document's indexed passages placed in the sections they were cut
from (by most of their words, never in another document of the same printed page), and a
comment's passages tied to the section of the nearest one only above the floor."""

from __future__ import annotations

from pipeline.sections.linking import nearest_links, passage_sections
from pipeline.sections.splitter import split_sections

PAGES = [(1, "Other notice text about fisheries quotas in the Atlantic region this year.\nBILLING CODE 3510-22-P\n"
             "SUPPLEMENTARY INFORMATION:\nI. Background\nThe agency proposes new reporting duties for "
             "small entities under the program.\nII. Costs\nThe rule would cost regulated entities about ten "
             "million dollars each year in new filings.")]


def test_a_passage_falls_in_the_section_most_of_its_words_are_in():
    sections = split_sections(PAGES)
    assert [s.id for s in sections] == ["other-1", "supplementary-information", "I", "II"]
    straddling = ("small entities under the program. II. Costs The rule would cost regulated entities about "
                  "ten million dollars each year in new filings.")
    header = "Other notice text about fisheries quotas in the Atlantic region this year. BILLING CODE"
    assert passage_sections([straddling, header, "words found nowhere in the document at all here"],
                            sections) == ["II", None, None]


def test_a_comment_is_nearest_a_section_only_above_the_floor():
    vectors = [[1.0, 0.0], [0.0, 1.0]]
    placed = ["I", "II"]
    comment = [("we object to the costs", [0.1, 0.9]), ("unrelated", [-1.0, 0.0])]
    assert nearest_links(comment, vectors, placed, 0.9) == [
        {"section": "II", "evidence": "we object to the costs", "similarity": 0.9939}]
    assert nearest_links(comment, vectors, placed, 0.995) == []
    assert nearest_links([], vectors, placed, 0.5) == []

