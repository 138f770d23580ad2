"""The base task, targets, force-by-version and wrappers, driven in-process by luigi.build."""

from __future__ import annotations

import builtins
import socket
import time

import pytest

from pipeline.clock import iso, utcnow
from pipeline.counters import STAGE_CALLS, counters
from pipeline.engine import markers
from pipeline.engine.invocation import Invocation
from pipeline.store import docket_failures, dockets, item_states
from pipeline.store.models import Docket, DocketStage, ItemState, Run, database
from tests.fixtures import core_stages
from tests.fixtures.core_stages import ToyAll, ToyFetch, ToyProcess
from tests.fixtures.state_fixtures import run_invocation as build

A, B = "AB-2026-0001", "AB-2026-0002"


@pytest.fixture(autouse=True)
def _fresh_calls():
    core_stages.CALLS.clear()


def test_first_run_works_second_run_is_pruned(state):
    dockets.ensure_dockets([A, B], "list")
    assert build(ToyAll())
    assert sorted(core_stages.CALLS) == sorted(
        [("toyfetch", A), ("toyfetch", B), ("toyprocess", A), ("toyprocess", B)]
    )
    assert ItemState.select().where(ItemState.stage == "toyprocess").count() == 6
    core_stages.CALLS.clear()
    with counters.measure() as io:
        assert build(ToyAll())
    assert core_stages.CALLS == []
    assert io.get(STAGE_CALLS, 0) == 0


def test_new_window_reruns_open_docket_stages_without_item_work(state):
    dockets.ensure_dockets([A], "list")
    assert build(ToyAll())
    rows_before = list(ItemState.select().order_by(ItemState.stage, ItemState.item).tuples())
    Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()  # last pull: old window
    core_stages.CALLS.clear()
    assert build(ToyAll())
    # Fetch found nothing new: the downstream task re-reads its probe and is done.
    assert core_stages.CALLS == [("toyfetch", A)]
    rows_after = list(ItemState.select().order_by(ItemState.stage, ItemState.item).tuples())
    assert rows_after == rows_before  # nothing changed, nothing rewritten


def _seal_everything(ids: list[str]) -> None:
    sealed_at = iso(utcnow())
    now = iso(utcnow())
    with database.atomic():
        Docket.insert_many(
            [{"id": d, "agency": "AB", "sealed_at": sealed_at, "seal_reason": "manual",
              "last_pull_at": now} for d in ids]
        ).execute()
        for stage in ("toyfetch", "toyprocess"):
            DocketStage.insert_many(
                [{"docket": d, "stage": stage, "version": 1, "sealed_at": sealed_at,
                  "input_fingerprint": "x", "output_fingerprint": "x", "completed_at": now}
                 for d in ids]
            ).execute()


def test_wrapper_over_1000_sealed_dockets_touches_nothing(state, monkeypatch, capsys):
    ids = [f"AB-2026-{n:04d}" for n in range(1000)]
    _seal_everything(ids)
    data_dir = str(state.data_dir)
    connects, opened = [], []
    real_connect, real_open = socket.socket.connect, builtins.open

    def counting_connect(sock, address):
        connects.append(address)
        return real_connect(sock, address)

    def counting_open(file, *args, **kwargs):
        if str(file).startswith(data_dir):
            opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(socket.socket, "connect", counting_connect)
    monkeypatch.setattr(builtins, "open", counting_open)
    started = time.perf_counter()
    with counters.measure() as io:
        assert build(ToyAll())
    seconds = time.perf_counter() - started
    with capsys.disabled():
        print(f"\n[1000 sealed dockets] wrapper no-op in {seconds:.2f}s, io={io}")
    assert core_stages.CALLS == []
    assert io.get(STAGE_CALLS, 0) == 0
    assert connects == [] and opened == []
    assert Run.select().count() == 0


def test_fingerprint_mismatch_then_match(state):
    dockets.ensure_dockets([A], "list")
    assert build(ToyAll())
    assert ToyProcess(docket=A).output().exists()
    DocketStage.update(output_fingerprint="changed").where(
        (DocketStage.docket == A) & (DocketStage.stage == "toyfetch")
    ).execute()
    assert not ToyProcess(docket=A).output().exists()
    DocketStage.update(input_fingerprint="changed").where(
        (DocketStage.docket == A) & (DocketStage.stage == "toyprocess")
    ).execute()
    assert ToyProcess(docket=A).output().exists()


def test_unseal_then_reseal_invalidates_the_sealed_marker(state):
    dockets.ensure_dockets([A], "list")
    dockets.seal(A, "manual")
    assert build(ToyAll())
    assert ToyProcess(docket=A).output().exists()
    assert markers.read_marker(A, "toyprocess").sealed_at == dockets.get_docket(A).sealed_at
    dockets.unseal(A)
    dockets.seal(A, "manual")
    assert not ToyProcess(docket=A).output().exists()
    assert build(ToyAll())
    assert ToyProcess(docket=A).output().exists()


def test_force_bumps_the_version_for_one_run_and_never_unseals(state):
    dockets.ensure_dockets([A, B], "list")
    dockets.seal(B, "manual")
    assert build(ToyAll())
    core_stages.CALLS.clear()
    forced = ToyAll(force=True, invocation=Invocation())
    tasks = forced.docket_tasks()
    assert {t.version for t in tasks} == {2}
    assert all("version=2" in t.task_id or "2" in t.task_id for t in tasks)
    assert tasks[0].task_id != ToyProcess(docket=tasks[0].docket).task_id
    assert not tasks[0].output().exists()
    assert build(forced)
    # Only the forced stage ran; its upstream stayed complete and was pruned.
    assert sorted(core_stages.CALLS) == [("toyprocess", A), ("toyprocess", B)]
    assert markers.read_marker(A, "toyprocess").version == 2
    assert dockets.get_docket(B).sealed_at is not None
    core_stages.CALLS.clear()
    assert build(ToyAll())  # the next default run is a no-op again
    assert core_stages.CALLS == []
    assert ToyAll(force=True, invocation=Invocation()).docket_tasks()[0].version == 3  # a new run


def test_forced_stage_task_gets_its_own_id(state):
    dockets.ensure_dockets([A], "list")
    assert build(ToyAll())
    forced = ToyProcess(docket=A, force=True, invocation=Invocation())
    assert forced.version == 2 and forced.task_id != ToyProcess(docket=A).task_id
    assert not forced.output().exists()


def test_a_stage_that_raises_writes_no_marker_and_an_unclean_run(state, monkeypatch):
    dockets.ensure_dockets([A, B], "list")
    monkeypatch.setenv("TOY_FAIL", A)
    # No task fails in Luigi's eyes: the docket task recorded its failure, the wrapper waits on
    # the next run (exit 20 on the command line: test_core_luigi_cli).
    assert build(ToyAll())
    assert markers.read_marker(A, "toyprocess") is None
    assert markers.read_marker(B, "toyprocess") is not None
    failed = Run.get((Run.docket == A) & (Run.stage == "toyprocess"))
    assert failed.clean is False and failed.message == f"RuntimeError: toy failure in {A}"
    [recorded] = docket_failures.current()
    assert (recorded.docket, recorded.stage, recorded.reason, recorded.run_id) == (
        A, "toyprocess", failed.message, failed.run_id)
    monkeypatch.delenv("TOY_FAIL")
    assert build(ToyAll())
    assert markers.read_marker(A, "toyprocess") is not None
    assert docket_failures.current() == []


def test_named_docket_skips_discovery_and_unknown_is_created(state):
    assert build(ToyAll(docket=A))
    assert dockets.get_docket(A) is not None
    assert ToyFetch(docket=A).output().exists()


def test_pending_rows_are_repaired_by_the_next_run(state):
    dockets.ensure_dockets([A], "list")
    assert build(ToyAll())
    run_id = "dead"
    item_states.mark_pending("toyprocess", f"{A}-0001", A, run_id=run_id, reason="processing")
    markers.clear_marker(A, "toyprocess")
    assert build(ToyAll())
    assert item_states.pending_items("toyprocess", A) == []
