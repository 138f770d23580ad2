"""A no-op ``IndexAll`` reads each store once: the index and every follow-on stage judged in
one state-DB statement and one index-DB statement, the verdicts kept for the run; a marker
written or cleared in the run makes the next judgement read again."""

from __future__ import annotations

import logging

import pytest

from benchmarks.sealed_state import build_sealed, docket_ids
from pipeline.clock import iso, utcnow
from pipeline.counters import (
    COMPLETION_READS_INDEX,
    COMPLETION_READS_STATE,
    STATE_QUERIES,
    counters,
)
from pipeline.engine import registry, run_judgements
from pipeline.engine.docket_task import DocketStageTask
from pipeline.engine.invocation import Invocation
from pipeline.engine.markers import clear_marker, read_marker, write_marker
from pipeline.runtime import set_runtime
from pipeline.tasks import CampaignGroups, IndexAll, TopicMap, follow_on_stages
from tests.fixtures.state_fixtures import make_runtime, new_pg_database, run_invocation


@pytest.fixture(autouse=True)
def _statements_counted():
    with counters.counting_queries():
        yield


@pytest.fixture(params=["sqlite", "postgres"])
def sealed_runtime(request, tmp_path, pg_server):
    """A state DB on SQLite or on PostgreSQL (the statement's bit arithmetic, its union's
    types), the index DB on PostgreSQL."""
    state_url = new_pg_database(pg_server) if request.param == "postgres" else ""
    rt = make_runtime(tmp_path, state_url, index_url=new_pg_database(pg_server),
                      api_base="http://127.0.0.1:9/v4")
    set_runtime(rt)
    rt.state  # noqa: B018 - open (and create) the state DB and bind the models
    yield rt
    rt.close()


def _reads(io: dict) -> tuple[int, int]:
    return io.get(COMPLETION_READS_STATE, 0), io.get(COMPLETION_READS_INDEX, 0)


def _stale(docket: str, stage: str) -> None:
    """The stage's marker for the docket no longer vouches for its input (a changed input)."""
    marker = read_marker(docket, stage)
    write_marker(docket, stage, version=marker.version, sealed_at=marker.sealed_at,
                 input_fingerprint="an input it no longer has", output_fingerprint=marker.output_fingerprint,
                 run_id=marker.run_id)


def _pending_of_each_wrapper() -> dict[str, set[str]]:
    """What IndexAll and each of its follow-on wrappers schedule, in a new invocation."""
    Invocation.start_in_process()
    index_all = IndexAll()
    pending = {"index": {t.docket for t in index_all.docket_tasks()}}
    for wrapper in index_all.follow_ons():
        pending[wrapper.stage_task.stage.name] = {t.docket for t in wrapper.docket_tasks()}
    return pending


def test_a_noop_index_all_issues_one_completion_statement_per_store(sealed_runtime, caplog):
    ids = docket_ids(15)
    build_sealed(sealed_runtime.index_db(), ids, 30)
    with caplog.at_level(logging.INFO, logger="docketeer"), counters.measure() as io:
        assert run_invocation(IndexAll())
    assert _reads(io) == (1, 1)  # the index and its six follow-on stages, judged together
    skipped = [r.getMessage() for r in caplog.records if "complete, skipped" in r.getMessage()]
    wrappers = ["IndexAll", *(wrapper.__name__ for wrapper, _ in follow_on_stages())]
    assert [line.split(":")[0] for line in skipped] == wrappers  # each judged, every docket done
    assert all(line.startswith(f"{w}: 15 dockets complete") for w, line in zip(wrappers, skipped, strict=True))
    build_sealed(sealed_runtime.index_db(), docket_ids(60)[15:], 45)
    with counters.measure() as many:
        assert run_invocation(IndexAll())
    assert _reads(many) == (1, 1)
    assert many.get(STATE_QUERIES) == io.get(STATE_QUERIES)  # whatever the number of dockets


def test_a_stale_marker_for_one_stage_of_one_docket_still_makes_that_stage_run(sealed_runtime, monkeypatch):
    ids = docket_ids(8)
    build_sealed(sealed_runtime.index_db(), ids, 8)
    _stale(ids[2], "topics")
    _stale(ids[5], "campaigns")
    before = read_marker(ids[5], "campaigns").output_fingerprint
    with counters.measure() as io:
        pending = _pending_of_each_wrapper()
    assert _reads(io) == (1, 1)
    assert pending == {"index": set(), "campaigns": {ids[5]}, "organisations": set(), "lineage": set(),
                       "topics": {ids[2]}, "sections": set(), "positions": set()}
    ran: list[tuple[str, str]] = []
    real_run = DocketStageTask.run

    def recorded(task):
        ran.append((task.stage.name, task.docket))
        return real_run(task)

    monkeypatch.setattr(DocketStageTask, "run", recorded)
    assert run_invocation(IndexAll())
    assert sorted(ran) == [("campaigns", ids[5]), ("topics", ids[2])]
    assert read_marker(ids[2], "topics").input_fingerprint != "an input it no longer has"
    campaigns_output = read_marker(ids[5], "campaigns").output_fingerprint
    assert campaigns_output != before  # its rows as campaigns writes them, not as the build did
    with counters.measure() as io:
        after = _pending_of_each_wrapper()
    assert _reads(io) == (1, 1)
    # Done now, but for the stages reading campaigns' changed output: the next run's.
    assert after == {**{stage: set() for stage in pending}, "topics": {ids[5]}, "positions": {ids[5]}}


def _judged(invocation: Invocation, runtime, stage: str):
    """The verdict of ``stage`` as IndexAll's run judges it (with every other stage of the run)."""
    together = [registry.get("index"), *(registry.get(w.stage_task.stage.name) for w, _ in follow_on_stages())]
    first = [registry.get(stage), *(s for s in together if s.name != stage)]
    asked = [(registry.marker_store(s, runtime, invocation), 1) for s in first]
    return run_judgements.judged(invocation, "store", asked, None, window_start="2000-01-01",
                                 now=iso(utcnow()), sample=5)


def test_a_marker_written_in_the_run_is_seen_by_the_next_judgement(sealed_runtime):
    ids = docket_ids(6)
    build_sealed(sealed_runtime.index_db(), ids, 6)
    marker = read_marker(ids[1], "campaigns")
    _stale(ids[1], "campaigns")
    invocation = Invocation()
    invocation.note_scheduled({})
    with counters.measure() as io:
        assert set(_judged(invocation, sealed_runtime, "campaigns").pending) == {ids[1]}
        assert set(_judged(invocation, sealed_runtime, "organisations").pending) == set()
    assert _reads(io) == (1, 1)  # the second verdict was kept from the first read
    # The stage's run writes its marker: the run's next judgement reads again and finds it done
    # (a stale "not done" must not make Luigi redo it).
    task = CampaignGroups(docket=ids[1], invocation=invocation)
    task.write_marker("run", task.input_fingerprint(), kept_output=marker.output_fingerprint)
    with counters.measure() as io:
        assert _judged(invocation, sealed_runtime, "campaigns").pending == {}
        assert _judged(invocation, sealed_runtime, "index").pending == {}
    assert _reads(io) == (1, 1)
    # A marker cleared in the run (a re-drive): the kept "done" must not hide the work.
    clear_marker(ids[3], "topics")
    with counters.measure() as io:
        assert set(_judged(invocation, sealed_runtime, "topics").pending) == {ids[3]}
    assert _reads(io) == (1, 1)
    # An index marker cleared: the index DB's write is seen too.
    registry.marker_store(registry.get("index"), sealed_runtime, invocation).clear(ids[4])
    assert set(_judged(invocation, sealed_runtime, "index").pending) == {ids[4]}


def test_a_write_that_changes_nothing_keeps_the_verdicts(sealed_runtime):
    """Named dockets are admitted again by each wrapper (an UPDATE of no row): no read again."""
    ids = docket_ids(4)
    build_sealed(sealed_runtime.index_db(), ids, 4)
    with counters.measure() as io:
        assert run_invocation(IndexAll(docket=f"{ids[0]},{ids[2]}"))
    assert _reads(io)[0] == 1
    assert TopicMap(docket=ids[0]).complete()
