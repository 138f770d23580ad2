"""Several organisations written in one field ("American Medical Association; American
Hospital Association", "AMA and AHA", "X, Y, and Z") read as several, and a name that only
looks like a list ("Johnson & Johnson", "Procter and Gamble", "Department of Health and Human
Services", "Alliance of X and Y") kept whole.

The rules, in order:

* the alias file's ``split:`` entry for the whole field wins (its parts, or none: keep whole);
* ";" and a line break always separate names (no name is written with them);
* "A and B", "A & B" and "A, B, and C" are split only when every part names an organisation
  on its own: an acronym ("AMA") or several words one of which is a kind of body
  ("Association", "Council", ...). "Procter and Gamble" has no such word; "Acme, Inc." has a
  part that is a legal suffix;
  so an "and" inside one name ("Department of Health and Human Services", "Alliance of
  Farmers and Ranchers") keeps it whole: "Human Services" and "Ranchers" name no body. A word
  with a capital inside ("CableLabs", "USTelecom") is a name on its own too: no plain word is
  written so. A list is tried with "&" as a separator, then with "&" kept inside names
  ("NCTA - The Internet & Television Association and CableLabs");
* a list of three or more names written with commas ("IDEMIA North America, Fiserv, Capital
  One, Mastercard, Visa, ETA, ICBA, IPA, PLC"; "A, B, C et al.") is split even where some
  members are single words no rule can tell from plain ones, when it reads as a list of
  names: each part short and capitalised, one at least a name on its own, no place ("Los
  Angeles, California"), and not one name's words: a legal suffix after a comma stays with
  the name before it ("IPA, PLC"), a firm's surnames stay one ("Skadden, Arps, Slate, Meagher &
  Flom LLP"), and words after "of" or "for" stay with it ("Bureau of Alcohol, Tobacco and
  Firearms", "Center on Business, Law, and Economics"). "et al." / "and others" ends a list.
"""

from __future__ import annotations

import re

from pipeline.organisations.names import (
    KIND_WORDS,
    LEGAL_SUFFIXES,
    OTHERS,
    PLACE_CODE,
    PLACE_LINE,
    STATE_CODES,
    US_STATES,
    is_acronym,
    normalise,
)

HARD_SEPARATOR = re.compile(r"\s*(?:;|\n|\r)+\s*")
LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|&\s*)?|\s+(?:and|&)\s+|\s*&\s*", re.IGNORECASE)
# The same, "&" kept inside a name ("The Internet & Television Association").
WORD_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|&\s*)?|\s+and\s+", re.IGNORECASE)
# A comma list's separators: commas (", and" too); a last "B and C" is split by the rules above.
COMMA_SEPARATOR = re.compile(r"\s*,\s*(?:(?:and|&)\s+)?", re.IGNORECASE)
LONGEST_MEMBER = 6  # words in one member of a comma list
STATES = frozenset(s.lower() for s in US_STATES.split("|")) | {c.lower() for c in STATE_CODES} | {"usa", "u s a"}


def stands_alone(part: str) -> bool:
    """The part names an organisation by itself: an acronym, or two or more words one of
    which says what kind of body it is."""
    words = normalise(part).split()
    if not words or all(w in LEGAL_SUFFIXES for w in words):
        return False  # "L.L.C." after a comma ends a name
    if is_acronym(part):
        return True
    return len(words) >= 2 and bool(set(words) & KIND_WORDS) and words[-1] not in LEGAL_SUFFIXES


def branded(part: str) -> bool:
    """"CableLabs", "USTelecom", "iRobot": one word with a capital inside names something."""
    word = part.strip()
    return " " not in word and word.isalpha() and any(c.isupper() for c in word[1:]) and not word.isupper()


def split_list(text: str) -> list[str]:
    """One ";"-free piece: its parts when it is a list of organisations, else itself."""
    text = OTHERS.sub("", text).strip(" ,") or text
    parts = split_pair(text)
    if len(parts) > 1:
        return parts
    return comma_list(text) or [text]


def comma_list(text: str) -> list[str] | None:
    """The members of a list of three or more names written with commas, or None when the
    commas are one name's (see the module's rules)."""
    parts: list[str] = []
    for part in (p.strip(" ,") for p in COMMA_SEPARATOR.split(text)):
        if not part:
            continue
        if parts and set(normalise(part).split() or ["?"]) <= LEGAL_SUFFIXES:
            parts[-1] = f"{parts[-1]}, {part}"  # "IPA, PLC", "Acme, Inc."
        else:
            parts.append(part)
    if parts and len(parts) >= 2:
        parts[-1:] = split_pair(parts[-1])  # "A, B and C"
    if len(parts) < 3 or PLACE_LINE.search(text) or PLACE_CODE.search(text):
        return None
    words = [p.split() for p in parts]
    if any(len(w) > LONGEST_MEMBER or not (p[0].isupper() or p[0].isdigit()) for p, w in zip(parts, words, strict=True)):
        return None
    if any(normalise(p) in STATES for p in parts):
        return None  # "Los Angeles, California, USA"
    if all(len(w) == 1 for w in words[:-1]) and normalise(parts[-1]) != parts[-1].lower() and \
            set(re.sub(r"[^a-z ]", " ", parts[-1].lower()).split()) & LEGAL_SUFFIXES:
        return None  # "Skadden, Arps, Slate, Meagher & Flom LLP": one firm's surnames
    for n, w in enumerate(words):
        if len(w) >= 2 and w[-2] in ("of", "for", "on") and any(
                len(later) == 1 and not is_acronym(later[0]) and not branded(later[0]) for later in words[n + 1:]):
            return None  # "Bureau of Alcohol, Tobacco and Firearms": the words after "of" are its
    alone = [stands_alone(p) for p in parts]
    named = sum(1 for a, w in zip(alone, words, strict=True) if a or len(w) == 1)
    if not any(alone) or 2 * named < len(parts):
        return None  # "University of California, Los Angeles, School of Law"
    return parts


def split_pair(text: str) -> list[str]:
    """"B and C" as two names when both stand alone (the rule of "A and B"), else whole."""
    for separator in (LIST_SEPARATOR, WORD_SEPARATOR):
        parts = [p.strip(" ,") for p in separator.split(text) if p and p.strip(" ,")]
        if len(parts) > 1 and all(stands_alone(p) or branded(p) for p in parts):
            return parts
    return [text]


def split_names(raw: str, directives: dict[str, tuple[str, ...]] | None = None) -> list[str]:
    """The organisations a field names, as written, in order (duplicates by normal form
    left out). ``directives``: the alias file's ``split:`` entries, the whole field in normal
    form -> its parts (none: keep the field whole)."""
    directives = directives or {}
    whole = normalise(raw)
    if whole in directives:
        return list(directives[whole]) or [raw.strip()]
    found: list[str] = []
    for piece in HARD_SEPARATOR.split(raw.strip()):
        piece = piece.strip(" ,")
        if not piece:
            continue
        listed = directives.get(normalise(piece))
        if listed is not None:
            found.extend(listed or [piece])
        else:
            found.extend(split_list(piece))
    seen: set[str] = set()
    unique = []
    for name in found:
        key = normalise(name)
        if key and key not in seen:
            seen.add(key)
            unique.append(name)
    return unique or [raw.strip()]
