"""``docketeer verify`` catches what can go wrong in a store, and passes a sound one."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from pipeline import cli
from pipeline.store import item_states
from pipeline.store.blobs import attachment_key, combined_key
from pipeline.store.models import Attachment, ItemState
from tests.pipeline_fixtures import built_store


@pytest.fixture
def store(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=8) as built:
        yield built


def verify(capsys, folder: Path, *extra: str) -> tuple[int, str, dict]:
    """Exit code, printed report and status.json of ``docketeer verify --out folder``."""
    code = cli.main(["verify", "--out", str(folder), *extra])
    out = capsys.readouterr().out
    return code, out, json.loads((folder / "status.json").read_text())


def problems(status: dict, name: str) -> list[str]:
    return next(c for c in status["checks"] if c["name"] == name)["problems"]


def distinct_attachments(n: int) -> list[Attachment]:
    rows, seen = [], set()
    for row in Attachment.select().order_by(Attachment.item):
        if row.sha256 not in seen:
            seen.add(row.sha256)
            rows.append(row)
    assert len(rows) >= n, "the corpus needs more attachments"
    return rows[:n]


def test_sound_store_passes_and_writes_status_and_inventory(store, capsys, tmp_path):
    code, out, status = verify(capsys, tmp_path / "report")
    assert code == 0 and out.strip().endswith("PASS"), out
    assert status["result"] == "PASS"
    with open(tmp_path / "report" / "inventory.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == Attachment.select().count()
    assert {r["blob"] for r in rows} == {"present"}
    assert {r["backfill_file_state"] for r in rows} == {"ok"}


def test_default_location_is_the_data_folder(store, capsys):
    assert cli.main(["verify"]) == 0
    capsys.readouterr()
    assert (store.runtime.data_dir / "status.json").is_file()
    assert (store.runtime.data_dir / "inventory.csv").is_file()


def test_catches_missing_and_truncated_blobs(store, capsys, tmp_path):
    missing, truncated = distinct_attachments(2)
    blobs = store.runtime.blobs
    blobs.delete(attachment_key(missing.sha256))
    path = blobs.local_path(attachment_key(truncated.sha256))
    path.write_bytes(path.read_bytes()[:100])
    code, out, status = verify(capsys, tmp_path)
    assert code == 1 and out.strip().endswith("FAIL")
    found = "\n".join(problems(status, "attachment blobs"))
    assert f"{missing.item}/{missing.filename}" in found and "blob missing" in found
    assert f"{truncated.item}/{truncated.filename}" in found and "blob wrong_size" in found
    with open(tmp_path / "inventory.csv") as handle:
        states = {r["sha256"]: r["blob"] for r in csv.DictReader(handle)}
    assert states[missing.sha256] == "missing" and states[truncated.sha256] == "wrong_size"


def test_full_hashes_catch_same_size_corruption(store, capsys, tmp_path):
    [row] = distinct_attachments(1)
    path = store.runtime.blobs.local_path(attachment_key(row.sha256))
    data = bytearray(path.read_bytes())
    data[-1] ^= 0xFF
    path.write_bytes(bytes(data))
    code, _, status = verify(capsys, tmp_path, "--full")
    assert code == 1
    assert any("sha256 does not match" in p for p in problems(status, "attachment blobs"))


def test_catches_markers_without_data(store, capsys, tmp_path):
    docket = store.dockets[0]
    rows = list(ItemState.select().where((ItemState.stage == "extract") & (ItemState.state == "ok"))
                .order_by(ItemState.item))
    no_text, no_index = rows[0].item, rows[1].item
    store.runtime.blobs.delete(combined_key(docket, no_text))
    index_db = store.runtime.index_db()
    index_db.delete_item("comments", no_index)  # chunks and index row gone, marker kept
    code, out, status = verify(capsys, tmp_path)
    assert code == 1, out
    assert any(no_text in p and "no combined.md" in p for p in problems(status, "extract output"))
    assert any(docket in p and "not indexed" in p for p in problems(status, "index markers"))


def test_catches_chunk_count_mismatch(store, capsys, tmp_path):
    index_db = store.runtime.index_db()
    item = sorted(index_db.state_for_docket("comments", store.dockets[0]))[0]
    with index_db._conn, index_db._conn.cursor() as cur:
        cur.execute("DELETE FROM chunks WHERE item_key = %s AND ordinal = 0", (item,))
    code, _, status = verify(capsys, tmp_path)
    assert code == 1
    assert any(item in p for p in problems(status, "index chunk counts"))


def test_catches_a_stale_pending_row_but_not_a_fresh_one(store, capsys, tmp_path):
    docket = store.dockets[0]
    item_states.mark_pending("backfill", f"{docket}-9999", docket, run_id="dead", reason="downloading")
    code, _, _ = verify(capsys, tmp_path)
    assert code == 0  # a run may be working on it right now
    ItemState.update(written_at="2020-01-01T00:00:00.000000Z").where(
        ItemState.item == f"{docket}-9999").execute()
    code, out, status = verify(capsys, tmp_path)
    assert code == 1 and out.strip().endswith("FAIL")
    assert any(f"{docket}-9999" in p for p in problems(status, "pending rows"))


def test_orphan_blobs_are_reported_without_failing(store, capsys, tmp_path):
    import io

    store.runtime.blobs.ingest(io.BytesIO(b"nobody refers to me"), max_bytes=1000)
    code, out, status = verify(capsys, tmp_path)
    assert code == 0, out
    assert "warn  orphan blobs" in out
    assert len(problems(status, "orphan blobs")) == 1
