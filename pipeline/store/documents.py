"""A docket's documents as its resolve read them (``docket_document``) and its RIN: written
by fetch's resolve through the record normaliser, read by lineage, ``docketeer rule`` and the
docket page."""

from __future__ import annotations

import json
import logging

from peewee import fn

from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.errors import BadRecord, InvalidIdentifier
from pipeline.ids import validate_id
from pipeline.sources import record_checks, records
from pipeline.store import dockets
from pipeline.store.models import Docket, DocketDocument, DocketStage, MirrorObject, database

log = logging.getLogger("docketeer")

LINEAGE = "lineage"  # the stage whose input these rows are, beside backfill's output
COLUMNS = ("docket", "document_type", "fr_doc_num", "posted_at", "opens_at", "closes_at", "start", "end")


def lineage_rows(docket_id: str, documents: list[dict]) -> dict[str, dict]:
    """document id -> its row, for the records of ``documents`` that are the docket's own and
    readable; an unreadable one is left out here (fetch keeps its failure as its row)."""
    rows = {}
    for doc in documents:
        try:
            key = validate_id(doc.get("id"), "document id")
            owner = record_checks.docket_named(key, doc.get("attributes"))
            if owner is not None and owner != docket_id:
                continue
            rows[key] = {"docket": docket_id, **records.document_lineage(doc)}
        except (BadRecord, InvalidIdentifier) as exc:
            log.debug("%s: document left out of the lineage: %s", docket_id, exc)
    return rows


def save_documents(docket_id: str, documents: list[dict]) -> int:
    """The docket's document rows, each written only where new or changed; returns how many."""
    rows = lineage_rows(docket_id, documents)
    if not rows:
        return 0
    stored = {d.document: {c: getattr(d, c) for c in COLUMNS}
              for d in DocketDocument.select().where(DocketDocument.document.in_(sorted(rows)))}
    written = 0
    retyped = False
    with database.atomic():
        for key in sorted(rows):
            if stored.get(key) == rows[key]:
                continue
            values = {getattr(DocketDocument, c): rows[key][c] for c in COLUMNS}
            (DocketDocument.insert({DocketDocument.document: key, **values})
             .on_conflict(conflict_target=[DocketDocument.document], update=values).execute())
            counters.incr(ROWS_WRITTEN)
            written += 1
            retyped |= (stored.get(key) or {}).get("document_type") != rows[key]["document_type"]
        if retyped:
            # A document's type is lineage's input beside backfill's output (a comment's phase
            # is its document's): a type changed, or a document first read, leaves lineage owed
            # for the docket; its per-item fingerprints say which comments it re-ties.
            dockets.owe_stage(docket_id, LINEAGE)
    return written


def documents_of(docket_ids: list[str]) -> list[DocketDocument]:
    """The dockets' documents, in the order they were posted."""
    if not docket_ids:
        return []
    found = DocketDocument.select().where(DocketDocument.docket.in_(docket_ids))
    return sorted(found, key=lambda d: (d.posted_at or "", d.document))


def reread_stored_records() -> None:
    """Schema v15: the RIN and documents of dockets resolved before it, from the docket and
    documents JSON a mirror fetch keeps (``mirror_object.body``): no network. A docket whose
    records the store does not hold is marked by v17 (``mark_documents_unread``)."""
    by_docket: dict[str, list[dict]] = {}
    for docket_id, body in (MirrorObject.select(MirrorObject.docket, MirrorObject.body)
                            .where(MirrorObject.body.is_null(False)).tuples()):
        try:
            data = json.loads(body).get("data")
        except (ValueError, AttributeError):
            continue
        if not isinstance(data, dict):
            continue
        if data.get("type") == "dockets":
            try:
                rin = records.rin(records.attributes_of(data, "docket"))
            except BadRecord:
                continue
            if rin:
                Docket.update(rin=rin).where((Docket.id == docket_id) & Docket.rin.is_null()).execute()
        elif data.get("type") == "documents":
            by_docket.setdefault(docket_id, []).append(data)
    for docket_id, documents in sorted(by_docket.items()):
        save_documents(docket_id, documents)


# The markers that no longer vouch for a docket whose documents were never read: fetch's (its
# resolve is owed; its output goes too, so that the stage after it asks for fetch, and a
# run reaching a sealed docket through lineage's chain does the read first) and lineage's
# (its comments were tied with no document types: phase unknown).
UNREAD_DROPS = ("fetch", LINEAGE)


def mark_documents_unread() -> int:
    """Schema v17: mark the dockets resolved whose documents the store never read (fetched
    from the API before they were stored): no document row, and no mirror listing (a mirror-fed
    docket's were read by v15 from its stored JSON; one without any has none). Their fetch and
    lineage markers are dropped. Returns how many were marked. Two statements, no IN list."""
    has_documents = DocketDocument.select(DocketDocument.docket).where(DocketDocument.docket == Docket.id)
    mirrored = MirrorObject.select(MirrorObject.docket).where(MirrorObject.docket == Docket.id)
    marked = (Docket.update(documents_unread=1)
              .where(Docket.resolved_at.is_null(False) & ~fn.EXISTS(has_documents) & ~fn.EXISTS(mirrored))
              .execute())
    if marked:
        unread = Docket.select(Docket.id).where(Docket.documents_unread == 1)
        DocketStage.delete().where(DocketStage.docket.in_(unread) & DocketStage.stage.in_(UNREAD_DROPS)).execute()
        log.info("%d docket(s) fetched before their documents were stored: the next run reads them", marked)
    return marked
