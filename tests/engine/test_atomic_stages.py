"""A stage declared ``atomic`` (the derived stages: campaigns, organisations, lineage, topics)
runs, writes its item states and its marker in one state-DB transaction: a run that fails
after writing leaves none of its rows and no marker, and its run row says why; the next run
does the whole work."""

from __future__ import annotations

import dataclasses

import pytest

from pipeline.engine import markers, registry
from pipeline.engine.docket_task import DocketStageTask
from pipeline.engine.stage import Stage
from pipeline.store import docket_failures, item_states
from pipeline.store.models import Run
from tests.fixtures import wordcount_stage
from tests.fixtures.pipeline_fixtures import built_store

FAIL: list[str] = []  # a message: the run raises it after writing every item's state


def count_then_fail(ctx, docket):
    result = wordcount_stage.count_words(ctx, docket)
    if FAIL:
        raise RuntimeError(FAIL[0])
    return result


ATOMIC = dataclasses.replace(wordcount_stage.DECLARATION, run=count_then_fail, atomic=True,
                             task="CountWordsAtomic", wrapper="CountWordsAtomicAll")


class CountWordsAtomic(DocketStageTask):
    stage = ATOMIC


def test_a_failed_run_of_an_atomic_stage_leaves_no_row_and_no_marker(tmp_path, pg_server):
    with registry.added(ATOMIC), built_store(tmp_path, pg_server, dockets=1, comments=6) as store:
        docket = store.dockets[0]
        texts = {k for k, r in item_states.states_for_docket("extract", docket).items() if r.content_hash}
        assert texts
        FAIL[:] = ["the disk said no"]
        try:
            store.run(CountWordsAtomic(docket=docket))  # the failure is recorded, not raised
        finally:
            FAIL.clear()
        assert item_states.states_for_docket("wordcount", docket) == {}  # rolled back, all of them
        assert markers.read_marker(docket, "wordcount") is None
        failed = Run.get((Run.stage == "wordcount") & (Run.docket == docket))
        assert failed.finished_at and failed.clean is False and "the disk said no" in failed.message
        [recorded] = docket_failures.current()
        assert (recorded.docket, recorded.stage) == (docket, "wordcount") and "the disk said no" in recorded.reason

        assert store.run(CountWordsAtomic(docket=docket))
        assert set(item_states.states_for_docket("wordcount", docket)) == texts
        assert markers.read_marker(docket, "wordcount") is not None
        assert docket_failures.current() == []  # cleared by the clean run


def test_an_atomic_stage_cannot_split_its_items():
    with pytest.raises(ValueError, match="cannot split its items"):
        Stage(name="x", upstream=None, run=count_then_fail, task="X", wrapper="XAll", atomic=True,
              splits_items=True)


def test_the_derived_stages_are_atomic_and_topics_read_organisations_and_the_index():
    derived = {s.name for s in registry.stages() if s.atomic}
    assert derived == {"campaigns", "organisations", "lineage", "topics", "sections", "positions"}
    assert registry.get("topics").reads == ("organisations", "index")
    assert all(registry.get(name).rows_agree is not None for name in derived)


SEEN: list[object] = []  # what the run found its prepare left, and whether prepare ran in a transaction


def prepare_outside(ctx, docket):
    from pipeline.store.models import Meta, database

    SEEN.append(database.in_transaction())
    Meta.insert(key=f"prepared:{docket.id}", value="paid for").on_conflict_replace().execute()
    ctx.prepared = "answers"


def read_prepared_then_fail(ctx, docket):
    SEEN.append(ctx.prepared)
    return count_then_fail(ctx, docket)


PREPARED = dataclasses.replace(ATOMIC, run=read_prepared_then_fail, prepare=prepare_outside,
                               task="CountWordsPrepared", wrapper="CountWordsPreparedAll")


class CountWordsPrepared(DocketStageTask):
    stage = PREPARED


def test_an_atomic_stages_prepare_runs_before_its_transaction_and_outlives_its_failure(tmp_path, pg_server):
    """What the prepare step writes (answers paid for) is kept when the run after it fails and
    its own rows are rolled back; the run finds what prepare left it."""
    from pipeline.store.models import Meta

    with registry.added(PREPARED), built_store(tmp_path, pg_server, dockets=1, comments=3) as store:
        docket = store.dockets[0]
        FAIL[:] = ["the model said no"]
        try:
            store.run(CountWordsPrepared(docket=docket))
        finally:
            FAIL.clear()
        assert SEEN == [False, "answers"]
        assert Meta.get_by_id(f"prepared:{docket}").value == "paid for"  # not rolled back
        assert item_states.states_for_docket("wordcount", docket) == {}  # the run's rows are
