"""What a comment is compared by: its own words normalised, its word shingles, its sentences.

Form letters differ in what the submitter fills in — a salutation, their name, a signature
block — and in case, spacing and punctuation. Those are removed before hashing (exact groups)
and shingling (near-duplicate groups); the sentences a member adds to its group's
representative are taken from its original text.

Text the commenter did not write is removed too, or comments that share nothing but it look
like one letter: placeholder phrases ("See attached file(s)") and the docket's own documents'
text (``DocketText``: the rule or notice they quote, the agency's form or questionnaire they
filled in). What is left is the comment's own text; with fewer than ``MIN_OWN_WORDS`` words of
it a comment is too short to judge and joins no campaign.
"""

from __future__ import annotations

import re

from pipeline.fingerprints import digest

SHINGLE_WORDS = 3
# A body that only points at its attachment: the comment is grouped by its combined text.
_SEE_ATTACHED = re.compile(r"\b(see|find|refer to|review)\b.{0,40}\battach", re.IGNORECASE)
_ATTACHED_ONLY_WORDS = 40
# What a placeholder body says ("See attached file(s)", "Please see the attached letter"):
# words no commenter wrote, left out of the compared text wherever they are.
_PLACEHOLDER_PHRASE = re.compile(
    r"\b(?:please\s+)?(?:see|find|refer\s+to|review)\s+(?:the\s+|my\s+|our\s+)?"
    r"(?:attached|attachments?|enclosed)\b(?:\s+(?:file\s*\(s\)|files?|documents?|letters?|comments?|pdf))?",
    re.IGNORECASE)
# A comment with fewer words of its own than this is too short to judge: it joins no campaign.
# Ten words make eight 3-shingles, so a match at the default threshold (0.5) shares a sentence,
# not a stock phrase ("I oppose this rule."); placeholders are none ("See attached file(s)").
MIN_OWN_WORDS = 10
# Where a piece of a document or comment ends, for telling the docket's own text apart: a
# line, a spreadsheet or table cell (`` | ``, as extract writes them), a tab, a label's colon
# or a sentence's stop.
_PIECE_END = re.compile(r"\n|\t|\s\|\s|[.!?:;](?:\s|$)")
# A run of this many words found in the docket's documents is their text, quoted or filled in.
QUOTED_WORDS = 6
# Lines that open or close a letter: everything from a closing line on is the signature.
_SALUTATION = re.compile(r"^\s*(dear|to whom it may concern|hello|greetings)\b[^\n]{0,80}$",
                         re.IGNORECASE)
_CLOSING = re.compile(r"^\s*(sincerely|respectfully|regards|best regards|kind regards|thank you"
                      r"|thanks|yours truly|very truly yours|best)\b[\s,.!-]*$", re.IGNORECASE)
SIGNATURE_WORDS = 40  # at most this many words after a closing line are a signature block
_WORD = re.compile(r"[a-z0-9]+")
# A stop and the space after it, or a blank line: where a sentence ends.
_SENTENCE_END = re.compile(r"[.!?]\s+|\n{2,}")
_STOPS = frozenset(".!?")
_PARAGRAPH_BREAK = re.compile(r"\n{2,}")


def points_to_attachment(body: str | None) -> bool:
    """An empty body, or a short one saying "see attached"."""
    text = (body or "").strip()
    return not text or (len(text.split()) <= _ATTACHED_ONLY_WORDS and bool(_SEE_ATTACHED.search(text)))


def letter_body(text: str) -> str:
    """The text without its salutation line and its signature block (a closing line and
    everything after it, when that is short: a name, an address)."""
    lines = text.splitlines()
    kept: list[str] = []
    for at, line in enumerate(lines):
        # a closing line followed by a letter ("Thank you." then the form letter a note
        # precedes) is not where the signature starts
        if _CLOSING.match(line) and len(words(" ".join(lines[at + 1:]))) <= SIGNATURE_WORDS:
            break
        if not kept and not line.strip():
            continue
        if not kept and _SALUTATION.match(line):
            continue
        kept.append(line)
    return "\n".join(kept) if kept else text


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalise(text: str, submitter: str | None = None, docket_text: DocketText | None = None) -> str:
    """Lowercase words of the letter body the commenter wrote: placeholder phrases, the
    docket's own documents' text (``docket_text``) and the submitter's own name left out."""
    name = set(words(submitter or ""))
    body = _PLACEHOLDER_PHRASE.sub(" ", letter_body(text))
    said = docket_text.own_words(body) if docket_text else words(body)
    return " ".join(w for w in said if w not in name)


def too_short(normalised: str) -> bool:
    """Whether a comment has too few words of its own to be judged a copy of anything."""
    return len(normalised.split()) < MIN_OWN_WORDS


class DocketText:
    """The docket's own documents' text (the rule, the notice, the agency's forms and
    questionnaires, as extract read them), to remove from comments before they are compared:
    64 companies filling in the agency's questionnaire share its questions, not a letter.

    Removed from a comment: each piece (``_PIECE_END``: a line, a cell, a label, a sentence)
    that is a piece of a document, however short (a form's "Company name" cell), and each run
    of ``QUOTED_WORDS`` or more words found in a document (a quoted sentence, a question the
    form's PDF wraps differently)."""

    def __init__(self, texts: list[str]) -> None:
        self.pieces: set[str] = set()
        self.runs: set[int] = set()  # hash() of each run's words: this process's memory only
        for text in texts:
            self.pieces.update(p for p in (" ".join(words(piece)) for piece in _PIECE_END.split(text)) if p)
            said = words(text)
            self.runs.update(hash(" ".join(said[i:i + QUOTED_WORDS]))
                             for i in range(len(said) - QUOTED_WORDS + 1))

    def __bool__(self) -> bool:
        return bool(self.pieces)

    def own_words(self, text: str) -> list[str]:
        """The words of ``text`` not in the documents, in order."""
        kept: list[str] = []
        for piece in _PIECE_END.split(text):
            said = words(piece)
            if said and " ".join(said) not in self.pieces:
                kept += said
        quoted = [False] * len(kept)
        for i in range(len(kept) - QUOTED_WORDS + 1):
            if hash(" ".join(kept[i:i + QUOTED_WORDS])) in self.runs:
                quoted[i:i + QUOTED_WORDS] = [True] * QUOTED_WORDS
        return [w for w, drop in zip(kept, quoted, strict=True) if not drop]


def exact_hash(normalised: str) -> str:
    return digest("campaign-text", normalised)


def shingles(normalised: str) -> set[str]:
    """Word 3-grams (a text shorter than that is one shingle of its words)."""
    tokens = normalised.split()
    if len(tokens) <= SHINGLE_WORDS:
        return {" ".join(tokens)}
    return {" ".join(tokens[i:i + SHINGLE_WORDS]) for i in range(len(tokens) - SHINGLE_WORDS + 1)}


def jaccard(a: set[str], b: set[str]) -> float:
    if not a and not b:
        return 1.0
    both = len(a & b)  # the union's size follows from it: no union set built
    return both / (len(a) + len(b) - both)


def sentences(text: str) -> list[str]:
    return _stripped(split_sentences(letter_body(text)))


def split_sentences(text: str) -> list[str]:
    """The pieces between sentence ends, each stop kept with its sentence: what a split at
    the space after a stop (found by a look-behind) or at a blank line gives (a test says
    so), without trying the look-behind at every character: a third less time, for every
    member of a group whose representative changes."""
    pieces, start = [], 0
    for end in _SENTENCE_END.finditer(text):
        at = end.start()
        pieces.append(text[start:at + 1] if text[at] in _STOPS else text[start:at])
        start = end.end()
    pieces.append(text[start:])
    return pieces


def added_sentences(text: str, representative: str) -> list[str]:
    """The sentences of ``text`` the representative does not have (compared normalised): a
    member's own words, its "unique signal"."""
    return sentences_not_in(text, known_sentences(representative))


def known_sentences(representative: str) -> set[str]:
    """The representative's sentences, normalised: what ``sentences_not_in`` compares with
    (made once for all the members of a group)."""
    return {" ".join(words(s)) for s in sentences(representative)}


def sentences_not_in(text: str, known: set[str], seen: dict[str, list[str]] | None = None) -> list[str]:
    """The sentences of ``text`` not in ``known``, in order. ``seen`` (paragraph -> the
    sentences it adds), shared by the members of one group, decides each distinct paragraph
    once: a form letter's copies repeat most of theirs (two in three on the planted corpus).
    A blank line always ends a sentence, so the sentences of the paragraphs are the text's
    (a test says so)."""
    seen = {} if seen is None else seen
    added: list[str] = []
    for paragraph in _PARAGRAPH_BREAK.split(letter_body(text)):
        found = seen.get(paragraph)
        if found is None:
            found = seen[paragraph] = [sentence for sentence in _stripped(split_sentences(paragraph))
                                       if _adds(sentence, known)]
        added += found
    return added


def _stripped(pieces: list[str]) -> list[str]:
    return [s.strip() for s in pieces if s and s.strip()]


def _adds(sentence: str, known: set[str]) -> bool:
    said = words(sentence)
    return bool(said) and " ".join(said) not in known
