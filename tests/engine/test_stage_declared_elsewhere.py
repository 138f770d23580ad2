"""A stage declared outside pipeline/ (tests/fixtures/wordcount_stage.py) joins the chain: its tasks are
made from its declaration, run in process like the real ones, are pruned once done, and
write a marker only when the stage owes nothing."""

from __future__ import annotations

import pytest
from luigi.task_register import Register

from pipeline.counters import COMBINED_READS, STAGE_CALLS, counters
from pipeline.engine import markers, registry
from pipeline.ops import verify
from pipeline.ops.redrive import redrivable_stages
from pipeline.store import item_states
from tests.fixtures import wordcount_stage
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.wordcount_stage import CountWords, CountWordsAll

REAL_CHAIN = ["fetch", "backfill", "extract", "ocr", "index", "campaigns"]


@pytest.fixture
def wordcount():
    with registry.added(wordcount_stage.DECLARATION):
        yield wordcount_stage
    wordcount_stage.LEAVE_OUT.clear()


def test_its_tasks_are_made_from_the_declaration_and_it_joins_the_chain(wordcount):
    assert Register.get_task_cls("CountWords") is CountWords
    assert Register.get_task_cls("CountWordsAll") is CountWordsAll
    assert CountWords.stage is wordcount.DECLARATION and CountWordsAll.stage_task is CountWords
    assert registry.names()[:6] == REAL_CHAIN and registry.names()[-1] == "wordcount"
    assert [s.name for s in registry.downstream("extract")] == ["ocr", "index", "campaigns", "topics", "sections",
                                                                "positions", "wordcount"]
    assert "wordcount" in redrivable_stages()


def test_it_runs_is_pruned_and_writes_a_marker_only_when_it_owes_nothing(tmp_path, pg_server, wordcount):
    with built_store(tmp_path, pg_server, dockets=1, comments=6) as store:
        docket = store.dockets[0]
        texts = {k for k, r in item_states.states_for_docket("extract", docket).items() if r.content_hash}
        left_out = sorted(texts)[0]
        wordcount.LEAVE_OUT.add(left_out)
        with counters.measure() as io:
            assert store.run(CountWordsAll(docket=docket))
        assert io[STAGE_CALLS] == 1  # extract and everything before it pruned by their targets
        assert io[COMBINED_READS] == len(texts) - 1
        assert set(item_states.states_for_docket("wordcount", docket)) == texts - {left_out}
        assert markers.read_marker(docket, "wordcount") is None  # it owes one item: no marker

        wordcount.LEAVE_OUT.clear()
        with counters.measure() as io:
            assert store.run(CountWordsAll(docket=docket))
        assert io[STAGE_CALLS] == 1 and io[COMBINED_READS] == 1  # only the item it owed
        assert set(item_states.states_for_docket("wordcount", docket)) == texts
        marker = markers.read_marker(docket, "wordcount")
        assert marker.input_fingerprint == markers.read_marker(docket, "extract").output_fingerprint

        with counters.measure() as io:
            assert store.run(CountWordsAll(docket=docket))
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(COMBINED_READS, 0) == 0
        report = verify.run_checks(store.runtime)
        assert report.passed, "\n".join(report.lines())
        assert "wordcount markers" in [c.name for c in report.checks]


def test_without_it_the_chain_is_the_real_one():
    assert registry.names()[:6] == REAL_CHAIN and "wordcount" not in registry.names()
    assert [s.name for s in registry.downstream("extract")] == ["ocr", "index", "campaigns", "topics", "sections",
                                                                "positions"]
