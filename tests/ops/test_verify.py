"""``docketeer verify`` catches what can go wrong in a store, and passes a sound one."""

from __future__ import annotations

import csv
import json
from datetime import timedelta
from pathlib import Path

import pytest

from pipeline.clock import iso, utcnow
from pipeline.engine import leases, markers
from pipeline.failures import RetryPolicy
from pipeline.ops import cli
from pipeline.store import dockets, item_states
from pipeline.store.blobs import attachment_key, combined_key
from pipeline.store.models import Attachment, Item, ItemState
from tests.fixtures.pipeline_fixtures import built_store

MARKER_CHECKS = ("backfill markers", "extract markers", "ocr markers", "index markers")


@pytest.fixture
def store(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=8) as built:
        yield built


def verify(capsys, folder: Path, *extra: str) -> tuple[int, str, dict]:
    """Exit code, printed report and status.json of ``docketeer verify --out folder``."""
    code = cli.main(["verify", "--out", str(folder), *extra])
    out = capsys.readouterr().out
    return code, out, json.loads((folder / "status.json").read_text())


def check(status: dict, name: str) -> dict:
    return next(c for c in status["checks"] if c["name"] == name)


def problems(status: dict, name: str) -> list[str]:
    return check(status, name)["problems"]


def distinct_attachments(n: int) -> list[Attachment]:
    rows, seen = [], set()
    for row in Attachment.select().order_by(Attachment.item):
        if row.sha256 not in seen:
            seen.add(row.sha256)
            rows.append(row)
    assert len(rows) >= n, "the corpus needs more attachments"
    return rows[:n]


def failed_checks(status: dict) -> list[str]:
    return [c["name"] for c in status["checks"] if c["label"] == "FAIL"]


def owed_line(docket: str, stage: str, n: int) -> str:
    return f"{docket} {stage}: marker says done but {n} item(s) have no decided {stage} state"


def comments_in(stage: str, state: str = "ok") -> list[str]:
    """The docket's comments (not its documents: their text is every campaign's input too)."""
    documents = Item.select(Item.key).where(Item.kind == "document")
    return [r.item for r in ItemState.select().where((ItemState.stage == stage) & (ItemState.state == state)
                                                     & ~ItemState.item.contains("/")
                                                     & ItemState.item.not_in(documents)).order_by(ItemState.item)]


# Each breaks what one stage did for the docket while its marker stays, and says how many
# items the stage then owes.
def lose_details(store) -> int:
    keys = comments_in("backfill")[:2]  # as if their list summary changed: details due again
    Item.update(detail_summary_hash=None).where(Item.key.in_(keys)).execute()
    return len(keys)


def lose_extract_rows(store) -> int:
    keys = comments_in("extract")[:2]
    ItemState.delete().where((ItemState.stage == "extract") & ItemState.item.in_(keys)).execute()
    return len(keys)


def find_a_new_scan(store) -> int:
    # An attachment read as text turns out to be an image-only PDF: its comment needs OCR.
    row = ItemState.get((ItemState.stage == "extract.file") & (ItemState.state == "ok"))
    ItemState.update(state="ocr_needed").where(
        (ItemState.stage == row.stage) & (ItemState.item == row.item)).execute()
    return 1


def lose_index_rows(store) -> int:
    index_db = store.runtime.index_db()
    keys = sorted(index_db.state_for_docket("comments", store.dockets[0]))[:2]
    for key in keys:
        index_db.delete_item("comments", key)  # chunks and index row gone, marker kept
    return len(keys)


BREAKS = {"backfill": lose_details, "extract": lose_extract_rows, "ocr": find_a_new_scan,
          "index": lose_index_rows}


def test_sound_store_passes_and_writes_status_and_inventory(store, capsys, tmp_path):
    code, out, status = verify(capsys, tmp_path / "report")
    assert code == 0 and out.strip().endswith("PASS"), out
    assert status["result"] == "PASS"
    with open(tmp_path / "report" / "inventory.csv") as handle:
        rows = list(csv.DictReader(handle))
    assert len(rows) == Attachment.select().count()  # every declared file, stored or not
    stored = [r for r in rows if r["sha256"]]
    assert {r["blob"] for r in stored} == {"present"} and {r["backfill_file_state"] for r in stored} == {"ok"}
    assert all(r["backfill_file_state"] not in ("ok", "") for r in rows if not r["sha256"])
    for name in MARKER_CHECKS:  # each stage's marker was found saying done, and held to it
        assert check(status, name)["summary"].startswith("1 marker(s) saying done"), name


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
    assert problems(status, "index markers") == [owed_line(docket, "index", 1)]


@pytest.mark.parametrize("stage", list(BREAKS))
def test_a_marker_that_vouches_for_its_input_must_owe_nothing(store, capsys, tmp_path, stage):
    docket = store.dockets[0]
    owed = BREAKS[stage](store)
    assert owed, "the corpus gave this stage nothing to lose"
    code, out, status = verify(capsys, tmp_path)
    assert code == 1 and out.strip().endswith("FAIL"), out
    # Sections links comments by the index's vectors: a lost index row is owed by it too.
    also = ["sections markers"] if stage == "index" else []
    assert failed_checks(status) == [f"{stage} markers", *also]
    assert problems(status, f"{stage} markers") == [owed_line(docket, stage, owed)]
    assert owed_line(docket, stage, owed) in out


def test_a_sealed_marker_must_owe_nothing_under_its_seal(store, capsys, tmp_path):
    docket = store.dockets[0]
    marker = markers.read_marker(docket, "extract")
    sealed_at = dockets.seal(docket, "manual")

    def extract_marker(input_fingerprint: str) -> None:
        markers.write_marker(docket, "extract", version=marker.version, sealed_at=sealed_at,
                             input_fingerprint=input_fingerprint,
                             output_fingerprint=marker.output_fingerprint, run_id="test")

    extract_marker(marker.input_fingerprint)  # recorded under this seal for backfill's output
    code, out, _ = verify(capsys, tmp_path)
    assert code == 0, out
    owed = lose_extract_rows(store)
    code, out, status = verify(capsys, tmp_path)
    assert code == 1, out
    assert problems(status, "extract markers") == [owed_line(docket, "extract", owed)]
    # For an input that is not backfill's output any more it says nothing, sealed or not.
    extract_marker("an older backfill output")
    code, out, status = verify(capsys, tmp_path)
    assert code == 0, out
    assert check(status, "extract markers")["summary"].startswith("0 marker(s) saying done")
    # A new seal: the marker was recorded under another one and claims nothing any more.
    extract_marker(marker.input_fingerprint)
    dockets.unseal(docket)
    dockets.seal(docket, "manual", now=utcnow() + timedelta(seconds=1))
    code, out, status = verify(capsys, tmp_path)
    assert code == 0, out
    assert check(status, "extract markers")["summary"].startswith("0 marker(s) saying done")


def test_a_retry_not_due_counts_as_decided_and_a_due_one_waits_for_its_run(store, capsys, tmp_path):
    docket = store.dockets[0]
    [key] = comments_in("backfill")[:1]
    Item.update(detail_summary_hash=None).where(Item.key == key).execute()  # its detail is owed
    fail = dict(run_id="test", policy=RetryPolicy())
    item_states.retry_later("backfill", key, docket, "HTTP 503", now=utcnow(), **fail)  # due in 1 h
    item_states.refresh_retry_due(docket)
    code, out, _ = verify(capsys, tmp_path)
    assert code == 0, out  # waiting to retry is a decided state until its time comes
    item_states.retry_later("backfill", key, docket, "HTTP 503", now=utcnow() - timedelta(hours=9), **fail)
    item_states.refresh_retry_due(docket)
    assert dockets.get_docket(docket).retry_due_at < iso(utcnow())
    code, out, status = verify(capsys, tmp_path)
    assert code == 0, out  # due: every target after fetch is incomplete, the next run does it
    assert "not checked: docket(s) 1 with a retry due" in check(status, "backfill markers")["summary"]


def test_a_docket_being_worked_on_is_checked_after_its_run(store, capsys, tmp_path):
    docket = store.dockets[0]
    owed = lose_extract_rows(store)  # as a forced extract run leaves its items mid-way
    token = leases.acquire("extract", docket, 600)
    try:
        code, out, status = verify(capsys, tmp_path)
        assert code == 0, out
        assert "1 being worked on now" in check(status, "extract markers")["summary"]
    finally:
        leases.release("extract", docket, token)
    code, _, status = verify(capsys, tmp_path)
    assert code == 1 and problems(status, "extract markers") == [owed_line(docket, "extract", owed)]


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
    # The times people read are Eastern (status.json's checked_at stays UTC).
    assert f"backfill {docket}-9999 ({docket}) pending since 2019-12-31 19:00:00 EST: downloading" in out
    assert "2020-01-01T00:00" not in out and status["checked_at"].endswith("Z")


def test_orphan_blobs_are_reported_without_failing(store, capsys, tmp_path):
    import io

    store.runtime.blobs.ingest(io.BytesIO(b"nobody refers to me"), max_bytes=1000)
    code, out, status = verify(capsys, tmp_path)
    assert code == 0, out
    assert "warn  orphan blobs" in out
    assert len(problems(status, "orphan blobs")) == 1
