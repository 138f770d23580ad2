"""Starting the embedded index server is serialised across processes: processes that start a
fresh data folder's server at once (or start it while its last user stops it) all get it,
one starting, the others waiting and joining; none fails or prints a traceback."""

from __future__ import annotations

import os
import subprocess
import sys
import time

import pytest

from tests.fixtures.paths import ROOT

pytestmark = pytest.mark.postgres

USER = """
import sys, time
from pathlib import Path
go, data, hold = Path(sys.argv[1]), Path(sys.argv[2]), float(sys.argv[3])
while not go.exists():
    time.sleep(0.005)
from pipeline.index.database import IndexDB
db = IndexDB.open(None, data)
with db._conn.cursor() as cur:
    cur.execute("SELECT 1")
    assert cur.fetchone() == (1,)
time.sleep(hold)
db.close()
print("USED")
"""


def users(tmp_path, holds: list[float], go_after: float = 0.0) -> list[subprocess.CompletedProcess]:
    data, go = tmp_path / "d", tmp_path / "go"
    data.mkdir(exist_ok=True)
    env = {**{k: v for k, v in os.environ.items() if not k.startswith("DOCKETEER_")}, "PYTHONPATH": str(ROOT)}
    started = [subprocess.Popen([sys.executable, "-c", USER, str(go), str(data), str(hold)], env=env, cwd=ROOT,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True) for hold in holds]
    time.sleep(go_after)
    go.touch()  # every process is waiting: they start the server at once
    done = []
    for process in started:
        out, err = process.communicate(timeout=300)
        done.append(subprocess.CompletedProcess(process.args, process.returncode, out, err))
    return done


def test_three_processes_starting_a_fresh_server_at_once_all_get_it(tmp_path):
    done = users(tmp_path, [0.5, 0.5, 0.5], go_after=1.0)
    for one in done:
        assert one.returncode == 0 and "USED" in one.stdout, one.stderr[-3000:]
        assert "Traceback" not in one.stderr, one.stderr[-3000:]
    assert (tmp_path / "d" / "index-pg.lock").exists()  # the lock lives in the data folder
    assert not (tmp_path / "d" / "index-pg" / "postmaster.pid").exists()  # the last user stopped it


def test_a_start_while_the_last_user_stops_the_server_joins_or_starts_it_again(tmp_path):
    users(tmp_path, [0.0])  # the server exists (initdb done), stopped
    for _ in range(3):  # short holds: stops and starts overlap
        done = users(tmp_path, [0.0, 0.05, 0.1, 0.0])
        for one in done:
            assert one.returncode == 0 and "Traceback" not in one.stderr, one.stderr[-3000:]


def test_the_lock_of_a_removed_data_folder_is_no_error(tmp_path):
    """A process exiting after its data folder was removed stops nothing there: no traceback."""
    from pipeline.index.embedded_server import one_process_at_a_time

    with one_process_at_a_time(tmp_path / "removed" / "index-pg"):
        pass
    with one_process_at_a_time(tmp_path / "index-pg"):
        assert (tmp_path / "index-pg.lock").exists()
