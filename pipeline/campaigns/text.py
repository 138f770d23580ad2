"""What a comment is compared by: its text normalised, its word shingles, its sentences.

Form letters differ in what the submitter fills in — a salutation, their name, a signature
block — and in case, spacing and punctuation. Those are removed before hashing (exact groups)
and shingling (near-duplicate groups); the sentences a member adds to its group's
representative are taken from its original text.
"""

from __future__ import annotations

import re

from pipeline.fingerprints import digest

SHINGLE_WORDS = 3
# A body that only points at its attachment: the comment is grouped by its combined text.
_SEE_ATTACHED = re.compile(r"\b(see|find|refer to|review)\b.{0,40}\battach", re.IGNORECASE)
_ATTACHED_ONLY_WORDS = 40
# Lines that open or close a letter: everything from a closing line on is the signature.
_SALUTATION = re.compile(r"^\s*(dear|to whom it may concern|hello|greetings)\b[^\n]{0,80}$",
                         re.IGNORECASE)
_CLOSING = re.compile(r"^\s*(sincerely|respectfully|regards|best regards|kind regards|thank you"
                      r"|thanks|yours truly|very truly yours|best)\b[\s,.!-]*$", re.IGNORECASE)
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
    everything after it)."""
    lines = text.splitlines()
    kept: list[str] = []
    for line in lines:
        if _CLOSING.match(line):
            break
        if not kept and not line.strip():
            continue
        if not kept and _SALUTATION.match(line):
            continue
        kept.append(line)
    return "\n".join(kept) if kept else text


def words(text: str) -> list[str]:
    return _WORD.findall(text.lower())


def normalise(text: str, submitter: str | None = None) -> str:
    """Lowercase words of the letter body, the submitter's own name left out."""
    name = set(words(submitter or ""))
    return " ".join(w for w in words(letter_body(text)) if w not in name)


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
