"""An item's text as people read it (a comment's or a document's): its ``combined.md``
(extract's output, OCR's merged in), in sections (the item's own text, then each attachment's
or content file's), each split at its page markers. The comment and document pages,
``docketeer show`` and the export read it here, never through the stages."""

from __future__ import annotations

from pipeline.extract.combined import combined_sections, is_placeholder, parse_combined
from pipeline.index.chunking import PAGE_MARKER

__all__ = ["PAGE_MARKER", "combined_sections", "combined_text", "is_placeholder", "pages", "parse_combined",
           "sections", "text_pages"]

# One section of an item's text: its heading (the item's own text, or a file's name) and its
# pages, each (page number or None before the first marker, text).
SectionPages = tuple[str, list[tuple[int | None, str]]]


def combined_text(blobs, docket_id: str, key: str) -> tuple[dict, str]:
    """(frontmatter, body) of the item's combined.md, read as the stages read it;
    FileNotFoundError or KeyError when extract has not written it."""
    from pipeline.extract.stage import read_combined

    return read_combined(blobs, docket_id, key)


def sections(blobs, docket_id: str, key: str) -> list[tuple[str, str]] | None:
    """(heading, text) of each section of the item's combined.md; None before extract."""
    try:
        _, body = combined_text(blobs, docket_id, key)
    except (FileNotFoundError, KeyError):
        return None
    return combined_sections(body)


def pages(text: str) -> list[tuple[int | None, str]]:
    """A section's text split at its page markers: (page number, or None before the first
    marker, text)."""
    parts = PAGE_MARKER.split(text)  # [before, n1, text1, n2, text2, ...]
    found = [(None, parts[0].strip())] if parts[0].strip() else []
    found += [(int(parts[i]), parts[i + 1].strip()) for i in range(1, len(parts) - 1, 2)]
    return found


def text_pages(blobs, docket_id: str, key: str) -> tuple[list[SectionPages], bool]:
    """Each section of the item's text with its pages, and whether extract has written it
    (([], False) before it): what the comment and document pages and ``docketeer show`` read."""
    found = sections(blobs, docket_id, key)
    if found is None:
        return [], False
    return [(heading, pages(text)) for heading, text in found], True
