"""The `luigi` command as cron runs it: exit codes, a SIGKILLed stage, bad configuration."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

from tests.fixtures.paths import ROOT


def luigi_cmd(tmp_path: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith(("DOCKETEER_", "TOY_"))}
    env.update(
        PYTHONPATH=str(ROOT),
        LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
        DOCKETEER_DATA_DIR=str(tmp_path / "data"),
        DOCKETEER_DISCOVER="list",
        DOCKETEER_DOCKETS="AB-2026-0001,AB-2026-0002",
    )
    env.update(env_extra)
    return subprocess.run(
        [sys.executable, "-m", "luigi", "--module", "tests.fixtures.core_stages", *args, "--local-scheduler"],
        cwd=ROOT, env=env, capture_output=True, text=True, timeout=120,
    )


def sqlite(tmp_path: Path, sql: str) -> list[tuple]:
    import sqlite3

    with sqlite3.connect(tmp_path / "data" / "state.sqlite") as conn:
        return conn.execute(sql).fetchall()


def test_exit_zero_when_all_succeed_and_nonzero_when_a_stage_fails(tmp_path):
    ok = luigi_cmd(tmp_path, "ToyAll")
    assert ok.returncode == 0, ok.stderr[-2000:]
    failing = luigi_cmd(tmp_path / "other", "ToyAll", TOY_FAIL="AB-2026-0002")
    assert failing.returncode == 30, failing.stderr[-2000:]  # [retcode] task_failed


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
    failing = luigi_elsewhere(elsewhere, "ToyAll", TOY_FAIL="AB-2026-0002")
    assert failing.returncode == 30, failing.stderr[-2000:]  # the package's own [retcode]
    # Every docket's task is in the summary: the package's [execution_summary] too.
    assert "ToyProcess(docket=AB-2026-0001" in failing.stderr.split("Execution Summary")[1]
    # A luigi.cfg in the folder the command runs from is read after the package's defaults.
    (elsewhere / "luigi.cfg").write_text("[retcode]\ntask_failed = 7\n")
    mine = luigi_elsewhere(elsewhere, "ToyAll", TOY_FAIL="AB-2026-0002")
    assert mine.returncode == 7, mine.stderr[-2000:]
    # ... and so is $LUIGI_CONFIG_PATH, after both.
    (tmp_path / "theirs.cfg").write_text("[retcode]\ntask_failed = 9\n")
    theirs = luigi_elsewhere(elsewhere, "ToyAll", TOY_FAIL="AB-2026-0002",
                             LUIGI_CONFIG_PATH=str(tmp_path / "theirs.cfg"))
    assert theirs.returncode == 9, theirs.stderr[-2000:]
