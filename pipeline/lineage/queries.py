"""Every query of the lineage tables (``lineage_comment``, ``lineage_link``) that the stage
reads and writes. What people read of them (a rule's timeline, its organisations in every
phase) is ``pipeline/reading/lineage.py``."""

from __future__ import annotations

import json
from collections.abc import Iterable

from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import (
    Docket,
    DocketDocument,
    FederalRegisterDocument,
    Item,
    LineageComment,
    LineageLink,
    database,
)

# --- what the stage reads ----------------------------------------------------------------------

def comment_documents(docket_id: str) -> dict[str, str | None]:
    """comment -> the document it answers, for the docket's comments."""
    return dict(Item.select(Item.key, Item.comment_on_document_id)
                .where((Item.docket == docket_id) & (Item.kind == "comment")).tuples())


def document_types(documents: Iterable[str]) -> dict[str, str | None]:
    found: dict[str, str | None] = {}
    for chunk in _chunks(sorted({d for d in documents if d})):
        found.update(DocketDocument.select(DocketDocument.document, DocketDocument.document_type)
                     .where(DocketDocument.document.in_(chunk)).tuples())
    return found


def ties_of(docket_id: str) -> dict[str, tuple[str | None, str]]:
    return {item: (document, phase) for item, document, phase in
            LineageComment.select(LineageComment.item, LineageComment.document, LineageComment.phase)
            .where(LineageComment.docket == docket_id).tuples()}


def ties_among(keys: Iterable[str]) -> dict[str, tuple[str | None, str]]:
    """The stored ties of those of ``keys`` that have one."""
    found = {}
    for chunk in _chunks(sorted(set(keys))):
        found.update({item: (document, phase) for item, document, phase in
                      LineageComment.select(LineageComment.item, LineageComment.document, LineageComment.phase)
                      .where(LineageComment.item.in_(chunk)).tuples()})
    return found


# --- what the stage writes ---------------------------------------------------------------------

def save_ties(docket_id: str, ties: dict[str, tuple[str | None, str]]) -> int:
    """comment -> (document, phase): written where new or changed; returns rows written. New
    ties go in a statement per batch (a docket's first run ties every comment)."""
    stored = ties_among(ties)
    new = [{"item": item, "docket": docket_id, "document": ties[item][0], "phase": ties[item][1]}
           for item in sorted(ties) if item not in stored]
    changed = [item for item in sorted(ties) if item in stored and stored[item] != ties[item]]
    with database.atomic():
        for start in range(0, len(new), INSERT_BATCH):
            LineageComment.insert_many(new[start:start + INSERT_BATCH]).on_conflict_ignore().execute()
        for item in changed:
            document, phase = ties[item]
            LineageComment.update(document=document, phase=phase).where(LineageComment.item == item).execute()
    written = len(new) + len(changed)
    return written


INSERT_BATCH = 200  # rows of four columns per INSERT: within SQLite's 999 parameters


def rin_links(docket_id: str) -> set[tuple[str, str, str, str]]:
    """(docket, other, "rin", RIN) for each other docket of the same RIN, both ways."""
    docket = Docket.get_or_none(Docket.id == docket_id)
    if docket is None or not docket.rin:
        return set()
    others = [d for (d,) in Docket.select(Docket.id).where((Docket.rin == docket.rin) & (Docket.id != docket_id)).tuples()]
    return {pair for other in others for pair in ((docket_id, other, "rin", docket.rin),
                                                    (other, docket_id, "rin", docket.rin))}


def save_rin_links(docket_id: str) -> int:
    """The docket's links by RIN as the dockets' RINs say now: new ones inserted, stale ones
    dropped; returns rows written."""
    wanted = rin_links(docket_id)
    stored = {tuple(r) for r in LineageLink.select(LineageLink.docket, LineageLink.other, LineageLink.via,
                                                    LineageLink.value)
              .where(((LineageLink.docket == docket_id) | (LineageLink.other == docket_id))
                     & (LineageLink.via == "rin")).tuples()}
    written = 0
    with database.atomic():
        for docket, other, via, _value in sorted(stored - wanted):
            LineageLink.delete().where((LineageLink.docket == docket) & (LineageLink.other == other)
                                       & (LineageLink.via == via)).execute()
            written += 1
        for docket, other, via, value in sorted(wanted - stored):
            (LineageLink.insert(docket=docket, other=other, via=via, value=value)
             .on_conflict(conflict_target=[LineageLink.docket, LineageLink.other, LineageLink.via],
                          update={LineageLink.value: value}).execute())
            written += 1
    if written:
        counters.incr(ROWS_WRITTEN, written)
    return written


def fr_numbers(docket_id: str) -> list[str]:
    """The Federal Register numbers of the docket's documents."""
    return sorted({n for (n,) in DocketDocument.select(DocketDocument.fr_doc_num)
                   .where((DocketDocument.docket == docket_id) & DocketDocument.fr_doc_num.is_null(False)).tuples()})


def fr_documents(numbers: Iterable[str]) -> dict[str, tuple[list[str], list[str]]]:
    """FR number -> (docket ids, RINs), for those asked before."""
    found = {}
    for chunk in _chunks(sorted(set(numbers))):
        for number, dockets, rins in (FederalRegisterDocument.select(
                FederalRegisterDocument.number, FederalRegisterDocument.docket_ids, FederalRegisterDocument.rins)
                .where(FederalRegisterDocument.number.in_(chunk)).tuples()):
            found[number] = (json.loads(dockets), json.loads(rins))
    return found


def save_fr_document(number: str, dockets: list[str], rins: list[str]) -> None:
    FederalRegisterDocument.insert(number=number, docket_ids=json.dumps(dockets), rins=json.dumps(rins)) \
        .on_conflict_ignore().execute()


def save_fr_links(docket_id: str, named: dict[str, tuple[list[str], list[str]]]) -> int:
    """The docket linked to every other known docket its documents' FR records name (by
    docket id, or by a RIN they give): inserted where missing; returns rows written."""
    known = {d for (d,) in Docket.select(Docket.id).tuples()}
    wanted = set()
    for number, (dockets, rins) in sorted(named.items()):
        others = {d for d in dockets if d in known}
        if rins:
            others |= {d for (d,) in Docket.select(Docket.id).where(Docket.rin.in_(rins)).tuples()}
        for other in others - {docket_id}:
            wanted |= {(docket_id, other, number), (other, docket_id, number)}
    stored = {(d, o) for d, o in LineageLink.select(LineageLink.docket, LineageLink.other)
              .where(LineageLink.via == "federal_register").tuples()}
    written = 0
    for docket, other, number in sorted(wanted):
        if (docket, other) in stored:
            continue
        LineageLink.insert(docket=docket, other=other, via="federal_register", value=number) \
            .on_conflict_ignore().execute()
        stored.add((docket, other))
        written += 1
    return written
