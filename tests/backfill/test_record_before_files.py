"""Nothing of a record waits for its files: a real comment JSON whose declared file the
mirror lacks (``DOS-2022-0004-0003``: its attachment is not in ../shared/realdata, as the
bucket often lags its JSON) is stored, extracted and indexed as soon as it is read; its file
waits on its own row, declared from the record; when the file arrives, that comment alone is
extracted and indexed again."""

from __future__ import annotations

import json
import shutil

import pymupdf
import pytest

from devtools.standin_server import StandinServer
from pipeline.index.database import SearchFilters
from pipeline.index.search import search
from pipeline.index.stage import TITLE_HEADING, embedder_from
from pipeline.reading import reports
from pipeline.store.models import Attachment, Item
from tests.fixtures.chain_runs import KEY, run_at, states
from tests.fixtures.state_fixtures import installed, make_runtime, new_pg_database

pytestmark = pytest.mark.postgres

LATE = "DOS-2022-0004-0003"
DOCKETS = ("DOS-2022-0004", "USTR-2015-0010")
ARRIVED_TEXT = "Raytheon asks that the definition of defense service keep its current scope."


def chunk_rows(runtime, key: str) -> list[tuple[str, str]]:
    """(section, text) of the item's chunks."""
    rows = (json.loads(line) for line in runtime.index_db().dump_chunks().splitlines())
    return [(row[6], row[4]) for row in rows if row[1] == key]


def extract_and_index_rows(runtime) -> dict[str, tuple]:
    """item -> its extract row and index state, timestamps included (what a redo rewrites)."""
    index = {}
    for docket in DOCKETS:
        for collection in ("comments", "documents"):
            for key, state in runtime.index_db().state_for_docket(collection, docket).items():
                index[key] = (state.fingerprint, state.indexed_at)
    rows = {}
    for docket in DOCKETS:
        for key, row in states("extract", docket).items():
            rows[key] = (row.content_hash, row.written_at, index.get(key))
    return rows


def test_a_real_comment_is_read_whole_at_once_and_redone_alone_when_its_file_arrives(tmp_path, pg_server, realdata):
    mirror = tmp_path / "mirror"
    for docket in DOCKETS:
        agency = docket.split("-")[0]
        shutil.copytree(realdata / f"mirror/raw-data/{agency}/{docket}", mirror / f"raw-data/{agency}/{docket}")
    with StandinServer(mirror, api_keys=(KEY,)) as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, api_key=KEY,
            discover="list", dockets=",".join(DOCKETS), source="mirror", mirror_url=str(mirror),
            extract_workers=1, ocr="false", http_attempts=1)) as runtime:
        runtime.state  # noqa: B018
        assert run_at(1)

        # The record, at once: body, organisation, received date and kept attributes.
        item = Item.get_by_id(LATE)
        assert (item.body, item.organization, item.received_date, item.tracking_nbr) == (
            "See attached file(s)", "Raytheon Technologies Corporation", "2022-05-09T04:00:00Z", "l2z-02tq-bsbu")
        backfill = states("backfill", "DOS-2022-0004")[LATE]
        assert backfill.state == "retry" and backfill.content_hash and "not in the mirror yet" in backfill.reason
        # Its file waits on its own row, declared from the record.
        assert states("backfill.file", "DOS-2022-0004")[f"{LATE}/attachment_1.pdf"].state == "missing"
        declared = Attachment.get((Attachment.item == LATE) & (Attachment.filename == "attachment_1.pdf"))
        assert (declared.sha256, declared.ordinal, declared.declared_size, declared.title) == (
            None, 1, 235577, "Raytheon Technologies Corp. Comments re DOS-2022-0004")
        file_rows = reports.file_rows_of(LATE)
        standing = reports.file_standing(declared, file_rows.get(("backfill.file", f"{LATE}/attachment_1.pdf")),
                                         file_rows.get(("extract.file", f"{LATE}/attachment_1.pdf")))
        assert reports.attachments_summary(reports.attachment_count(item, [declared]), [standing]) == (
            "1 attachment: 1 waiting for the mirror")
        # ... and it is found by its body, its title and its organisation, before any file.
        assert chunk_rows(runtime, LATE) == [(TITLE_HEADING, "Comment on DOS-2022-0004-0001"),
                                             ("Inline comment", "See attached file(s)")]
        embedder = embedder_from(runtime.settings)
        hits = search(runtime.index_db(), embedder, "See attached file(s)", k=5, per_item=True,
                      filters=SearchFilters(organization="Raytheon"))
        assert [hit.item_key for hit in hits] == [LATE]

        before = extract_and_index_rows(runtime)
        binary = mirror / f"raw-data/DOS/DOS-2022-0004/binary-DOS-2022-0004/comments_attachments/{LATE}_attachment_1.pdf"
        binary.parent.mkdir(parents=True, exist_ok=True)
        with pymupdf.open() as pdf:  # the mirror catches up
            pdf.new_page().insert_text((72, 72), ARRIVED_TEXT)
            binary.write_bytes(pdf.tobytes())
        assert run_at(3)  # its retry is due after one hour

        assert states("backfill", "DOS-2022-0004")[LATE].state == "ok"
        assert Attachment.get((Attachment.item == LATE) & (Attachment.filename == "attachment_1.pdf")).sha256
        after = extract_and_index_rows(runtime)
        changed = {key for key in after if after[key] != before.get(key)}
        assert changed == {LATE}  # only that comment was extracted and indexed again
        assert any(ARRIVED_TEXT in text for section, text in chunk_rows(runtime, LATE)
                   if section == "attachment_1.pdf")


def test_a_store_built_before_gets_the_kept_attributes_and_declared_rows_on_its_next_run(
        tmp_path, pg_server, realdata):
    """A state DB of schema v11 (no kept attributes, a row only per stored file) is upgraded in
    place; its next run reads every stored record again from the mirror (no API request for a
    detail or a file, no file fetched again) and stores what the records say."""
    from pipeline.store import db as state_db
    from pipeline.store.models import DocketStage, Meta

    mirror = tmp_path / "mirror"
    for docket in DOCKETS:
        agency = docket.split("-")[0]
        shutil.copytree(realdata / f"mirror/raw-data/{agency}/{docket}", mirror / f"raw-data/{agency}/{docket}")
    with StandinServer(mirror, api_keys=(KEY,)) as server, installed(make_runtime(
            tmp_path, index_url=new_pg_database(pg_server), api_base=server.api_base, api_key=KEY,
            discover="list", dockets=",".join(DOCKETS), source="mirror", mirror_url=str(mirror),
            extract_workers=1, ocr="false", http_attempts=1)) as runtime:
        db = runtime.state
        assert run_at(1)
        wanted = {i.key: tuple(getattr(i, f.name) for f in state_db.KEPT_COLUMNS) for i in Item.select()}
        declared = sorted((a.item, a.filename, a.declared_size) for a in Attachment.select())
        stored = {(a.item, a.filename): a.sha256 for a in Attachment.select() if a.sha256}
        assert wanted[LATE][:1] == (0,) and any(a[0] == LATE for a in declared)

        # The store as v11 left it: no kept columns, no row for a file not stored, and detail
        # hashes of records without the kept fields (another digest than today's).
        Attachment.delete().where(Attachment.sha256.is_null()).execute()
        for row in Item.select().where(Item.detail_hash.not_in(("gone", "failed"))):
            Item.update(detail_hash=f"v11:{row.detail_hash}").where(Item.key == row.key).execute()
        for field in state_db.KEPT_COLUMNS:
            db.execute_sql(f'ALTER TABLE item DROP COLUMN "{field.column_name}"')
        Meta.update(value="11").where(Meta.key == "schema_version").execute()
        state_db.ensure_schema(db)
        assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
        assert all(v is None for row in Item.select() for v in (row.tracking_nbr, row.duplicate_comments))
        assert not DocketStage.select().where(DocketStage.stage == "backfill").exists()

        server.reset_log()
        assert run_at(3)  # the DOS items, waiting for their files, are due to retry too
        details_or_files = [path for _, path, _ in server.request_log
                            if path.startswith(("/v4/comments/", "/v4/documents/", "/downloads/"))]
        assert details_or_files == []
        assert {i.key: tuple(getattr(i, f.name) for f in state_db.KEPT_COLUMNS) for i in Item.select()} == wanted
        assert sorted((a.item, a.filename, a.declared_size) for a in Attachment.select()) == declared
        assert {(a.item, a.filename): a.sha256 for a in Attachment.select() if a.sha256} == stored
