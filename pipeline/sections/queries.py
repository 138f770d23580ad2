"""Every query of the sections stage's tables (``document_section``, ``section_link``): what it
reads to plan and link, and what it writes. What people read of them is
``pipeline/reading/sections.py``."""

from __future__ import annotations

from collections import Counter

from pipeline.store.in_lists import in_chunks
from pipeline.store.models import DocketDocument, DocumentSection, Item, SectionLink, database

# A document's type that makes it the docket's rule document before any other (lower first).
_TYPE_ORDER = {"Proposed Rule": 0, "Rule": 1, "Notice": 2}


def save_sections(docket_id: str, document: str, sections) -> None:
    """The document's sections (``splitter.Section``), replacing what it had."""
    DocumentSection.delete().where(DocumentSection.document == document).execute()
    rows = [{"document": document, "docket": docket_id, "section": s.id, "ordinal": n, "heading": s.heading,
             "text": s.text, "page": s.page, "parent": s.parent, "kind": s.kind} for n, s in enumerate(sections)]
    with database.atomic():
        for start in range(0, len(rows), 200):
            DocumentSection.insert_many(rows[start:start + 200]).execute()


def clear_document(document: str) -> None:
    DocumentSection.delete().where(DocumentSection.document == document).execute()


def sections_of(document: str) -> list[DocumentSection]:
    """The document's sections in reading order."""
    return list(DocumentSection.select().where(DocumentSection.document == document)
                .order_by(DocumentSection.ordinal))


def documents_with_sections(docket_id: str) -> set[str]:
    return {d for (d,) in DocumentSection.select(DocumentSection.document).distinct()
            .where(DocumentSection.docket == docket_id).tuples()}


def primary_document(docket_id: str, split: set[str]) -> str | None:
    """The docket's rule document among those split: the one most of its comments answer, else
    a proposed rule, a rule, a notice (in that order), the earliest posted first."""
    if not split:
        return None
    answered = Counter(d for (d,) in Item.select(Item.comment_on_document_id).where(
        (Item.docket == docket_id) & (Item.kind == "comment")).tuples() if d in split)
    if answered:
        return sorted(answered, key=lambda d: (-answered[d], d))[0]
    facts = {key: (_TYPE_ORDER.get(kind or "", 9), posted or "", key) for key, kind, posted in
             Item.select(Item.key, DocketDocument.document_type, Item.posted_date)
             .join(DocketDocument, on=(DocketDocument.document == Item.key), join_type="LEFT OUTER")
             .where(Item.key.in_(sorted(split))).tuples()}
    return min(split, key=lambda d: facts.get(d, (9, "", d)))


def replace_links(comments: list[str], links: list[dict]) -> None:
    """The comments' links, replacing every link they had (``links``: SectionLink rows)."""
    for chunk in in_chunks(sorted(comments)):
        SectionLink.delete().where(SectionLink.comment.in_(chunk)).execute()
    with database.atomic():
        for start in range(0, len(links), 200):
            SectionLink.insert_many(links[start:start + 200]).execute()


def linked_comments(docket_id: str) -> set[str]:
    return {c for (c,) in SectionLink.select(SectionLink.comment).distinct()
            .where(SectionLink.docket == docket_id).tuples()}
