"""What text from outside may hold once it is stored, shown or written out.

Records are JSON, and JSON may name any UTF-16 code unit: ``"\\ud800"`` (a lone surrogate) is
valid JSON but no character, and no UTF-8 database, file or terminal takes it. Control
characters are characters, but a title holding ESC or BEL rewrites a terminal's title bar
when printed, and XML (an Atom feed) refuses them. So:

* ``valid``: lone surrogates replaced with U+FFFD (the replacement character), counted
  (``lone_surrogates``): every string a record gives, before it is stored;
* ``shown``: also without control characters other than tab and newline (a carriage return
  is a line break, as a CRLF body means it): every field people read or export;
* ``for_terminal``: what remains that a terminal would act on, escaped (``\\x1b``): every
  line ``docketeer`` prints;
* ``for_xml``: without what XML 1.0 cannot hold: every feed.
"""

from __future__ import annotations

import re

REPLACEMENT = "\ufffd"
# A surrogate code point standing alone in a Python string (a pair is decoded as one
# character by json, so any surrogate left is a lone one).
_SURROGATE = re.compile("[\ud800-\udfff]")
# C0 controls but tab and newline, DEL, and the C1 controls (U+0080..U+009F: CSI, OSC...).
_CONTROL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f]")
_LINE_BREAK = re.compile("\r\n?")
# What a search never holds (NUL among them, which PostgreSQL cannot store): the C0 controls
# but tab, newline and CR, and DEL. The search's arguments and the search service's requests
# are refused with it.
SEARCH_CONTROL = re.compile(r"[\x00-\x08\x0b\x0c\x0e-\x1f\x7f]")
# What a terminal acts on (every control but newline and tab) and what it cannot encode.
_TERMINAL = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\ud800-\udfff]")
# What XML 1.0 allows: tab, newline, CR, U+0020..U+D7FF, U+E000..U+FFFD, U+10000...
_NOT_XML = re.compile("[^\t\n\r\x20-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]")


def lone_surrogates(text: str) -> int:
    return len(_SURROGATE.findall(text))


def valid(text: str) -> str:
    """``text`` with every lone surrogate replaced by U+FFFD: encodable as UTF-8."""
    return _SURROGATE.sub(REPLACEMENT, text) if _SURROGATE.search(text) else text


def shown(text: str) -> str:
    """``valid(text)`` without control characters other than tab and newline (a CR or CRLF
    line break becomes a newline)."""
    text = valid(text)
    if not _CONTROL.search(text):
        return text
    return _CONTROL.sub("", _LINE_BREAK.sub("\n", text))


def for_terminal(text: str) -> str:
    """``text`` with what a terminal would act on (ESC, BEL, CR, C1 controls...) and what it
    cannot encode (a lone surrogate) written as escapes: ``\\x1b``, ``\\ud800``."""
    if not _TERMINAL.search(text):
        return text
    return _TERMINAL.sub(lambda m: ascii(m.group(0))[1:-1], text)


def for_xml(text: str) -> str:
    """``text`` without the characters XML 1.0 cannot hold (control characters, lone
    surrogates, U+FFFE/U+FFFF)."""
    return _NOT_XML.sub("", text) if _NOT_XML.search(text) else text
