"""A docket purged between two stages of a run (``docketeer forget --purge`` takes the lease of
no stage that is not running): the stages still scheduled for it step aside with one notice,
write nothing and fail nothing."""

from __future__ import annotations

import logging

import luigi

from pipeline.engine.invocation import Invocation
from pipeline.ops import forget
from pipeline.store.models import Item, ItemState, Run
from pipeline.tasks import BackfillComments, ExtractText
from tests.fixtures.pipeline_fixtures import built_store


def test_a_stage_of_a_docket_purged_mid_run_steps_aside_and_writes_nothing(tmp_path, pg_server, caplog):
    with built_store(tmp_path, pg_server, dockets=1, comments=3) as store:
        [docket] = store.dockets
        invocation = Invocation.of_process()
        invocation.note_scheduled({docket: None})  # a wrapper of this run scheduled it
        forget.forget(store.runtime, docket, purge_data=True)
        runs_before = Run.select().count()
        with caplog.at_level(logging.WARNING, logger="docketeer"):
            # The rest of the run, scheduled before the purge, runs all the same.
            assert luigi.build([ExtractText(docket=docket, invocation=invocation),
                                BackfillComments(docket=docket, invocation=invocation)],
                               local_scheduler=True, log_level="WARNING")
        assert "Traceback" not in caplog.text
        assert Item.select().where(Item.docket == docket).count() == 0
        assert ItemState.select().where(ItemState.docket == docket).count() == 0
        assert Run.select().count() == runs_before  # no row of a docket that is gone


def test_a_docket_never_known_is_still_an_error(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=2) as store:
        assert not store.run(ExtractText(docket="ZZ-2026-0001"))  # "unknown docket", as before
