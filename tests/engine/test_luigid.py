"""A real luigid on loopback: IndexAll runs against it, and its API shows tasks and progress."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.store import item_states
from pipeline.store.models import DocketStage, ItemState
from tests.fixtures.luigid_server import api, running_luigid
from tests.fixtures.paths import ROOT
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.windows import SAME_WINDOW_ENV


@pytest.fixture
def luigid(tmp_path):
    (tmp_path / "luigid-logs").mkdir()  # luigid does not create its --logdir
    with running_luigid(tmp_path / "luigid.state", logdir=tmp_path / "luigid-logs") as (port, _daemon):
        yield port


def run_index_all(store, port: int, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(store.env(), PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
    env.update(SAME_WINDOW_ENV)
    return subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll", *args,
         "--scheduler-host", "127.0.0.1", "--scheduler-port", str(port)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)


STAGES = (("FetchComments", "fetch"), ("BackfillComments", "backfill"),
          ("ExtractText", "extract"), ("IndexDocket", "index"))


def test_index_all_against_luigid_reports_tasks_status_and_progress(luigid, tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=2, comments=3, build=False) as store:
        # After a discovery, so the docket tasks are yielded from IndexAll.run(): Luigi loads
        # them again by the family they send, which must still find their class.
        done = run_index_all(store, luigid)
        assert done.returncode == 0, done.stderr[-3000:]
    tasks = api(luigid, "task_list", status="DONE")
    by_name: dict[str, list[dict]] = {}
    for task in tasks.values():
        by_name.setdefault(task["name"], []).append(task)
    assert {"IndexAll", "DiscoverDockets"} <= set(by_name)
    for docket in store.dockets:
        for family, stage in STAGES:
            [task] = by_name[f"{family}.{docket}"]  # the name the graph and sidebar show
            assert task["params"]["docket"] == docket
            assert task["status_message"].startswith(f"{stage} {docket}: ")  # the summary line
            assert task["progress_percentage"] == 100
            # Luigi's summary lists every docket's task, none hidden behind "..."
            assert f"{family}(docket={docket}," in done.stderr.split("Execution Summary")[1]
    assert api(luigid, "task_list", status="FAILED") == {}
    assert api(luigid, "task_list", status="PENDING") == {}


def test_the_graph_labels_tell_two_dockets_apart(luigid, tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=2, comments=3, build=False) as store:
        first, second = store.dockets
        done = run_index_all(store, luigid, "--docket", f"{first},{second}")
        assert done.returncode == 0, done.stderr[-3000:]
        # A task id does not depend on its label: the same command again finds every task
        # complete under the ids of the first run. (Within luigid's stable_done_cooldown_secs,
        # 10 s, it would ignore a claim that a task it saw done is pending again, and grant
        # no run: what the second run met when a window boundary fell between the two.)
        again = run_index_all(store, luigid, "--docket", f"{first},{second}")
        assert again.returncode == 0 and "Did not run any tasks" in again.stderr, again.stderr
    [root] = [tid for tid, t in api(luigid, "task_list", status="DONE").items()
              if t["name"] == "IndexAll"]
    graph = api(luigid, "dep_graph", task_id=root)  # what the D3 graph draws, node by node
    labels = {task["name"] for task in graph.values()}
    for family, _ in STAGES:
        assert {f"{family}.{first}", f"{family}.{second}"} <= labels, labels
    # The ids are the class family's, as before labels carried the docket.
    assert all(tid.startswith(task["name"].split(".")[0] + "_") for tid, task in graph.items())


def test_a_yielded_docket_task_is_loaded_again_as_the_same_task(tmp_path):
    """Luigi rebuilds a task yielded from run() by (module, family, params): the family it
    is sent under must be the class's, and the task it rebuilds the one with the label."""
    from luigi.task_register import Register, load_task

    import pipeline
    from pipeline.runtime import set_runtime
    from tests.fixtures.state_fixtures import make_runtime

    set_runtime(make_runtime(tmp_path))
    task = pipeline.FetchComments(docket="AB-2026-0001")
    yielded = task.as_dynamic_dependency()
    assert (task.task_family, yielded.task_family) == ("FetchComments.AB-2026-0001", "FetchComments")
    loaded = load_task(yielded.task_module, yielded.task_family, yielded.to_str_params())
    assert type(loaded) is pipeline.FetchComments and loaded.task_id == task.task_id == yielded.task_id
    assert loaded.task_family == "FetchComments.AB-2026-0001"
    assert Register.get_task_cls("FetchComments") is pipeline.FetchComments  # one class by that name


def run_docketeer(store, *args: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(store.env(), PYTHONPATH=str(ROOT))
    return subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], cwd=ROOT, env=env,
                          capture_output=True, text=True, timeout=120)


def ran_successfully(summary: str) -> str:
    """The "ran successfully" part of Luigi's execution summary ('' when none ran)."""
    part = summary.split("ran successfully:")[1] if "ran successfully:" in summary else ""
    return part.split("\n* ")[0]


@pytest.mark.parametrize("workers", ["1", "2"])
def test_a_budget_stopped_run_is_partial_in_luigid_and_luigis_summary_and_exits_20(tmp_path, pg_server, workers):
    (tmp_path / "luigid-logs").mkdir()
    # luigid as docs/OPERATING.md starts it: reading the clone's luigi.cfg
    luigid_env = {**os.environ, "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg")}
    with running_luigid(tmp_path / "luigid.state", logdir=tmp_path / "luigid-logs", env=luigid_env) as (port, _), \
            built_store(tmp_path, pg_server, dockets=1, comments=12, build=False) as store:
        [docket] = store.dockets
        # With 2 workers every task runs in a forked process: the budget reaches them too.
        partial = run_index_all(store, port, "--request-budget", "6", "--workers", workers)
        pending = api(port, "task_list", status="PENDING")
        done = api(port, "task_list", status="DONE")
        listed = run_docketeer(store, "dockets")
        got = decided_items(store, docket)
        # Right after it (within luigid's default 10 s cooldown): the same job, its budget
        # enough now, finishes the docket; once more, it has nothing to do.
        again = run_index_all(store, port, "--request-budget", "0", "--workers", workers)
        markers = {stage for (stage,) in DocketStage.select(DocketStage.stage).where(
            DocketStage.docket == docket).tuples()}
        markers |= {"index"} if store.runtime.index_db().docket_marker("comments", docket) else set()
        finished = decided_items(store, docket)
        third = run_index_all(store, port, "--request-budget", "0")
    assert partial.returncode == 20, partial.stderr[-3000:]  # [retcode] missing_data: partial
    # The stages after backfill worked on what it got in the same run: every item it
    # backfilled was extracted and indexed (the index's rows are its chunks, per item).
    assert got["backfill"] and got["extract"] == got["backfill"], got
    # ... and what the index holds of them is what it holds once the docket is done.
    assert got["indexed"] and got["indexed"] == finished["indexed"] & got["backfill"], (got, finished)
    for family, stage in (("ExtractText", "extract"), ("IndexDocket", "index")):
        [continuing] = [t for t in done.values() if t["name"] == f"{family}.{docket}.continuing-backfill"]
        assert continuing["params"]["continuing"] == "backfill"
        assert continuing["status_message"].startswith(f"{stage} {docket}: "), continuing
        assert continuing["status_message"].endswith(
            " — on what backfill got so far; backfill continues next run"), continuing
        # Its usual task waits behind the stopped stage: not done.
        assert any(t["name"] == f"{family}.{docket}" for t in pending.values()), pending
        assert f"{family}(docket={docket}, version=, continuing=backfill," in ran_successfully(
            partial.stderr.split("Execution Summary")[1])
    assert again.returncode == 0, again.stderr[-3000:]
    assert {"fetch", "backfill", "extract", "index"} <= markers, markers
    assert got["backfill"] < finished["backfill"] <= finished["extract"], finished
    assert third.returncode == 0 and "Did not run any tasks" in third.stderr, third.stderr[-3000:]
    summary = partial.stderr.split("Execution Summary")[1]
    # The stage a spent budget stopped waits on the next run: a missing external dependency,
    # never "ran successfully"; what is left is in its name.
    assert f"DocketContinuesNextRun(stage=backfill, docket={docket}, left=" in summary
    assert "were missing external dependencies" in summary
    assert f"BackfillComments(docket={docket}," not in ran_successfully(summary)
    assert f"FetchComments(docket={docket}," in ran_successfully(summary)  # fetch finished
    assert "not granted run permission" not in summary
    # The summary's last line before its banner says the docket is partial, and which stage.
    last = [line for line in summary.splitlines() if line.strip()][-2]  # then "===== Luigi"
    assert last.startswith(f"{docket}: not done: backfill partial: budget spent, continues next run (left: "), summary
    # luigid: the stopped stage is PENDING (not the visualiser's green DONE) and says partial
    # and what is left; the wrapper waits too; neither is DONE.
    [backfill] = [t for t in pending.values() if t["name"] == f"BackfillComments.{docket}"]
    assert "partial: budget spent, continues next run" in backfill["status_message"], backfill
    assert "left: " in backfill["status_message"]
    assert backfill["progress_percentage"] < 100
    assert any(t["name"] == "DocketContinuesNextRun" for t in pending.values())
    assert any(t["name"] == "IndexAll" for t in pending.values())
    assert not {f"BackfillComments.{docket}", "IndexAll"} & {t["name"] for t in done.values()}
    # docketeer dockets: the docket is partial, naming the stage
    assert listed.returncode == 0, listed.stderr
    [row] = [line for line in listed.stdout.splitlines() if line.startswith(docket)]
    assert " backfill " in f"{row} ", listed.stdout


def decided_items(store, docket: str) -> dict[str, set[str]]:
    """The docket's items backfill and extract decided, and those the index holds."""
    items = {stage: {key for (key,) in ItemState.select(ItemState.item).where(
        (ItemState.docket == docket) & (ItemState.stage == stage)
        & ItemState.state.in_(sorted(item_states.TERMINAL))).tuples()}
        for stage in ("backfill", "extract")}
    return {**items, "indexed": set(store.runtime.index_db().state_for_docket("comments", docket))}


def visualiser_rerun_command(port: int, task_id: str) -> str:
    """The error dialog's "Command to re-run", built as luigi's visualiser builds it from
    luigid's fetch_error (luigi/static/visualiser: index.html's errorTemplate,
    visualiserApp.js's showErrorTrace)."""
    error = api(port, "fetch_error", task_id=task_id)
    params = " ".join(f"--{k.replace('_', '-')} {json.dumps(v)}" for k, v in error["taskParams"].items())
    return f"luigi --module {error['taskModule']} {error['taskFamily']} {params}"


def test_the_visualisers_rerun_command_runs_the_failed_docket_task(luigid, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="list",
               DOCKETEER_DOCKETS="AB-2026-0001,AB-2026-0002",
               PATH=f"{Path(sys.executable).parent}:{os.environ['PATH']}")
    scheduler = ["--scheduler-host", "127.0.0.1", "--scheduler-port", str(luigid)]
    failed = subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", "ToyAll", *scheduler],
        cwd=ROOT, env={**env, "TOY_STOP": "AB-2026-0002"}, capture_output=True, text=True, timeout=300)
    assert failed.returncode == 30, failed.stderr[-3000:]
    [(task_id, task)] = api(luigid, "task_list", status="FAILED").items()
    command = visualiser_rerun_command(luigid, task_id)
    assert command.startswith("luigi --module tests.fixtures.core_stages ToyProcess.AB-2026-0002 "
                              '--docket "AB-2026-0002"'), command
    # Run as shown, from a shell in another folder, the cause fixed (TOY_STOP unset).
    (tmp_path / "elsewhere").mkdir()
    rerun = subprocess.run(f"{command} {' '.join(scheduler)}", shell=True, cwd=tmp_path / "elsewhere",
                           env=env, capture_output=True, text=True, timeout=300)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "TaskClassNotFoundException" not in rerun.stderr
    assert "ToyProcess(docket=AB-2026-0002" in rerun.stderr.split("Execution Summary")[1]
    done = api(luigid, "task_list", status="DONE")
    assert task["name"] in {t["name"] for t in done.values()}


def test_a_docket_stage_that_failed_says_why_in_the_visualiser(luigid, tmp_path):
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="list",
               DOCKETEER_DOCKETS="AB-2026-0001,AB-2026-0002", TOY_FAIL="AB-2026-0002")
    run = subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", "ToyAll",
         "--scheduler-host", "127.0.0.1", "--scheduler-port", str(luigid)],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=300)
    assert run.returncode == 20, run.stderr[-3000:]
    assert api(luigid, "task_list", status="FAILED") == {}  # recorded, not an exception
    done = api(luigid, "task_list", status="DONE")
    [failed] = [t for t in done.values() if t["name"] == "ToyProcess.AB-2026-0002"]
    assert failed["status_message"] == ("toyprocess AB-2026-0002: failed: RuntimeError: toy failure in "
                                        "AB-2026-0002; no marker, the next run tries again")
    [other] = [t for t in done.values() if t["name"] == "ToyProcess.AB-2026-0001"]
    assert other["status_message"].startswith("toyprocess AB-2026-0001: ") and "failed" not in other["status_message"]
    pending = api(luigid, "task_list", status="PENDING")
    [wrapper] = [t for t in pending.values() if t["name"] == "ToyAll"]
    assert wrapper["status_message"].startswith("ToyAll: 1 of 2 dockets failed, the next run tries again")
    assert any(t["name"] == "RetriesNextRun" for t in pending.values())


def test_two_stores_on_one_luigid_keep_their_own_tasks(luigid, tmp_path, pg_server):
    """The same dockets in two data folders, one luigid: each store's tasks are its own (the
    store's digest is in every task id), so the second store's failure replaces nothing of the
    first's."""
    from pipeline.engine.store_scope import store_of

    with built_store(tmp_path / "a", pg_server, dockets=1, comments=3, build=False) as first:
        assert run_index_all(first, luigid).returncode == 0
        first_store = store_of(first.runtime.settings)
    with built_store(tmp_path / "b", pg_server, dockets=1, comments=3, build=False) as second:
        assert second.dockets == first.dockets  # the generator's ids: the same docket in both
        second.server.stop()  # regulations.gov unreachable for the second store
        failed = run_index_all(second, luigid)
        second_store = store_of(second.runtime.settings)
    assert failed.returncode != 0 and first_store != second_store
    [docket] = first.dockets
    fetches = [t for status in ("DONE", "FAILED", "PENDING") for t in api(luigid, "task_list", status=status).values()
               if t["name"] == f"FetchComments.{docket}"]
    by_store = {t["params"]["store"]: t for t in fetches}
    assert set(by_store) == {first_store, second_store}, fetches
    assert by_store[first_store]["status"] == "DONE"
    assert "failed" not in by_store[first_store]["status_message"]


def test_a_task_named_for_another_store_is_one_line_and_exit_2(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=3, build=False) as store:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        env.update(store.env(), PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
        ran = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
                              "--store", "0123456789", "--local-scheduler"],
                             cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    assert ran.returncode == 2
    assert ran.stderr.strip().splitlines()[-1].startswith("docketeer: --store 0123456789 names another store")
    assert "Traceback" not in ran.stderr
