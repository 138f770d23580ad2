"""HTML fragments (comment bodies) to plain text, with lxml's HTML parser.

regulations.gov bodies are HTML fragments: ``See attached file(s)<br/><br/>Notice&rsquo;s``.
People read, search and embed the text, so a line break stays a line break, a paragraph a
paragraph, and entities become the characters they name. Plain text passes through
unchanged, so a body that never held markup is stored exactly as it came.
"""

from __future__ import annotations

import lxml.etree
import lxml.html

# Elements that start a new line of their own in a browser.
BLOCKS = frozenset({"p", "div", "li", "tr", "h1", "h2", "h3", "h4", "h5", "h6", "table",
                    "section", "article", "blockquote", "pre", "ul", "ol", "hr"})
HIDDEN = frozenset({"script", "style", "head", "title", "template", "noscript"})


def html_to_text(fragment: str) -> str:
    """The text a browser shows for ``fragment``: breaks kept, entities decoded."""
    if "<" not in fragment and "&" not in fragment:
        return fragment  # plain text is stored exactly as it came
    try:
        root = lxml.html.fragment_fromstring(fragment, create_parent="div")
    except (lxml.etree.ParserError, ValueError):
        return fragment.strip()
    for element in root.iter():
        if not isinstance(element.tag, str):  # comments and processing instructions
            element.text = ""
        elif element.tag in HIDDEN:
            element.text = ""
            element.clear(keep_tail=True)
        elif element.tag == "br":
            element.tail = "\n" + (element.tail or "")
        elif element.tag in BLOCKS:
            element.text = "\n\n" + (element.text or "")
            element.tail = "\n\n" + (element.tail or "")
    return _tidy(root.text_content())


def _tidy(text: str) -> str:
    """Spaces within a line collapsed; at most one blank line between paragraphs."""
    lines = [" ".join(line.replace("\xa0", " ").split()) for line in text.split("\n")]
    out: list[str] = []
    for line in lines:
        if line or (out and out[-1]):
            out.append(line)
    return "\n".join(out).strip()
