"""A rule document's sections as people read them (the sections stage's rows): each section with
the comments citing it and the comments nearest it, counted as comment records and as the
submissions they stand for (1 + ``duplicateComments``), and the comments of one section with
their evidence. ``docketeer sections``, the document page and the export read here."""

from __future__ import annotations

from collections import Counter, defaultdict
from dataclasses import dataclass, field

from peewee import JOIN

from pipeline.store.models import (
    DocumentSection,
    Item,
    ItemState,
    PositionMember,
    SectionLink,
    Topic,
    TopicMember,
)

KINDS = ("cited", "nearest")


@dataclass
class SectionView:
    id: str
    heading: str
    text: str
    page: int | None
    parent: str | None
    kind: str
    depth: int = 0  # how many sections it is under
    # kind ("cited" / "nearest") -> the comments tied to it that way, and their submissions
    comments: dict[str, set[str]] = field(default_factory=lambda: {k: set() for k in KINDS})
    submissions: dict[str, int] = field(default_factory=lambda: {k: 0 for k in KINDS})
    # Of the comments tied to it either way: their main topics (label -> comments) and their
    # positions (position -> submissions), as the topics and positions stages left them.
    topics: Counter = field(default_factory=Counter)
    positions: Counter = field(default_factory=Counter)

    def top_topics(self, n: int = 3) -> list[tuple[str, int]]:
        return sorted(self.topics.items(), key=lambda kv: (-kv[1], kv[0]))[:n]

    @property
    def pages(self) -> list[tuple[int | None, str]]:
        """Its text page by page (page number, text): a form feed in it ends a page."""
        pieces = self.text.split("\f")
        return [(None if self.page is None else self.page + n, piece.strip("\n")) for n, piece in enumerate(pieces)]

    @property
    def cited_by(self) -> int:
        return len(self.comments["cited"])

    @property
    def nearest(self) -> int:
        return len(self.comments["nearest"])


@dataclass(frozen=True)
class DocumentSections:
    document: str
    state: str | None  # the document's sections state (None: the stage has not seen it)
    reason: str | None
    sections: list[SectionView]
    unmatched: list[tuple[str, str, str]]  # (comment, citation as written, its sentence)


_ASK = object()


def document_sections(document: str, state_row=_ASK) -> DocumentSections:
    """The document's sections in reading order with their counts (three statements; two when
    the caller has its sections state row already, ``state_row``, None for none)."""
    rows = list(DocumentSection.select().where(DocumentSection.document == document)
                .order_by(DocumentSection.ordinal))
    views = {r.section: SectionView(r.section, r.heading, r.text, r.page, r.parent, r.kind) for r in rows}
    for view in views.values():
        parent, depth = view.parent, 0
        while parent in views and depth < 12:
            parent, depth = views[parent].parent, depth + 1
        view.depth = depth
    links = list(SectionLink.select(SectionLink.comment, SectionLink.section, SectionLink.kind,
                                    SectionLink.citation, SectionLink.evidence, Item.duplicate_comments,
                                    Topic.label, PositionMember.position)
                 .join(Item, on=(Item.key == SectionLink.comment))
                 .join(TopicMember, JOIN.LEFT_OUTER, on=(TopicMember.item == SectionLink.comment))
                 .join(Topic, JOIN.LEFT_OUTER, on=(Topic.id == TopicMember.topic))
                 .join(PositionMember, JOIN.LEFT_OUTER, on=(PositionMember.item == SectionLink.comment))
                 .where(SectionLink.document == document).tuples())
    unmatched = []
    tied: dict[str, set[str]] = defaultdict(set)  # section -> comments tied to it either way
    for comment, section, kind, citation, evidence, duplicates, topic, position in links:
        if section is None:
            unmatched.append((comment, citation or "", evidence))
            continue
        if section not in views:
            continue
        view = views[section]
        if comment not in view.comments[kind]:
            view.comments[kind].add(comment)
            view.submissions[kind] += 1 + (duplicates or 0)
        if comment not in tied[section]:
            tied[section].add(comment)
            if topic:
                view.topics[topic] += 1
            if position:
                view.positions[position] += 1 + (duplicates or 0)
    state = state_row if state_row is not _ASK else ItemState.get_or_none(
        (ItemState.stage == "sections") & (ItemState.item == document))
    return DocumentSections(document, state.state if state else None, state.reason if state else None,
                            list(views.values()), sorted(set(unmatched)))


@dataclass(frozen=True)
class SectionComment:
    comment: str
    title: str | None
    kind: str  # cited | nearest
    citation: str | None
    evidence: str
    similarity: float | None


def section_comments(document: str, section: str) -> list[SectionComment]:
    """The comments tied to one section, those citing it first, then the nearest, most alike first."""
    query = (SectionLink.select(SectionLink.comment, Item.title, SectionLink.kind, SectionLink.citation,
                                SectionLink.evidence, SectionLink.similarity)
             .join(Item, on=(Item.key == SectionLink.comment))
             .where((SectionLink.document == document) & (SectionLink.section == section)).tuples())
    found = [SectionComment(*row) for row in query]
    return sorted(found, key=lambda c: (c.kind != "cited", -(c.similarity or 0.0), c.comment))


def cited_sections_of_docket(docket_id: str) -> dict[str, list[str]]:
    """comment -> the section ids it cites (matched citations only), for the export."""
    found: dict[str, set[str]] = defaultdict(set)
    for comment, section in (SectionLink.select(SectionLink.comment, SectionLink.section)
                             .where((SectionLink.docket == docket_id) & (SectionLink.kind == "cited")
                                    & SectionLink.section.is_null(False)).tuples()):
        found[comment].add(section)
    return {k: sorted(v) for k, v in found.items()}


def sections_of_docket(docket_id: str) -> list[dict]:
    """Every section of the docket's documents, with its counts, as rows (the export's)."""
    documents = [d for (d,) in DocumentSection.select(DocumentSection.document).distinct()
                 .where(DocumentSection.docket == docket_id).order_by(DocumentSection.document).tuples()]
    rows = []
    for document in documents:
        for n, s in enumerate(document_sections(document).sections):
            rows.append({"document": document, "section": s.id, "ordinal": n, "heading": s.heading,
                         "page": s.page, "parent": s.parent, "kind": s.kind, "text": s.text,
                         "cited_by": s.cited_by, "cited_by_submissions": s.submissions["cited"],
                         "nearest": s.nearest, "nearest_submissions": s.submissions["nearest"]})
    return rows
