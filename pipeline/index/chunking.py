"""Split a comment's ``combined.md`` sections into overlapping, page-aware chunks.

Input is the list of ``(heading, text)`` sections of one ``combined.md``. Output is a list
of :class:`Chunk` with a global 0-based ordinal. The function is pure and deterministic:
the same sections always give the same chunks, so a re-index of unchanged text writes
byte-identical rows.

Page markers (the contract with the extract layer)
--------------------------------------------------
A section may carry the page structure of the PDF it came from in either form:

* a line that is exactly ``<!-- page N -->`` (N = 1-based page number; surrounding
  whitespace allowed). Text after the marker belongs to page N until the next marker.
  This is the form the extract layer emits: it joins PDF pages with ``"\\n\\n"`` and puts
  the marker line at the start of every page. It is an HTML comment, so it is invisible
  when ``combined.md`` is rendered.
* form feeds (``\\f``): text before the first form feed is page 1, each form feed starts
  the next page.

Text before the first ``<!-- page N -->`` marker, and every section without markers or
form feeds (inline comment text, DOCX), has ``page = None``. A chunk's page is the page
on which its first new paragraph starts (the overlap carried from the previous chunk
does not count).

Packing
-------
Paragraphs (separated by blank lines) are packed greedily into chunks of at most
``max_chars`` characters. A paragraph longer than the room left is split at sentence
ends, then at whitespace, and only as a last resort inside a word. Each chunk after the
first in a section starts with up to ``overlap`` characters from the end of the previous
chunk (cut at a word boundary) so that a sentence split across chunks is still found.
Chunks never span sections: the section heading is stored with the chunk.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from dataclasses import dataclass

# chunk-2: chunks also keep within the embedding model's own token limit (TokenBudget).
CHUNKER_VERSION = "chunk-2"

PAGE_MARKER = re.compile(r"^[ \t]*<!--\s*page\s+(\d+)\s*-->[ \t]*$", re.MULTILINE | re.IGNORECASE)
_PARAGRAPH_BREAK = re.compile(r"\n[ \t]*\n+")
_SENTENCE_END = re.compile(r"(?<=[.!?;:])\s+")
# PostgreSQL text cannot hold NUL; PDF extraction sometimes yields it and other C0 controls.
_CONTROL_CHARS = re.compile(r"[\x00-\x08\x0b\x0e-\x1f\x7f]")


@dataclass(frozen=True)
class Chunk:
    ordinal: int
    text: str
    page: int | None
    section: str


@dataclass(frozen=True)
class _Paragraph:
    text: str
    page: int | None


@dataclass(frozen=True)
class TokenBudget:
    """A model's own length limit, in its own tokens: ``count`` gives a text's tokens without
    the model's special tokens, and must add up over texts joined by whitespace (a WordPiece
    tokenizer's do: it splits at whitespace first); a chunk holds at most ``limit`` of them,
    its overlap at most ``overlap``. A model reads a longer text only up to its limit and drops
    the rest without a word: chunks within it are read whole."""

    count: Callable[[str], int]
    limit: int
    overlap: int

    def __post_init__(self) -> None:
        if not 0 <= self.overlap <= self.limit // 2:
            raise ValueError(f"token overlap must be between 0 and limit/2, got {self.overlap}")


_WORD_OR_MARK = re.compile(r"\w+|[^\w\s]")


def counted_words_and_marks(text: str) -> int:
    """A deterministic token count without a tokenizer (for embedders that have none): each
    run of word characters and each other non-space character is one token, as a WordPiece
    tokenizer counts at least."""
    return len(_WORD_OR_MARK.findall(text))


def _no_tokens(text: str) -> int:
    return 0


def chunk_text(
    sections: list[tuple[str, str]], *, max_chars: int = 1200, overlap: int = 150,
    tokens: TokenBudget | None = None,
) -> list[Chunk]:
    """Chunk ``sections`` (heading, text) into at most ``max_chars``-character chunks (and at
    most ``tokens.limit`` tokens each, when a budget is given)."""
    if max_chars < 50:
        raise ValueError(f"max_chars must be at least 50, got {max_chars}")
    if not 0 <= overlap <= max_chars // 2:
        raise ValueError(f"overlap must be between 0 and max_chars/2, got {overlap}")
    limits = _Limits(max_chars, overlap, tokens)
    chunks: list[Chunk] = []
    for heading, text in sections:
        for body, page in _chunk_section(text, limits):
            chunks.append(Chunk(len(chunks), body, page, heading.strip()))
    return chunks


class _Limits:
    """Both lengths a chunk keeps to: characters, and the model's tokens when it has a limit
    (counting 0 tokens otherwise, which every check passes)."""

    def __init__(self, max_chars: int, overlap: int, tokens: TokenBudget | None) -> None:
        self.max_chars, self.overlap = max_chars, overlap
        # A paragraph is counted as a whole, then as a piece: counted once per call.
        self.count = functools.lru_cache(maxsize=4096)(tokens.count) if tokens else _no_tokens
        self.max_tokens = tokens.limit if tokens else 0
        self.overlap_tokens = tokens.overlap if tokens else 0
        # Every piece must fit after an overlap prefix: 2 = the "\n\n" joining them.
        self.piece_chars = max_chars - overlap - 2
        self.piece_tokens = self.max_tokens - self.overlap_tokens

    def piece_fits(self, text: str) -> bool:
        return len(text) <= self.piece_chars and self.count(text) <= self.piece_tokens

    def slice_width(self) -> int:
        """Characters a slice of one over-long word may have: a token covers at least one."""
        return min(self.piece_chars, self.piece_tokens) if self.max_tokens else self.piece_chars


def _chunk_section(text: str, limits: _Limits) -> list[tuple[str, int | None]]:
    pieces = [
        _Paragraph(piece, para.page)
        for para in _paragraphs(text)
        for piece in _split_long(para.text, limits)
    ]
    count = limits.count
    out: list[tuple[str, int | None]] = []
    prefix, parts, page = "", [], None
    chars = tokens = 0  # of _compose(prefix, parts): tokens add up over the joined parts
    for piece in pieces:
        piece_chars, piece_tokens = len(piece.text), count(piece.text)
        if parts and (chars + 2 + piece_chars > limits.max_chars
                      or tokens + piece_tokens > limits.max_tokens):
            done = _compose(prefix, parts)
            out.append((done, page))
            prefix, parts = _overlap_tail(done, limits), []
            chars, tokens = len(prefix), count(prefix)
        if not parts:
            page = piece.page
        chars = chars + 2 + piece_chars if (parts or prefix) else piece_chars
        tokens += piece_tokens
        parts.append(piece.text)
    if parts:
        out.append((_compose(prefix, parts), page))
    return out


def _compose(prefix: str, parts: list[str]) -> str:
    return "\n\n".join([prefix, *parts] if prefix else parts)


def _overlap_tail(text: str, limits: _Limits) -> str:
    """The last <= ``overlap`` characters (and overlap tokens) of ``text``, starting at a
    word boundary."""
    overlap = limits.overlap
    if overlap == 0:
        return ""
    if len(text) <= overlap:
        tail = text.strip()
    else:
        tail = text[-overlap:]
        if not text[-overlap - 1].isspace():
            # Drop the partial first word; a tail that is one long word gives no overlap.
            cut = re.search(r"\s", tail)
            tail = tail[cut.end() :] if cut else ""
        tail = tail.strip()
    while tail and limits.count(tail) > limits.overlap_tokens:
        rest = re.split(r"\s+", tail, maxsplit=1)
        tail = rest[1] if len(rest) > 1 else ""
    return tail


def _paragraphs(text: str) -> list[_Paragraph]:
    text = _CONTROL_CHARS.sub("", text.replace("\r\n", "\n").replace("\r", "\n"))
    paragraphs = []
    for page, segment in _page_segments(text):
        for para in _PARAGRAPH_BREAK.split(segment.replace("\f", "\n")):
            if para.strip():
                paragraphs.append(_Paragraph(para.strip(), page))
    return paragraphs


def _page_segments(text: str) -> list[tuple[int | None, str]]:
    """Split ``text`` into (page, text) runs by page markers, else by form feeds."""
    if PAGE_MARKER.search(text):
        # re.split with one group gives [before, n1, text1, n2, text2, ...]
        parts = PAGE_MARKER.split(text)
        segments: list[tuple[int | None, str]] = [(None, parts[0])]
        segments += [(int(n), body) for n, body in zip(parts[1::2], parts[2::2], strict=True)]
        return segments
    if "\f" in text:
        return [(number, body) for number, body in enumerate(text.split("\f"), start=1)]
    return [(None, text)]


def _split_long(text: str, limits: _Limits) -> list[str]:
    """Split one paragraph into pieces that fit after an overlap: sentences, words, slices."""
    if limits.piece_fits(text):
        return [text]
    width = limits.slice_width()
    units: list[str] = []
    for sentence in _SENTENCE_END.split(text):
        if limits.piece_fits(sentence):
            units.append(sentence)
            continue
        words = [w[i : i + width] for w in sentence.split() for i in range(0, len(w), width)]
        units.extend(_pack(words, limits))
    return _pack(units, limits)


def _pack(units: list[str], limits: _Limits) -> list[str]:
    """Greedily join ``units`` with single spaces into pieces that fit."""
    packed: list[str] = []
    chars = tokens = 0  # of packed[-1]
    for unit in units:
        unit_chars, unit_tokens = len(unit), limits.count(unit)
        if (packed and chars + 1 + unit_chars <= limits.piece_chars
                and tokens + unit_tokens <= limits.piece_tokens):
            packed[-1] = f"{packed[-1]} {unit}"
            chars, tokens = chars + 1 + unit_chars, tokens + unit_tokens
        else:
            packed.append(unit)
            chars, tokens = unit_chars, unit_tokens
    return packed


def split_markdown_sections(markdown: str) -> list[tuple[str, str]]:
    """Split a ``combined.md`` into (heading, text) sections at ATX headings (``#``..``######``).

    A leading YAML front matter block (``---`` ... ``---``) is dropped; text before the
    first heading becomes a section with an empty heading. Page-marker lines are kept in
    the section text for :func:`chunk_text`.
    """
    body = _FRONT_MATTER.sub("", markdown, count=1)
    sections: list[tuple[str, str]] = []
    heading, lines = "", []
    # split("\n"), not splitlines(): splitlines() would also break at form feeds.
    for line in body.split("\n"):
        match = _HEADING.match(line)
        if match:
            if heading or "".join(lines).strip():
                sections.append((heading, "\n".join(lines)))
            heading, lines = match.group(1).strip(), []
        else:
            lines.append(line)
    if heading or "".join(lines).strip():
        sections.append((heading, "\n".join(lines)))
    return sections


_FRONT_MATTER = re.compile(r"\A---\n.*?\n---[ \t]*\n", re.DOTALL)
_HEADING = re.compile(r"^#{1,6}[ \t]+(.+?)[ \t#]*$")
