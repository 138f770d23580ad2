"""Caps on the text of one item, applied where its sections are put together (combined.md),
so that they hold whatever reader, OCR or inline body the text came from.

Why here and not in each reader: a reader caps its own file (``max_file_chars``), but an
item is its inline body plus every file, and a 60 MB inline comment or fifty capped files
still make one item that takes a gigabyte and minutes to chunk and embed. Capping the
sections of combined.md bounds everything downstream of extract (index, search) with one
rule, and the cut is said in combined.md's frontmatter and the item's extract row.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class TextCaps:
    """Characters kept: of the inline body (the first section), and of all sections together."""

    max_body_chars: int | None = None
    max_item_chars: int | None = None


def capped_sections(texts: list[str], caps: TextCaps | None) -> tuple[list[str], list[str]]:
    """``texts`` (the inline body first, then each file's) cut to the caps, and the reasons
    for every cut (none when no cap bites). A section cut to nothing stays, empty."""
    if caps is None or not texts:
        return texts, []
    kept, reasons = list(texts), []
    body_cap = caps.max_body_chars
    if body_cap is not None and len(kept[0]) > body_cap:
        reasons.append(f"inline body capped at {body_cap} characters (of {len(kept[0])})")
        kept[0] = kept[0][:body_cap]
    item_cap = caps.max_item_chars
    total = sum(map(len, kept))
    if item_cap is not None and total > item_cap:
        reasons.append(f"item text capped at {item_cap} characters (of {total})")
        left = item_cap
        for i, text in enumerate(kept):
            kept[i] = text[:left]
            left -= len(kept[i])
    return kept, reasons
