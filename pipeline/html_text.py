"""HTML to plain text: the one rule, for comment bodies and for HTML attachments.

regulations.gov bodies are HTML fragments: ``See attached file(s)<br/><br/>Notice&rsquo;s``.
People read, search and embed the text, so a line break stays a line break, a paragraph a
paragraph, and entities become the characters they name; what a browser hides (``HIDDEN``)
is not text. Each caller lays the text out as it always has (``Layout``):

* ``RECORD``, the record normaliser's (and an Outlook message's HTML body): a block set off
  by a blank line; plain text passes through unchanged, so a body that never held markup is
  stored exactly as it came;
* ``EXTRACTED``, an HTML attachment's (``extract-5``): every block boundary a line break, no
  blank lines.

They also read the markup as they always have: a record's as libxml2 (lxml) repairs it into
a tree, an attachment's tag by tag as written (the standard library's tokeniser), which
differ on broken markup (a stray end tag breaks a line only in the second). Stored bodies and
extracted text stay byte for byte what they were; moving one caller to the other's reading
would change them (``tests/test_html_text.py`` pins both on real bodies and files).
"""

from __future__ import annotations

import html.parser
from dataclasses import dataclass

# Elements that start a new line of their own in a browser.
BLOCKS = frozenset({"p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table",
                    "section", "article", "blockquote", "pre", "ul", "ol", "hr"})
HIDDEN = frozenset({"script", "style", "head", "title", "template", "noscript"})


@dataclass(frozen=True)
class Layout:
    """How one caller reads markup and lays its text out."""

    block_break: str  # what a block element's start and end each put in the text
    paragraphs: bool  # lines cut at "\n", one blank line kept between paragraphs (else none)
    keep_plain: bool  # text with neither "<" nor "&" returned exactly as it came
    repaired: bool  # markup read as libxml2 repairs it into a tree (else tag by tag as written)


RECORD = Layout(block_break="\n\n", paragraphs=True, keep_plain=True, repaired=True)
EXTRACTED = Layout(block_break="\n", paragraphs=False, keep_plain=False, repaired=False)


def html_to_text(markup: str, layout: Layout = RECORD) -> str:
    """The text a browser shows for ``markup``: breaks kept, entities decoded."""
    if layout.keep_plain and "<" not in markup and "&" not in markup:
        return markup  # plain text is stored exactly as it came
    text = _TextBuilder(layout.block_break)
    if layout.repaired:
        if not _walk_repaired(markup, text):
            return markup.strip()
    else:
        _Tokens(text).read(markup)
    return _paragraphs(text.joined()) if layout.paragraphs else _lines(text.joined())


class _TextBuilder:
    """The rule: what each element puts in the text, whoever reads the markup."""

    def __init__(self, block_break: str) -> None:
        self.block_break = block_break
        self.hidden_depth = 0
        self.parts: list[str] = []

    def start(self, tag: str) -> None:
        if tag in HIDDEN:
            self.hidden_depth += 1
        elif tag in BLOCKS:
            self.parts.append(self.block_break)

    def end(self, tag: str) -> None:
        if tag in HIDDEN:
            self.hidden_depth = max(0, self.hidden_depth - 1)
        elif tag in BLOCKS:
            self.parts.append(self.block_break)

    def line_break(self) -> None:
        self.parts.append("\n")

    def data(self, text: str | None) -> None:
        if text and not self.hidden_depth:
            self.parts.append(text)

    def joined(self) -> str:
        return "".join(self.parts)


class _Tokens(html.parser.HTMLParser):
    """Markup read tag by tag as written: each start and end tag counts, open or not."""

    def __init__(self, text: _TextBuilder) -> None:
        super().__init__(convert_charrefs=True)
        self.text = text

    def read(self, markup: str) -> None:
        self.feed(markup)
        self.close()

    def handle_starttag(self, tag, attrs):
        if tag == "br":
            self.text.line_break()
        else:
            self.text.start(tag)

    def handle_endtag(self, tag):
        if tag == "br":
            self.text.line_break()
        else:
            self.text.end(tag)

    def handle_data(self, data):
        self.text.data(data)


def _walk_repaired(markup: str, text: _TextBuilder) -> bool:
    """Markup read as libxml2 repairs it, walked element by element; False when lxml cannot
    make a tree of it."""
    import lxml.etree
    import lxml.html

    try:
        root = lxml.html.fragment_fromstring(markup, create_parent="div")
    except (lxml.etree.ParserError, ValueError):
        return False
    except AssertionError:
        # lxml asserts one <body> in what it parsed; markup of only an <html> or <head> tag
        # ('<html> ') parses to none: nothing a browser would show.
        return True
    _walk(root, text)
    return True


def _walk(element, text: _TextBuilder) -> None:
    """One element's text and its children's, in document order (its tail is its parent's)."""
    if not isinstance(element.tag, str):  # comments and processing instructions
        return
    if element.tag == "br":
        text.line_break()
        return
    text.start(element.tag)
    if element.tag not in HIDDEN:  # a hidden element's children are not read at all
        text.data(element.text)
        for child in element:
            _walk(child, text)
            text.data(child.tail)
    text.end(element.tag)


def _paragraphs(text: str) -> str:
    """Spaces within a line collapsed; at most one blank line between paragraphs."""
    lines = [" ".join(line.replace("\xa0", " ").split()) for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()


def _lines(text: str) -> str:
    """Spaces within a line collapsed; no blank lines."""
    lines = (" ".join(line.split()) for line in text.splitlines())
    return "\n".join(line for line in lines if line)
