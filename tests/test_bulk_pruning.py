"""The wrappers prune finished dockets in bulk: one read of every docket's completion facts
per store, whatever the number of dockets, and one log line for the finished ones."""

from __future__ import annotations

import logging

import pytest

from benchmarks.sealed_state import build_sealed, docket_ids
from pipeline.counters import INDEX_QUERIES, ITEM_READS, STATE_QUERIES, counters
from pipeline.runtime import set_runtime
from pipeline.store.models import Docket
from pipeline.tasks import ExtractAll, IndexAll, IndexDocket
from tests.state_fixtures import make_runtime, run_invocation


@pytest.fixture(autouse=True)
def _statements_counted():
    with counters.counting_queries():
        yield


@pytest.fixture
def sealed_runtime(tmp_path, pg_url):
    rt = make_runtime(tmp_path, index_url=pg_url, api_base="http://127.0.0.1:9/v4")
    set_runtime(rt)
    rt.state  # noqa: B018 - open (and create) the state DB and bind the models
    yield rt
    rt.close()


def _noop(wrapper) -> dict:
    with counters.measure() as io:
        assert run_invocation(wrapper)
    return io


def test_a_noop_over_sealed_dockets_reads_the_same_whatever_their_number(sealed_runtime):
    ids = docket_ids(40)
    build_sealed(sealed_runtime.index_db(), ids[:4], 8)
    few = _noop(IndexAll())
    build_sealed(sealed_runtime.index_db(), ids[4:], 36)
    many = _noop(IndexAll())
    assert few.get(STATE_QUERIES) == many.get(STATE_QUERIES)
    assert few.get(INDEX_QUERIES) == many.get(INDEX_QUERIES) == 1  # every marker, once
    assert many.get(ITEM_READS, 0) == 0
    assert many.get("stage_calls", 0) == 0


def test_only_dockets_with_work_become_tasks(sealed_runtime, caplog):
    ids = docket_ids(12)
    build_sealed(sealed_runtime.index_db(), ids, 24)
    # One docket unsealed: open, and not pulled in this window, it has work in every stage.
    Docket.update(sealed_at=None, last_pull_at="2000-01-01T00:00:00Z").where(
        Docket.id == ids[3]).execute()
    wrapper = ExtractAll()
    with caplog.at_level(logging.INFO, logger="docketeer"):
        assert [t.docket for t in wrapper.docket_tasks()] == [ids[3]]
    lines = [r.getMessage() for r in caplog.records if "complete, skipped" in r.getMessage()]
    assert len(lines) == 1
    assert lines[0].startswith("ExtractAll: 11 dockets complete, skipped (")
    first = ", ".join(sorted(d for d in ids if d != ids[3])[:5])
    assert lines[0].endswith(f"({first} and 6 more); 1 with work")


def test_a_stage_task_asked_directly_judges_by_its_own_one_row_read(sealed_runtime):
    ids = docket_ids(3)
    build_sealed(sealed_runtime.index_db(), ids, 6)
    with counters.measure() as io:
        assert IndexDocket(docket=ids[1]).complete()
    assert io.get(STATE_QUERIES) == 2  # its seal, then its probe
    assert io.get(INDEX_QUERIES) == 1  # its own marker, not every docket's


def test_the_index_wrapper_judges_each_docket_as_its_task_does(sealed_runtime):
    """IndexAll compares the index DB's markers with the state DB's facts in bulk (sets, not a
    probe per docket); each way a marker stops vouching must leave exactly that docket."""
    from benchmarks.sealed_state import build_sealed as build
    from pipeline.clock import iso, utcnow
    from pipeline.stages import registry

    ids = docket_ids(8)
    build(sealed_runtime.index_db(), ids, 16)
    index_db = sealed_runtime.index_db()
    marker = index_db.docket_marker("comments", ids[0])
    index_db.write_docket_marker("comments", ids[0], marker.sealed_at, 1, "another input")
    index_db.write_docket_marker("comments", ids[1], "2020-01-01T00:00:00Z", 1, marker.input_fingerprint)
    Docket.update(retry_due_at="2000-01-01T00:00:00Z").where(Docket.id == ids[2]).execute()
    Docket.update(sealed_at=None, last_pull_at=iso(utcnow())).where(Docket.id == ids[3]).execute()
    Docket.update(sealed_at=None, last_pull_at="2000-01-01T00:00:00Z").where(Docket.id == ids[4]).execute()
    index_db.clear_docket_marker("comments", ids[5])
    with_work = {d for d in ids if not IndexDocket(docket=d).output().exists()}
    assert ids[3] not in with_work  # open, pulled in this window, its marker vouches: done
    assert with_work == {ids[0], ids[1], ids[2], ids[4], ids[5]}
    assert {t.docket for t in IndexAll().docket_tasks()} == with_work
    store = registry.marker_store(registry.get("index"), sealed_runtime)
    named = store.judge([ids[0], ids[6], "NEW-2026-0001"], version=1, window_start="2000-01-01",
                        now=iso(utcnow()), has_upstream=True, sample=3)
    assert set(named.pending) == {ids[0], "NEW-2026-0001"}
    assert named.done == 1 and named.done_sample[0][0] == ids[6]
