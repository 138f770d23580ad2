"""Backfill from the mirror holds no docket listing whole: whether the listing comes
from a walk of the mirror or from the rows a mirror fetch stored, no pass files more than
its todo page's objects, and the result is what a pass over the whole docket leaves.

Every assertion is about work held or done (objects filed at once, rows), never about time.
"""

from __future__ import annotations

import shutil
from pathlib import Path

import pytest

import pipeline.backfill.sources as backfill_sources
import pipeline.backfill.stage as backfill_stage
import pipeline.sources.mirror as mirror_module
from devtools.standin_server import StandinServer
from pipeline.backfill.stage import STAGE, backfill_docket
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.store import dockets
from pipeline.store.models import Item, ItemState, MirrorObject, MirrorScan
from tests.fixtures.backfill_runs import dump, fetch
from tests.fixtures.mirror_bound import FiledAtOnce

PAGE = 5
TIMED = ("first_failed_at", "next_attempt_at")  # when a wait began and ends: the runs' own times


@pytest.fixture
def mirror_root(corpus, manifest, tmp_path) -> Path:
    """The corpus's mirror with what the real mirror also holds: a comment marked unavailable
    (its JSON gone), and a comment whose attachment the mirror lacks."""
    root = tmp_path / "mirror"
    shutil.copytree(corpus / "raw-data", root / "raw-data")
    with_files = [c for c in manifest.comments if c.attachments]
    gone, lacking = with_files[3], with_files[7]
    (root / gone.path).unlink()
    (root / gone.path).with_name(f"{gone.id}_UNAVAILABLE").write_bytes(b"")
    binaries = next((root / "raw-data").glob("*/*/binary-*/comments_attachments"))
    for path in binaries.glob(f"{lacking.id}_attachment_*"):
        path.unlink()
    return root


def _count_objects(root: Path) -> int:
    return sum(1 for path in (root / "raw-data").rglob("*") if path.is_file())


def _backfill(runtime, docket_id: str, run_id: str):
    return backfill_docket(StageContext(runtime, run_id), dockets.require_docket(docket_id))


def _reference(runtimes, standin, mirror_root: Path, docket_id: str, **settings) -> dict:
    """What backfill leaves when one page holds the whole docket."""
    runtime = runtimes.open("reference", api_base=standin.api_base, source="mirror",
                            mirror_url=str(mirror_root), **settings)
    fetch(runtime, [docket_id])
    result = _backfill(runtime, docket_id, "reference")
    assert result.clean, result.message
    return dump(stable=True, without=TIMED)


@pytest.mark.parametrize("list_source", ["api", "mirror"])
def test_a_mirror_backfill_files_a_page_of_objects_at_a_time(runtimes, corpus, manifest, mirror_root,
                                                            monkeypatch, list_source):
    """``api``: backfill walks the mirror itself; ``mirror``: fetch listed it and stored the
    listing (``mirror_object``), which backfill reads instead. Either way the docket's
    objects are never filed at once: each todo page files its own items' objects alone."""
    docket_id = manifest.dockets[0].id
    total = _count_objects(mirror_root)
    with StandinServer(corpus) as standin:
        runtime = runtimes.open("paged", api_base=standin.api_base, source="mirror",
                                mirror_url=str(mirror_root), list_source=list_source)
        fetch(runtime, [docket_id])
        if list_source == "mirror":
            assert MirrorObject.select().where(MirrorObject.docket == docket_id).count() == total
        with monkeypatch.context() as patched:
            patched.setattr(backfill_stage, "TODO_PAGE", PAGE)
            filed = FiledAtOnce(patched)
            with counters.peaks() as held:
                result = _backfill(runtime, docket_id, "paged")
        assert result.clean, result.message
        items = Item.select().where(Item.docket == docket_id).count()
        paged = dump(stable=True, without=TIMED)
        # (listed from the mirror, the comment with no record is fetch's to record gone)
        states = {(row.stage, row.state) for row in ItemState.select()}
        assert not MirrorScan.select().exists()  # the run's scan is dropped when it ends
        expected = _reference(runtimes, standin, mirror_root, docket_id, list_source=list_source)
    assert items > 4 * PAGE and total > 1.5 * items  # several pages, files beside the records
    # The most objects one pass filed: a page's items' records, files and tombstones.
    assert 0 < filed.most <= 4 * PAGE < total
    assert filed.listings >= items // PAGE
    assert held[backfill_stage.BACKFILL_HELD] == PAGE
    assert 0 < held[backfill_sources.MIRROR_HELD] <= 4 * PAGE
    # Nothing lost by paging: the same rows, states and files as one pass over the docket,
    # the unavailable comment gone and the one lacking a file waiting for it.
    assert paged == expected
    assert {("fetch" if list_source == "mirror" else STAGE, "gone"), (STAGE, "retry")} <= states


class _Refused(Exception):
    pass


def test_a_listing_that_breaks_off_stops_the_run_before_any_item_and_leaves_no_scan(
        runtimes, corpus, manifest, mirror_root, monkeypatch):
    """A walk refused half way (after a write batch was recorded) stops the stage before any
    item is handed out: no item marked, and its partial scan dropped."""
    docket_id = manifest.dockets[0].id
    original = mirror_module.LocalMirror._stream_entries

    def breaks_off(self, prefix, spend=mirror_module._free):
        for n, entry in enumerate(original(self, prefix, spend)):
            if n == 30:
                raise _Refused("refused half way")
            yield entry

    monkeypatch.setattr(mirror_module.LocalMirror, "_stream_entries", breaks_off)
    monkeypatch.setattr(backfill_stage.mirror_objects, "WRITE_BATCH", 10)
    with StandinServer(corpus) as standin:
        runtime = runtimes.open("broken", api_base=standin.api_base, source="mirror",
                                mirror_url=str(mirror_root), list_source="api")
        fetch(runtime, [docket_id])
        with pytest.raises(_Refused):
            _backfill(runtime, docket_id, "broken")
    assert not ItemState.select().where(ItemState.stage == STAGE).exists()
    assert not MirrorScan.select().exists()


class _Spied:
    """What backfill asked of the stored listing: rows scanned, filed, and read by item."""

    def __init__(self, monkeypatch) -> None:
        self.scanned = self.filed = 0
        self.read: list[str] = []
        self.released: list[int] = []  # records handed over by fetch, dropped at once
        store = backfill_stage.mirror_objects
        record_scan, file, objects_of = store.record_scan, store.file, store.objects_of
        release = store.release_handed_over

        def spy_release(keys):
            self.released.append(len(keys))
            return release(keys)

        def spy_scan(*args, **kwargs):
            written = record_scan(*args, **kwargs)
            self.scanned += written
            return written

        def spy_file(owners):
            self.filed += len(owners)
            return file(owners)

        def spy_objects_of(docket_id, item_ids):
            rows = objects_of(docket_id, item_ids)
            self.read += [row[0] for row in rows]
            return rows

        monkeypatch.setattr(store, "record_scan", spy_scan)
        monkeypatch.setattr(store, "file", spy_file)
        monkeypatch.setattr(store, "objects_of", spy_objects_of)
        monkeypatch.setattr(store, "release_handed_over", spy_release)


@pytest.mark.parametrize("filed_by", ["fetch", "the first backfill"])
def test_after_a_mirror_fetch_backfill_reads_a_pages_objects_by_item_and_writes_no_scan(
        runtimes, corpus, manifest, mirror_root, monkeypatch, tmp_path, filed_by):
    """The mirror fetch files each object under its item (schema v11), so backfill reads a
    todo page's objects from the stored listing, and a backfill of two new comments reads
    their objects alone. A listing stored before v11 (no item) is filed once, by the first
    backfill, with the same result."""
    docket_id = manifest.dockets[0].id
    later = [c for c in manifest.comments if c.attachments][:2]
    held = tmp_path / "held"
    moved = [p for c in later for p in (mirror_root / c.path).parent.parent.parent.rglob(f"{c.id}[._]*")]
    for path in moved:  # the two comments reach the mirror later
        (held / path.relative_to(mirror_root)).parent.mkdir(parents=True, exist_ok=True)
        shutil.move(path, held / path.relative_to(mirror_root))
    with StandinServer(corpus) as standin:
        runtime = runtimes.open("stored", api_base=standin.api_base, source="mirror",
                                mirror_url=str(mirror_root), list_source="mirror")
        fetch(runtime, [docket_id])
        assert not MirrorObject.select().where(MirrorObject.item.is_null()).exists()
        if filed_by != "fetch":
            MirrorObject.update(item=None).execute()  # as a store from before v11 holds it
        with monkeypatch.context() as patched:
            patched.setattr(backfill_stage, "TODO_PAGE", PAGE)
            first = _Spied(patched)
            assert _backfill(runtime, docket_id, "first").clean
        listed = MirrorObject.select().where(MirrorObject.state == "listed").count()
        assert first.scanned == 0  # the stored listing is read by item, never copied
        assert first.filed == (0 if filed_by == "fetch" else listed)
        # Each item's objects read once (the comment the mirror holds no record of is no item).
        owned = MirrorObject.select(MirrorObject.key).where(MirrorObject.item.in_(Item.select(Item.key)))
        assert sorted(first.read) == sorted(row.key for row in owned)
        # The handed-over records are dropped page by page, never held for the whole run.
        assert sum(first.released) == Item.select().count() and 0 < max(first.released) <= PAGE

        for path in moved:
            shutil.move(held / path.relative_to(mirror_root), path)
        fetch(runtime, [docket_id])
        with monkeypatch.context() as patched:
            patched.setattr(backfill_stage, "TODO_PAGE", PAGE)
            again = _Spied(patched)
            result = _backfill(runtime, docket_id, "again")
    assert result.clean and result.counts.get("ok") == 2, result.counts
    # The work of two comments: their records and files read, nothing scanned or filed.
    assert sorted(again.read) == sorted(p.relative_to(mirror_root).as_posix() for p in moved)
    assert again.scanned == again.filed == 0
    assert not MirrorScan.select().exists() and not MirrorObject.select().where(MirrorObject.item.is_null()).exists()
