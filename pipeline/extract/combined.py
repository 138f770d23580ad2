"""``combined.md``: one comment's inline text and attachment texts in one markdown file.

Layout::

    ---
    comment_id: CMS-2026-0001-0002
    docket_id: CMS-2026-0001
    title: Comment from the National Nurses Forum
    chars: 5120
    attachments:
    - file: attachment_1.pdf
      status: ok
      reason: ''
      chars: 5100
      pages: 2
    sources: <fingerprint of the inputs>
    extractor: extract-1
    ---

    ## Inline comment

    See attached file(s)

    ## attachment_1.pdf

    <text>

A document's combined.md says ``document_id:`` and its first section is ``## Document``
(what the record itself says, usually nothing: the text is in its content file).
``title:`` is the item's title (left out when it has none): the index searches it beside the
text, so an item is found by what it is called even when its body never says so.

The bytes depend only on the arguments (no timestamps), so re-extracting unchanged
inputs yields an identical file and an identical content hash downstream. A text line
that itself starts with ``## `` is escaped with a backslash so section headings stay
unambiguous; ``combined_sections`` removes the escape again.
"""

from __future__ import annotations

import re
from collections.abc import Mapping

import yaml

from pipeline.extract.frontmatter import dump_frontmatter
from pipeline.extract.readers import STATUS_OCR_NEEDED, STATUS_OK, AttachmentText
from pipeline.extract.text_caps import TextCaps, capped_sections

# libyaml's safe loader when present: several times faster.
_LOADER = getattr(yaml, "CSafeLoader", yaml.SafeLoader)

CAPPED_KEY = "capped"  # the frontmatter's list of cuts made by the item's text caps
INLINE_HEADING = "Inline comment"
DOCUMENT_HEADING = "Document"
# Per item kind: the frontmatter's id label, the first section's heading, its empty placeholder.
LABELS = {
    "comment": ("comment_id", INLINE_HEADING, "_(no inline comment)_"),
    "document": ("document_id", DOCUMENT_HEADING, "_(no document text)_"),
}
_FRONTMATTER_FENCE = "---\n"
_HEADING = re.compile(r"^## (.+)$")
_ESCAPED_HEADING = re.compile(r"^(\\*)## ")
_PLACEHOLDER = re.compile(r"^_\((?:no inline comment|no document text|[a-z_]+ — .*)\)_$")


def render_combined(*, comment_id: str, docket_id: str, inline_text: str,
                    attachments: list[AttachmentText], sources_fingerprint: str,
                    extractor_version: str,
                    ocr: Mapping[str, AttachmentText] | None = None, kind: str = "comment",
                    caps: TextCaps | None = None, title: str | None = None) -> bytes:
    """Render combined.md. ``ocr`` maps an attachment file name to its OCR result; an ok
    OCR result supplies that attachment's section text and is recorded under ``ocr``.
    ``kind`` (comment or document) picks the id label and the first section's heading.
    ``caps`` cut the sections' text (``text_caps``); each cut is listed under ``capped``."""
    ocr = ocr or {}
    id_label, first_heading, empty = LABELS[kind]
    entries, texts, placeholders = [], [_clean(inline_text)], [empty]
    for attachment in attachments:
        entry, section_text, chars = _attachment_entry(attachment, ocr.get(attachment.file))
        entries.append(entry)
        texts.append(section_text if chars else "")
        placeholders.append(section_text if not chars else f"_({attachment.status} — item text capped)_")
    texts, capped = capped_sections(texts, caps)
    headings = [first_heading] + [attachment.file for attachment in attachments]
    sections = [(heading, text or placeholder)
                for heading, text, placeholder in zip(headings, texts, placeholders, strict=True)]
    frontmatter = {
        id_label: comment_id,
        "docket_id": docket_id,
        **({"title": title.strip()} if title and title.strip() else {}),
        "chars": sum(map(len, texts)),
        "attachments": entries,
        "sources": sources_fingerprint,
        "extractor": extractor_version,
    }
    if capped:  # only then: an uncapped item's bytes stay what they always were
        frontmatter[CAPPED_KEY] = capped
    header = dump_frontmatter(frontmatter)  # yaml.dump's bytes, written faster
    body = "\n\n".join(f"## {heading}\n\n{_escape_headings(text)}" for heading, text in sections)
    return f"{_FRONTMATTER_FENCE}{header}{_FRONTMATTER_FENCE}\n{body}\n".encode()


def uncapped_texts(inline_text: str, attachments: list[AttachmentText],
                   ocr: Mapping[str, AttachmentText] | None = None) -> list[str]:
    """The section texts ``render_combined`` hands to its caps (the body first; with ``ocr``,
    as it merges those results), which extract and OCR measure to judge later caps by
    (``text_caps.sizes_of``)."""
    ocr = ocr or {}
    sections = (_attachment_entry(attachment, ocr.get(attachment.file)) for attachment in attachments)
    return [_clean(inline_text)] + [text if chars else "" for _, text, chars in sections]


def _attachment_entry(attachment: AttachmentText, ocr_result: AttachmentText | None):
    """Frontmatter entry, section text and counted characters for one attachment."""
    entry = {
        "file": attachment.file,
        "status": attachment.status,
        "reason": attachment.reason,
        "chars": attachment.chars,
        "pages": attachment.pages,
    }
    text = _clean(attachment.text) if attachment.status == STATUS_OK else ""
    if ocr_result is not None:
        entry["ocr"] = {"status": ocr_result.status, "reason": ocr_result.reason,
                        "chars": ocr_result.chars}
        if ocr_result.status == STATUS_OK and not text:
            text = _clean(ocr_result.text)
    if text:
        return entry, text, len(text)
    # ocr_needed says how little the text layer held; other statuses say why they failed.
    if attachment.status == STATUS_OCR_NEEDED:
        detail = f"{attachment.chars} characters extracted"
    else:
        detail = attachment.reason or "no text"
    return entry, f"_({attachment.status} — {detail})_", 0


def _clean(text: str) -> str:
    # A one-character test first: searching for one character is a memchr, several
    # times faster than searching for two on a page of text, and "\r" is rare.
    if "\r" in text:
        text = text.replace("\r\n", "\n").replace("\r", "\n")
    return text.replace("\x00", "").strip()


def _escape_headings(text: str) -> str:
    if "#" not in text or "## " not in text:  # almost always: no line can look like a heading
        return text
    return "\n".join(_ESCAPED_HEADING.sub(r"\\\1## ", line) for line in text.split("\n"))


def _unescape_headings(text: str) -> str:
    return "\n".join(
        line[1:] if _ESCAPED_HEADING.match(line) and line.startswith("\\") else line
        for line in text.split("\n")
    )


def kind_of(frontmatter: dict) -> str:
    """The item kind a parsed combined.md was rendered for."""
    return "document" if "document_id" in frontmatter else "comment"


def parse_combined(data: bytes) -> tuple[dict, str]:
    """Split combined.md bytes into (frontmatter dict, markdown body)."""
    text = data.decode("utf-8")
    if not text.startswith(_FRONTMATTER_FENCE):
        raise ValueError("combined.md does not start with a frontmatter fence")
    end = text.find("\n" + _FRONTMATTER_FENCE, len(_FRONTMATTER_FENCE) - 1)
    if end < 0:
        raise ValueError("combined.md frontmatter is not closed")
    try:
        frontmatter = yaml.load(text[len(_FRONTMATTER_FENCE):end + 1], Loader=_LOADER) or {}
    except yaml.YAMLError as exc:
        raise ValueError(f"combined.md frontmatter is not valid YAML: {exc}") from exc
    if not isinstance(frontmatter, dict):
        raise ValueError("combined.md frontmatter is not a mapping")
    return frontmatter, text[end + 1 + len(_FRONTMATTER_FENCE):].lstrip("\n")


def capped_of(data: bytes) -> list[str]:
    """The cuts combined.md's frontmatter lists under ``capped`` (the YAML is parsed only
    when the key is there, which it almost never is)."""
    end = data.find(b"\n" + _FRONTMATTER_FENCE.encode())
    if data.find(f"\n{CAPPED_KEY}:".encode(), 0, end) < 0:
        return []
    return list(parse_combined(data)[0].get(CAPPED_KEY) or [])


def combined_sections(body: str, *, skip_placeholders: bool = False) -> list[tuple[str, str]]:
    """The body's sections as (heading, text): "Inline comment" (a document's: "Document"),
    then one per attachment.

    With ``skip_placeholders`` sections whose text is only a status line (an attachment
    without text, an empty inline comment) are left out, which is what a chunker wants.
    """
    sections: list[tuple[str, list[str]]] = []
    for line in body.split("\n"):
        heading = _HEADING.match(line)
        if heading:
            sections.append((heading.group(1), []))
        elif sections:
            sections[-1][1].append(line)
    result = [(heading, _unescape_headings("\n".join(lines)).strip()) for heading, lines in sections]
    if skip_placeholders:
        result = [(heading, text) for heading, text in result if not is_placeholder(text)]
    return result


def is_placeholder(text: str) -> bool:
    """Whether a section's text is only its status line (an attachment without text, an empty
    inline comment or document) or nothing at all."""
    return not text or bool(_PLACEHOLDER.match(text))
