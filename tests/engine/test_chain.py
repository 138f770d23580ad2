"""The whole chain, loaded twice (dlt-style): the second run does nothing, in and after the window."""

from __future__ import annotations

from pipeline.counters import (
    API_CALLS,
    COMBINED_READS,
    EMBED_CALLS,
    PDF_OPENS,
    STAGE_CALLS,
    counters,
)
from pipeline.store.models import Attachment, Docket, Item, ItemState
from tests.fixtures.pipeline_fixtures import built_store


def data_dump() -> list:
    return [
        list(Item.select().order_by(Item.key).tuples()),
        list(Attachment.select().order_by(Attachment.item, Attachment.filename).tuples()),
        list(ItemState.select().order_by(ItemState.stage, ItemState.item).tuples()),
    ]


def test_full_chain_twice_then_a_new_window(tmp_path, pg_server):
    with built_store(tmp_path, pg_server, dockets=1, comments=10) as store:
        index_db = store.runtime.index_db()
        chunks, data = index_db.dump_chunks(), data_dump()
        assert index_db.chunk_counts()  # something was indexed
        with counters.measure() as io:
            assert store.run()
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(API_CALLS, 0) == 0  # pruned by targets
        assert data_dump() == data and index_db.dump_chunks() == chunks

        # A new freshness window: the open docket is pulled again (one list call) and every
        # later stage finds nothing changed through its per-item fingerprints.
        Docket.update(last_pull_at="2000-01-01T00:00:00.000000Z").execute()
        data = data_dump()
        with counters.measure() as io:
            assert store.run()
        assert io.get(API_CALLS) == 1 and io.get("api.comments.list") == 1
        for work in (PDF_OPENS, COMBINED_READS, EMBED_CALLS):
            assert io.get(work, 0) == 0, (work, io)
        assert data_dump() == data and index_db.dump_chunks() == chunks

        with counters.measure() as io:  # and the run after that is pruned again
            assert store.run()
        assert io.get(STAGE_CALLS, 0) == 0
