"""A rule document's text split by its structure: the Federal Register's headings and the
numbered and lettered lists an RFI asks its questions in.

``split_sections`` is a pure function of the document's pages (page number, text). It reads
the text line by line, as extraction leaves it (a PDF's columns hard-wrapped), and finds:

* the preamble's captions ("SUMMARY:", "DATES:", "ADDRESSES:", "SUPPLEMENTARY INFORMATION:")
  and the body's named headings on a line of their own ("Background", "Written Comments",
  "Questions for Comment"): each starts a new outline;
* numbered headings: Roman parts ("II. Reducing Administrative Burden"), lettered subparts
  ("B."), numbers ("1."), small letters ("a."), and "(a)" / "(1)"; "PART 200—..." and
  "§ 200.1 Purpose." in regulatory text. A numbered line counts only where it continues its
  list (the next number of an open list) or opens one at its first number, so a wrapped
  line that happens to begin "A. " or "12. " in running prose is not a heading;
* a Federal Register page's other documents ("[FR Doc. ...] BILLING CODE" closes each): the
  longest is the document itself, each other one section with no structure, kept so that no
  text is lost.

Each section's id is derived from its number path ("II.B", "§200.1", "q1.a" for a list of
numbered items outside any part, "addresses.1" inside a preamble caption) or the named
heading's slug ("background"), so it survives a re-extraction that shifts pages or words;
two sections with one id are told apart in document order ("I", then "I~2"). A document with
no structure is one section, ``text``. Running heads and the printer's footers of each FR
page are dropped from the text; where a page ends inside a section, its text holds a form
feed on a line of its own.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

# The splitter's rules, in every document's fingerprint: a change here splits each again.
SPLITTER_VERSION = "sections-1"
HEADING_CHARS = 120
WHOLE = "text"
PAGE_BREAK = "\f"
FRONT = "front"

# Preamble captions: upper case at a line's start, a colon after; their lists are their own.
CAPTIONS = ("AGENCY", "ACTION", "SUMMARY", "DATES", "ADDRESSES", "FOR FURTHER INFORMATION CONTACT",
            "SUPPLEMENTARY INFORMATION")
SCOPED_CAPTIONS = {"agency", "action", "summary", "dates", "addresses", "for-further-information-contact"}
# Named headings of a rule's or notice's body, alone on their line (a colon allowed).
NAMED = ("Background", "Written Comments", "Questions for Comment", "Questions for Commenters",
         "Request for Comments", "Request for Comment", "Request for Information", "Public Comments",
         "Public Participation", "Public Comment", "Comments", "Authority", "List of Subjects",
         "Regulatory Analyses", "Regulatory Impact Analysis", "Paperwork Reduction Act",
         "Regulatory Flexibility Act", "Executive Order 12866", "Table of Contents", "Instructions",
         "Specific Questions", "Questions")
_CAPTION = re.compile(r"^(" + "|".join(re.escape(c) for c in CAPTIONS) + r"):\s*(.*)$")
# As printed, or in capitals; never lower case (a wrapped line of prose may be one word).
_NAMED = re.compile(r"^(" + "|".join(re.escape(n) for n in NAMED) + "|"
                    + "|".join(re.escape(n.upper()) for n in NAMED) + r")\s*:?\s*$")
_ROMAN = re.compile(r"^(X{0,3}(?:IX|IV|V?I{0,3}))\.\s+(?=[A-Z‘“\"(])")
_UPPER = re.compile(r"^([A-Z])\.\s+(?=[A-Z‘“\"(])")
_ARABIC = re.compile(r"^(\d{1,3})\.\s+(?=[A-Za-z‘“\"(])")
_LOWER = re.compile(r"^([a-z])\.\s+(?=\S)")
_PAREN_LOWER = re.compile(r"^\(([a-z])\)\s+(?=\S)")
_PAREN_DIGIT = re.compile(r"^\((\d{1,2})\)\s+(?=\S)")
_COMPOUND = re.compile(r"^(\d{1,2})\.([a-z])[.)]?\s+(?=\S)")
_PART = re.compile(r"^PART\s+(\d+)\s*[—–-]+\s*\S")
_SECTION = re.compile(r"^(?:§|Sec\.)\s*(\d+\.\d+[a-z]?(?:-\d+)?)\s+(?=[A-Z])")
_RANK = {"part": 0, "roman": 1, "upper": 2, "section": 2, "arabic": 3, "lower": 4, "paren_lower": 5,
         "paren_digit": 6}
_SMALL_WORDS = {"a", "an", "and", "as", "at", "by", "for", "from", "in", "of", "on", "or", "the", "to", "with"}
# The printer's lines of each Federal Register page: its running head, and the footer block
# from "VerDate" to the "... with NOTICES" line (PDF text only).
_RUNNING_HEAD = re.compile(r"^(\d{4,6}|Federal Register\s*/\s*Vol\..*)$")
_FOOTER_START = re.compile(r"^VerDate\b")
_FOOTER_END = re.compile(r"\bwith (NOTICES|RULES|PROPOSED RULES|PRESDOCS)$")
_DOCUMENT_END = re.compile(r"^BILLING CODE\b")


@dataclass(frozen=True)
class Section:
    id: str
    heading: str
    text: str
    page: int | None  # the page its heading is on (None: text before any page marker)
    parent: str | None  # the id of the section it is part of
    kind: str  # named, caption, roman, upper, arabic, lower, paren_lower, paren_digit, part, section, front, other, text
    number: str = ""  # its own number as written ("II", "B", "1", "a", "§ 200.1"), "" for named ones


@dataclass
class _Open:
    kind: str
    ordinal: int
    label: str  # its part of the id path
    index: int  # its place in the sections found


def split_sections(pages: list[tuple[int | None, str]]) -> list[Section]:
    """The document's sections in reading order (see the module's doc)."""
    lines = _clean_lines(pages)
    if not lines:
        return [Section(WHOLE, "Whole text", "", None, None, "text")]
    documents = _fr_documents(lines)
    main = max(range(len(documents)), key=lambda i: sum(len(t) for _, t in documents[i]))
    found: list[dict] = []
    others = 0
    for i, chunk in enumerate(documents):
        if i == main:
            found.extend(_outline(chunk))
        else:
            others += 1
            found.append({"id": f"other-{others}", "heading": "Another document on the same Federal Register page",
                          "page": chunk[0][0], "parent": None, "kind": "other", "number": "", "lines": chunk})
    return _finished(found)


def _clean_lines(pages: list[tuple[int | None, str]]) -> list[tuple[int | None, str]]:
    """(page, line) of every line worth reading: the printer's running heads and footers out."""
    out: list[tuple[int | None, str]] = []
    for number, text in pages:
        in_footer = False
        for raw in text.strip().splitlines():
            line = raw.strip()
            if _FOOTER_START.match(line):
                in_footer = True
                continue
            if in_footer:
                in_footer = not _FOOTER_END.search(line)
                continue
            if _RUNNING_HEAD.match(line):
                continue
            out.append((number, line))
    while out and not out[-1][1]:
        out.pop()
    return out if any(line for _, line in out) else []


def _fr_documents(lines):
    """The lines cut after each "BILLING CODE" line: the documents printed on these pages."""
    chunks, current = [], []
    for entry in lines:
        current.append(entry)
        if _DOCUMENT_END.match(entry[1]):
            chunks.append(current)
            current = []
    if any(line for _, line in current):
        chunks.append(current)
    return [c for c in chunks if any(line for _, line in c)] or [lines]


def _outline(lines) -> list[dict]:
    """The sections of one document's lines: its front matter, then each heading's."""
    found = [{"id": FRONT, "heading": "Front matter", "page": lines[0][0], "parent": None, "kind": "front",
              "number": "", "lines": []}]
    stack: list[_Open] = []
    scope = ""  # the preamble caption whose lists are its own ("addresses"), "" outside one
    for at, (page, line) in enumerate(lines):
        named = _named_heading(line)
        if named is not None:
            kind, heading, rest = named
            stack.clear()
            slug = _slug(heading)
            scope = slug if slug in SCOPED_CAPTIONS else ""
            found.append({"id": slug, "heading": heading, "page": page, "parent": None, "kind": kind,
                          "number": "", "lines": [(page, rest)] if rest else []})
            continue
        numbered = _compound(line, stack) or ([n] if (n := _numbered(line, stack)) else [])
        for kind, ordinal, label, number in numbered:
            while stack and _RANK[stack[-1].kind] >= _RANK[kind]:
                stack.pop()
            path = [o.label for o in stack] + [label]
            parent = found[stack[-1].index]["id"] if stack else _scope_parent(found)
            stack.append(_Open(kind, ordinal, label, len(found)))
            own = kind == numbered[-1][0]  # an implied "1." before "1.a" has no line of its own
            found.append({"id": _path_id(path, scope), "page": page, "parent": parent, "kind": kind,
                          "heading": _heading(number, lines, at) if own else number, "number": number,
                          "lines": [(page, line)] if own else []})
        if numbered:
            continue
        found[-1]["lines"].append((page, line))
    if len(found) == 1:
        return [{**found[0], "id": WHOLE, "heading": "Whole text", "kind": "text"}]
    return [f for f in found if f["kind"] != "front" or any(line for _, line in f["lines"])]


def _scope_parent(found: list[dict]) -> str | None:
    """The named heading a top-level numbered section falls under (None: the front matter)."""
    for f in reversed(found):
        if f["kind"] in ("named", "caption"):
            return f["id"]
    return None


def _named_heading(line: str) -> tuple[str, str, str] | None:
    caption = _CAPTION.match(line)
    if caption:
        return "caption", caption.group(1).title(), caption.group(2)
    named = _NAMED.match(line)
    if named:
        written = named.group(1)
        canonical = next(n for n in NAMED if n.lower() == written.lower())
        return "named", canonical, ""
    return None


def _numbered(line: str, stack: list[_Open]) -> tuple[str, int, str, str] | None:
    """(kind, ordinal, id label, number as written) when the line opens a numbered section
    that continues an open list or starts a new one at its first number."""
    part = _PART.match(line)
    if part:
        return "part", int(part.group(1)), f"Part{part.group(1)}", f"Part {part.group(1)}"
    section = _SECTION.match(line)
    if section:
        return "section", 0, f"§{section.group(1)}", f"§ {section.group(1)}"
    for kind, ordinal, label, number in _readings(line):
        same = next((o for o in reversed(stack) if o.kind == kind), None)
        if same is not None and ordinal == same.ordinal + 1:
            return kind, ordinal, label, number
    for kind, ordinal, label, number in _readings(line):
        if ordinal == 1 and all(o.kind != kind for o in stack):
            return kind, ordinal, label, number
    return None


def _compound(line: str, stack: list[_Open]) -> list[tuple[str, int, str, str]]:
    """A question numbered "1.a" (or "1.a." / "1.a)"): the letter's section under number 1, and
    number 1 itself first when it is not open yet and the letter is its first ("1.a" opening a
    list of "1.a", "1.b", "2.a" ... with no "1." line). [] when the line is not one."""
    match = _COMPOUND.match(line)
    if not match:
        return []
    number, letter = int(match.group(1)), match.group(2)
    ordinal = ord(letter) - ord("a") + 1
    arabic = next((o for o in stack if o.kind == "arabic"), None)
    lower = next((o for o in stack if o.kind == "lower"), None)
    written = f"{number}.{letter}"
    if arabic is not None and arabic.ordinal == number:
        continues = lower is not None and lower.ordinal + 1 == ordinal and stack.index(lower) > stack.index(arabic)
        return [("lower", ordinal, letter, written)] if continues or ordinal == 1 else []
    opens = (arabic.ordinal + 1 == number) if arabic is not None else number == 1
    return [("arabic", number, str(number), f"{number}."), ("lower", 1, letter, written)] if opens and ordinal == 1 else []


def _readings(line: str):
    """Each way the line's number may be read: "I." is a Roman one or the ninth letter."""
    roman = _ROMAN.match(line)
    if roman and roman.group(1):
        yield "roman", _roman_value(roman.group(1)), roman.group(1), f"{roman.group(1)}."
    upper = _UPPER.match(line)
    if upper:
        letter = upper.group(1)
        yield "upper", ord(letter) - ord("A") + 1, letter, f"{letter}."
    arabic = _ARABIC.match(line)
    if arabic:
        yield "arabic", int(arabic.group(1)), arabic.group(1), f"{arabic.group(1)}."
    lower = _LOWER.match(line)
    if lower:
        yield "lower", ord(lower.group(1)) - ord("a") + 1, lower.group(1), f"{lower.group(1)}."
    paren = _PAREN_LOWER.match(line)
    if paren:
        yield "paren_lower", ord(paren.group(1)) - ord("a") + 1, f"({paren.group(1)})", f"({paren.group(1)})"
    paren = _PAREN_DIGIT.match(line)
    if paren:
        yield "paren_digit", int(paren.group(1)), f"({paren.group(1)})", f"({paren.group(1)})"


def _roman_value(numeral: str) -> int:
    values = {"I": 1, "V": 5, "X": 10}
    total = 0
    for i, ch in enumerate(numeral):
        value = values[ch]
        total += -value if i + 1 < len(numeral) and values[numeral[i + 1]] > value else value
    return total


def _path_id(path: list[str], scope: str) -> str:
    """"II.B.1", "§200.1(a)", "q1.a" (a list outside any part), "addresses.1" (in a caption)."""
    text = ""
    for label in path:
        text += label if (label.startswith("(") or not text) else f".{label}"
    if scope:
        return f"{scope}.{text}"
    first = path[0]
    if first[0].isdigit() or first[0].islower() or first.startswith("("):
        return f"q{text}"
    return text


def _heading(number: str, lines, at: int) -> str:
    """The heading of the numbered line at ``at``: its words up to the first stop (":", ". ",
    "?", ";"), the wrapped lines after it joined; a short title-cased line alone (its text
    starts on the next line)."""
    first = lines[at][1][len(number):].lstrip(".) ").strip() if not number.startswith(("§", "Part")) else lines[at][1]
    words = first
    if _is_title(first) and at + 1 < len(lines) and lines[at + 1][1][:1].isupper():
        return _capped(f"{number} {first.rstrip(' .:')}" if not number.startswith(("§", "Part")) else first.rstrip(" .:"))
    j = at + 1
    while not _stop(words) and j < len(lines) and len(words) < HEADING_CHARS * 2 and lines[j][1]:
        if _named_heading(lines[j][1]) is not None or _opens_list(lines[j][1]):
            break
        words = f"{words} {lines[j][1]}" if not words.endswith(("-", "–")) else words + lines[j][1]
        j += 1
    match = re.search(r"\?|:(\s|$)|;|\.(\s|$)", words)
    text = words[:match.end() if match and match.group(0) == "?" else match.start()] if match else words
    shown = text.strip() if number.startswith(("§", "Part")) else f"{number} {text.strip()}"
    return _capped(shown)


def _opens_list(line: str) -> bool:
    """Whether the line begins with a number of some list (the heading before it ends there)."""
    return any(True for _ in _readings(line)) or bool(_PART.match(line) or _SECTION.match(line))


def _stop(words: str) -> bool:
    return bool(re.search(r"\?|:(\s|$)|;|\.(\s|$)", words))


def _is_title(text: str) -> bool:
    """A heading's words: each word but the small ones capitalised, and not ending on a small word."""
    words = re.findall(r"[A-Za-z][\w’'-]*", text)
    if not words or words[-1].lower() in _SMALL_WORDS or len(text) > 80:
        return False
    return all(w[0].isupper() for w in words if w.lower() not in _SMALL_WORDS)


def _capped(text: str) -> str:
    text = re.sub(r"\s+", " ", text).strip()
    if len(text) <= HEADING_CHARS:
        return text
    return text[:HEADING_CHARS].rsplit(" ", 1)[0] + " …"


def _slug(heading: str) -> str:
    return re.sub(r"[^a-z0-9]+", "-", heading.lower()).strip("-")


def _finished(found: list[dict]) -> list[Section]:
    """The sections with their text joined and their ids told apart in document order: the
    second "I" is "I~2", and a section under it names it as its parent."""
    seen: dict[str, int] = {}
    latest: dict[str, str] = {}  # an id as the path gives it -> the section last given it
    out = []
    for f in found:
        seen[f["id"]] = seen.get(f["id"], 0) + 1
        ident = f["id"] if seen[f["id"]] == 1 else f"{f['id']}~{seen[f['id']]}"
        parent = latest.get(f["parent"], f["parent"]) if f["parent"] else None
        latest[f["id"]] = ident
        out.append(Section(ident, f["heading"], _joined(f["lines"]), f["page"], parent, f["kind"], f["number"]))
    return out


def _joined(lines) -> str:
    """The section's lines as its text, a form feed on a line of its own where a page ends
    inside it (as the export writes page breaks)."""
    parts, page = [], None
    for number, line in lines:
        if parts and number != page and page is not None:
            parts.append(PAGE_BREAK)
        parts.append(line)
        page = number
    return "\n".join(parts).strip()
