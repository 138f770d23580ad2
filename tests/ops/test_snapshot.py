"""``docketeer snapshot``: a consistent state DB copy while a writer runs, and an index dump."""

from __future__ import annotations

import sqlite3
import subprocess
import threading
import time
from contextlib import contextmanager
from pathlib import Path

import pytest

from pipeline.index.chunking import Chunk
from pipeline.ops import cli
from pipeline.ops.snapshot import pg_dump_path, take_snapshot
from pipeline.runtime import set_runtime
from tests.fixtures.state_fixtures import make_runtime, new_pg_database


@pytest.fixture
def runtime(tmp_path, pg_server):
    rt = make_runtime(tmp_path, index_url=new_pg_database(pg_server))
    rt.state  # noqa: B018 - create the schema
    previous = set_runtime(rt)
    yield rt
    set_runtime(previous)
    rt.close()


class Writer(threading.Thread):
    """Inserts run rows one commit at a time through its own connection, recording each commit."""

    def __init__(self, path) -> None:
        super().__init__(daemon=True)
        self.path = path
        self.committed: list[str] = []
        self.stop = threading.Event()

    def run(self) -> None:
        conn = sqlite3.connect(self.path, timeout=30)
        n = 0
        while not self.stop.is_set():
            run_id = f"w{n:07d}"
            with conn:  # one transaction per row
                conn.execute("INSERT INTO run (run_id, task, started_at, budget_spent) "
                             "VALUES (?, 'writer', '2026-01-01T00:00:00Z', 0)", (run_id,))
                conn.execute("INSERT INTO meta (key, value) VALUES (?, 'x')", (run_id,))
            self.committed.append(run_id)
            n += 1
        conn.close()


def test_sqlite_snapshot_during_writes_is_consistent(runtime, tmp_path):
    writer = Writer(runtime.data_dir / "state.sqlite")
    writer.start()
    try:
        while len(writer.committed) < 200:
            time.sleep(0.01)
        before = list(writer.committed)  # every row committed before the snapshot began
        snap = take_snapshot(runtime, tmp_path / "snap")
        time.sleep(0.05)
    finally:
        writer.stop.set()
        writer.join(timeout=10)
    assert len(writer.committed) > len(before)  # the writer really ran through the snapshot
    copy = sqlite3.connect(tmp_path / "snap" / "state.sqlite")
    assert copy.execute("PRAGMA integrity_check").fetchall() == [("ok",)]
    runs = {row[0] for row in copy.execute("SELECT run_id FROM run WHERE task = 'writer'")}
    metas = {row[0] for row in copy.execute("SELECT key FROM meta WHERE value = 'x'")}
    assert set(before) <= runs
    assert runs == metas  # both rows of every transaction, or neither: one consistent moment
    assert snap.parts["state"]["integrity_check"] == "ok"


def test_index_dump_restores_with_pg_restore(runtime, tmp_path):
    index_db = runtime.index_db()
    index_db.replace_item("comments", "AB-2026-0001-0001", "AB-2026-0001",
                          [Chunk(ordinal=0, text="hello", page=None, section="")], [[0.1, 0.2, 0.3]],
                          "fp", "hash", "hashing")
    take_snapshot(runtime, tmp_path / "snap")
    dump = tmp_path / "snap" / "index.dump"
    assert dump.is_file()
    listing = subprocess.run([str(pg_dump_path().with_name("pg_restore")), "--list", str(dump)],
                             capture_output=True, text=True, check=True).stdout
    assert "TABLE DATA public chunks" in listing and "TABLE DATA public index_state" in listing


def test_postgresql_state_db_is_dumped(tmp_path, pg_server):
    rt = make_runtime(tmp_path, new_pg_database(pg_server), index_url=new_pg_database(pg_server))
    rt.state  # noqa: B018
    previous = set_runtime(rt)
    try:
        snap = take_snapshot(rt, tmp_path / "snap")
    finally:
        set_runtime(previous)
        rt.close()
    assert snap.parts["state"]["file"] == "state.dump"
    assert (tmp_path / "snap" / "state.dump").stat().st_size > 0
    assert (tmp_path / "snap" / "snapshot.json").is_file()


def test_copy_fallback_without_pg_dump(runtime, tmp_path, monkeypatch):
    runtime.index_db()  # create the index schema
    monkeypatch.setattr("pipeline.ops.snapshot.pg_dump_path", lambda: None)
    snap = take_snapshot(runtime, tmp_path / "snap")
    assert snap.parts["index"]["file"] == "index-csv"
    assert (tmp_path / "snap" / "index-csv" / "chunks.csv").is_file()


def test_cli_refuses_a_non_empty_destination(runtime, tmp_path, capsys):
    (tmp_path / "snap").mkdir()
    (tmp_path / "snap" / "precious.txt").write_text("keep me")
    assert cli.main(["snapshot", str(tmp_path / "snap")]) == 2
    assert "not empty" in capsys.readouterr().err
    assert (tmp_path / "snap" / "precious.txt").read_text() == "keep me"


def test_restore_loads_a_snapshot_into_a_new_folder_and_verifies_it(runtime, tmp_path, pg_server,
                                                                    monkeypatch, capsys):
    from pipeline.store.models import Docket, Run

    Docket.insert(id="AB-2026-0001", agency="AB").execute()
    Run.insert(run_id="r1", task="t", started_at="2026-01-01T00:00:00Z", budget_spent=False).execute()
    index_db = runtime.index_db()
    index_db.replace_item("comments", "AB-2026-0001-0001", "AB-2026-0001",
                          [Chunk(ordinal=0, text="hello", page=None, section="")], [[0.1, 0.2, 0.3]],
                          "fp", "hash", "hashing")
    take_snapshot(runtime, tmp_path / "snap")
    chunks = index_db.dump_chunks()
    # A new data folder and an empty index database; the blobs stay where they are.
    restored_index = new_pg_database(pg_server)
    for name, value in {"DATA_DIR": tmp_path / "restored", "INDEX_URL": restored_index,
                        "BLOB_URL": runtime.data_dir / "blobs", "EMBEDDER": "hashing",
                        "STATE_URL": ""}.items():
        monkeypatch.setenv(f"DOCKETEER_{name}", str(value))
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 0
    out = capsys.readouterr().out
    assert "integrity_check ok before and after the copy" in out and out.rstrip().endswith("PASS")
    copy = sqlite3.connect(tmp_path / "restored" / "state.sqlite")
    assert copy.execute("SELECT id FROM docket").fetchall() == [("AB-2026-0001",)]
    assert copy.execute("SELECT run_id FROM run").fetchall() == [("r1",)]
    copy.close()
    restored = make_runtime(tmp_path / "x", index_url=restored_index)
    try:
        assert restored.index_db().dump_chunks() == chunks
    finally:
        restored.close()
    # A restore never writes over a store.
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 2
    assert "a store exists at" in capsys.readouterr().err


def test_restore_refuses_a_damaged_state_copy_in_one_line(runtime, tmp_path, monkeypatch, capsys):
    runtime.index_db()
    take_snapshot(runtime, tmp_path / "snap")
    copy = tmp_path / "snap" / "state.sqlite"
    copy.write_bytes(copy.read_bytes()[:4096] + b"\0" * 4096)  # its pages cut off
    monkeypatch.setenv("DOCKETEER_DATA_DIR", str(tmp_path / "restored"))
    monkeypatch.setenv("DOCKETEER_STATE_URL", "")
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "state.sqlite" in err[0], err
    assert not (tmp_path / "restored" / "state.sqlite").exists()


def _with_password(url: str, password: str) -> str:
    """The session server's URL (``postgresql://postgres:@/db?host=...``) with a password."""
    return url.replace("postgres:@", f"postgres:{password}@", 1)


def test_pg_dump_and_pg_restore_get_the_password_from_the_environment_never_argv(tmp_path, pg_server, monkeypatch):
    """A command line is world-readable (/proc/PID/cmdline): the password of the database URL
    reaches pg_dump and pg_restore as PGPASSWORD (the embedded server trusts its socket, so
    the dump and the restore still run for real)."""
    from pipeline.ops import snapshot

    password = "s3cret-dump-pw"
    source, target = (_with_password(new_pg_database(pg_server), password) for _ in range(2))
    with psycopg2_connection(source) as cur:
        cur.execute("CREATE TABLE kept (n int); INSERT INTO kept VALUES (7)")
    calls = []
    real_run = subprocess.run

    def spy(args, **kwargs):
        calls.append((list(args), kwargs.get("env")))
        return real_run(args, **kwargs)

    monkeypatch.setattr(snapshot.subprocess, "run", spy)
    snapshot.dump_postgres(source, tmp_path / "state.dump")
    snapshot.pg_restore(tmp_path / "state.dump", target)
    assert [Path(args[0]).name for args, _env in calls] == ["pg_dump", "pg_restore"]
    for args, env in calls:
        assert not any(password in arg for arg in args), args
        assert env is not None and env["PGPASSWORD"] == password
    with psycopg2_connection(target) as cur:
        cur.execute("SELECT n FROM kept")
        assert cur.fetchone() == (7,)


@contextmanager
def psycopg2_connection(url: str):
    import psycopg2

    conn = psycopg2.connect(url)
    try:
        with conn, conn.cursor() as cur:
            yield cur
    finally:
        conn.close()
@pytest.mark.parametrize("described", ["[]", "null", "5", "{not json", '{"parts": []}', '{"parts": {"state": "x"}}',
                                       '{"parts": {"state": {"file": "../../etc/passwd"}, "index": {"file": "i.dump"}}}',
                                       '{"parts": {"state": {"file": 7}}}', b"\xff\xfe"])
def test_restore_refuses_a_malformed_snapshot_json_in_one_line(runtime, tmp_path, monkeypatch, capsys, described):
    runtime.index_db()
    take_snapshot(runtime, tmp_path / "snap")
    path = tmp_path / "snap" / "snapshot.json"
    path.write_bytes(described if isinstance(described, bytes) else described.encode())
    monkeypatch.setenv("DOCKETEER_DATA_DIR", str(tmp_path / "restored"))
    monkeypatch.setenv("DOCKETEER_STATE_URL", "")
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "snapshot" in err[0], err
    assert not (tmp_path / "restored" / "state.sqlite").exists()


def test_a_failed_restore_leaves_nothing_and_the_retry_succeeds(runtime, tmp_path, pg_server, monkeypatch, capsys):
    """The index dump cut short: the restore fails in one line, leaves no state DB and no
    index rows behind, and the same restore from a whole dump then succeeds."""
    from pipeline.store.models import Docket

    Docket.insert(id="AB-2026-0001", agency="AB").execute()
    runtime.index_db().replace_item("comments", "AB-2026-0001-0001", "AB-2026-0001",
                                    [Chunk(ordinal=0, text="hello", page=None, section="")], [[0.1, 0.2, 0.3]],
                                    "fp", "hash", "hashing")
    take_snapshot(runtime, tmp_path / "snap")
    dump = next((tmp_path / "snap").glob("index*.dump"))
    whole = dump.read_bytes()
    dump.write_bytes(whole[: len(whole) * 2 // 3])  # a copy cut off
    restored_index = new_pg_database(pg_server)
    for name, value in {"DATA_DIR": tmp_path / "restored", "INDEX_URL": restored_index,
                        "BLOB_URL": runtime.data_dir / "blobs", "EMBEDDER": "hashing", "STATE_URL": ""}.items():
        monkeypatch.setenv(f"DOCKETEER_{name}", str(value))
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "pg_restore" in err[0], err
    assert not (tmp_path / "restored" / "state.sqlite").exists()
    assert not [p.name for p in (tmp_path / "restored").glob("*state*")]
    dump.write_bytes(whole)
    set_runtime(None)
    assert cli.main(["restore", str(tmp_path / "snap")]) == 0, capsys.readouterr().err
    assert sqlite3.connect(tmp_path / "restored" / "state.sqlite").execute("SELECT id FROM docket").fetchall() == [
        ("AB-2026-0001",)]



def test_restore_without_the_blobs_says_state_restored_and_the_next_step_not_fail(runtime, tmp_path, pg_server,
                                                                                  monkeypatch, capsys):
    """A snapshot holds no blobs: restoring one where the blob folder is not back yet is a
    success that names the next step; once the folder is back, `docketeer verify` passes; a
    blob folder back but short of a blob is damage, and the restore says FAIL."""
    import hashlib
    import shutil

    from pipeline.store.blobs import attachment_key
    from pipeline.store.models import Attachment, Docket, Item

    Docket.insert(id="AB-2026-0001", agency="AB").execute()
    shas = []
    for n in (1, 2):
        data = f"file {n}".encode()
        shas.append(hashlib.sha256(data).hexdigest())
        runtime.blobs.put_bytes(attachment_key(shas[-1]), data)
        key = f"AB-2026-0001-000{n}"
        Item.insert(key=key, docket="AB-2026-0001", kind="comment", created_at="2026-01-01T00:00:00Z",
                    updated_at="2026-01-01T00:00:00Z").execute()
        Attachment.insert(item=key, filename="attachment_1.pdf", sha256=shas[-1], size=len(data)).execute()
    runtime.index_db()  # create the index schema
    take_snapshot(runtime, tmp_path / "snap")

    def restore_into(folder: str, blobs: Path) -> tuple[int, str]:
        for name, value in {"DATA_DIR": tmp_path / folder, "BLOB_URL": blobs, "EMBEDDER": "hashing",
                            "STATE_URL": "", "INDEX_URL": new_pg_database(pg_server)}.items():
            monkeypatch.setenv(f"DOCKETEER_{name}", str(value))
        set_runtime(None)
        code = cli.main(["restore", str(tmp_path / "snap")])
        return code, capsys.readouterr().out

    code, out = restore_into("restored", tmp_path / "blobs-back-later")
    assert code == 0, out
    assert "FAIL" not in out and "PASS" not in out
    assert out.rstrip().splitlines()[-2:] == [
        "state restored",
        f"blobs missing: put the blob folder back at {tmp_path / 'blobs-back-later'} (or point blob_url at it), "
        "then run docketeer verify"]
    shutil.copytree(runtime.data_dir / "blobs", tmp_path / "blobs-back-later")
    set_runtime(None)
    assert cli.main(["verify", "--out", str(tmp_path / "report")]) == 0
    assert capsys.readouterr().out.rstrip().endswith("PASS")

    shutil.copytree(runtime.data_dir / "blobs", tmp_path / "blobs-short")
    (tmp_path / "blobs-short" / attachment_key(shas[0])).unlink()
    code, out = restore_into("restored-again", tmp_path / "blobs-short")
    assert code == 1 and out.rstrip().endswith("FAIL") and "blob missing" in out, out
