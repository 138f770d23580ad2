"""Every process docketeer starts stops with it: SIGTERM, SIGINT and SIGHUP to `docketeer
serve` and to a command (`explain`) stop the embedded index server they hold, and `docketeer
stop` (and `search --stop`) stops what a store has running, naming each with its pid.

Real processes throughout: a store built by the real pipeline with its index in its own
embedded PostgreSQL (``data/index-pg``), the commands run as users run them (subprocesses),
the server's pid read from its postmaster.pid."""

from __future__ import annotations

import contextlib
import os
import re
import signal
import subprocess
import sys
import time

import psycopg2
import pytest

from pipeline.index import embedded_server, search_service
from pipeline.index.database import IndexDB
from tests.fixtures.luigid_server import free_port
from tests.fixtures.paths import ROOT as CHECKOUT
from tests.fixtures.pipeline_fixtures import built_store
from tests.fixtures.served_site import wait_until_up

SIGNALS = [signal.SIGTERM, signal.SIGINT, signal.SIGHUP]
SIGNAL_IDS = ["SIGTERM", "SIGINT", "SIGHUP"]
EXIT = {signal.SIGTERM: 143, signal.SIGINT: 130, signal.SIGHUP: 129}  # as a shell reports them
GONE_SECONDS = 60  # a server's fast shutdown takes a second or two; this is a bound, not a figure
HOLD = "docketeer-test-hold"  # a prepared transaction that keeps the index's schema table locked


@pytest.fixture(scope="module")
def store(tmp_path_factory):
    root = tmp_path_factory.mktemp("stop")
    if search_service.socket_path(root / "data") is None:
        pytest.skip("temporary folder too deep for a unix socket")
    with built_store(root, None, embedded_index=True) as built:
        built.runtime.close()  # this process lets the index server go: it stops
        yield built


@pytest.fixture
def data(store):
    data = store.root / "data"
    assert server_pid(data) is None, "a test left the index server running"
    yield data
    leftover = server_pid(data)
    if leftover is not None:  # stopped, so that the next test starts from nothing running
        embedded_server.stop_unused(data)


def env_of(store) -> dict[str, str]:
    return {**os.environ, **store.env(), "PYTHONPATH": str(CHECKOUT)}


def docketeer(store, *args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], env=env_of(store), cwd=CHECKOUT,
                          capture_output=True, text=True, timeout=180)


def server_pid(data) -> int | None:
    """The pid of the store's live index server, from its postmaster.pid."""
    return embedded_server.running_pid(data / "index-pg")


def gone(pid: int, seconds: float = GONE_SECONDS) -> bool:
    """Whether the postmaster ``pid`` has ended (a zombie PID 1 has not reaped counts as ended)."""
    deadline = time.monotonic() + seconds
    while embedded_server.postmaster_alive(pid, None) and time.monotonic() < deadline:
        time.sleep(0.1)
    return not embedded_server.postmaster_alive(pid, None)


@contextlib.contextmanager
def serving(store):
    """`docketeer serve` on a free loopback port, as a subprocess; killed if a test left it."""
    port = free_port()
    log = store.root / f"serve-{port}.log"
    with open(log, "wb") as out:
        child = subprocess.Popen([sys.executable, "-m", "pipeline.ops.cli", "serve", "--port", str(port)],
                                 env=env_of(store), cwd=CHECKOUT, stdout=out, stderr=subprocess.STDOUT)
    try:
        wait_until_up(f"http://127.0.0.1:{port}", child, log)
        yield child, log
    finally:
        if child.poll() is None:
            child.kill()
        child.wait(timeout=30)


@pytest.mark.parametrize("signum", SIGNALS, ids=SIGNAL_IDS)
def test_a_signal_to_serve_stops_the_index_server_it_started(store, data, signum):
    with serving(store) as (child, log):
        pid = server_pid(data)
        assert pid is not None, "serve runs the index server"
        child.send_signal(signum)
        assert child.wait(timeout=GONE_SECONDS) == EXIT[signum], log.read_text()
    assert "Traceback" not in log.read_text()
    assert gone(pid), f"the index server (pid {pid}) outlived docketeer serve"
    assert not search_service.socket_path(data).exists()


@contextlib.contextmanager
def schema_held(data):
    """The index's schema table locked by a prepared transaction, which outlives a restart:
    whichever process starts the server next waits on it while it opens the index (its
    migrations read that table), holding the server. The lock is let go when the block ends."""
    with IndexDB.open(None, data) as db, db._conn.cursor() as cur:  # started by this process
        db._conn.autocommit = True
        cur.execute("ALTER SYSTEM SET max_prepared_transactions = 4")  # read at the next start
    with IndexDB.open(None, data) as db:
        url = embedded_server.database_url(db._server)
        holder = psycopg2.connect(url)
        with holder.cursor() as cur:
            cur.execute("LOCK TABLE index_schema_version IN ACCESS EXCLUSIVE MODE")
            cur.execute(f"PREPARE TRANSACTION '{HOLD}'")
        holder.close()
    assert server_pid(data) is None  # stopped with the prepared transaction kept
    try:
        yield
    finally:
        release_schema(data)


def release_schema(data) -> None:
    """ROLLBACK PREPARED, over a plain connection (this process does not hold the server)."""
    info = embedded_server.running_server(data / "index-pg")
    if info is None:
        return
    conn = psycopg2.connect(info.get_uri(database=embedded_server.DATABASE))
    conn.autocommit = True  # ROLLBACK PREPARED runs outside a transaction
    with conn.cursor() as cur:
        cur.execute("SELECT 1 FROM pg_prepared_xacts WHERE gid = %s", (HOLD,))
        if cur.fetchone():
            cur.execute(f"ROLLBACK PREPARED '{HOLD}'")
    conn.close()


def waiting_on_the_schema(data, child: subprocess.Popen, seconds: float = 120) -> int:
    """The server's pid once ``child`` holds it and waits on the held table."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        assert child.poll() is None, child.communicate()
        pid, info = server_pid(data), embedded_server.running_server(data / "index-pg")
        if pid is not None and info is not None and child.pid in embedded_server.drop_dead_holders(data / "index-pg"):
            with contextlib.suppress(psycopg2.Error):
                conn = psycopg2.connect(info.get_uri(database=embedded_server.DATABASE))
                with conn, conn.cursor() as cur:
                    cur.execute("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'")
                    waiting = cur.fetchone()[0]
                conn.close()
                if waiting:
                    return pid
        time.sleep(0.2)
    raise AssertionError("the command never came to wait on the index")


@pytest.mark.parametrize("signum", SIGNALS, ids=SIGNAL_IDS)
def test_a_signal_to_explain_stops_the_index_server_it_started(store, data, signum):
    comment = f"{store.dockets[0]}-0001"
    with schema_held(data):
        child = subprocess.Popen([sys.executable, "-m", "pipeline.ops.cli", "explain", comment],
                                 env=env_of(store), cwd=CHECKOUT, stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, text=True)
        pid = waiting_on_the_schema(data, child)
        child.send_signal(signum)
        time.sleep(0.5)  # delivered while its statement waits: acted on once the statement ends
        release_schema(data)
        _, err = child.communicate(timeout=GONE_SECONDS)
        assert child.returncode == EXIT[signum], err
        assert "Traceback" not in err
        assert gone(pid), f"the index server (pid {pid}) outlived docketeer explain"


def start_service(data):
    """The warm search service (started as `docketeer search` starts it), once it answers."""
    child = search_service._start(data)
    deadline = time.monotonic() + 120
    while not search_service.socket_path(data).exists():
        assert child.poll() is None and time.monotonic() < deadline, (data / "search-service.log").read_text()
        time.sleep(0.1)
    return child


def test_stop_stops_the_search_service_and_the_index_server(store, data, monkeypatch):
    for name, value in store.env().items():  # the service is started with the store's settings
        monkeypatch.setenv(name, value)
    child = start_service(data)
    pid = server_pid(data)
    assert pid is not None, "the service runs the index server"
    done = docketeer(store, "stop")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"stopped the search service (pid {child.pid})",
                                        f"stopped the embedded index server (pid {pid})"]
    assert child.wait(timeout=10) == 0
    assert gone(pid, 0)
    again = docketeer(store, "stop")
    assert again.returncode == 0, again.stderr
    assert again.stdout.strip() == f"nothing is running for {data}: no search service, no embedded index server"


def test_search_stop_after_a_search_stops_the_service_it_started(store, data):
    """The MiniLM embedder's search starts the service (its vectors do not match this hashing
    index: no results, which is not what is tested here)."""
    env = {**env_of(store), "DOCKETEER_EMBEDDER": "minilm"}
    run = [sys.executable, "-m", "pipeline.ops.cli"]
    searched = subprocess.run([*run, "search", "hospital funding"], env=env, cwd=CHECKOUT,
                              capture_output=True, text=True, timeout=300)
    assert searched.returncode == 0, searched.stderr
    if not search_service.socket_path(data).exists():
        pytest.skip("the MiniLM embedder is not installed here: no search service starts")
    pid = server_pid(data)
    assert pid is not None, "the service runs the index server"
    done = subprocess.run([*run, "search", "--stop"], env=env, cwd=CHECKOUT, capture_output=True, text=True,
                          timeout=180)
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert re.fullmatch(r"stopped the search service \(pid \d+\)", first)
    assert second == f"stopped the embedded index server (pid {pid})"
    assert not search_service.socket_path(data).exists()
    assert gone(pid, 0)


def test_stop_names_a_server_in_use_and_stops_one_left_behind(store, data):
    """A server serve uses is left to it, named with serve's pid; once serve is killed in a way
    no process can clean up after (SIGKILL), `docketeer stop` stops the server it left."""
    with serving(store) as (child, _):
        pid = server_pid(data)
        done = docketeer(store, "stop")
        assert done.returncode == 0, done.stderr
        serve = f"pid {child.pid} (docketeer serve --port "
        first, second = done.stdout.splitlines()
        assert first.startswith(serve) and first.endswith("was not stopped: docketeer serve answers here: "
                                                          "stop it where it runs (Ctrl-C)")
        assert second.startswith(f"the embedded index server (pid {pid}) is left running: in use by {serve}")
        assert server_pid(data) == pid
        child.kill()
        child.wait(timeout=30)
    assert server_pid(data) == pid, "SIGKILL leaves the server behind"
    done = docketeer(store, "stop")
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [f"stopped the embedded index server (pid {pid})"]
    assert gone(pid, 0)
