"""Caps on the text of one item, applied where its sections are put together (combined.md),
so that they hold whatever reader, OCR or inline body the text came from.

Why here and not in each reader: a reader caps its own file (``max_file_chars``), but an
item is its inline body plus every file, and a 60 MB inline comment or fifty capped files
still make one item that takes a gigabyte and minutes to chunk and embed. Capping the
sections of combined.md bounds everything downstream of extract (index, search) with one
rule, and the cut is said in combined.md's frontmatter and the item's extract row.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from pipeline.fingerprints import digest

FILE_CUT = "text capped at "  # how a reader says max_file_chars cut a file (readers.capped)


@dataclass(frozen=True)
class TextCaps:
    """Characters kept: of the inline body (the first section), and of all sections together;
    ``max_file_chars`` (applied by the readers) is here for judging which items a cap bites."""

    max_body_chars: int | None = None
    max_item_chars: int | None = None
    max_file_chars: int | None = None


@dataclass(frozen=True)
class ItemSizes:
    """An item's text before its caps, recorded on its extract row (``detail``), so that a
    changed cap is judged per item from state rows alone: the inline body's characters, the
    other sections' together (as the readers left them), the largest file a reader kept
    whole, and whether a reader cut any."""

    body: int
    rest: int
    largest_file: int
    file_cut: bool

    def detail(self) -> str:
        return f"sizes body={self.body} rest={self.rest} file={self.largest_file} file_cut={int(self.file_cut)}"

    def with_files(self, more: ItemSizes) -> ItemSizes:
        """These sizes with ``more`` files' (OCR's texts, merged after extract measured)."""
        return ItemSizes(self.body, self.rest + more.rest, max(self.largest_file, more.largest_file),
                         self.file_cut or more.file_cut)

    @classmethod
    def from_detail(cls, detail: str | None) -> ItemSizes | None:
        found = _SIZES.fullmatch(detail or "")
        if found is None:
            return None  # extracted before sizes were recorded: judged as no cap biting
        body, rest, largest, cut = map(int, found.groups())
        return cls(body, rest, largest, bool(cut))


_SIZES = re.compile(r"sizes body=(\d+) rest=(\d+) file=(\d+) file_cut=([01])")


def sizes_of(texts: list[str], file_texts) -> ItemSizes:
    """``texts`` as ``capped_sections`` gets them (the body first), ``file_texts`` the
    readers' results (``chars``, ``reason``)."""
    cut = [t for t in file_texts if FILE_CUT in (t.reason or "")]
    whole = [t.chars or 0 for t in file_texts if t not in cut]
    return ItemSizes(len(texts[0]) if texts else 0, sum(map(len, texts[1:])), max(whole, default=0), bool(cut))


def caps_biting(sizes: ItemSizes | None, caps: TextCaps) -> str:
    """The caps that cut this item's text, with their values (empty when none does): the
    part of its extract fingerprint that a changed cap changes only for the items it bites
    or bit."""
    if sizes is None:
        return ""
    bitten = []
    body = sizes.body
    if caps.max_body_chars is not None and body > caps.max_body_chars:
        bitten.append(f"body<={caps.max_body_chars}")
        body = caps.max_body_chars
    if caps.max_item_chars is not None and body + sizes.rest > caps.max_item_chars:
        bitten.append(f"item<={caps.max_item_chars}")
    if caps.max_file_chars is not None and (sizes.file_cut or sizes.largest_file > caps.max_file_chars):
        bitten.append(f"file<={caps.max_file_chars}")
    return ",".join(bitten)


def chunks_biting(chunks_made: int, max_item_chunks: int | None) -> str:
    """The index's chunk cap as it cuts an item that makes ``chunks_made`` chunks (empty when
    it does not): the part of its index fingerprint and content hash that a changed
    ``max_item_chunks`` changes only for the items it bites or bit (the rule of
    ``caps_biting``, for chunks)."""
    if max_item_chunks is None or chunks_made <= max_item_chunks:
        return ""
    return f"chunks<={max_item_chunks}"


def with_caps(fingerprint: str, biting: str) -> str:
    """An item's fingerprint with the caps that bite it: unchanged when none does, so that
    the fingerprints of items no cap touches stay what they were before caps counted."""
    return digest(fingerprint, biting) if biting else fingerprint


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
