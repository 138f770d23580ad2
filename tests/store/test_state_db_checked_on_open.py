"""An existing state DB is checked when opened: an empty, foreign or damaged file is refused
with one line naming it and the way back, never taken for a new store, never a traceback;
``--reinitialise`` moves it aside on purpose."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys

import pytest

from pipeline.runtime import set_runtime
from pipeline.store import db as state_db
from pipeline.store import dockets
from pipeline.store.models import Docket
from tests.fixtures.paths import ROOT
from tests.fixtures.state_fixtures import make_runtime


def a_store(folder) -> os.PathLike:
    """A state DB with rows worth keeping: sealed dockets, enough pages to damage one."""
    runtime = make_runtime(folder)
    previous = set_runtime(runtime)
    try:
        runtime.state  # noqa: B018
        ids = [f"CMS-2026-{n:04d}" for n in range(1, 400)]
        dockets.ensure_dockets(ids, "list")
        Docket.update(title="x" * 300, seal_reason="manual").execute()
    finally:
        set_runtime(previous)
        runtime.close()
    return runtime.settings.data_path / "state.sqlite"


def empty(path) -> None:
    path.write_bytes(b"")


def not_sqlite(path) -> None:
    path.write_bytes(b"PK\x03\x04 a zip, not a database" * 100)


def foreign(path) -> None:
    path.unlink()
    with sqlite3.connect(path) as other:
        other.execute("CREATE TABLE songs (title TEXT)")
        other.execute("INSERT INTO songs VALUES ('x')")


def truncated(path) -> None:
    data = path.read_bytes()
    path.write_bytes(data[: len(data) // 3])


def damaged_page(path) -> None:
    data = bytearray(path.read_bytes())
    page = int.from_bytes(data[16:18], "big")
    data[3 * page: 6 * page] = b"\xa5" * (3 * page)  # pages 4 to 6: b-tree pages of the tables
    path.write_bytes(bytes(data))


SHAPES = {"an empty file": empty, "not a SQLite database": not_sqlite,
          "another program's database": foreign, "truncated": truncated, "damaged pages": damaged_page}


def checkpointed(path) -> None:
    with sqlite3.connect(path) as db:
        db.execute("PRAGMA wal_checkpoint(TRUNCATE)")


@pytest.mark.parametrize("shape", sorted(SHAPES))
def test_an_unusable_state_db_is_refused_with_the_way_back(tmp_path, shape):
    path = a_store(tmp_path)
    checkpointed(path)
    SHAPES[shape](path)
    before = path.read_bytes()
    with pytest.raises(state_db.UnusableStateDB) as refused:
        state_db.open_state_db("", path.parent)
    message = str(refused.value)
    assert str(path) in message and "`docketeer restore`" in message and "--reinitialise" in message
    if shape in ("an empty file", "not a SQLite database", "another program's database"):
        assert shape in message
    assert path.read_bytes() == before  # never written, never taken for a new store


def test_a_usable_store_and_a_new_path_open(tmp_path):
    path = a_store(tmp_path)
    assert state_db.unusable_sqlite(path) is None and state_db.unusable_sqlite(path, full=True) is None
    fresh = tmp_path / "new"
    fresh.mkdir()
    db = state_db.open_state_db("", fresh)  # no file: a new store
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    db.close()


def docketeer(folder, *args):
    env = {**os.environ, "DOCKETEER_DATA_DIR": str(folder), "PYTHONPATH": str(ROOT)}
    return subprocess.run([sys.executable, "-m", "pipeline.ops.cli", *args], env=env, cwd=folder,
                          capture_output=True, text=True, timeout=120)


def luigi(folder):
    env = {**os.environ, "DOCKETEER_DATA_DIR": str(folder), "PYTHONPATH": str(ROOT),
           "LUIGI_CONFIG_PATH": str(ROOT / "luigi.cfg"), "DOCKETEER_DISCOVER": "list", "DOCKETEER_DOCKETS": ""}
    return subprocess.run([sys.executable, "-m", "luigi", "--module", "pipeline", "FetchAll", "--local-scheduler"],
                          env=env, cwd=folder, capture_output=True, text=True, timeout=300)


@pytest.mark.parametrize("shape", ["an empty file", "damaged pages"])
def test_commands_and_runs_stop_with_one_line_and_reinitialise_moves_it_aside(tmp_path, shape):
    path = a_store(tmp_path)
    checkpointed(path)
    SHAPES[shape](path)
    folder = path.parent
    for done in (docketeer(folder, "dockets"), luigi(folder)):
        said = done.stdout + done.stderr
        assert done.returncode != 0 and "Traceback" not in said and "Uncaught exception" not in said, said[-2000:]
        assert f"state DB {path} is not usable" in said and "docketeer restore" in said
    assert docketeer(folder, "verify").returncode == 2
    before = path.read_bytes()
    done = docketeer(folder, "--reinitialise", "dockets")
    assert done.returncode == 0, done.stderr
    aside = [p for p in folder.iterdir() if p.name.startswith("state.sqlite.unusable-") and "-wal" not in p.name
             and "-shm" not in p.name]
    assert len(aside) == 1 and aside[0].read_bytes() == before and "moved aside" in done.stderr
    again = docketeer(folder, "--reinitialise", "dockets")  # a usable store is never moved
    assert again.returncode == 0 and "nothing was moved" in again.stderr


def test_verify_runs_the_full_integrity_check(tmp_path):
    path = a_store(tmp_path)
    checkpointed(path)
    runtime = make_runtime(tmp_path)
    summary, problems = state_db.integrity_check(runtime.state)
    assert problems == [] and "ok" in summary
    runtime.close()


def test_a_new_store_is_made_aside_and_a_failed_first_open_leaves_nothing(tmp_path, monkeypatch):
    """A first run that fails while making the store (a full disk) must not leave a half-made
    state.sqlite that every later run would refuse."""
    import peewee

    def disk_full(db):
        db.execute_sql("CREATE TABLE half (x)")
        raise peewee.OperationalError("database or disk is full")

    monkeypatch.setattr(state_db, "ensure_schema", disk_full)
    with pytest.raises(peewee.OperationalError, match="disk is full"):
        state_db.open_state_db("", tmp_path)
    assert sorted(p.name for p in tmp_path.iterdir()) == []  # nothing made, nothing left aside
    monkeypatch.undo()
    db = state_db.open_state_db("", tmp_path)
    assert state_db.schema_version(db) == state_db.SCHEMA_VERSION
    db.close()
    assert sorted(p.name for p in tmp_path.iterdir() if not p.name.endswith(("-wal", "-shm"))) == ["state.sqlite"]
