"""The passage of a hit that shows why it matched: a window of its text around the first
query word it contains, cut into (text, matched) pieces the template marks up (escaped)."""

from __future__ import annotations

import re

from pipeline.reading.comments import PAGE_MARKER

PASSAGE_CHARS = 320
# Words the full-text search ignores too: marking every "the" would hide the real match.
_STOP = frozenset("a an and are as at be by for from in is it of on or that the this to was with".split())
_TERM = re.compile(r"[\w][\w.]*\w|\w", re.UNICODE)


def query_terms(query: str) -> list[str]:
    """The words of a query worth marking, lower case, plurals folded, longest first."""
    terms = {t.lower().rstrip(".") for t in _TERM.findall(query)} - _STOP
    folded = {t[:-1] if len(t) > 3 and t.endswith("s") else t for t in terms if t and t != "or"}
    return sorted(folded, key=lambda t: (-len(t), t))


def passage(text: str, query: str, width: int = PASSAGE_CHARS) -> list[tuple[str, bool]]:
    """About ``width`` characters of ``text`` around the first match, as marked pieces."""
    flat = " ".join(PAGE_MARKER.sub(" ", text).split())
    terms = query_terms(query)
    pattern = re.compile(r"\b(?:" + "|".join(re.escape(t) for t in terms) + r")\w*", re.IGNORECASE) if terms else None
    first = pattern.search(flat) if pattern else None
    start = max(0, (first.start() if first else 0) - width // 3)
    if start:
        start = flat.find(" ", start) + 1 or start
    window = flat[start:start + width]
    pieces = _split(window, pattern)
    if start:
        pieces.insert(0, ("… ", False))
    if start + width < len(flat):
        pieces.append((" …", False))
    return pieces


def _split(window: str, pattern: re.Pattern | None) -> list[tuple[str, bool]]:
    if pattern is None:
        return [(window, False)]
    pieces, at = [], 0
    for match in pattern.finditer(window):
        if match.start() > at:
            pieces.append((window[at:match.start()], False))
        pieces.append((match.group(0), True))
        at = match.end()
    if at < len(window):
        pieces.append((window[at:], False))
    return pieces
