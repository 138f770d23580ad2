"""The wrappers prune finished dockets in bulk: one read of every docket's completion facts
per store, whatever the number of dockets, and one log line for the finished ones."""

from __future__ import annotations

import logging

import pytest

from benchmarks.sealed_state import build_sealed, docket_ids
from pipeline.counters import (
    COMPLETION_READS_INDEX,
    COMPLETION_READS_STATE,
    INDEX_QUERIES,
    ITEM_READS,
    STATE_QUERIES,
    counters,
)
from pipeline.runtime import set_runtime
from pipeline.store.models import Docket
from pipeline.tasks import ExtractAll, IndexAll, IndexDocket
from tests.fixtures.state_fixtures import make_runtime, new_pg_database, run_invocation


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
    from pipeline.engine import registry

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
                        now=iso(utcnow()), sample=3)
    assert set(named.pending) == {ids[0], "NEW-2026-0001"}
    assert named.done == 1 and named.done_sample[0][0] == ids[6]


@pytest.fixture(params=["sqlite", "postgres"])
def sealed_on_either(request, tmp_path, pg_server):
    """A state DB on SQLite or on PostgreSQL (string_agg, byte order by collation "C"), the
    index DB on PostgreSQL; ``caps``: a runtime made under non-default text caps."""
    def make(**overrides):
        state_url = new_pg_database(pg_server) if request.param == "postgres" else ""
        rt = make_runtime(tmp_path / f"rt{len(made)}", state_url, index_url=new_pg_database(pg_server),
                          api_base="http://127.0.0.1:9/v4", **overrides)
        set_runtime(rt)
        rt.state  # noqa: B018
        made.append(rt)
        return rt

    made: list = []
    yield make
    for rt in made:
        rt.close()


def _index_judged() -> tuple[set[str], dict]:
    from pipeline.engine.invocation import Invocation

    Invocation.start_in_process()  # a new `luigi` command: nothing judged yet
    with counters.measure() as io:
        pending = {t.docket for t in IndexAll().docket_tasks()}
    return pending, io


def test_the_index_wrapper_judges_every_docket_by_one_checksum_per_database(sealed_on_either):
    """All done: one state-DB statement and one index-DB statement, whatever the number of
    dockets (the checksums of both sides agree); one docket whose marker stops vouching
    (another seal, another input, a cleared marker) is found by the per-docket judgement."""
    rt = sealed_on_either()
    ids = docket_ids(30)
    build_sealed(rt.index_db(), ids, 30)
    pending, io = _index_judged()
    assert pending == set()
    assert (io.get(STATE_QUERIES), io.get(INDEX_QUERIES)) == (1, 1)
    assert (io.get(COMPLETION_READS_STATE), io.get(COMPLETION_READS_INDEX)) == (1, 1)
    index_db = rt.index_db()
    marker = index_db.docket_marker("comments", ids[7])
    index_db.write_docket_marker("comments", ids[7], "2020-01-01T00:00:00Z", 1, marker.input_fingerprint,
                                 (f"output of {ids[7]}", "under"))
    pending, io = _index_judged()
    assert pending == {ids[7]}
    assert io.get(COMPLETION_READS_STATE) == 1  # the per-docket judgement parses the same text
    assert io.get(COMPLETION_READS_INDEX) == 2  # the checksum, then every marker


def test_an_older_marker_without_plain_terms_is_judged_by_its_digest(sealed_on_either):
    """Markers written before the vouched columns (an upgraded index DB) still say done: no
    docket is redone after the upgrade, they are only judged one by one."""
    rt = sealed_on_either()
    ids = docket_ids(6)
    build_sealed(rt.index_db(), ids, 6)
    index_db = rt.index_db()
    for docket in ids[:2]:
        marker = index_db.docket_marker("comments", docket)
        index_db.write_docket_marker("comments", docket, marker.sealed_at, marker.version,
                                     marker.input_fingerprint)  # no vouched terms, as before
    before = index_db.docket_marker("comments", ids[0])
    pending, io = _index_judged()
    assert pending == set()
    assert io.get(INDEX_QUERIES) == 3  # the checksum, every marker, their plain terms filled once
    assert index_db.docket_marker("comments", ids[0]) == before  # the marker itself as it was
    pending, io = _index_judged()
    assert pending == set() and io.get(INDEX_QUERIES) == 1  # the checksums agree from now on


def test_under_changed_caps_the_wrapper_and_the_task_agree(sealed_on_either):
    """A non-default text cap folds into the index marker's input: markers written under it
    are done for the wrapper as for each task (neither the checksum nor the per-docket
    digests may drop the caps)."""
    rt = sealed_on_either(max_body_chars=1000)
    ids = docket_ids(5)
    build_sealed(rt.index_db(), ids, 5)
    assert all(IndexDocket(docket=d).output().exists() for d in ids)
    pending, io = _index_judged()
    assert pending == set() and io.get(INDEX_QUERIES) == 1
    index_db = rt.index_db()
    marker = index_db.docket_marker("comments", ids[2])
    index_db.write_docket_marker("comments", ids[2], marker.sealed_at, 1, marker.input_fingerprint)
    pending, io = _index_judged()  # judged one by one: the digests must carry the caps too
    assert pending == set() and io.get(INDEX_QUERIES) == 3  # (its plain terms filled again)
    assert index_db.docket_marker("comments", ids[2]).input_fingerprint == marker.input_fingerprint


def test_the_state_dbs_checksum_statement_reads_covering_indexes_only(sealed_runtime):
    """SQLite's plan of the statement over every docket reads the two covering indexes and
    no table row (a new process reading 100,000 dockets' rows from the table paid 0.45 s)."""
    from pipeline.clock import iso, utcnow
    from pipeline.engine import markers
    from pipeline.store.db import DOCKET_JUDGED_INDEX, DOCKET_STAGE_OUTPUT_INDEX
    from pipeline.store.models import database

    build_sealed(sealed_runtime.index_db(), docket_ids(10), 10)
    sql, params = markers.input_lines_query("extract", "2000-01-01", iso(utcnow())).sql()
    plan = " / ".join(row[3] for row in database.execute_sql("EXPLAIN QUERY PLAN " + sql, params))
    assert f"USING COVERING INDEX {DOCKET_JUDGED_INDEX}" in plan
    assert f"USING COVERING INDEX {DOCKET_STAGE_OUTPUT_INDEX}" in plan
    assert markers.input_lines("extract", "2000-01-01", iso(utcnow())).count("\n") == 9
