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
  Farmers and Ranchers") keeps it whole: "Human Services" and "Ranchers" name no body.
"""

from __future__ import annotations

import re

from pipeline.organisations.names import KIND_WORDS, LEGAL_SUFFIXES, is_acronym, normalise

HARD_SEPARATOR = re.compile(r"\s*(?:;|\n|\r)+\s*")
LIST_SEPARATOR = re.compile(r"\s*,\s*(?:and\s+|&\s*)?|\s+(?:and|&)\s+|\s*&\s*", re.IGNORECASE)


def stands_alone(part: str) -> bool:
    """The part names an organisation by itself: an acronym, or two or more words one of
    which says what kind of body it is."""
    words = normalise(part).split()
    if not words or all(w in LEGAL_SUFFIXES for w in words):
        return False  # "L.L.C." after a comma ends a name
    if is_acronym(part):
        return True
    return len(words) >= 2 and bool(set(words) & KIND_WORDS) and words[-1] not in LEGAL_SUFFIXES


def split_list(text: str) -> list[str]:
    """One ";"-free piece: its parts when it is a list of organisations, else itself."""
    parts = [p.strip(" ,") for p in LIST_SEPARATOR.split(text) if p and p.strip(" ,")]
    if len(parts) > 1 and all(stands_alone(p) for p in parts):
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
