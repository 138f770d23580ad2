"""`docketeer forget`: a docket leaves the known set, or leaves no trace with --purge; a docket
the source answers 404 for is recorded once as not found and skipped, not a failure every run."""

from __future__ import annotations

import logging

import pipeline
from pipeline.ops import cli, verify
from pipeline.store import dockets
from pipeline.store.models import (
    Attachment,
    Docket,
    DocketStage,
    Item,
    ItemState,
    Lease,
    OrganisationMember,
    Run,
)
from tests.fixtures.pipeline_fixtures import built_store


def _verify_passes(runtime) -> None:
    report = verify.run_checks(runtime, index_db=runtime.existing_index_db())
    assert report.passed, "\n".join(report.lines())


def _runs_of(docket: str) -> int:
    return Run.select().where(Run.docket == docket).count()


def _state_rows_of(docket: str) -> int:
    keys = Item.select(Item.key).where(Item.docket == docket)
    return sum(q.count() for q in (
        Item.select().where(Item.docket == docket), Attachment.select().where(Attachment.item.in_(keys)),
        ItemState.select().where(ItemState.docket == docket), DocketStage.select().where(DocketStage.docket == docket),
        Run.select().where(Run.docket == docket), Lease.select().where(Lease.docket == docket),
        Docket.select().where(Docket.id == docket)))


def test_a_docket_that_is_not_found_is_recorded_once_and_skipped(tmp_path, pg_server, caplog):
    with built_store(tmp_path, pg_server) as store:
        assert store.run(pipeline.IndexAll(docket="NOPE-2026-0001"))  # not a failure
        row = dockets.get_docket("NOPE-2026-0001")
        assert dockets.out_of_set(row) == dockets.NOT_FOUND
        assert "NOPE-2026-0001: not found upstream" in caplog.text
        assert "NOPE-2026-0001" not in dockets.all_docket_ids()
        runs = _runs_of("NOPE-2026-0001")
        caplog.clear()
        assert store.run(pipeline.IndexAll())  # the hourly run: nothing about it
        assert _runs_of("NOPE-2026-0001") == runs
        assert "NOPE-2026-0001" not in caplog.text


def test_forget_keeps_the_data_and_the_next_run_leaves_it_alone(tmp_path, pg_server, capsys, caplog):
    with built_store(tmp_path, pg_server) as store:
        gone, kept = store.dockets
        before = _state_rows_of(gone)
        assert cli.main(["forget", gone, "--dry-run"]) == 0
        assert gone in dockets.all_docket_ids()
        assert cli.main(["forget", gone]) == 0
        assert "forgotten; its data is kept" in capsys.readouterr().out
        assert dockets.all_docket_ids() == [kept]
        assert _state_rows_of(gone) == before
        runs = _runs_of(gone)
        caplog.clear()
        with caplog.at_level(logging.INFO):
            assert store.run(pipeline.IndexAll())
        assert _runs_of(gone) == runs
        assert kept in caplog.text and gone not in caplog.text  # the run names nothing of it


def test_forget_purge_leaves_no_row_blob_or_chunk_and_verify_passes(tmp_path, pg_server, capsys):
    with built_store(tmp_path, pg_server) as store:
        gone, kept = store.dockets
        rt = store.runtime
        assert store.run(pipeline.OrganisationsAll())
        assert OrganisationMember.select().where(OrganisationMember.docket == gone).count() > 0
        assert cli.main(["forget", gone, "--purge", "--dry-run"]) == 0
        assert "would delete" in capsys.readouterr().out
        assert _state_rows_of(gone) > 0
        assert cli.main(["forget", gone, "--purge"]) == 0
        assert "did delete" in capsys.readouterr().out
        assert _state_rows_of(gone) == 0
        assert OrganisationMember.select().where(OrganisationMember.docket == gone).count() == 0
        assert OrganisationMember.select().where(OrganisationMember.docket == kept).count() > 0
        assert not any(rt.index_db().docket_row_counts(gone).values())
        assert not list(rt.blobs.list(f"combined/{gone}/"))
        assert any(rt.index_db().docket_row_counts(kept).values())
        _verify_passes(rt)
        assert store.run(pipeline.IndexAll(docket=kept))
        assert cli.main(["forget", gone, "--purge"]) == 2  # nothing of it left to purge
