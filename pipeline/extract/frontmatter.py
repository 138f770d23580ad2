"""combined.md's YAML frontmatter, written directly for the values it usually holds.

The frontmatter's bytes are fixed by what ``yaml.dump`` (libyaml's safe dumper, keys in
order, ``allow_unicode``, width 10,000) has always written: a change would redo every
item. PyYAML's representer builds a node tree per item in Python, which was most of the
stage's own time on many small files. So the common shapes are written here, and only
where the bytes are certain to be the same: block mappings of string keys to ints, bools,
None, plain-safe strings, the empty string, and lists of those (one mapping level or list
of mappings deep, as the frontmatter is). Anything else (a string YAML would quote or fold,
a float, a repeated container, which YAML would write as an anchor) makes the whole mapping
go through ``yaml.dump``, so its bytes are yaml.dump's by construction.

The rules for a plain string are libyaml's (``yaml_emitter_analyze_scalar``) and PyYAML's
resolver (a plain string that would read back as a bool, null, number, date, ... is
quoted), taken conservatively: a character outside a narrow set sends the string to the
fallback rather than being judged.
"""

from __future__ import annotations

import re

import yaml

# Why not yaml.dump alone: docs/BENCHMARKS.md, "Written by hand beside a library".
_DUMPER = getattr(yaml, "CSafeDumper", yaml.SafeDumper)
WIDTH = 10_000  # the frontmatter's line width: no line of it is ever folded

# A plain scalar is broken at a space once its line passes WIDTH columns; far shorter
# strings, however deep their indentation, never reach it.
_MAX_PLAIN = 2_000
_MAX_KEY = 64
# Printable ASCII but the indicators YAML forbids at a plain scalar's start, then any
# printable ASCII, and the printable letters of the Basic Multilingual Plane (libyaml
# escapes characters beyond it, and treats U+0085, U+2028, U+2029 as line breaks and
# U+FEFF as special). Python's isprintable() is checked on top for non-ASCII characters.
_FIRST = r"[^\x00-\x20\x7f-\x9f\-?:,\[\]{}#&*!|>'\"%@`\ud800-\udfff\ufeff\ufffe\uffff\U00010000-\U0010ffff]"
_REST = r"[^\x00-\x1f\x7f-\x9f\ud800-\udfff\ufeff\ufffe\uffff\U00010000-\U0010ffff]"
_PLAIN_SHAPE = re.compile(f"{_FIRST}(?:{_REST}*[^\\x00-\\x20\\x7f-\\x9f\\ud800-\\udfff\\ufeff\\ufffe\\uffff"
                          f"\\U00010000-\\U0010ffff:])?")
# ": " and " #" are indicators inside a plain scalar (a trailing ":" is excluded above).
_INDICATOR_INSIDE = re.compile(r": | #")
_RESOLVERS = _DUMPER.yaml_implicit_resolvers  # the dumper's own: what its representer asks


# Strings already found plain (callers pass str only): the keys, statuses, file names and
# extractor version recur in every item.
_KNOWN_PLAIN: dict[str, bool] = {}
_KNOWN_MAX = 4_096


class _NotCertain(Exception):
    """A value whose YAML form this module does not vouch for: yaml.dump writes it."""


def dump_frontmatter(mapping: dict) -> str:
    """Exactly ``yaml.dump(mapping, Dumper=CSafeDumper, sort_keys=False,
    allow_unicode=True, width=10_000)``."""
    try:
        if type(mapping) is not dict or not mapping:
            raise _NotCertain
        lines: list[str] = []
        _mapping(mapping, "", lines, set())
        return "".join(lines)
    except _NotCertain:
        return yaml_dump(mapping)


def yaml_dump(mapping: dict) -> str:
    """The frontmatter as PyYAML writes it: the reference ``dump_frontmatter`` matches."""
    return yaml.dump(mapping, Dumper=_DUMPER, sort_keys=False, allow_unicode=True, width=WIDTH)


def _mapping(mapping: dict, indent: str, lines: list[str], seen: set[int]) -> None:
    """A non-empty block mapping; the first key's line starts where the caller is."""
    _once(mapping, seen)
    for n, (key, value) in enumerate(mapping.items()):
        start = indent if n else ""  # the first key continues the caller's line ("- ")
        kind = type(value)
        if kind is dict and value:
            lines.append(f"{start}{_key(key)}:\n{indent}  ")
            _mapping(value, indent + "  ", lines, seen)
        elif kind is list and value:
            lines.append(f"{start}{_key(key)}:\n")
            _sequence(value, indent, lines, seen)  # a mapping's sequence is not indented
        else:
            lines.append(f"{start}{_key(key)}: {_scalar(value)}\n")


def _sequence(sequence: list, indent: str, lines: list[str], seen: set[int]) -> None:
    _once(sequence, seen)
    for value in sequence:
        if type(value) is dict and value:
            lines.append(f"{indent}- ")
            _mapping(value, indent + "  ", lines, seen)
        elif type(value) in (dict, list):  # an empty one is "[]"/"{}"; a nested list: not here
            raise _NotCertain
        else:
            lines.append(f"{indent}- {_scalar(value)}\n")


def _once(container, seen: set[int]) -> None:
    # The representer writes a container met twice as an anchor and an alias.
    if id(container) in seen:
        raise _NotCertain
    seen.add(id(container))


def _scalar(value) -> str:
    kind = type(value)
    if kind is str:
        return _plain(value) if value else "''"
    if kind is int:
        return str(value)
    if value is None:
        return "null"
    if kind is bool:
        return "true" if value else "false"
    if kind is list and not value:
        return "[]"
    if kind is dict and not value:
        return "{}"
    raise _NotCertain


def _key(key) -> str:
    # libyaml writes a key of more than 128 bytes as a complex key ("? key"): short ASCII
    # keys are far from it.
    if type(key) is not str or len(key) > _MAX_KEY or not key.isascii():
        raise _NotCertain
    return _plain(key)


def _plain(text) -> str:
    """``text`` when YAML writes it plain, unquoted; else _NotCertain."""
    if text in _KNOWN_PLAIN:  # keys, statuses, file names, the extractor: met every item
        return text
    if (type(text) is not str or len(text) > _MAX_PLAIN or not _PLAIN_SHAPE.fullmatch(text)
            or _INDICATOR_INSIDE.search(text) or text.startswith(("---", "..."))
            or (not text.isascii() and not text.isprintable())):
        raise _NotCertain
    for _tag, pattern in (*_RESOLVERS.get(text[0], ()), *_RESOLVERS.get(None, ())):
        if pattern.match(text):  # it would read back as a bool, a number, a date, ...
            raise _NotCertain
    if len(_KNOWN_PLAIN) >= _KNOWN_MAX:
        _KNOWN_PLAIN.clear()
    _KNOWN_PLAIN[text] = True
    return text
