"""A docket's rule documents as people read them (the proposed rules, notices and RFIs it
holds, fetched and extracted like comments): one document's facts (its record, its type and
Federal Register number from the docket's document list, the state rows of it and its files)
and a docket's documents listed. Their text is read as a comment's is
(``pipeline.reading.comments.text_pages``). The document page and the docket page read here.
"""

from __future__ import annotations

from dataclasses import dataclass, field

from peewee import JOIN

from pipeline.store.models import DocketDocument, Item, ItemState


@dataclass(frozen=True)
class DocumentFacts:
    item: Item
    document_type: str | None  # Proposed Rule, Notice, ... (None: not in the docket's list)
    fr_doc_num: str | None
    # (stage, item or "item/file") -> the state row of the document and of each of its files
    states: dict[tuple[str, str], ItemState] = field(default_factory=dict)

    @property
    def extract(self) -> ItemState | None:
        """The document's own extract row: its text's state (None: extract has not seen it)."""
        return self.states.get(("extract", self.item.key))

    def file_state(self, stage: str, filename: str) -> ItemState | None:
        return self.states.get((stage, f"{self.item.key}/{filename}"))


def find_document(key: str) -> DocumentFacts | None:
    """The stored item ``key`` with its document facts, in two statements (its record joined to
    the docket's document list; the state rows of it and its files); None when no item has
    that id. A comment's id gives its record too: the caller sends it to the comment's page."""
    item = (Item.select(Item, DocketDocument.document_type.alias("document_type"),
                        DocketDocument.fr_doc_num.alias("fr_doc_num"))
            .join(DocketDocument, JOIN.LEFT_OUTER, on=(DocketDocument.document == Item.key))
            .where(Item.key == key).objects().first())
    if item is None:
        return None
    rows = ItemState.select().where((ItemState.item == key) | ItemState.item.startswith(f"{key}/"))
    return DocumentFacts(item, getattr(item, "document_type", None), getattr(item, "fr_doc_num", None),
                         {(r.stage, r.item): r for r in rows})


@dataclass(frozen=True)
class ListedDocument:
    key: str
    title: str | None
    document_type: str | None
    posted_date: str | None  # UTC instant as stored
    withdrawn: bool


def docket_documents(docket_id: str) -> list[ListedDocument]:
    """The documents the docket holds, in the order they were posted (one statement)."""
    query = (Item.select(Item.key, Item.title, DocketDocument.document_type, Item.posted_date, Item.withdrawn)
             .join(DocketDocument, JOIN.LEFT_OUTER, on=(DocketDocument.document == Item.key))
             .where((Item.docket == docket_id) & (Item.kind == "document")).tuples())
    found = [ListedDocument(key, title, kind, posted, bool(withdrawn))
             for key, title, kind, posted, withdrawn in query]
    return sorted(found, key=lambda d: (d.posted_date or "", d.key))
