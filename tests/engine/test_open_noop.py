"""An open docket in the next freshness window with nothing new: fetch asks the source once
and every later stage finishes in one probe, reading none of its item rows; a run that crosses
a window edge is judged in the window it started in."""

from __future__ import annotations

import dataclasses
from contextlib import ExitStack
from datetime import timedelta

import pytest

from pipeline import clock
from pipeline.counters import API_CALLS, ITEM_READS, STAGE_CALLS, counters
from pipeline.engine.docket_task import DocketStageTask
from pipeline.engine.markers import output_fingerprint
from pipeline.index.markers import IndexMarkers
from pipeline.store import docket_failures, item_states
from pipeline.store.models import Docket, ItemState
from tests.fixtures.core_stages import TOYFETCH, ToyAll, ToyFetch, toy_fetch
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.state_fixtures import run_invocation


@pytest.fixture(autouse=True)
def _statements_counted():
    with counters.counting_queries():
        yield


OLD_PULL = "2000-01-01T00:00:00.000000Z"  # "the next window": the last pull is long past


def _per_stage(monkeypatch) -> dict[str, dict]:
    """The counters of each stage task's whole run() (its skip check included)."""
    seen: dict[str, dict] = {}
    real_run = DocketStageTask.run

    def measured_run(task):
        with counters.measure() as io:
            real_run(task)
        seen[task.stage.name] = io

    monkeypatch.setattr(DocketStageTask, "run", measured_run)
    return seen


def test_next_window_nothing_new_reads_no_item_rows_after_fetch(tmp_path, pg_server, monkeypatch):
    with built_store(tmp_path, pg_server, dockets=1, comments=10) as store:
        # Its comment period still open, so the quiet docket does not seal itself.
        Docket.update(last_pull_at=OLD_PULL, comment_end_date="2099-12-31").execute()
        rows = list(ItemState.select().order_by(ItemState.stage, ItemState.item).tuples())
        per_stage = _per_stage(monkeypatch)
        with counters.measure() as io:
            assert store.run()
        assert io.get(API_CALLS) == 1 and io.get("api.comments.list") == 1
        assert io.get(STAGE_CALLS) == 1  # fetch's function only
        # IndexAll runs the follow-on stages too (campaigns, organisations, lineage, topics, sections, positions: on by default).
        assert set(per_stage) == {"fetch", "backfill", "extract", "ocr", "index", "campaigns", "organisations", "lineage",
                                  "topics", "sections", "positions"}
        # Fetch looks up what is stored of the one list page it got (hashes, failed rows):
        # not the docket's rows, nor its waiting items (it is nowhere near sealing).
        assert per_stage["fetch"].get(ITEM_READS) == 2, per_stage["fetch"]
        for stage in ("backfill", "extract", "ocr", "index", "campaigns", "organisations", "lineage", "topics", "sections", "positions"):
            assert per_stage[stage].get(ITEM_READS, 0) == 0, (stage, per_stage[stage])
        assert list(ItemState.select().order_by(ItemState.stage, ItemState.item).tuples()) == rows


def test_a_fetch_that_died_after_writing_rows_is_not_vouched_by_its_old_output(state, monkeypatch):
    monkeypatch.setenv("TOY_ITEMS", "3")
    assert run_invocation(ToyAll(docket="AB-2026-0001"))
    before = output_fingerprint("AB-2026-0001", "toyfetch")
    Docket.update(last_pull_at=OLD_PULL).execute()

    def dies_after_writing(ctx, docket):
        toy_fetch(ctx, docket)
        raise RuntimeError("killed after writing its rows")

    monkeypatch.setenv("TOY_ITEMS", "5")
    monkeypatch.setattr(ToyFetch, "stage", dataclasses.replace(TOYFETCH, run=dies_after_writing))
    # A failure of this docket stage, recorded (not a task Luigi sees fail).
    assert run_invocation(ToyFetch(docket="AB-2026-0001"))
    assert [(f.stage, f.reason) for f in docket_failures.current()] == [
        ("toyfetch", "RuntimeError: killed after writing its rows")]
    assert output_fingerprint("AB-2026-0001", "toyfetch") is None  # no output vouches for them
    Docket.update(last_pull_at=OLD_PULL).execute()  # the real fetch stamps its pull at the end
    monkeypatch.undo()
    monkeypatch.setenv("TOY_ITEMS", "5")
    # This fetch writes no row (they are all there): its output is read again, not kept.
    assert run_invocation(ToyAll(docket="AB-2026-0001"))
    assert output_fingerprint("AB-2026-0001", "toyfetch") not in (None, before)
    processed = item_states.states_for_docket("toyprocess", "AB-2026-0001")
    assert sorted(r.state for r in processed.values()) == ["ok"] * 5
    assert docket_failures.current() == []  # the fetch ran clean: its failure is over


def test_a_noop_fetch_keeps_its_output_without_reading_its_rows(state, monkeypatch):
    monkeypatch.setenv("TOY_ITEMS", "3")
    assert run_invocation(ToyAll(docket="AB-2026-0002"))
    before = output_fingerprint("AB-2026-0002", "toyfetch")
    Docket.update(last_pull_at=OLD_PULL).execute()
    with counters.measure() as io:
        assert run_invocation(ToyAll(docket="AB-2026-0002"))
    assert output_fingerprint("AB-2026-0002", "toyfetch") == before
    # The toy fetch reads its own rows once to compare; nothing else reads item rows.
    assert io.get(ITEM_READS) == 1, io


def test_a_run_crossing_a_window_edge_is_judged_in_the_window_it_started_in(tmp_path, pg_server, monkeypatch):
    with built_store(tmp_path, pg_server, dockets=1, comments=4) as store:
        window = store.runtime.settings.freshness_seconds
        now = clock.utcnow().timestamp()
        # Early in a window (one second in), whenever the test runs: only the move below crosses an edge.
        with clock.shifted(timedelta(seconds=window - now % window + 1)):
            Docket.update(sealed_at=None, last_pull_at=OLD_PULL, comment_end_date="2099-12-31").execute()
            assert store.run()  # the open docket pulled in this window, every stage recorded done
            real_judge = IndexMarkers.judge
            edge = ExitStack()

            def judged_then_the_window_ends(self, *args, **kwargs):
                judged = real_judge(self, *args, **kwargs)
                edge.enter_context(clock.shifted(timedelta(seconds=window)))  # the next window, mid-run
                return judged

            monkeypatch.setattr(IndexMarkers, "judge", judged_then_the_window_ends)
            with edge, counters.measure() as io:
                # IndexAll judges the index (done), then its campaigns in the next window:
                # one run, one window, so nothing is due, not even the open docket's pull.
                assert store.run()
            assert io.get(STAGE_CALLS, 0) == 0 and io.get(API_CALLS, 0) == 0, io
            monkeypatch.undo()
            with clock.shifted(timedelta(seconds=window)), counters.measure() as io:
                assert store.run()  # a run started in the next window pulls the open docket once
            assert io.get("api.comments.list") == 1, io
