"""Where a comment cites the document it answers: "§ 200.414(c)", "question 3", "II.B".

Pure functions over text, no store: :func:`find_citations` reads a comment's text and returns
each citation with the sentence it sits in; :func:`match_citation` names the document
section a citation points at, or None.

**Kinds** (``Citation.kind``) and their normalised ``ref``:

* ``section``: a CFR section, "§ 200.1", "§§ 200.1–200.3", "Sec. 200.1", "section 200.1(b)",
  "2 CFR 200.414", "2 C.F.R. § 200.414(c)" → ``200.1``, ``200.414(c)``. A list gives one
  citation per item; a range within one part ("§§ 200.340–200.343", at most
  ``MAX_RANGE`` sections) gives one per section, each ``written`` as the whole range.
* ``part``: "Part 200", "2 CFR part 200", "2 CFR 200" → ``200``.
* ``question``: "question 3", "Questions 1 and 2", "question #1", "Q3", "Q 1.a",
  "question 1(a)", a bare "1.a" → ``3``, ``1.a``; for an RFI (``questions`` given) also
  "the fifth topic". "Q1 2025"/"Q3 FY24" are quarters.
* ``heading``: a preamble heading, "II.B", "Section II.B", "part II", "section IV.C.1" →
  ``II.B``. A roman numeral alone ("II") counts only after "section"/"part"; "Section II
  below", "part III of this letter" are the letter's own; "V.A. hospitals", "L.J." are
  abbreviations. A named heading of the preamble (``NAMED_HEADINGS``) counts with a word saying
  it is one: "the Background section", "the section titled “Summary”" → ``background``,
  ``summary`` (the slug), never "our background section".
* ``external``: another law or text, never the document: "42 U.S.C. 1395", "Pub. L. 116-283",
  "Executive Order 12866", "section 5 of the Clean Air Act", a "§" whose number has no dot
  ("§ 9202(a)(1)": CFR sections always carry part.section), a CFR citation of another title
  when ``cfr_title`` is given, and -- when ``cfr_parts`` is given -- a "§"/CFR section or a
  part outside those parts ("ISO/IEC Guide 59, § 4.1", "15 CFR § 744.16"). Returned (a
  caller may show them apart) and never matched.

**Not citations**: dates, money, phone numbers, version numbers, percentages (none has a cue
word, and a bare "200.414" counts only when its part is one of ``cfr_parts`` and it is not
money, a quantity or a version); "section 3" with a plain integer, and "Section 4.4" (the word,
not "§") outside the document's known parts: the commenter's own section, or a paper's, as
often as the document's, so dropped; and **the commenter's own numbering**. A paragraph
opening "1. We support…" is the commenter's list, not question 1 -- unless ``questions`` is
given (the document is a request for information with numbered questions) and that
paragraph's first sentence says "question"/"Q", or its first words copy a question's own text
(``MIRROR_SHARE`` of the question's first ``MIRROR_WORDS`` content words among the
paragraph's first ``2 * MIRROR_WORDS``): commenters answering an RFI copy its numbered
questions as their headings, and one answering three of five numbers them 1-3, so a copy
cites the question it copies whatever its number. "(1)(a)" alone is likewise a citation only
after a question cue or as such a paragraph's bullet.

**Section ids expected** by :func:`match_citation` (the sections stage's scheme): CFR sections
``§200.1`` (finer ones ``§200.1(b)`` where the document has them), parts ``Part200`` or
``Part 200``, questions ``q3`` / ``q1.a`` / ``q1(a)``, preamble headings as the dotted path
of their numbers ``II`` / ``II.B`` / ``II.B.3``, named headings by slug ``background``. Ids are compared without spaces, case or
"§". A citation finer than the document's sections matches the nearest coarser one:
``200.1(b)(2)`` → ``§200.1(b)`` → ``§200.1``; ``1.a`` → ``q1``; ``II.B.3`` → ``II.B``.
"""

from __future__ import annotations

import bisect
import re
from collections.abc import Collection, Iterable, Mapping
from dataclasses import dataclass
from typing import Protocol

KINDS = ("section", "part", "question", "heading", "external")
EVIDENCE_AROUND = 300  # characters of a long sentence kept each side of its citation
MAX_RANGE = 40  # a "§§ 200.300–200.399" wider than this is kept as its two ends
MIRROR_SHARE = 0.75  # of a question's first words a numbered paragraph must open with
MIRROR_WORDS = 8  # how many of the question's first content words are compared, within
# the paragraph's first 2 * MIRROR_WORDS: a copied question opens it, a letter's own point
# on the same subject uses the same words later and looser


@dataclass(frozen=True)
class Citation:
    kind: str  # one of KINDS
    ref: str  # normalised: "200.414(c)", "200", "3", "1.a", "II.B", "42 U.S.C. 1395"
    written: str  # the text as written (a range's members: the whole range)
    start: int  # offsets of ``written`` in the text
    end: int
    sentence: str  # the citing sentence, the evidence shown beside it


class SectionLike(Protocol):
    """What matching needs of a document's section (the sections stage's class has more)."""

    id: str
    heading: str


# --- the pieces of a citation ------------------------------------------------------------

_PARA = r"(?:\s?\((?:[a-z]{1,4}|\d{1,3}|[A-Z]{1,2})\))"  # (b), (2), (ii), (A)
_SECTION_ITEM = re.compile(rf"(?:§§?\s*)?(\d{{1,3}})\.(\d{{1,4}}[a-z]?)({_PARA}*)(?![\d.]*\d)")
_ROMAN = r"(?=[IVXL])L?X{0,3}(?:IX|IV|V?I{0,3})"
_HEADING_ITEM = re.compile(rf"({_ROMAN})((?:\.[A-Z](?:\.\d{{1,2}}(?:\.[a-z])?)?)?)(?![\w])")
_QUESTION_ITEM = re.compile(r"#?\s?(?:No\.\s?)?\(?(\d{1,2})\)?(?:\.?([a-z])|\(([a-z])\))?(?![\w%])")
_NOT_A_PART = r"(?![\d.]*\d)(?!\s*(?:C\.?\s?F\.?\s?R|U\.?\s?S\.?\s?C)\b)"
_PART_ITEM = re.compile(rf"(\d{{2,4}}){_NOT_A_PART}")  # "part 2" alone is as often the letter's own
_CFR_PART_ITEM = re.compile(rf"(\d{{1,4}}){_NOT_A_PART}")
_SHORT_END = re.compile(r"(\d{1,4})(?![\d.]*\d)")
_LIST_SEP = re.compile(r"(?:\s*,\s*(?:and\s+|or\s+)?|\s+(?:and|or)\s+|\s*;\s*)")
_RANGE_SEP = re.compile(r"\s*(?:[-–—]|to\b|through\b)\s*")
_REPEATED_CUE = re.compile(r"(?:§§?\s*|(?i:sec(?:tion)?s?\.?)\s+|(?i:questions?)\s+|Q\s?)?")

_SECTION_CUE = re.compile(r"(?:§§?|\b(?i:sec)\.|\b(?i:sections?)\b)\s*")
_CFR = re.compile(r"\b(\d{1,2})\s*C\.?\s?F\.?\s?R\.?\s*(?:(?i:parts?)\s*)?(?:§§?\s*)?(?=\d)")
_PART_CUE = re.compile(r"\b[Pp]arts?\s+(?=\d|[IVXL])")
_SELF_REFERENCE = re.compile(r"[,)]?\s+(?:below|above|of (?:this|our|my) (?:letter|comments?|submission|response|paper))\b")
_HEADING_CUE = re.compile(r"\b(?i:sections?|sec\.)\s*(?=[IVXL])|\b[Pp]arts?\s+(?=[IVXL])")
_QUESTION_CUE = re.compile(r"\b(?i:questions?|topics?)\s*(?=[#(\dN])")
_Q = re.compile(r"\bQ\s?\.?\s?#?(?=\d)")
_QUARTER = re.compile(r"[1-4]\s*(?:,\s*)?(?:FY\s?'?\d{0,4}\b|'?\d{2}\b|\d{4}\b|of\b|earnings|results|report)")
_BARE_HEADING = re.compile(r"(?<![\w.§])((?=[IVX])X{0,3}(?:IX|IV|V?I{0,3})\.[A-Z](?:\.\d{1,2}(?:\.[a-z])?)?)"
                           r"(?![\w]|\.\w|\.\s+[a-z])")  # "V.A. hospitals", "L.J.": abbreviations
_BARE_QUESTION = re.compile(r"(?<![\w.§$/-])(\d{1,2})\.([a-z])(?![\w.]|\.\w)")
_BARE_SECTION = re.compile(rf"(?<![\w.§$/-])(\d{{1,3}})\.(\d{{1,4}})({_PARA}*)(?![\w.]*\d|\s?(?:%|percent|million|billion|thousand))")
_VERSION = re.compile(r"\b(?i:version|ver\.?|v\.?|release|rev\.?|revision|TLS|HTTP|Python)\s*$")
_ORDINALS = ("first", "second", "third", "fourth", "fifth", "sixth", "seventh", "eighth", "ninth", "tenth")
_ORDINAL_QUESTION = re.compile(rf"\b({'|'.join(_ORDINALS)})\s+(?:and\s+(?:final|last)\s+)?(?:key\s+)?(?:topic|question)\b", re.I)
# Named headings of a Federal Register preamble a comment may point at by name; cited only
# with a word saying it is a heading ("the Background section", "the section titled
# 'Summary'"), never "our background section", and matched by slug ("background").
NAMED_HEADINGS = ("Background", "Summary", "Executive Summary", "Supplementary Information", "Addresses",
                  "Dates", "Regulatory Impact Analysis", "Regulatory Analyses", "Regulatory Flexibility Act",
                  "Paperwork Reduction Act", "Request for Comments", "Public Participation",
                  "Questions for Comment", "Authority", "List of Subjects")
_NAME = "|".join(re.escape(name) for name in sorted(NAMED_HEADINGS, key=len, reverse=True))
_NAMED_HEADING = re.compile(
    rf"(?<!\bour )(?<!\bmy )(?<!\bthis )\b(?:the\s+)?[“\"‘']?({_NAME})[”\"’']?\s+(?:section|heading|portion)\b(?!\s*\d)"
    rf"|\b(?:section|heading|portion)\s+(?:titled|entitled|headed|called)\s+[“\"‘']?({_NAME})\b", re.I)
_NUMBERED_PARAGRAPH = re.compile(r"(?m)^[ \t•*“\"-]*(?:\((\d{1,2})\)|(\d{1,2})[.)])(?:\s?\(?([a-z])[.)])?[ \t]+(?=\S)")
_EXTERNAL = re.compile(
    r"\b\d{1,2}\s*U\.?\s?S\.?\s?C\.?\s*A?\.?\s*(?:§§?\s*)?\d+[\w\-–]*(?:\([\w]+\))*"
    r"(?:\s*(?:[-–—]|to|through)\s*\d+[\w\-]*)?"
    r"|\b(?:Pub(?:lic|\.)\s?L(?:aw|\.)\s?(?:No\.\s?)?)\d{2,3}\s?[-–]\s?\d{1,4}"
    r"|\b(?:Executive Order|E\.\s?O\.)\s?(?:No\.\s?)?\d{4,5}"
    r"|\b(?i:sec(?:tion|\.)?)\s*\d+[\w()]*\s+of\s+(?:the\s+)?(?:[A-Z][\w'’.&-]*\s+(?:of\s+|and\s+)?){0,8}"
    r"(?:Act|Code|Order|Law|Amendment|Constitution)\b"
    r"|§§?\s*\d+(?![\d.]*\.\d)(?:\([\w]+\))*(?:\s*(?:[-–—]|to|through)\s*\d+(?:\([\w]+\))*)?")

_ABBREVIATIONS = {"sec", "secs", "no", "nos", "pub", "l", "e.g", "i.e", "vs", "v", "fed", "reg",
                  "mr", "ms", "mrs", "dr", "inc", "co", "st", "u.s", "u.s.c", "c.f.r", "cf", "al",
                  "et", "jan", "feb", "mar", "apr", "jun", "jul", "aug", "sept", "sep", "oct",
                  "nov", "dec", "corp", "ltd", "approx", "fig", "p", "pp", "para", "art", "q"}
_SENTENCE_END = re.compile(r"[.!?][\"”’)\]]*\s+(?=[\"“‘(\[]?[A-Z0-9•§])|\n\s*\n|\n(?=[ \t]*(?:[•*-]|\d{1,2}[.)]\s))")
_BULLET = re.compile(r"[ \t•*“\"-]*\(?(?:\d{1,2}|[a-z]|[IVX]{1,4})\)?")  # "1." / "a." / "II." opening a line
_STOPWORDS = frozenset("the of and or to in on for a an as by with that this be is are how what which "
                       "whether may can its their from at any".split())


# --- finding -----------------------------------------------------------------------------

def find_citations(text: str, *, questions: Mapping[str, str] | None = None,
                   cfr_parts: Collection[str] | None = None, cfr_title: str | None = None) -> list[Citation]:
    """Each citation in ``text``, in the order written.

    ``questions``: the document's numbered questions (number → its text; an empty text is
    allowed), given when the document is a request for information: then a numbered
    paragraph that says "question" or mirrors the question's words cites it (the module's
    rule on the commenter's own numbering), and "the fifth question" cites question 5.
    ``cfr_parts``: the CFR parts the document amends ("200"; empty: none, as an RFI): a bare
    "200.414" cites a section only in one of them, and "Section 4.4" (the word, not "§") of
    another part is the commenter's own numbering or another text's, no citation; None: not
    known, every "section N.N" counts. ``cfr_title``:
    the document's CFR title ("2"); a CFR citation of another title is ``external``.
    """
    if questions is not None:  # "1(a)" as the sections stage may number it is "1.a" here
        questions = {_question_key(number): asked for number, asked in questions.items()}
    found: list[tuple[int, int, str, str, str]] = []  # start, end, kind, ref, written
    taken = _Taken()
    finders = [_externals, _named_headings, _cfr_citations, _section_citations, _heading_citations,
               _part_citations, _question_citations, _bare_citations]
    for number, finder in enumerate(finders + ([_mirrored_questions, _ordinal_questions] if questions is not None else [])):
        for item in finder(text, cfr_parts=cfr_parts, cfr_title=cfr_title, questions=questions):
            if taken.take(item, number):
                found.append(item)
    spans = sentence_spans(text)
    starts = [start for start, _ in spans]
    citations = []
    for start, end, kind, ref, written in sorted(found, key=lambda item: (item[0], item[1])):
        s_start, s_end = spans[max(bisect.bisect_right(starts, start) - 1, 0)] if spans else (0, len(text))
        # A "sentence" with no full stop (a table, a PDF's run-on list) is cut to the words
        # around the citation: the evidence a reader needs, and no cost growing with it.
        s_start, s_end = max(s_start, start - EVIDENCE_AROUND), min(s_end, end + EVIDENCE_AROUND)
        citations.append(Citation(kind, ref, written, start, end, " ".join(text[s_start:s_end].split())))
    return citations


class _Taken:
    """The stretches of text already read as citations. The first reading wins (an external
    "§ 9202" is not read again as a section); only a range's members, from one finder and of
    one kind, share a span. Taken spans never overlap, so their ends rise with their starts
    and a new item meets at most its neighbours: a long letter costs no pairwise comparison."""

    def __init__(self) -> None:
        self.starts: list[int] = []
        self.spans: list[tuple[int, int, int, str, set[str]]] = []  # start, end, finder, kind, refs

    def take(self, item: tuple, finder: int) -> bool:
        start, end, kind, ref = item[:4]
        at = bisect.bisect_left(self.starts, end) - 1
        while at >= 0 and self.spans[at][1] > start:
            s_start, s_end, s_finder, s_kind, refs = self.spans[at]
            if (s_start, s_end, s_finder, s_kind) != (start, end, finder, kind) or ref in refs:
                return False
            refs.add(ref)
            return True
        place = bisect.bisect_left(self.starts, start)
        self.starts.insert(place, start)
        self.spans.insert(place, (start, end, finder, kind, {ref}))
        return True


def sentence_spans(text: str) -> list[tuple[int, int]]:
    """The sentences of ``text`` as (start, end): a full stop after an abbreviation
    ("Sec.", "U.S.C.", "No."), inside a number ("200.414") or a citation does not end one."""
    spans, start = [], 0
    for match in _SENTENCE_END.finditer(text):
        if match.group().startswith(".") and (_abbreviation_before(text, match.start())
                                              or _BULLET.fullmatch(text, _line_start(text, match.start()), match.start())):
            continue
        if text[start:match.start()].strip():
            spans.append((start, match.start() + 1))
        start = match.end()
    if text[start:].strip():
        spans.append((start, len(text)))
    return spans


def _abbreviation_before(text: str, dot: int) -> bool:
    word = re.search(r"[\w.]*$", text[max(0, dot - 12):dot]).group().lower().strip(".")
    return word in _ABBREVIATIONS or (len(word) == 1 and word.isalpha()) or word.endswith("u.s")


def _externals(text: str, **_) -> Iterable[tuple]:
    for match in _EXTERNAL.finditer(text):
        written = match.group().rstrip()
        yield match.start(), match.start() + len(written), "external", " ".join(written.split()), written


def _lists(text: str, cues: Iterable[re.Match], *item_res: re.Pattern) -> Iterable[tuple]:
    """(cue, its list) for each cue whose list is not the tail of an earlier cue's: "§ 200.1
    and § 200.2 and …" is read once, from its first cue (each cue reading the rest again would
    cost the square of the list's length). The first of ``item_res`` that reads a list wins."""
    done = 0
    for cue in sorted(cues, key=lambda match: match.start()):
        if cue.start() < done:
            continue
        groups = next((found for item_re in item_res if (found := _list_at(text, cue.end(), item_re))), [])
        done = groups[-1][1] if groups else done
        yield cue, groups


def _cfr_citations(text: str, *, cfr_title: str | None, cfr_parts: Collection[str] | None, **_) -> Iterable[tuple]:
    """"2 CFR 200.414", "2 C.F.R. §§ 200.1–200.3", "2 CFR part 200", "2 CFR 200"."""
    for cue, items in _lists(text, _CFR.finditer(text), _SECTION_ITEM, _CFR_PART_ITEM):
        for start, end, ref, written in _refs(text, items, cue.start()):
            other = (cfr_title is not None and cue.group(1) != cfr_title) or _outside(ref, cfr_parts)
            kind = "external" if other else ("section" if "." in ref else "part")
            yield start, end, kind, f"{cue.group(1)} CFR {ref}" if other else ref, written


def _outside(ref: str, cfr_parts: Collection[str] | None) -> bool:
    """A CFR reference outside the document's parts (when they are known): another rule's."""
    return cfr_parts is not None and ref.split(".")[0] not in cfr_parts


def _section_citations(text: str, *, cfr_parts: Collection[str] | None, **_) -> Iterable[tuple]:
    for cue, items in _lists(text, _SECTION_CUE.finditer(text), _SECTION_ITEM):
        for start, end, ref, written in _refs(text, items, cue.start()):
            if not _outside(ref, cfr_parts):
                yield start, end, "section", ref, written
            elif "§" in cue.group():  # legal citation style: another rule's or text's section
                yield start, end, "external", " ".join(written.split()), written
            # "Section 4.4" of a part the document lacks: the letter's (or a paper's) own section


def _heading_citations(text: str, **_) -> Iterable[tuple]:
    for cue, items in _lists(text, _HEADING_CUE.finditer(text), _HEADING_ITEM):
        if items and items[0][2] == ["I"] and not re.match(r"[.,;:)\]\n]|$", text[items[0][1]:items[0][1] + 1]):
            continue  # "Section I think", "part I of our letter": a lone "I" must stand alone
        if items and _SELF_REFERENCE.match(text, items[-1][1]):
            continue  # "in Section II below": the letter's own section
        yield from ((start, end, "heading", ref, written) for start, end, ref, written
                    in _refs(text, items, cue.start()))


def _named_headings(text: str, **_) -> Iterable[tuple]:
    for match in _NAMED_HEADING.finditer(text):
        name = match.group(1) or match.group(2)
        yield match.start(), match.end(), "heading", re.sub(r"[^a-z0-9]+", "-", name.lower()), match.group()


def _part_citations(text: str, *, cfr_parts: Collection[str] | None, **_) -> Iterable[tuple]:
    for cue, items in _lists(text, _PART_CUE.finditer(text), _PART_ITEM):
        for start, end, ref, written in _refs(text, items, cue.start()):
            yield start, end, "external" if _outside(ref, cfr_parts) else "part", ref, written


def _question_citations(text: str, **_) -> Iterable[tuple]:
    cues = [*_QUESTION_CUE.finditer(text), *(cue for cue in _Q.finditer(text) if not _QUARTER.match(text, cue.end()))]
    for cue, items in _lists(text, cues, _QUESTION_ITEM):
        yield from ((start, end, "question", ref, written) for start, end, ref, written
                    in _refs(text, items, cue.start()))


def _bare_citations(text: str, *, cfr_parts: Collection[str] | None, **_) -> Iterable[tuple]:
    """Forms with no cue word: "II.B", "1.a", and "200.414" in one of the document's parts."""
    for match in _BARE_HEADING.finditer(text):
        yield match.start(), match.end(), "heading", match.group(1), match.group()
    for match in _BARE_QUESTION.finditer(text):
        if text[_line_start(text, match.start()):match.start()].strip(" \t•*-("):
            yield match.start(), match.end(), "question", f"{match.group(1)}.{match.group(2)}", match.group()
    for match in _BARE_SECTION.finditer(text):
        if match.group(1) in (cfr_parts or ()) and not _VERSION.search(text, max(0, match.start() - 12), match.start()):
            ref = f"{match.group(1)}.{match.group(2)}{''.join(match.group(3).split())}"
            yield match.start(), match.end(), "section", ref, match.group()


def _question_key(number: str) -> str:
    return ".".join(re.findall(r"[0-9]+|[a-z]+", number.lower()))


def _line_start(text: str, at: int) -> int:
    return text.rfind("\n", 0, at) + 1


def _normal(item_re: re.Pattern, match: re.Match) -> str:
    if item_re is _SECTION_ITEM:
        return f"{match.group(1)}.{match.group(2)}{''.join(match.group(3).split())}"
    if item_re is _HEADING_ITEM:
        return match.group(1) + match.group(2)
    if item_re is _QUESTION_ITEM:
        letter = match.group(2) or match.group(3)
        return f"{match.group(1)}.{letter}" if letter else match.group(1)
    return match.group(1)


def _expand(item_re: re.Pattern, first: re.Match, last: re.Match) -> list[str]:
    """A range's members: "200.340–200.343" is four sections, "questions 1–3" three."""
    ends = [_normal(item_re, first), _normal(item_re, last)]
    if item_re is _SECTION_ITEM:
        same = first.group(1) == last.group(1) and not first.group(3) and not last.group(3)
        if same and first.group(2).isdigit() and last.group(2).isdigit():
            low, high = int(first.group(2)), int(last.group(2))
            if 0 < high - low <= MAX_RANGE:
                return [f"{first.group(1)}.{n}" for n in range(low, high + 1)]
    elif item_re is not _HEADING_ITEM and all(end.isdigit() for end in ends):
        low, high = int(ends[0]), int(ends[1])
        if 0 < high - low <= MAX_RANGE:
            return [str(n) for n in range(low, high + 1)]
    return ends


def _list_at(text: str, pos: int, item_re: re.Pattern) -> list[tuple[int, int, list[str]]]:
    """The items of a list or range starting at ``pos``: (start, end, refs) each, a range's
    members together. "§§ 200.202, 200.204 and 200.340–200.343" is three entries."""
    groups = []
    start, match = pos, item_re.match(text, pos)
    while match:
        refs, end = [_normal(item_re, match)], match.end()
        if (joint := _RANGE_SEP.match(text, end)) is not None:
            last = item_re.match(text, _REPEATED_CUE.match(text, joint.end()).end())
            if last is not None:
                refs, end = _expand(item_re, match, last), last.end()
            elif item_re is _SECTION_ITEM and (short := _SHORT_END.match(text, joint.end())):
                # "§ 200.334–337": the range's end in the same part
                refs = _expand(item_re, match, _SECTION_ITEM.match(f"{match.group(1)}.{short.group(1)}"))
                end = short.end()
        groups.append((start, end, refs))
        if (sep := _LIST_SEP.match(text, end)) is None:
            break
        start = sep.end()  # a repeated cue ("and § 200.4") is part of the item as written
        match = item_re.match(text, _REPEATED_CUE.match(text, start).end())
    return groups


def _refs(text: str, groups: list[tuple[int, int, list[str]]], cue_start: int) -> Iterable[tuple]:
    """(start, end, ref, written) per reference; the first item's written text has its cue."""
    for index, (start, end, refs) in enumerate(groups):
        start = cue_start if index == 0 else start
        for ref in refs:
            yield start, end, ref, text[start:end]


def _content_words(text: str) -> list[str]:
    return [w for w in re.findall(r"[a-z0-9']+", text.lower().replace("’", "'")) if w not in _STOPWORDS and len(w) > 1]


def _mirrored_questions(text: str, *, questions: Mapping[str, str], **_) -> Iterable[tuple]:
    """Numbered paragraphs that answer an RFI's question: the module's own-numbering rule.
    A paragraph that copies another question's words cites that one (commenters answering
    three of five questions number their answers 1-3)."""
    for match in _NUMBERED_PARAGRAPH.finditer(text):
        number = match.group(1) or match.group(2)
        lettered = f"{number}.{match.group(3)}"
        paragraph = re.split(r"\n\s*\n", text[match.end():match.end() + 600], maxsplit=1)[0]
        if not paragraph.strip():
            continue
        first = paragraph[:sentence_spans(paragraph)[0][1]]
        opening = set(_content_words(paragraph)[:MIRROR_WORDS * 2])
        mirrored = [ref for ref, asked in questions.items() if _mirrors(asked, opening)]
        own = lettered if match.group(3) and lettered in questions else number
        if re.match(rf"\W*(?i:questions?|Q)\s?#?\s?{number}\b", paragraph):
            continue  # "1. Question 1 asks…": the words cite it, not the bullet again
        if own in questions and (own in mirrored or re.search(r"\b(?i:question)|\bQ\b", first)):
            ref = own
        elif len(mirrored) == 1:
            ref = mirrored[0]
        else:
            continue
        bullet = match.group().strip(" \t•*-“\"")
        start = match.start() + match.group().index(bullet)
        yield start, start + len(bullet), "question", ref, bullet


def _ordinal_questions(text: str, *, questions: Mapping[str, str], **_) -> Iterable[tuple]:
    """"The fifth and final key topic posed in the RFI": only for an RFI's questions, since a
    letter's "first question" is as often its own."""
    for match in _ORDINAL_QUESTION.finditer(text):
        ref = str(_ORDINALS.index(match.group(1).lower()) + 1)
        if ref in questions:
            yield match.start(), match.end(), "question", ref, match.group()


def _mirrors(question: str, opening: set[str]) -> bool:
    asked = _content_words(question)[:MIRROR_WORDS]
    return bool(asked) and sum(word in opening for word in asked) >= MIRROR_SHARE * len(asked)


# --- matching ----------------------------------------------------------------------------

def match_citation(citation: Citation, sections: Iterable[SectionLike]) -> str | None:
    """The id of the document section ``citation`` cites: the finest section the document
    has that the citation falls in (``200.1(b)(2)`` → ``§200.1`` when the document's
    sections stop there). None when the document has no such section, and for ``external``."""
    ids = {_id_key(section.id): section.id for section in sections}
    for candidate in _candidates(citation):
        if (found := ids.get(_id_key(candidate))) is not None:
            return found
    return None


def _id_key(section_id: str) -> str:
    return "".join(section_id.split()).replace("§", "").lower()


def _candidates(citation: Citation) -> list[str]:
    """The ids ``citation`` may have in the sections stage's scheme, finest first."""
    ref = citation.ref
    if citation.kind == "section":
        paragraphs = re.findall(r"\([^)]*\)", ref)
        base = ref[:len(ref) - sum(map(len, paragraphs))]
        return [f"§{base}{''.join(paragraphs[:n])}" for n in range(len(paragraphs), -1, -1)]
    if citation.kind == "part":
        return [f"Part {ref}"]
    if citation.kind == "question":  # "1.a" is "q1.a" or, for a "(a)" list, "q1(a)"
        parts = ref.split(".")
        return [variant for n in range(len(parts), 0, -1)
                for variant in dict.fromkeys((f"q{'.'.join(parts[:n])}", f"q{parts[0]}{''.join(f'({p})' for p in parts[1:n])}"))]
    if citation.kind == "heading":
        parts = ref.split(".")
        return [".".join(parts[:n]) for n in range(len(parts), 0, -1)]
    return []
