"""The one-time dedupe migration on a store created before the (item, filename) unique index."""

from __future__ import annotations

import sqlite3
import subprocess
import sys
from pathlib import Path

import pytest

from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.store import dedupe
from tests.fixtures.paths import ROOT

SHA_A, SHA_B, SHA_C = "a" * 64, "b" * 64, "c" * 64

# The attachment table as old stores have it: the same columns, no unique index.
OLD_SCHEMA = """
CREATE TABLE attachment (
    id INTEGER NOT NULL PRIMARY KEY, item TEXT NOT NULL, filename TEXT NOT NULL,
    ordinal INTEGER NOT NULL DEFAULT 0, format TEXT, source_url TEXT, declared_size INTEGER,
    sha256 TEXT, size INTEGER)
"""
ROWS = [
    # a form letter stored three times: two rows go, 2 x 100 bytes freed
    (1, "AB-2026-0001-0002", "attachment_1.pdf", SHA_A, 100),
    (2, "AB-2026-0001-0002", "attachment_1.pdf", SHA_A, 100),
    (3, "AB-2026-0001-0002", "attachment_1.pdf", SHA_A, 100),
    # an incomplete row (no sha yet) beside a complete one: the complete one stays
    (4, "AB-2026-0001-0003", "attachment_1.pdf", None, None),
    (5, "AB-2026-0001-0003", "attachment_1.pdf", SHA_B, 50),
    # two different files under one name: refused
    (6, "AB-2026-0001-0004", "attachment_1.pdf", SHA_B, 50),
    (7, "AB-2026-0001-0004", "attachment_1.pdf", SHA_C, 70),
    # no duplicate
    (8, "AB-2026-0001-0005", "attachment_2.pdf", SHA_C, 70),
]


@pytest.fixture
def old_store(tmp_path) -> Path:
    path = tmp_path / "old.sqlite"
    with sqlite3.connect(path) as conn:
        conn.execute(OLD_SCHEMA)
        conn.executemany(
            "INSERT INTO attachment (id, item, filename, sha256, size) VALUES (?, ?, ?, ?, ?)", ROWS)
    return path


def rows(path: Path) -> list[tuple]:
    with sqlite3.connect(path) as conn:
        return conn.execute("SELECT * FROM attachment ORDER BY id").fetchall()


def unique_index(path: Path) -> bool:
    with sqlite3.connect(path) as conn:
        indexes = conn.execute("PRAGMA index_list('attachment')").fetchall()
        for _seq, name, unique, *_ in indexes:
            columns = [c[2] for c in conn.execute(f"PRAGMA index_info('{name}')")]
            if unique and columns == ["item", "filename"]:
                return True
    return False


def run(path: Path, *args: str, capsys) -> tuple[int, str]:
    code = dedupe.main(["--state-url", f"sqlite:///{path}", *args])
    return code, capsys.readouterr().out


def test_dry_run_reports_and_changes_nothing(old_store, capsys):
    before = rows(old_store)
    code, out = run(old_store, capsys=capsys)
    assert code == 0
    assert "dry run" in out
    assert "duplicate groups: 3" in out and "rows removed: 3" in out and "bytes freed: 200" in out
    assert "refused groups: 1" in out and "refused AB-2026-0001-0004 attachment_1.pdf: files differ in size" in out
    assert rows(old_store) == before and not unique_index(old_store)


def test_apply_refuses_size_mismatch_then_indexes_once_resolved(old_store, capsys):
    code, out = run(old_store, "--apply", capsys=capsys)
    assert code == 1  # a refused group blocks the index: the operator must look
    assert [r[0] for r in rows(old_store)] == [1, 5, 6, 7, 8]  # oldest complete rows kept
    assert "unique index on attachment(item, filename): absent" in out

    with sqlite3.connect(old_store) as conn:  # the operator decides which file is right
        conn.execute("DELETE FROM attachment WHERE id = 7")
    code, out = run(old_store, "--apply", capsys=capsys)
    assert code == 0 and "duplicate groups: 0" in out and "present" in out
    assert unique_index(old_store)

    before = rows(old_store)
    with counters.measure() as io:
        code, out = run(old_store, "--apply", capsys=capsys)
    assert code == 0 and "duplicate groups: 0" in out and "rows removed: 0" in out
    assert io.get(ROWS_WRITTEN, 0) == 0 and rows(old_store) == before  # a second apply is a no-op
    with pytest.raises(sqlite3.IntegrityError), sqlite3.connect(old_store) as conn:
        conn.execute("INSERT INTO attachment (item, filename) VALUES ('AB-2026-0001-0002', 'attachment_1.pdf')")


def test_apply_is_one_transaction(old_store, capsys, monkeypatch):
    def broken_index(*_args, **_kwargs):
        raise RuntimeError("disk full")

    with sqlite3.connect(old_store) as conn:
        conn.execute("DELETE FROM attachment WHERE id = 7")
    before = rows(old_store)
    # A failure injected after the deletes, where the index is created.
    monkeypatch.setattr(dedupe.Attachment._schema, "create_indexes", broken_index)
    with pytest.raises(RuntimeError):
        run(old_store, "--apply", capsys=capsys)
    assert rows(old_store) == before  # the deletes were rolled back with the failed index


def test_runs_as_a_module(old_store):
    done = subprocess.run(
        [sys.executable, "-m", "pipeline.store.dedupe", "--state-url", f"sqlite:///{old_store}"],
        cwd=ROOT, capture_output=True, text=True, timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert "duplicate groups: 3" in done.stdout and "refused groups: 1" in done.stdout
    assert len(rows(old_store)) == len(ROWS)
