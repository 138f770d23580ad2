"""Citations of a document's sections in comment text: each written form, the look-alikes that
are not citations, the own-numbering rule, matching to section ids, and the judged set with
its runner's figures."""

from __future__ import annotations

import csv
import re
from dataclasses import dataclass

import pytest

from benchmarks.citations_judged import Entry, Tally, load, report, score
from pipeline.sections.citations import Citation, find_citations, match_citation, sentence_spans

NIST_QUESTIONS = load()[0]["nist"]["questions"]


def refs(text: str, **options) -> list[tuple[str, str]]:
    return [(c.kind, c.ref) for c in find_citations(text, **options)]


# --- each form --------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("We oppose § 200.1 as written.", [("section", "200.1")]),
    ("The carve-out in section 200.1(b) is narrow.", [("section", "200.1(b)")]),
    ("See Sec. 200.414(c)(1)(ii).", [("section", "200.414(c)(1)(ii)")]),
    ("Under §§ 200.1–200.3 the agency may act.", [("section", "200.1"), ("section", "200.2"), ("section", "200.3")]),
    ("Sections 200.340 through 200.342 apply.", [("section", "200.340"), ("section", "200.341"), ("section", "200.342")]),
    ("§200.334–337 sets records rules.", [("section", f"200.{n}") for n in range(334, 338)]),
    ("§§ 200.202, 200.204, and 200.218 worry us.", [("section", "200.202"), ("section", "200.204"), ("section", "200.218")]),
    ("Both § 200.1 and Sec. 200.3 define it.", [("section", "200.1"), ("section", "200.3")]),
    ("Per 2 C.F.R. § 200.414(c), rates are negotiated.", [("section", "200.414(c)")]),
    ("The change to 2 CFR 200.432 is costly.", [("section", "200.432")]),
    ("We comment on Part 200.", [("part", "200")]),
    ("We comment on 2 CFR part 200 (the Uniform Guidance).", [("part", "200")]),
    ("Current 2 CFR 200 already requires it.", [("part", "200")]),
    ("In response to question 3, costs rise.", [("question", "3")]),
    ("Q3: no.", [("question", "3")]),
    ("Our answer to Question #1 follows.", [("question", "1")]),
    ("As to question 1.a and question 2(b), see below.", [("question", "1.a"), ("question", "2.b")]),
    ("As to question (1)(a), we have no data.", [("question", "1.a")]),
    ("Questions 1, 2 and 5 overlap.", [("question", "1"), ("question", "2"), ("question", "5")]),
    ("Our answer to 1.a follows.", [("question", "1.a")]),
    ("The analysis in II.B is thin.", [("heading", "II.B")]),
    ("Section II.B.3 understates it.", [("heading", "II.B.3")]),
    ("As part II of the preamble says, it is needed.", [("heading", "II")]),
    ("Section IV is missing.", [("heading", "IV")]),
    ("As instructed in the ADDRESSES section, we wrote.", [("heading", "addresses")]),
    ("The section titled “Regulatory Impact Analysis” omits costs.", [("heading", "regulatory-impact-analysis")]),
])
def test_each_written_form_gives_its_normalised_reference(text, expected):
    assert refs(text) == expected


def test_a_bare_cfr_number_cites_only_in_the_documents_parts():
    text = "[200.432; Conference Participation] We object."
    assert refs(text) == []
    assert refs(text, cfr_parts={"200"}) == [("section", "200.432")]
    assert refs("Prices rose 200.4% and $200.14 million; version 200.1 shipped.", cfr_parts={"200"}) == []


def test_a_citation_keeps_what_was_written_its_offsets_and_its_sentence():
    text = "We like the rule. But §§ 200.340–200.342 go too far. Thanks."
    found = find_citations(text)
    assert [c.ref for c in found] == ["200.340", "200.341", "200.342"]
    for citation in found:
        assert citation.written == "§§ 200.340–200.342" == text[citation.start:citation.end]
        assert citation.sentence == "But §§ 200.340–200.342 go too far."
    listed = find_citations("Compare § 200.1 and Sec. 200.3 here.")
    assert [c.written for c in listed] == ["§ 200.1", "Sec. 200.3"]


def test_a_run_on_sentence_is_cut_to_the_words_around_its_citation():
    text = "costs rise, " * 5000 + "see § 200.414 and " + "more words, " * 5000
    (citation,) = find_citations(text)
    assert "§ 200.414" in citation.sentence and len(citation.sentence) <= 2 * 300 + len("§ 200.414") + 2


def test_a_long_chain_of_citations_is_read_once_from_its_first_cue():
    text = "§ 200.1 and " * 3000 + "§ 200.2."
    found = find_citations(text)
    assert len(found) == 3001 and len({c.start for c in found}) == 3001
    assert found[1].written == "§ 200.1" and found[-1].ref == "200.2"


def test_sentences_do_not_end_inside_numbers_or_after_abbreviations():
    text = "See Sec. 200.1 and 42 U.S.C. 1395 of the Act. Next one.\n\n1. A bullet line."
    assert [text[a:b] for a, b in sentence_spans(text)] == [
        "See Sec. 200.1 and 42 U.S.C. 1395 of the Act.", "Next one.", "1. A bullet line."]


# --- not citations of the document ---------------------------------------------------------

@pytest.mark.parametrize("text", [
    "The period closed on 1.5.2024 and reopened 12/3/2024 at 10.30.",
    "It costs $200.25 per visit, $200.4 million a year.",
    "Call (202) 555-0143 or 1-800-555-0100.",
    "We run TLS 1.3 and version 2.1 of the library.",
    "Our Q3 2025 revenue fell, and Q4 FY24 was worse.",
    "As we explain in section 3 of this letter, the data are flawed.",
    "Part 2 of our letter covers costs.",
    "Since World War II, and under Title IX, it grew.",
    "We ask the agency to (1) extend the deadline and (2) hold a hearing.",
    "We question whether 2 alternatives were weighed.",
    "Questions about 5G remain.",
    "Proposed Revisions to 2 CFR—Federal Financial Assistance.",
    "91 Fed. Reg. 32,198, 32,225–26 (proposed May 29, 2026).",
])
def test_look_alikes_are_not_citations(text):
    assert refs(text, cfr_parts={"200"}) == []


@pytest.mark.parametrize("text", [
    "The rule exceeds 42 U.S.C. 1395.",
    "Under Pub. L. 116-283, § 9202(a)(1), funds are set aside.",
    "Section 553 of the Administrative Procedure Act requires notice.",
    "Executive Order 12866 requires an analysis.",
    "Compare 26 U.S.C. § 501(c)(3).",
    "See 52 U.S.C. §§ 20501 – 20511.",
])
def test_other_laws_are_external_and_never_match(text):
    found = find_citations(text)
    assert found and all(c.kind == "external" for c in found)
    assert all(match_citation(c, [Sections("§200.1"), Sections("q1")]) is None for c in found)


def test_a_cfr_citation_of_another_title_is_external_when_the_title_is_known():
    text = "Deviations from 49 CFR Parts 383 and 384 matter."
    assert refs(text) == [("part", "383"), ("part", "384")]
    assert refs(text, cfr_title="2") == [("external", "49 CFR 383"), ("external", "49 CFR 384")]
    assert refs("See 2 CFR 200.1.", cfr_title="2") == [("section", "200.1")]


def test_with_the_documents_parts_known_other_parts_are_another_texts():
    # "§ 4.1" of a guide is another text's section; "Section 4.4" of a paper is its own.
    text = "See ISO/IEC Guide 59, §§ 4.1, 4.3. As shown in Section 4.4, chairs rotate. Part 383 too."
    assert refs(text) == [("section", "4.1"), ("section", "4.3"), ("section", "4.4"), ("part", "383")]
    assert refs(text, cfr_parts=()) == [("external", "§§ 4.1"), ("external", "4.3"), ("external", "383")]
    assert refs("Under § 200.4 and 15 CFR § 744.16.", cfr_parts=["200"]) == [
        ("section", "200.4"), ("external", "15 CFR 744.16")]


@pytest.mark.parametrize("text", [
    "The steps we outline in Section II below.",
    "As part III of this letter shows, costs rise.",
    "Care at V.A. hospitals is slow.",
    "32 BERKELY TECH. L.J. 1313 (2017).",
    "Our background section explains who we are.",
])
def test_self_references_and_abbreviations_are_no_headings(text):
    assert refs(text) == []


def test_an_ordinal_question_counts_only_for_an_rfi():
    text = "The fifth and final key topic posed in the RFI seeks recommendations."
    assert refs(text) == []
    assert refs(text, questions={"5": ""}) == [("question", "5")]


def test_a_point_on_the_questions_subject_is_not_a_copy_of_it():
    # The letter's own point 5 shares words with question 1 only later and looser.
    text = ("5. Encourage China to meet its commitment to equal participation China-based \n"
            "organizations. Article 15 gives international standards organizations a role.")
    assert refs(text, questions=NIST_QUESTIONS) == []


# --- the commenter's own numbering ------------------------------------------------------------

def test_own_numbering_is_no_citation_without_an_rfis_questions():
    text = "1. We support the rule.\n\n2. The effect of the standardization strategy of the People's Republic of China, as identified in the plan, is real."
    assert refs(text) == []
    # With the RFI's questions: the paragraph copying question 2's words cites it, "We support" does not.
    assert refs(text, questions=NIST_QUESTIONS) == [("question", "2")]


def test_a_numbered_paragraph_that_says_question_cites_it_in_an_rfi():
    text = "1. Question 1 asks about thresholds: too low.\n2. On the question of cost, it is high.\n3. We thank you."
    assert refs(text, questions={"1": "", "2": "", "3": ""}) == [("question", "1"), ("question", "2")]
    assert refs(text) == [("question", "1")]  # the explicit "Question 1" stands on its own


def test_a_renumbered_answer_cites_the_question_it_copies():
    text = "3. Recommendations on how the United States can take steps to mitigate the influence of the \nPeople’s Republic of China"
    assert refs(text, questions=NIST_QUESTIONS) == [("question", "5")]


# --- matching ----------------------------------------------------------------------------

@dataclass(frozen=True)
class Sections:
    id: str
    heading: str = ""


DOCUMENT = [Sections(i) for i in ("Part 200", "II", "II.B", "§200.1", "§200.2", "§200.2(b)", "q1", "q1.a", "q3")]


def cite(kind: str, ref: str) -> Citation:
    return Citation(kind, ref, ref, 0, len(ref), ref)


@pytest.mark.parametrize(("kind", "ref", "expected"), [
    ("section", "200.1(b)", "§200.1"),  # no finer section: the one it falls in
    ("section", "200.2(b)(3)", "§200.2(b)"),
    ("section", "200.2", "§200.2"),
    ("section", "200.9", None),
    ("part", "200", "Part 200"),
    ("part", "300", None),
    ("question", "3", "q3"),
    ("question", "1.a", "q1.a"),
    ("question", "1.c", "q1"),
    ("question", "2", None),
    ("heading", "II.B", "II.B"),
    ("heading", "II.C.4", "II"),
    ("heading", "IV", None),
    ("external", "42 U.S.C. 1395", None),
])
def test_match_rules(kind, ref, expected):
    assert match_citation(cite(kind, ref), DOCUMENT) == expected


def test_matching_ignores_spacing_case_and_the_section_sign_of_ids():
    assert match_citation(cite("section", "200.1"), [Sections("§ 200.1")]) == "§ 200.1"
    assert match_citation(cite("part", "200"), [Sections("part 200")]) == "part 200"
    assert match_citation(cite("part", "200"), [Sections("Part200")]) == "Part200"


def test_a_lettered_question_matches_either_way_the_document_numbers_it():
    assert match_citation(cite("question", "1.a"), [Sections("q1"), Sections("q1(a)")]) == "q1(a)"
    assert match_citation(cite("question", "1.b"), [Sections("q1"), Sections("q1(a)")]) == "q1"
    # and the questions handed to find_citations may be keyed "1(a)" as well as "1.a"
    assert refs("1.(a) On the question of cost: high.", questions={"1(a)": ""}) == [("question", "1.a")]


# --- the judged set and its runner ------------------------------------------------------------

def test_the_judged_file_parses_with_enough_sentences_of_each_sort():
    documents, entries = load()
    assert len(entries) >= 60
    assert sum(not e.expect for e in entries) >= 15
    assert sum(e.source != "generated" for e in entries) >= 30
    assert {kind for e in entries for kind, _ in e.expect} == {"section", "part", "question", "heading", "external"}
    assert len({e.id for e in entries}) == len(entries)


def test_the_judged_real_sentences_are_quoted_from_the_share(realdata):
    from pipeline.extract.readers import read_attachment

    def flat(text: str) -> str:
        return " ".join(text.split())

    texts = {row["id"]: flat(row["text"]) for row in csv.DictReader(
        (realdata / "labels" / "stance-omb-dev.csv").open(encoding="utf-8"))}
    for path in (realdata / "mirror" / "raw-data").glob("*/*/binary-*/*/*"):
        texts.setdefault(path.name[:19], flat(read_attachment(path, path.name).text or ""))
    for path in (realdata / "mirror" / "raw-data").glob("USTR/*/text-*/documents/*.htm"):
        texts[path.name[:19]] = flat(re.sub(r"<[^>]*>", " ", path.read_text(encoding="utf-8", errors="replace")))
    for entry in load()[1]:
        if entry.source != "generated":
            assert flat(entry.text).rstrip(".") in texts[entry.source], entry.id


def test_the_runner_counts_precision_recall_and_matches_on_a_hand_example():
    documents = {"d": {"cfr_parts": ["200"], "sections": ["§200.1", "q1"]}}
    entries = [
        Entry("a", "generated", "d", "f1", "See § 200.1(b) and § 200.7.",
              {("section", "200.1(b)"): "§200.1", ("section", "200.7"): None}),
        Entry("b", "generated", "d", "f2", "Question 1 and question 2.", {("question", "1"): "q1"}),
        Entry("c", "generated", "d", "f3", "It costs $200.5 million.", {}),
        Entry("e", "generated", "d", "f1", "Nothing here cites § 200.9.", {("section", "200.8"): None}),
    ]
    tallies = score(documents, entries)
    whole = tallies["all"]
    # found: 200.1(b), 200.7, q1, q2 (spurious), 200.9 (spurious); 200.8 missed
    assert (whole.tp, whole.fp, whole.fn) == (3, 2, 1)
    assert whole.precision() == pytest.approx(3 / 5) and whole.recall() == pytest.approx(3 / 4)
    assert (whole.matched, whole.judged_matches) == (3, 3)
    assert (tallies["form:f3"].clean, tallies["form:f3"].empty) == (1, 1)
    assert tallies["kind:question"].fp == 1 and tallies["kind:section"].fn == 1
    assert "0.600" in report(tallies, len(entries)) and isinstance(tallies["form:f2"], Tally)
