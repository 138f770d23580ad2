"""The state DB on SQLite and PostgreSQL: schema, upgrade, item rows in place, leases, seals."""

from __future__ import annotations

import peewee
import pytest
from playhouse.migrate import migrate

from pipeline.engine import leases
from pipeline.store import db as state_db
from pipeline.store import dockets, item_states
from pipeline.store.models import Attachment, ItemState, Meta, MirrorObject, Run


def test_schema_is_created_once_and_versioned(state):
    db = state.state
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    state_db.ensure_schema(db)  # idempotent
    assert Meta.select().where(Meta.key == "schema_version").count() == 1


def test_upgrade_from_version_1_adds_the_budget_column(state):
    db = state.state
    # Make the store look like a version-1 store: no budget_spent column, version row 1.
    db.execute_sql("ALTER TABLE run DROP COLUMN budget_spent")
    Meta.update(value="1").where(Meta.key == "schema_version").execute()
    assert "budget_spent" not in {c.name for c in db.get_columns("run")}
    state_db.ensure_schema(db)
    assert "budget_spent" in {c.name for c in db.get_columns("run")}
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    Run.insert(run_id="r", task="t", started_at="x").execute()
    assert Run.get(Run.run_id == "r").budget_spent is False


def _drop_judging_indexes(db) -> None:
    """As a store before v9 is: without the covering indexes (they name columns of v3)."""
    for name in (state_db.DOCKET_JUDGED_INDEX, state_db.DOCKET_STAGE_OUTPUT_INDEX):
        db.execute_sql(f'DROP INDEX "{name}"')


def test_upgrade_from_version_2_adds_the_retry_columns(state):
    db = state.state
    _drop_judging_indexes(db)
    for table, column in (("item_state", "attempts"), ("item_state", "first_failed_at"),
                          ("item_state", "next_attempt_at"), ("docket", "retry_due_at")):
        db.execute_sql(f"ALTER TABLE {table} DROP COLUMN {column}")
    Meta.update(value="2").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert {"attempts", "first_failed_at", "next_attempt_at"} <= {c.name for c in db.get_columns("item_state")}
    assert "retry_due_at" in {c.name for c in db.get_columns("docket")}
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION


def test_upgrade_from_version_3_adds_the_original_body_and_attachment_titles(state):
    db = state.state
    db.execute_sql("ALTER TABLE item DROP COLUMN body_html")
    db.execute_sql("ALTER TABLE attachment DROP COLUMN title")
    Meta.update(value="3").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert "body_html" in {c.name for c in db.get_columns("item")}
    assert "title" in {c.name for c in db.get_columns("attachment")}
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    Attachment.insert(item="X-1", filename="attachment_1.pdf", title="A letter").execute()
    assert Attachment.get(Attachment.item == "X-1").title == "A letter"


def test_upgrade_from_version_4_adds_the_mirror_objects_table(state):
    db = state.state
    db.drop_tables([MirrorObject])
    Meta.update(value="4").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION  # v5 and every later upgrade
    MirrorObject.insert(key="raw-data/A/x.json", docket="A-1", size=1, modified="1", state="listed",
                        seen_at="2026-01-01T00:00:00Z").execute()
    assert MirrorObject.get_by_id("raw-data/A/x.json").size == 1


def test_item_state_is_one_row_transitioned_in_place(state):
    dockets.ensure_dockets(["AB-2026-0001"], "list")
    item_states.mark_pending("extract", "AB-2026-0001-0002", "AB-2026-0001", run_id="r1", reason="x")
    item_states.transition("extract", "AB-2026-0001-0002", "AB-2026-0001", "ok", run_id="r1",
                           fingerprint="f", content_hash="h")
    item_states.transition("extract", "AB-2026-0001-0002", "AB-2026-0001", "failed", run_id="r2",
                           reason="corrupt")
    rows = list(ItemState.select())
    assert len(rows) == 1 and rows[0].state == "failed" and rows[0].run_id == "r2"
    assert rows[0].reason == "corrupt"


def test_many_rows_are_written_in_place_in_one_counted_statement(state):
    from pipeline.counters import ROWS_WRITTEN, counters

    dockets.ensure_dockets(["AB-2026-0001"], "list")
    item_states.transition("extract", "AB-2026-0001-0001", "AB-2026-0001", "failed", run_id="r1",
                           reason="corrupt", fingerprint="old")

    def row(item, state, **extra):
        return {"stage": "extract", "item": item, "docket": "AB-2026-0001", "state": state,
                "run_id": "r2", **extra}

    with counters.measure() as written:
        assert item_states.transition_many([
            row("AB-2026-0001-0001", "pending"),
            row("AB-2026-0001-0002", "ok", fingerprint="f2", content_hash="h2", detail="pages=3"),
            row("AB-2026-0001-0001", "ok", fingerprint="f1", content_hash="h1"),  # the later wins
        ]) == 2
    assert written.get(ROWS_WRITTEN) == 1
    got = {r.item: (r.state, r.fingerprint, r.content_hash, r.reason, r.detail, r.run_id)
           for r in ItemState.select()}
    assert got == {
        "AB-2026-0001-0001": ("ok", "f1", "h1", None, None, "r2"),  # replaced whole, reason gone
        "AB-2026-0001-0002": ("ok", "f2", "h2", None, "pages=3", "r2"),
    }
    assert item_states.transition_many([]) == 0


def test_lookups_by_many_keys_read_the_docket_instead(state, monkeypatch):
    """Past KEYS_IN_QUERY keys, bodies and attachments come from one docket-wide query (an
    IN list that long is slow to build, and SQLite refuses one of over 250,000 keys)."""
    from pipeline.store import items
    from pipeline.store.models import Attachment, Item

    dockets.ensure_dockets(["AB-2026-0001", "AB-2026-0002"], "list")
    for docket in ("AB-2026-0001", "AB-2026-0002"):
        for n in range(1, 5):
            key = f"{docket}-{n:04d}"
            Item.insert(key=key, docket=docket, kind="comment", body=f"body {key}",
                        created_at="t", updated_at="t").execute()
            Attachment.insert(item=key, filename=f"attachment_{n}.pdf", ordinal=1).execute()
    wanted = ["AB-2026-0001-0001", "AB-2026-0001-0003", "AB-2026-0001-0004"]
    few = (items.bodies_of("AB-2026-0001", wanted), items.attachments_of(wanted, "AB-2026-0001"))
    monkeypatch.setattr(items, "KEYS_IN_QUERY", 2)
    many = (items.bodies_of("AB-2026-0001", wanted), items.attachments_of(wanted, "AB-2026-0001"))

    assert few[0] == many[0] == {key: f"body {key}" for key in wanted}
    assert {k: [a.filename for a in v] for k, v in few[1].items()} == \
        {k: [a.filename for a in v] for k, v in many[1].items()} == \
        {key: [f"attachment_{int(key[-4:])}.pdf"] for key in wanted}


def test_ensure_dockets_leaves_known_rows_alone(state):
    assert dockets.ensure_dockets(["AB-2026-0001", "AB-2026-0002"], "list") == 2
    dockets.seal("AB-2026-0001", "manual")
    assert dockets.ensure_dockets(["AB-2026-0001", "AB-2026-0003"], "list") == 1
    assert dockets.get_docket("AB-2026-0001").sealed_at is not None


def test_unsafe_docket_ids_are_refused(state):
    from pipeline.errors import InvalidIdentifier

    for bad in ["../etc", "a/b", "x\x00y", ""]:
        with pytest.raises(InvalidIdentifier):
            dockets.ensure_dockets([bad], "list")


def test_seal_records_reason_and_counts_and_unseal_clears(state):
    dockets.ensure_dockets(["AB-2026-0001"], "list")
    item_states.transition("fetch", "AB-2026-0001-0002", "AB-2026-0001", "ok", run_id="r")
    sealed_at = dockets.seal("AB-2026-0001", "manual")
    row = dockets.get_docket("AB-2026-0001")
    assert row.sealed_at == sealed_at and row.seal_reason == "manual"
    assert '"fetch": {"ok": 1}' in row.counts_at_seal
    assert dockets.seal("AB-2026-0001", "auto") == sealed_at  # sealing twice keeps the first seal
    assert dockets.unseal("AB-2026-0001")
    assert dockets.get_docket("AB-2026-0001").sealed_at is None
    with pytest.raises(ValueError):
        dockets.seal("AB-2026-0001", "because")


def test_lease_is_exclusive_and_released_only_by_its_holder(state):
    from pipeline.errors import LeaseHeld

    token = leases.acquire("extract", "AB-2026-0001", 60)
    with pytest.raises(LeaseHeld):
        leases.acquire("extract", "AB-2026-0001", 60)
    leases.release("extract", "AB-2026-0001", "not-the-token")
    with pytest.raises(LeaseHeld):
        leases.acquire("extract", "AB-2026-0001", 60)
    leases.release("extract", "AB-2026-0001", token)
    leases.release("extract", "AB-2026-0001", leases.acquire("extract", "AB-2026-0001", 60))


def test_expired_lease_and_dead_holder_are_taken_over(state):
    from pipeline.store.models import Lease

    leases.acquire("extract", "D-1", -1)  # already expired
    leases.acquire("extract", "D-1", 60)  # taken over
    Lease.update(holder=f"{leases.holder_name().rpartition(':')[0]}:999999").execute()
    leases.acquire("extract", "D-1", 60)  # the holder pid is dead on this host


def test_unreachable_state_url_is_one_clear_error(tmp_path):
    from pipeline.errors import ConfigError

    with pytest.raises(ConfigError) as info:
        state_db.open_state_db("postgresql://nobody@127.0.0.1:1/none", tmp_path)
    assert "cannot open state DB" in str(info.value) and "\n" not in str(info.value)


def test_writes_are_counted(state):
    from pipeline.counters import ROWS_WRITTEN, counters

    with counters.measure() as delta:
        dockets.ensure_dockets(["AB-2026-0009"], "list")
        dockets.get_docket("AB-2026-0009")
    assert delta.get(ROWS_WRITTEN) == 1
    assert isinstance(state.state, peewee.Database)


def test_lease_renewal_only_by_its_holder(state):
    from pipeline.store.models import Lease

    token = leases.acquire("index", "D-2", 60)
    before = Lease.get().expires_at
    assert not leases.renew("index", "D-2", "not-the-token", 3600)
    assert Lease.get().expires_at == before
    assert leases.renew("index", "D-2", token, 3600)
    assert Lease.get().expires_at > before


def test_a_new_docket_row_names_its_agency_also_for_frdoc_dockets(state):
    from pipeline.sources.mirror import default_agency
    from pipeline.store.models import Docket

    dockets.ensure_dockets(["ACF-2025-0038", "USTR_FRDOC_0001", "EPA-HQ-OAR-2021-0317"], "list")
    agencies = {d.id: d.agency for d in Docket.select()}
    assert agencies == {"ACF-2025-0038": "ACF", "USTR_FRDOC_0001": "USTR", "EPA-HQ-OAR-2021-0317": "EPA"}
    assert default_agency("USTR_FRDOC_0001") == "USTR"  # where the mirror files it


def test_upgrade_from_version_4_adds_the_campaign_tables(state):
    db = state.state
    for table in ("campaign_member", "campaign_band", "campaign"):
        db.execute_sql(f"DROP TABLE {table}")
    Meta.update(value="4").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)  # v5 (reserved for the mirror-object table) and v6
    assert {"campaign_member", "campaign_band", "campaign"} <= set(db.get_tables())
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION  # v6 and every later upgrade


def _index_names(db, table: str) -> set[str]:
    return {index.name for index in db.get_indexes(table)}


def test_upgrade_from_version_8_adds_the_judging_indexes(state):
    db = state.state
    dockets.ensure_dockets(["ACF-2025-0001"], discovered_by="list")
    _drop_judging_indexes(db)
    Meta.update(value="8").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.DOCKET_JUDGED_INDEX in _index_names(db, "docket")
    assert state_db.DOCKET_STAGE_OUTPUT_INDEX in _index_names(db, "docket_stage")
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert dockets.get_docket("ACF-2025-0001") is not None  # rows kept


def test_upgrade_from_version_9_adds_the_mirror_scan_table(state):
    from pipeline.store.models import MirrorScan

    db = state.state
    db.drop_tables([MirrorScan])
    Meta.update(value="9").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert "mirror_scan" in set(db.get_tables())
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION


def test_upgrade_from_version_10_files_mirror_objects_by_item_later(state):
    """v11 adds ``mirror_object.item`` and its index; the rows kept are left unfiled (None),
    for the first backfill of their docket to file (no pass over every row at the upgrade)."""
    from pipeline.sources.mirror import ListedObject
    from pipeline.store import mirror_objects

    db = state.state
    key = "raw-data/EPA/EPA-HQ-2026-0001/text-EPA-HQ-2026-0001/comments/EPA-HQ-2026-0001-0002.json"
    mirror_objects.record_listed("EPA-HQ-2026-0001", [ListedObject(key, 10, None, "1")], "2026-12-01T00:00:00Z")
    table = MirrorObject._meta.table_name
    for index in db.get_indexes(table):
        if index.columns == ["docket", "item"]:
            db.execute_sql(f'DROP INDEX "{index.name}"')
    migrate(state_db._migrator(db).drop_column(table, "item"))
    Meta.update(value="10").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert "item" in {c.name for c in db.get_columns(table)}
    assert any(index.columns == ["docket", "item"] for index in db.get_indexes(table))
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert list(mirror_objects.unfiled("EPA-HQ-2026-0001")) == [[key]]  # the row kept, to be filed
    mirror_objects.file([("EPA-HQ-2026-0001-0002", key)])
    assert mirror_objects.objects_of("EPA-HQ-2026-0001", ["EPA-HQ-2026-0001-0002"]) == [(key, 10, None, "1")]
    assert list(mirror_objects.unfiled("EPA-HQ-2026-0001")) == []


def test_upgrade_from_version_11_adds_the_kept_attributes_and_reads_stored_records_again(state):
    """v12 adds the attributes people filter and count by and whether the record listed its
    attachments; every item whose record is stored is read again by the next backfill (its
    detail no longer current), those whose record failed or is gone are not, and the markers
    of backfill and the stages after it are dropped (sealed dockets are read again too)."""
    from pipeline.store.models import DocketStage, Item

    db = state.state
    now = "2026-12-01T00:00:00Z"
    for key, detail in (("X-1", "d1"), ("X-2", "gone"), ("X-3", "failed"), ("X-4", None)):
        Item.insert(key=key, docket="X", kind="comment", summary_hash="s", detail_hash=detail,
                    detail_summary_hash="s" if detail else None, created_at=now, updated_at=now).execute()
    for stage in ("fetch", "backfill", "extract", "campaigns"):
        DocketStage.insert(docket="X", stage=stage, version=1, completed_at=now).execute()
    for field in state_db.KEPT_COLUMNS:
        migrate(state_db._migrator(db).drop_column(Item._meta.table_name, field.column_name))
    Meta.update(value="11").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert {f.column_name for f in state_db.KEPT_COLUMNS} <= {c.name for c in db.get_columns("item")}
    assert {i.key: i.detail_summary_hash for i in Item.select()} == {"X-1": None, "X-2": "s", "X-3": "s", "X-4": None}
    assert [m.stage for m in DocketStage.select()] == ["fetch"]
    Item.update(duplicate_comments=15851, subtype="Mass Mail Campaign").where(Item.key == "X-1").execute()
    assert (Item.get_by_id("X-1").duplicate_comments, Item.get_by_id("X-1").subtype) == (15851, "Mass Mail Campaign")


def test_upgrade_from_version_18_adds_more_record_columns_and_redoes_nothing(state):
    """v19 adds the submitter's city and representative, the withdrawal and restriction
    reasons and the page count; no record is read again and no marker is dropped (a record
    read later fills them)."""
    from pipeline.store.models import DocketStage, Item

    db = state.state
    now = "2026-12-01T00:00:00Z"
    for key, detail in (("X-1", "d1"), ("X-2", "gone"), ("X-3", None)):
        Item.insert(key=key, docket="X", kind="comment", summary_hash="s", detail_hash=detail,
                    detail_summary_hash="s" if detail else None, tracking_nbr="t", created_at=now,
                    updated_at=now).execute()
    for stage in ("fetch", "backfill", "extract", "campaigns"):
        DocketStage.insert(docket="X", stage=stage, version=1, completed_at=now).execute()
    for field in state_db.RECORD_COLUMNS:
        migrate(state_db._migrator(db).drop_column(Item._meta.table_name, field.column_name))
    Meta.update(value="18").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION  # v19 and every later upgrade
    assert {f.column_name for f in state_db.RECORD_COLUMNS} <= {c.name for c in db.get_columns("item")}
    assert {i.key: i.detail_summary_hash for i in Item.select()} == {"X-1": "s", "X-2": "s", "X-3": None}
    assert {i.tracking_nbr for i in Item.select()} == {"t"}  # what the rows held is kept
    assert sorted(m.stage for m in DocketStage.select()) == ["backfill", "campaigns", "extract", "fetch"]
    Item.update(city="Washington", page_count=31).where(Item.key == "X-1").execute()
    assert (Item.get_by_id("X-1").city, Item.get_by_id("X-1").page_count) == ("Washington", 31)


def test_upgrade_from_version_20_adds_the_docket_stage_failures_table_and_keeps_every_row(state):
    """v21: docket stage failures, a new table; nothing else is touched."""
    from pipeline.store import docket_failures
    from pipeline.store.models import DocketFailure, DocketStage

    db = state.state
    now = "2026-12-01T00:00:00Z"
    dockets.ensure_dockets(["ACF-2025-0001"], discovered_by="list")
    DocketStage.insert(docket="ACF-2025-0001", stage="fetch", version=1, completed_at=now).execute()
    db.drop_tables([DocketFailure])
    Meta.update(value="20").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert "docket_failure" in set(db.get_tables())
    assert [m.stage for m in DocketStage.select()] == ["fetch"]
    assert docket_failures.current() == []
    docket_failures.record("ACF-2025-0001", "topics", "ValueError: too few", "r1", now)
    docket_failures.record("ACF-2025-0001", "topics", "ValueError: still too few", "r2", "2026-12-01T01:00:00Z")
    [row] = docket_failures.current()
    assert (row.reason, row.attempts, row.first_failed_at, row.run_id) == ("ValueError: still too few", 2, now, "r2")


def test_upgrade_from_version_21_adds_the_sections_tables_and_keeps_every_row(state):
    """v22: a rule document's sections and the comments tied to them, new tables; the next run
    of the sections stage fills them (no marker of it exists yet)."""
    from pipeline.store.models import DocketStage, DocumentSection, SectionLink

    db = state.state
    dockets.ensure_dockets(["ACF-2025-0001"], discovered_by="list")
    DocketStage.insert(docket="ACF-2025-0001", stage="topics", version=1, completed_at="2026-12-01T00:00:00Z").execute()
    db.drop_tables([DocumentSection, SectionLink])
    Meta.update(value="21").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert {"document_section", "section_link"} <= set(db.get_tables())
    assert [m.stage for m in DocketStage.select()] == ["topics"]
    assert DocumentSection.select().count() == SectionLink.select().count() == 0


def test_upgrade_from_version_12_adds_the_organisation_tables_and_keeps_every_row(state):
    from pipeline.store.models import (
        Organisation,
        OrganisationAcronym,
        OrganisationMember,
        OrganisationVariant,
    )

    db = state.state
    dockets.ensure_dockets(["ACF-2025-0001"], discovered_by="list")
    db.drop_tables([Organisation, OrganisationVariant, OrganisationMember, OrganisationAcronym])
    Meta.update(value="12").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert {"organisation", "organisation_variant", "organisation_member", "organisation_acronym"} <= set(db.get_tables())
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert dockets.get_docket("ACF-2025-0001") is not None
    Organisation.insert(id="org-1", name="Sierra Club", normalised="sierra club").execute()
    assert Organisation.get_by_id("org-1").name == "Sierra Club"


def test_upgrade_from_version_19_adds_the_organisation_evidence_column_and_keeps_the_members(state):
    """v20: each organisation member keeps the line its name was read from; the rows stored
    stay (evidence NULL) until the stage's new resolver version resolves the comment again,
    and the organisations markers go so that a sealed docket is resolved again too."""
    from pipeline.store.models import DocketStage, OrganisationMember

    db = state.state
    OrganisationMember.insert(item="X-1", position=0, docket="X", organisation="org-1", variant="acme association",
                              written="Acme Association", source="signature", whole="acme association").execute()
    for stage in ("backfill", "organisations"):
        DocketStage.insert(docket="X", stage=stage, version=1, completed_at="2026-12-01T00:00:00Z").execute()
    migrate(state_db._migrator(db).drop_column(OrganisationMember._meta.table_name, "evidence"))
    Meta.update(value="19").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    assert "evidence" in {c.name for c in db.get_columns(OrganisationMember._meta.table_name)}
    [row] = OrganisationMember.select()
    assert (row.written, row.evidence) == ("Acme Association", None)
    assert [m.stage for m in DocketStage.select()] == ["backfill"]


def test_upgrade_from_version_23_adds_the_judge_table_and_columns_and_keeps_every_position(state):
    """v24: the language-model judge's answers (a new table) and each position member's judged
    position, evidence and quote check (new columns, empty); the members and codes are kept."""
    from pipeline.store.models import PositionCode, PositionJudgement, PositionMember

    db = state.state
    dockets.ensure_dockets(["ACF-2025-0001"], discovered_by="list")
    PositionCode.insert(item="ACF-2025-0001-0001", docket="ACF-2025-0001", position="oppose", coder="ana",
                        coded_at="2026-12-01T00:00:00Z").execute()
    PositionMember.insert(item="ACF-2025-0001-0001", docket="ACF-2025-0001", position="oppose", source="coded",
                          probability=1.0, unit="ACF-2025-0001-0001", submissions=1).execute()
    db.drop_tables([PositionJudgement])
    migrate(*(state_db._migrator(db).drop_column("position_member", c) for c in ("judged", "evidence", "quote")))
    assert {"judged", "evidence", "quote"}.isdisjoint(c.name for c in db.get_columns("position_member"))
    Meta.update(value="23").where(Meta.key == "schema_version").execute()
    state_db.ensure_schema(db)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION == 24
    assert "position_judgement" in set(db.get_tables()) and PositionJudgement.select().count() == 0
    [member] = PositionMember.select()
    assert (member.position, member.source, member.judged, member.evidence, member.quote) == ("oppose", "coded", "", "", "")
    assert PositionCode.select().count() == 1
