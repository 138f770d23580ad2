"""A docket's documents and RIN as resolve stores them (``docket_document``, ``docket.rin``), and
the schema v15 upgrade reading them from the records the store already holds (the mirror's
docket and documents JSON), with no network."""

from __future__ import annotations

import json

from pipeline.store import db as state_db
from pipeline.store import dockets
from pipeline.store.documents import save_documents
from pipeline.store.models import (
    Docket,
    DocketDocument,
    LineageComment,
    LineageLink,
    Meta,
    MirrorObject,
)

DOS = "DOS/DOS-2022-0004/text-DOS-2022-0004"


def test_upgrade_to_15_reads_the_stored_mirror_records_without_the_network(state, realdata):
    db = state.state
    dockets.ensure_dockets(["DOS-2022-0004"], discovered_by="list")
    db.drop_tables([DocketDocument, LineageComment, LineageLink])
    db.execute_sql('DROP INDEX IF EXISTS "docket_rin"')
    db.execute_sql("ALTER TABLE docket DROP COLUMN rin")
    Meta.update(value="13").where(Meta.key == "schema_version").execute()
    root = realdata / "mirror" / "raw-data"
    for key, item in ((f"{DOS}/docket/DOS-2022-0004.json", ""),
                      (f"{DOS}/documents/DOS-2022-0004-0001.json", "DOS-2022-0004-0001")):
        MirrorObject.insert(key=key, docket="DOS-2022-0004", size=1, modified="1", state="listed", seen_at="x",
                            body=(root / key).read_text(), item=item).execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert Docket.get_by_id("DOS-2022-0004").rin == "1400-AE27"
    [doc] = DocketDocument.select()
    assert (doc.document, doc.document_type, doc.fr_doc_num, doc.start, doc.end) == \
        ("DOS-2022-0004-0001", "Rule", "2022-05629", "2022-03-23", "2022-05-09")


def test_documents_are_written_only_where_changed(state, realdata):
    dockets.ensure_dockets(["USTR-2015-0010"], discovered_by="list")
    folder = realdata / "mirror" / "raw-data" / "USTR" / "USTR-2015-0010" / "text-USTR-2015-0010" / "documents"
    records = [json.loads(p.read_text())["data"] for p in sorted(folder.glob("*.json"))]
    assert save_documents("USTR-2015-0010", records) == 4
    assert save_documents("USTR-2015-0010", records) == 0
    records[0]["attributes"]["documentType"] = "Proposed Rule"
    assert save_documents("USTR-2015-0010", records) == 1
    # Another docket's document is never taken in.
    assert save_documents("ACF-2025-0038", records) == 0


def _stored_at_16(db) -> None:
    """The store as schema 16 left it: no ``documents_unread`` column."""
    db.execute_sql("ALTER TABLE docket DROP COLUMN documents_unread")
    Meta.update(value="16").where(Meta.key == "schema_version").execute()


def test_upgrade_to_17_marks_only_api_fetched_dockets_whose_documents_were_never_read(state):
    from pipeline.engine import markers

    db = state.state
    ids = ["API-2020-0001", "MIRROR-2020-0001", "READ-2020-0001", "NEW-2020-0001"]
    dockets.ensure_dockets(ids, discovered_by="list")
    Docket.update(resolved_at="2025-01-01T00:00:00Z").where(Docket.id != "NEW-2020-0001").execute()
    # A mirror-fed docket (its listing stored, no documents JSON among it) and one whose
    # documents a resolve stored: neither is asked again.
    MirrorObject.insert(key="m/MIRROR-2020-0001/x.json", docket="MIRROR-2020-0001", size=1, modified="1",
                        state="listed", seen_at="x", item="").execute()
    DocketDocument.insert(document="READ-2020-0001-0001", docket="READ-2020-0001", document_type="Rule").execute()
    for docket_id in ids:
        for stage in ("fetch", "backfill", "lineage"):
            markers.write_marker(docket_id, stage, version=1, sealed_at=None, input_fingerprint="i",
                                 output_fingerprint="o", run_id="r")
    _stored_at_16(db)
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert {d.id: d.documents_unread for d in Docket.select()} == {
        "API-2020-0001": 1, "MIRROR-2020-0001": None, "READ-2020-0001": None, "NEW-2020-0001": None}
    # Only the marked docket's fetch and lineage markers are gone; backfill's stays.
    kept = {(m.docket, m.stage) for m in markers.DocketStage.select()}
    assert kept == {(d, s) for d in ids for s in ("fetch", "backfill", "lineage")} - {
        ("API-2020-0001", "fetch"), ("API-2020-0001", "lineage")}
