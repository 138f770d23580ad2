"""The `luigi` command as cron runs it: exit codes, a SIGKILLed stage, bad configuration."""

from __future__ import annotations

import os
import re
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from tests.fixtures.paths import ROOT
from tests.fixtures.toy_commands import luigi_cmd, sqlite


def test_exit_zero_when_all_succeed_and_30_when_a_run_stopping_error_stops_it(tmp_path):
    ok = luigi_cmd(tmp_path, "ToyAll")
    assert ok.returncode == 0, ok.stderr[-2000:]
    failing = luigi_cmd(tmp_path / "other", "ToyAll", TOY_STOP="AB-2026-0002")
    assert failing.returncode == 30, failing.stderr[-2000:]  # [retcode] task_failed
    assert "Traceback" not in failing.stderr
    assert "RunStopping: toy run-stopping failure in AB-2026-0002" in failing.stderr
    # A run-stopping cause is the run's, not the docket's: no docket failure is recorded.
    assert sqlite(tmp_path / "other", "select count(*) from docket_failure") == [(0,)]


def test_a_stage_failing_for_one_docket_is_recorded_the_others_done_and_the_run_exits_20(tmp_path):
    failing = luigi_cmd(tmp_path, "ToyAll", TOY_FAIL="AB-2026-0002")
    assert failing.returncode == 20, failing.stderr[-3000:]  # [retcode] missing_data, not 30
    assert "Traceback" not in failing.stderr
    # One line for the failed docket stage, one for the wrapper; Luigi's summary names it.
    [line] = [x for x in failing.stderr.splitlines() if "toyprocess AB-2026-0002: failed:" in x]
    assert "RuntimeError: toy failure in AB-2026-0002; no marker, the next run tries again" in line
    assert ("ToyAll: 1 of 2 dockets failed, the next run tries again "
            "(AB-2026-0002: toyprocess: RuntimeError: toy failure in AB-2026-0002)") in failing.stderr
    summary = failing.stderr.split("Execution Summary")[1]
    assert "RetriesNextRun(wrapper=ToyAll, dockets=AB-2026-0002, store=" in summary
    assert "failed:" not in summary  # no task failed: the docket task recorded its failure
    assert sqlite(tmp_path, "select docket from docket_stage where stage='toyprocess'") == [("AB-2026-0001",)]
    assert sqlite(tmp_path, "select docket, stage, reason, attempts from docket_failure") == [
        ("AB-2026-0002", "toyprocess", "RuntimeError: toy failure in AB-2026-0002", 1)]
    # No traceback in the state DB either: the run row keeps the same one line.
    assert sqlite(tmp_path, "select message from run where stage='toyprocess' and clean=0") == [
        ("RuntimeError: toy failure in AB-2026-0002",)]

    again = luigi_cmd(tmp_path, "ToyAll", TOY_FAIL="AB-2026-0002")  # the next run tries again
    assert again.returncode == 20, again.stderr[-3000:]
    assert sqlite(tmp_path, "select attempts from docket_failure") == [(2,)]
    assert re.search(r"2 failures in a row since \d{4}-\d\d-\d\d \d\d:\d\d E[SD]T\)", again.stderr), \
        again.stderr[-3000:]

    fixed = luigi_cmd(tmp_path, "ToyAll")
    assert fixed.returncode == 0, fixed.stderr[-3000:]
    assert sqlite(tmp_path, "select count(*) from docket_failure") == [(0,)]  # cleared by success
    assert sqlite(tmp_path, "select count(*) from docket_stage where stage='toyprocess'") == [(2,)]


def test_sigkilled_stage_leaves_no_marker_and_the_next_run_repairs(tmp_path):
    killed = luigi_cmd(tmp_path, "ToyAll", TOY_KILL="AB-2026-0001")
    assert killed.returncode == -signal.SIGKILL
    assert sqlite(tmp_path, "select count(*) from docket_stage where stage='toyprocess' "
                            "and docket='AB-2026-0001'") == [(0,)]
    assert sqlite(tmp_path, "select count(*) from item_state where state='pending'") == [(1,)]
    rerun = luigi_cmd(tmp_path, "ToyAll")
    assert rerun.returncode == 0, rerun.stderr[-2000:]
    assert sqlite(tmp_path, "select count(*) from item_state where state='pending'") == [(0,)]
    assert sqlite(tmp_path, "select count(*) from docket_stage where stage='toyprocess'") == [(2,)]
    # the dead run's row stays unfinished; the repairing run finished clean
    assert sqlite(tmp_path, "select count(*) from run where finished_at is null") == [(1,)]


@pytest.mark.parametrize(
    ("env", "expected"),
    [
        ({"DOCKETEER_SOURCE": "ftp"}, "source = 'ftp' (from env DOCKETEER_SOURCE) must be one of"),
        ({"DOCKETEER_FRESHNESS_SECONDS": "soon"}, "is not a valid int"),
        ({"DOCKETEER_STATE_URL": "postgresql://nobody@127.0.0.1:1/none"}, "cannot open state DB"),
        ({"DOCKETEER_DATA_DIR": "/proc/docketeer-cannot-write"}, "is not writable"),
    ],
)
def test_bad_configuration_is_one_clear_line(tmp_path, env, expected):
    result = luigi_cmd(tmp_path, "ToyAll", **env)
    assert result.returncode == 2
    assert "Traceback" not in result.stderr
    lines = [line for line in result.stderr.splitlines() if line.startswith("docketeer:")]
    assert len(lines) == 1 and expected in lines[0], result.stderr[-2000:]


def luigi_elsewhere(folder: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    """The `luigi` command as cron runs it: from a folder that is not the checkout, with no
    luigi.cfg of docketeer's in reach (no LUIGI_CONFIG_PATH)."""
    env = {k: v for k, v in os.environ.items()
           if not k.startswith(("DOCKETEER_", "TOY_", "LUIGI_"))}
    env.update(PYTHONPATH=str(ROOT), DOCKETEER_DATA_DIR=str(folder / "data"),
               DOCKETEER_DISCOVER="list", DOCKETEER_DOCKETS="AB-2026-0001,AB-2026-0002")
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", *args, "--local-scheduler"],
        cwd=folder, env=env, capture_output=True, text=True, timeout=120,
    )


def test_a_failed_task_exits_30_from_any_folder_and_a_users_luigi_cfg_still_wins(tmp_path):
    elsewhere = tmp_path / "cron-home"
    elsewhere.mkdir()
    failing = luigi_elsewhere(elsewhere, "ToyAll", TOY_STOP="AB-2026-0002")
    assert failing.returncode == 30, failing.stderr[-2000:]  # the package's own [retcode]
    # Every docket's task is in the summary: the package's [execution_summary] too.
    assert "ToyProcess(docket=AB-2026-0001" in failing.stderr.split("Execution Summary")[1]
    # A luigi.cfg in the folder the command runs from is read after the package's defaults.
    (elsewhere / "luigi.cfg").write_text("[retcode]\ntask_failed = 7\n")
    mine = luigi_elsewhere(elsewhere, "ToyAll", TOY_STOP="AB-2026-0002")
    assert mine.returncode == 7, mine.stderr[-2000:]
    # ... and so is $LUIGI_CONFIG_PATH, after both.
    (tmp_path / "theirs.cfg").write_text("[retcode]\ntask_failed = 9\n")
    theirs = luigi_elsewhere(elsewhere, "ToyAll", TOY_STOP="AB-2026-0002",
                             LUIGI_CONFIG_PATH=str(tmp_path / "theirs.cfg"))
    assert theirs.returncode == 9, theirs.stderr[-2000:]


def test_a_run_finding_a_docket_stage_worked_by_a_live_run_skips_it_not_done_and_exits_20(tmp_path):
    """Two overlapping cron jobs: the second meets the first's lease on one docket stage and
    steps aside with one notice naming the holder (its work is being done there); neither
    fails, and the second does not call the stage it skipped "ran successfully": it waits
    on HeldByAnotherRun (exit 20, as a partial run)."""
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="list",
               DOCKETEER_DOCKETS="AB-2026-0001,AB-2026-0002")
    first = subprocess.Popen(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", "ToyAll", "--local-scheduler"],
        cwd=ROOT, env={**env, "TOY_HOLD": f"AB-2026-0001:{hold}"}, stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (hold / "started").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.stdout.read()
            time.sleep(0.05)
        # Other options, so Luigi's own lock (the same command line) does not stop it first.
        second = luigi_cmd(tmp_path, "ToyAll", "--docket", "AB-2026-0001")
    finally:
        (hold / "release").write_text("")
        first_out, _ = first.communicate(timeout=120)
    assert second.returncode == 20, second.stderr[-3000:]  # [retcode] missing_data
    holder = f"{socket.gethostname()}:{first.pid}"
    notices = [line for line in second.stderr.splitlines() if "is being worked by" in line]
    assert len(notices) == 1, second.stderr[-3000:]
    assert (f"toyprocess AB-2026-0001 is being worked by {holder} until " in notices[0]
            and notices[0].endswith(": skipped, that run does its work; not done in this run")), notices
    assert re.search(r" until \d{4}-\d\d-\d\d \d\d:\d\d:\d\d E[SD]T:", notices[0]), notices  # Eastern
    summary = second.stderr.split("Execution Summary")[1]
    done_part = summary.split("ran successfully:")[1].split("\n* ")[0] if "ran successfully:" in summary else ""
    assert "ToyProcess(docket=AB-2026-0001" not in done_part, summary
    missing = summary.split("were missing external dependencies:")[1]
    assert f"HeldByAnotherRun(stage=toyprocess, docket=AB-2026-0001, holder={holder} until " in missing, summary
    last = [line for line in summary.splitlines() if line.strip()][-2]
    assert last.startswith(f"AB-2026-0001: not done: toyprocess held by another run, which does its work ({holder} until "), summary
    assert "Traceback" not in second.stderr
    assert first.returncode == 0, first_out[-3000:]
    # The first run did the work and wrote the markers; the second did none of it.
    assert sqlite(tmp_path, "select count(*) from docket_stage where stage='toyprocess'") == [(2,)]
    assert sqlite(tmp_path, "select count(*) from item_state where stage='toyprocess' and "
                            "run_id in (select run_id from run where message like '%skipped%')") == [(0,)]


def test_the_same_command_while_it_runs_is_one_line_naming_its_pid_and_exit_10(tmp_path):
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="list",
               DOCKETEER_DOCKETS="AB-2026-0001")
    command = [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", "ToyAll",
               "--local-scheduler"]
    first = subprocess.Popen(command, cwd=ROOT, env={**env, "TOY_HOLD": f"AB-2026-0001:{hold}"},
                             stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        deadline = time.monotonic() + 120
        while not (hold / "started").exists():
            assert first.poll() is None and time.monotonic() < deadline, first.stdout.read()
            time.sleep(0.05)
        second = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    finally:
        (hold / "release").write_text("")
        first.communicate(timeout=120)
    assert second.returncode == 10, second.stderr[-3000:]  # [retcode] already_running
    assert second.stdout == ""
    assert second.stderr.splitlines() == [
        f"docketeer: the same command is already running as pid {first.pid} (lock in "
        f"{tmp_path / 'data' / 'luigi-lock'}); this run did nothing (exit 10)"], second.stderr
    assert first.returncode == 0


def test_ctrl_c_during_a_run_is_one_line_and_the_next_run_finishes(tmp_path):
    hold = tmp_path / "hold"
    hold.mkdir()
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="list",
               DOCKETEER_DOCKETS="AB-2026-0001")
    run = subprocess.Popen(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", "ToyAll", "--local-scheduler"],
        cwd=ROOT, env={**env, "TOY_HOLD": f"AB-2026-0001:{hold}"}, stdout=subprocess.PIPE,
        stderr=subprocess.PIPE, text=True)
    deadline = time.monotonic() + 120
    while not (hold / "started").exists():
        assert run.poll() is None and time.monotonic() < deadline
        time.sleep(0.05)
    run.send_signal(signal.SIGINT)  # what Ctrl-C sends
    out, err = run.communicate(timeout=60)
    assert "Traceback" not in out + err, (out + err)[-3000:]
    assert err.splitlines()[-1] == "docketeer: interrupted; what was done is kept, and the next run continues"
    again = luigi_cmd(tmp_path, "ToyAll")
    assert again.returncode == 0, again.stderr[-3000:]
    assert sqlite(tmp_path, "select count(*) from docket_stage where stage='toyprocess'") == [(2,)]
