"""``forget --purge`` decides which attachment files were the docket's alone and deletes them
inside the transaction that deletes its rows: a file another docket's backfill stores
meanwhile is kept."""

from __future__ import annotations

import io

from pipeline.ops import forget, purge
from pipeline.store import dockets
from pipeline.store.blobs import attachment_key
from pipeline.store.models import Attachment, Item

GONE, OTHER = "CMS-2026-0501", "CMS-2026-0502"


def item_with_file(runtime, docket: str, key: str, content: bytes) -> str:
    Item.insert(key=key, docket=docket, kind="comment", created_at="t", updated_at="t").execute()
    stored = runtime.blobs.ingest(io.BytesIO(content), max_bytes=10**6)
    Attachment.insert(item=key, filename="attachment_1.pdf", sha256=stored.sha256, size=stored.size).execute()
    return stored.sha256


def test_a_file_another_docket_stores_while_the_purge_runs_is_kept(sqlite_state, monkeypatch):
    rt = sqlite_state
    dockets.ensure_dockets([GONE, OTHER], "list")
    shared = item_with_file(rt, GONE, f"{GONE}-0001", b"the same letter, sent to both")
    own = item_with_file(rt, GONE, f"{GONE}-0002", b"only in the purged docket")
    Item.insert(key=f"{OTHER}-0001", docket=OTHER, kind="comment", created_at="t", updated_at="t").execute()
    original = purge.delete_rows

    def backfill_of_the_other_docket_then_purge(*args, **kwargs):
        # The other docket's backfill finds the file stored (ingest: created=False) and
        # writes its row after the purge looked at the references, before it deleted files.
        again = rt.blobs.ingest(io.BytesIO(b"the same letter, sent to both"), max_bytes=10**6)
        assert not again.created
        Attachment.insert(item=f"{OTHER}-0001", filename="attachment_1.pdf", sha256=again.sha256,
                          size=again.size).execute()
        return original(*args, **kwargs)

    monkeypatch.setattr(purge, "delete_rows", backfill_of_the_other_docket_then_purge)
    report = forget.forget(rt, GONE, purge_data=True)

    assert rt.blobs.exists(attachment_key(shared))  # the other docket's file is kept
    assert not rt.blobs.exists(attachment_key(own)) and report.blobs == [attachment_key(own)]
    assert not Item.select().where(Item.docket == GONE).exists()


def test_a_dry_run_names_the_files_and_deletes_nothing(sqlite_state):
    rt = sqlite_state
    dockets.ensure_dockets([GONE], "list")
    own = item_with_file(rt, GONE, f"{GONE}-0001", b"only here")
    report = forget.forget(rt, GONE, purge_data=True, dry_run=True)
    assert report.blobs == [attachment_key(own)] and rt.blobs.exists(attachment_key(own))
