"""Fetch from the mirror holds no docket listing whole: the walk is compared and filed
a page at a time, the filed objects are read a page at a time, and gone objects are found
by count (and by key only when some are gone). What a paged fetch leaves equals what one
page holding the whole docket leaves; an unchanged rerun writes nothing.

Every assertion is about work held or done (objects filed at once, rows, walks), never time.
"""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

import pipeline.fetch.mirror as fetch_mirror
import pipeline.sources.mirror as mirror_module
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.fetch.mirror import MIRROR_FETCH_HELD, fetch_from_mirror
from pipeline.sources.mirror import MIRROR_READS, MIRROR_WALKS
from pipeline.store import dockets, mirror_objects
from pipeline.store.models import Docket, Item, ItemState, MirrorObject, MirrorScan
from tests.fixtures.mirror_bound import COMMENTS, FiledAtOnce

PAGE = 6
VOLATILE = {"run_id", "created_at", "updated_at", "written_at", "seen_at", "first_failed_at",
            "next_attempt_at", "resolved_at", "last_pull_at", "last_pull_new"}


@pytest.fixture
def mirror_root(corpus, manifest, tmp_path) -> Path:
    """The corpus's mirror with a comment marked unavailable (its JSON gone), a key the
    pipeline will not use, and an object whose name is no safe id."""
    root = tmp_path / "mirror"
    shutil.copytree(corpus / "raw-data", root / "raw-data")
    gone = [c for c in manifest.comments if c.attachments][3]
    (root / gone.path).unlink()
    (root / gone.path).with_name(f"{gone.id}_UNAVAILABLE").write_bytes(b"")
    comments = (root / gone.path).parent
    (comments / "README.txt").write_text("not a record")
    (comments / "bad id!.json").write_text("{}")
    return root


def _open(runtimes, name: str, mirror_root: Path, **settings):
    return runtimes.open(name, source="mirror", list_source="mirror", mirror_url=str(mirror_root),
                         api_base="http://127.0.0.1:9/v4", **settings)


def _fetch(runtime, docket_id: str, run_id: str):
    dockets.ensure_dockets([docket_id], "list")
    result = fetch_from_mirror(StageContext(runtime, run_id), dockets.require_docket(docket_id))
    assert result.clean, result.message
    return result


def _snapshot() -> dict[str, list]:
    """What a fetch leaves: items, fetch states, the recorded listing, the docket's fields."""
    tables = {
        "item": Item.select().order_by(Item.key),
        "state": ItemState.select().order_by(ItemState.stage, ItemState.item),
        "mirror_object": MirrorObject.select().order_by(MirrorObject.key),
        "docket": Docket.select().order_by(Docket.id),
    }
    return {name: [{k: v for k, v in row.items() if k not in VOLATILE} for row in query.dicts()]
            for name, query in tables.items()}


def _paged(monkeypatch) -> FiledAtOnce:
    """Pages of ``PAGE`` objects, and the most objects one listing filed, counted."""
    monkeypatch.setattr(fetch_mirror, "PAGE", PAGE)
    monkeypatch.setattr(mirror_objects, "READ_PAGE", PAGE)
    filed = FiledAtOnce(monkeypatch)
    monkeypatch.setattr(fetch_mirror, "listing_of", mirror_module.listing_of)  # the spy
    return filed


def _objects(root: Path) -> int:
    return sum(1 for path in (root / "raw-data").rglob("*") if path.is_file())


def test_a_mirror_fetch_files_and_reads_a_page_of_objects_at_a_time(runtimes, manifest, mirror_root, monkeypatch):
    docket_id = manifest.dockets[0].id
    total = _objects(mirror_root)
    reference = _open(runtimes, "reference", mirror_root)
    whole = _fetch(reference, docket_id, "reference")
    expected = _snapshot()
    reference_counts = dict(whole.counts)

    _open(runtimes, "paged", mirror_root)
    with monkeypatch.context() as patched:
        filed = _paged(patched)
        with counters.peaks() as held, counters.measure() as io:
            result = _fetch(runtimes.opened[-1], docket_id, "paged")
    assert total > 4 * PAGE
    # No step held more than a page of the listing (the old fetch filed all of it at once).
    assert 0 < filed.most <= PAGE < total and filed.listings >= 2 * total // PAGE
    assert 0 < held[MIRROR_FETCH_HELD] <= PAGE
    assert io.get(MIRROR_WALKS) == 1  # nothing was gone: no second walk
    assert not MirrorScan.select().exists()  # the run's scan is dropped when it ends
    # Nothing lost by paging: the same items, states, listing and docket as one page.
    assert _snapshot() == expected
    assert result.counts == reference_counts
    assert result.counts["mirror.listed"] == total == result.counts["mirror.new"]
    assert result.counts["created"] == COMMENTS - 1 and result.counts["gone"] == 1
    assert result.counts["malformed"] == 1  # "bad id!.json", named once
    unavailable = ItemState.get((ItemState.stage == "fetch") & (ItemState.state == "gone"))
    assert unavailable.reason == "marked unavailable in the mirror"


def test_an_unchanged_rerun_lists_and_writes_nothing_else(runtimes, manifest, mirror_root, monkeypatch):
    docket_id = manifest.dockets[0].id
    runtime = _open(runtimes, "rerun", mirror_root)
    _fetch(runtime, docket_id, "first")
    scanned = []
    original = mirror_objects.record_scan
    monkeypatch.setattr(mirror_objects, "record_scan", lambda *a, **k: scanned.append(original(*a, **k)))
    before = _snapshot()
    with monkeypatch.context() as patched:
        _paged(patched)
        with counters.measure() as io:
            result = _fetch(runtime, docket_id, "again")
    assert io.get(MIRROR_WALKS) == 1 and io.get(MIRROR_READS, 0) == 0
    assert sum(scanned) == 0  # nothing fresh filed, and no second walk for gone objects
    assert result.counts["mirror.unchanged"] == result.counts["mirror.listed"] == _objects(mirror_root)
    assert "mirror.gone" not in result.counts and "mirror.read" not in result.counts
    after = _snapshot()
    # Items, states and the listing as they were (the docket, closed long ago, seals now).
    assert {k: v for k, v in after.items() if k != "docket"} == {k: v for k, v in before.items() if k != "docket"}


def test_gone_objects_are_found_by_a_second_walk_only_when_the_count_falls_short(
        runtimes, manifest, mirror_root, monkeypatch):
    docket_id = manifest.dockets[0].id
    runtime = _open(runtimes, "gone", mirror_root)
    _fetch(runtime, docket_id, "first")
    records = sorted((mirror_root / manifest.comments[0].path).parent.glob("*.json"))
    files = sorted(mirror_root.glob("raw-data/*/*/binary-*/comments_attachments/*"))
    removed = [*records[:3], files[-1]]
    for path in removed:
        path.unlink()
    with monkeypatch.context() as patched:
        _paged(patched)
        patched.setattr(mirror_objects, "READ_PAGE", 2)  # gone keys in several keyset pages
        with counters.measure() as io:
            result = _fetch(runtime, docket_id, "second")
    keys = {path.relative_to(mirror_root).as_posix() for path in removed}
    gone = {row.key: row for row in MirrorObject.select().where(MirrorObject.state == "gone")}
    assert set(gone) == keys and result.counts["mirror.gone"] == 4
    assert {row.reason for row in gone.values()} == {"no longer in the mirror listing"}
    assert io.get(MIRROR_WALKS) == 2 and io.get(MIRROR_READS, 0) == 0
    assert MirrorObject.select().where(MirrorObject.state == "listed").count() == _objects(mirror_root)
    assert not MirrorScan.select().exists()
    # Their items are kept: the mirror losing a file is not the comment withdrawn.
    assert Item.select().where(Item.key.in_([p.stem for p in records[:3]])).count() == 3


def test_a_changed_list_field_in_a_mirror_record_updates_the_item(runtimes, manifest, mirror_root):
    """A record read again is looked up before it is upserted: a changed title is an update
    of the item's summary (the old fetch took every record read as new, and the stored
    title stayed)."""
    docket_id = manifest.dockets[0].id
    runtime = _open(runtimes, "title", mirror_root)
    _fetch(runtime, docket_id, "first")
    comment = manifest.comments[1]
    path = mirror_root / comment.path
    body = json.loads(path.read_text())
    body["data"]["attributes"]["title"] = "A retitled comment"
    body["data"]["attributes"]["modifyDate"] = "2026-11-30T12:00:00Z"
    path.write_text(json.dumps(body))
    hash_before = Item.get_by_id(comment.id).summary_hash
    result = _fetch(runtime, docket_id, "second")
    item = Item.get_by_id(comment.id)
    assert result.counts["updated"] == 1 and "created" not in result.counts
    assert result.counts["mirror.read"] == 1 and result.counts["mirror.changed"] == 1
    assert item.title == "A retitled comment" and item.summary_hash != hash_before


def test_a_mirror_fetch_reads_records_concurrently_and_leaves_what_one_reader_leaves(
        runtimes, manifest, mirror_root, monkeypatch):
    import threading
    import time

    docket_id = manifest.dockets[0].id
    _fetch(_open(runtimes, "one-reader", mirror_root, mirror_concurrency=1), docket_id, "one")
    expected = _snapshot()
    in_flight, most, lock = [0], [0], threading.Lock()
    real = mirror_module.LocalMirror._read_bytes

    def slow_read(self, key):
        with lock:
            in_flight[0] += 1
            most[0] = max(most[0], in_flight[0])
        try:
            time.sleep(0.01)  # a request's latency: what the readers overlap
            return real(self, key)
        finally:
            with lock:
                in_flight[0] -= 1

    monkeypatch.setattr(mirror_module.LocalMirror, "_read_bytes", slow_read)
    result = _fetch(_open(runtimes, "four-readers", mirror_root, mirror_concurrency=4), docket_id, "four")
    assert 2 <= most[0] <= 4
    assert result.counts["created"] == COMMENTS - 1
    assert _snapshot() == expected
