"""Redrive marks a bounded, oldest-first batch stale; the normal stage task then redoes it."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

from pipeline.clock import eastern_instant
from pipeline.engine import markers
from pipeline.ops.redrive import MAX_LIMIT, RedriveError, redrive
from pipeline.store import dockets, item_states
from pipeline.store.models import Docket, ItemState, Run
from tests.fixtures import core_stages
from tests.fixtures.core_stages import ToyAll
from tests.fixtures.paths import ROOT
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.state_fixtures import run_invocation as build

A = "AB-2026-0001"




def toy_rows(states: list[str]) -> list[str]:
    """A docket whose toyprocess rows have these states, oldest first; returns their items."""
    os.environ["TOY_ITEMS"] = str(len(states))
    try:
        dockets.ensure_dockets([A], "list")
        assert build(ToyAll(docket=A))
    finally:
        del os.environ["TOY_ITEMS"]
    items = sorted(item_states.states_for_docket("toyprocess", A))
    for n, (item, state_name) in enumerate(zip(items, states, strict=True)):
        ItemState.update(state=state_name, written_at=f"2026-01-01T00:00:{n:02d}.000000Z").where(
            (ItemState.stage == "toyprocess") & (ItemState.item == item)).execute()
    return items


def states_now() -> dict[str, str]:
    return {k: r.state for k, r in item_states.states_for_docket("toyprocess", A).items()}


def test_only_eligible_items_bounded_oldest_first_and_idempotent(state):
    items = toy_rows(["ok", "failed", "ocr_needed", "failed", "failed", "unsupported"])
    first = redrive("toyprocess", A, "failed", 2, run_id="r1")
    assert first.items == [items[1], items[3]]  # the two oldest failed rows
    assert first.by_state == {"failed": 2} and "marked stale (2 failed)" in first.line()
    assert first.markers_cleared == ["toyprocess"]
    assert states_now() == dict(zip(items, ["ok", "stale", "ocr_needed", "stale", "failed",
                                            "unsupported"], strict=True))
    second = redrive("toyprocess", A, "failed", 2, run_id="r2")
    assert second.items == [items[4]]  # the next batch: stale rows are not eligible again
    third = redrive("toyprocess", A, "failed", 2, run_id="r3")
    assert third.items == [] and third.markers_cleared == []
    assert states_now()[items[2]] == "ocr_needed" and states_now()[items[5]] == "unsupported"


def test_the_normal_stage_reprocesses_them_and_the_marker_returns(state):
    items = toy_rows(["failed", "ok", "failed"])
    marker_before = markers.read_marker(A, "toyprocess")
    redrive("toyprocess", A, "failed", 1, run_id="r1")
    assert markers.read_marker(A, "toyprocess").input_fingerprint is None
    core_stages.CALLS.clear()
    assert build(ToyAll(docket=A))
    assert ("toyprocess", A) in core_stages.CALLS  # the wrapper scheduled the stage again
    assert states_now()[items[0]] == "ok"
    assert markers.read_marker(A, "toyprocess").input_fingerprint == marker_before.input_fingerprint
    core_stages.CALLS.clear()
    assert build(ToyAll(docket=A))
    assert core_stages.CALLS == []  # and the next run is a no-op again


def test_a_sealed_docket_stays_sealed(state):
    items = toy_rows(["failed", "failed"])
    sealed_at = dockets.seal(A, "manual")
    assert build(ToyAll(docket=A))  # the sealed markers are recorded under the seal
    redrive("toyprocess", A, "failed", 5, run_id="r1")
    assert Docket.get_by_id(A).sealed_at == sealed_at
    assert build(ToyAll(docket=A))
    assert Docket.get_by_id(A).sealed_at == sealed_at
    assert {states_now()[i] for i in items} == {"ok"}
    assert markers.read_marker(A, "toyprocess").sealed_at == sealed_at


def test_limit_is_capped_and_bad_requests_are_refused(state):
    toy_rows(["failed"])
    result = redrive("toyprocess", A, "failed", 10_000, run_id="r1")
    assert result.limit == MAX_LIMIT and result.capped_from == 10_000
    assert f"capped at {MAX_LIMIT}" in result.line()
    with pytest.raises(RedriveError, match="cannot re-drive stage 'toyfetch'"):
        redrive("toyfetch", A, "failed", 5, run_id="r")  # a list walk has no items to redo
    with pytest.raises(RedriveError, match="cannot re-drive stage 'nope'"):
        redrive("nope", A, "failed", 5, run_id="r")
    with pytest.raises(RedriveError, match="--states"):
        redrive("toyprocess", A, "broken", 5, run_id="r")
    with pytest.raises(RedriveError, match="--limit"):
        redrive("toyprocess", A, "failed", 0, run_id="r")
    with pytest.raises(dockets.UnknownDocket):
        redrive("toyprocess", "AB-2026-9999", "failed", 5, run_id="r")


# --- the real stages -------------------------------------------------------------------------


@pytest.fixture
def store(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=12) as built:
        yield built


def extract_rows(docket: str) -> dict[str, ItemState]:
    return {r.item: r for r in ItemState.select().where((ItemState.stage == "extract")
                                                        & (ItemState.docket == docket))}


def test_extract_redrive_is_redone_by_extract_text(store):
    docket = store.dockets[0]
    before = extract_rows(docket)
    eligible = sorted((r.written_at, k) for k, r in before.items() if r.state in ("failed", "ocr_needed"))
    assert eligible, "the corpus has failed and image-only PDFs"
    result = redrive("extract", docket, "failed,ocr_needed", 1, run_id="r1")
    assert result.items == [eligible[0][1]]
    assert result.markers_cleared == ["extract", "ocr", "index", "campaigns", "topics", "sections",
                                     "positions"]
    assert store.run()  # the ordinary IndexAll
    after = extract_rows(docket)
    redone = result.items[0]
    assert after[redone].state == before[redone].state  # same code, same file, same outcome
    assert after[redone].run_id != before[redone].run_id
    untouched = {k: (r.state, r.run_id, r.written_at) for k, r in before.items() if k != redone}
    assert {k: (r.state, r.run_id, r.written_at) for k, r in after.items() if k != redone} == untouched


def test_index_redrive_repairs_a_chunk_count_mismatch(store):
    docket = store.dockets[0]
    index_db = store.runtime.index_db()
    item = sorted(index_db.state_for_docket("comments", docket))[0]
    with index_db._conn, index_db._conn.cursor() as cur:
        cur.execute("DELETE FROM chunks WHERE item_key = %s AND ordinal = 0", (item,))
    assert [m.item_key for m in index_db.count_mismatches()] == [item]
    result = redrive("index", docket, "mismatch", 25, run_id="r1")
    assert result.items == [item] and result.markers_cleared == ["index", "campaigns", "topics", "sections",
                                                                               "positions"]
    assert redrive("index", docket, "mismatch", 25, run_id="r2").items == []  # already stale
    assert store.run()
    assert index_db.count_mismatches() == []
    assert index_db.state_for_docket("comments", docket)[item].fingerprint is not None


def test_backfill_redrive_refetches_a_gone_comment(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=4, build=False) as store:
        docket = store.dockets[0]
        vanished = store.manifest.comments[0].id
        store.server.gone = {vanished}
        assert store.run()
        assert item_states.states_for_docket("backfill", docket)[vanished].state == "gone"
        store.server.gone = set()
        result = redrive("backfill", docket, "gone", 5, run_id="r1")
        assert result.items == [vanished]
        assert result.markers_cleared == ["backfill", "extract", "ocr", "index", "campaigns", "organisations",
                                          "lineage", "topics", "sections", "positions"]
        assert store.run()
        assert item_states.states_for_docket("backfill", docket)[vanished].state == "ok"
        assert vanished in store.runtime.index_db().state_for_docket("comments", docket)


def test_luigi_command_runs_redrive_and_refuses_bad_requests(store):
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(store.env(), PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
    docket = store.dockets[0]

    def luigi_redrive(*args: str) -> subprocess.CompletedProcess:
        return subprocess.run(
            [sys.executable, "-m", "luigi", "--module", "pipeline.ops.redrive", "Redrive",
             "--docket", docket, *args, "--local-scheduler"],
            cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)

    done = luigi_redrive("--stage", "extract", "--states", "failed,ocr_needed", "--limit", "25")
    assert done.returncode == 0, done.stderr[-2000:]
    [run] = Run.select().where(Run.task.startswith("Redrive"))
    assert run.clean and "marked stale" in run.message
    assert run.message in done.stderr  # said on the command line, not only in the run table
    stale = [r for r in extract_rows(docket).values() if r.state == "stale"]
    assert stale and all(r.reason == "re-driven" for r in stale)
    bad = luigi_redrive("--stage", "fetch")
    assert bad.returncode == 2
    assert [line for line in bad.stderr.splitlines() if line.startswith("docketeer:")] == [
        "docketeer: cannot re-drive stage 'fetch'; one of: backfill, campaigns, extract, index, lineage, ocr, organisations, positions, sections, topics"]


def test_extract_redrive_on_a_sealed_docket_is_processed_and_stays_sealed(store):
    docket = store.dockets[0]
    sealed_at = dockets.seal(docket, "manual")
    assert store.run()  # markers recorded under the seal
    before = extract_rows(docket)
    result = redrive("extract", docket, "failed,ocr_needed", 1, run_id="r1")
    assert result.items and result.sealed_at == sealed_at
    assert f"docket stays sealed (since {eastern_instant(sealed_at)})" in result.line()
    assert store.run()
    assert Docket.get_by_id(docket).sealed_at == sealed_at
    redone = extract_rows(docket)[result.items[0]]
    assert redone.state == before[result.items[0]].state
