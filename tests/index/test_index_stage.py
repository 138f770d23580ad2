"""The index stage against a real PostgreSQL + pgvector: skip, hash, embed, markers, search.

Inputs are written the way the extract stage leaves them (an extract state row with the
sha256 of combined.md as its content hash, and the combined.md blob), so these tests do not
depend on fetch/backfill/extract. Work is asserted with counters and table dumps.
"""

from __future__ import annotations

import json
import random
from urllib.parse import urlparse

import psycopg2
import psycopg2.extensions
import pytest

from devtools.corpus_topics import TOPICS
from pipeline.clock import iso, utcnow
from pipeline.config import Settings
from pipeline.counters import COMBINED_READS, EMBED_CALLS, STAGE_CALLS, counters
from pipeline.engine import markers
from pipeline.engine.invocation import Invocation
from pipeline.index.database import IndexDB
from pipeline.index.embedders import HashingEmbedder
from pipeline.index.search import format_hits, search
from pipeline.index.stage import WRITE_TEXTS
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.blobs import combined_key
from pipeline.store.models import Docket, Item
from pipeline.tasks import IndexAll, IndexDocket
from tests.fixtures.index_inputs import D, open_runtime, put_item, run, seed_topics
from tests.fixtures.state_fixtures import run_invocation as build

WORDS = ("rural hospital payment telehealth clinic nurse staffing wetlands permit broadband "
         "airline refund tribal subsidy quality measure reporting burden").split()


# --- fixtures and helpers ------------------------------------------------------------------

def index_task() -> IndexDocket:
    """IndexDocket of D as a new `luigi` command asks it: nothing ran in this invocation yet."""
    return IndexDocket(docket=D, invocation=Invocation())


def prose(seed: int, paragraphs: int = 2) -> str:
    rng = random.Random(seed)
    return "\n\n".join(
        " ".join(rng.choice(WORDS) for _ in range(rng.randint(20, 60))).capitalize() + "."
        for _ in range(paragraphs)
    )


def seed(rt, n: int, *, docket: str = D) -> list[str]:
    keys = [f"{docket}-{i:04d}" for i in range(1, n + 1)]
    for i, key in enumerate(keys):
        put_item(rt, key, prose(i), docket=docket, title=None)  # one chunk each: its body
    return keys


def dumps(rt) -> tuple[str, str]:
    db = rt.index_db()
    return db.dump_chunks(), db.dump_state()




# --- per-item skip: fingerprint, then hash, then embed ---------------------------------------

def test_rerun_loads_nothing_embeds_nothing_and_leaves_tables_identical(rt):
    seed(rt, 6)
    put_item(rt, f"{D}-0100", "The proposed rule text.", kind="document", title=None)
    first, io = run(rt)
    assert first.counts == {"embedded": 7} and first.complete
    assert io[COMBINED_READS] == 7
    before = dumps(rt)
    assert '"documents"' in before[0] and '"comments"' in before[0]
    second, io = run(rt)
    assert second.counts == {"unchanged": 7}
    assert io.get(COMBINED_READS, 0) == 0 and io.get(EMBED_CALLS, 0) == 0
    assert dumps(rt) == before  # chunks and state rows, timestamps included


def test_one_changed_item_costs_one_load_and_one_embed_batch(rt):
    keys = seed(rt, 5)
    run(rt)
    chunks_before = rt.index_db().dump_chunks()
    put_item(rt, keys[2], "A new text about broadband subsidies for tribal lands.", sources="s2", title=None)
    result, io = run(rt)
    assert result.counts == {"unchanged": 4, "embedded": 1}
    assert io[COMBINED_READS] == 1 and io[EMBED_CALLS] == 1
    changed = _lines_differing(chunks_before, rt.index_db().dump_chunks())
    assert changed and all(keys[2] in line for line in changed)


def test_touched_file_with_the_same_text_is_loaded_once_and_not_embedded(rt):
    keys = seed(rt, 5)
    run(rt)
    chunks_before, state_before = dumps(rt)
    # A re-extraction that renders the same text under another sources fingerprint.
    put_item(rt, keys[1], prose(1), sources="re-extracted", title=None)
    result, io = run(rt)
    assert result.counts == {"unchanged": 4, "hash_unchanged": 1}
    assert io[COMBINED_READS] == 1 and io.get(EMBED_CALLS, 0) == 0
    assert rt.index_db().dump_chunks() == chunks_before
    assert rt.index_db().dump_state() != state_before  # the new fingerprint is recorded
    # An extract content hash change with the very same file: again one load, no embed.
    item_states.transition("extract", keys[3], D, "ok", run_id="seed", content_hash="other")
    result, io = run(rt)
    assert io[COMBINED_READS] == 1 and io.get(EMBED_CALLS, 0) == 0
    result, io = run(rt)  # and from then on nothing at all
    assert result.counts == {"unchanged": 5} and io.get(COMBINED_READS, 0) == 0


def test_embedding_is_batched_across_small_items(rt):
    seed(rt, 20)  # one chunk each; embed_batch is 8
    result, io = run(rt)
    assert result.counts == {"embedded": 20}
    assert io[EMBED_CALLS] == 3  # 8 + 8 + 4, not one call per item


def test_switching_the_embedder_reembeds_everything_once_even_across_dimensions(rt):
    seed(rt, 4)
    run(rt, embedder=HashingEmbedder(dim=256))
    other = HashingEmbedder(dim=64)
    result, io = run(rt, embedder=other)
    assert result.counts == {"embedded": 4} and io[COMBINED_READS] == 4
    chunks = rt.index_db().dump_chunks()
    assert "hashing:unigram-bigram:256" not in chunks and '", 64, "[' in chunks
    result, io = run(rt, embedder=other)
    assert result.counts == {"unchanged": 4} and io.get(EMBED_CALLS, 0) == 0
    assert rt.index_db().drop_unused_dimension_indexes() == [256]
    hits = search(rt.index_db(), other, prose(2)[:200], k=1)
    assert hits and hits[0].item_key == f"{D}-0003"


def test_a_new_chunk_size_rechunks_items_whose_text_did_not_change(rt):
    seed(rt, 3)
    run(rt)
    rt.settings = Settings({**rt.settings.values, "chunk_chars": 200}, rt.settings.origins)
    before = rt.index_db().chunk_counts()
    result, io = run(rt)
    assert result.counts == {"embedded": 3} and io[COMBINED_READS] == 3
    after = rt.index_db().chunk_counts()
    assert all(after[key] > before[key] for key in before)
    texts = [json.loads(line)[4] for line in rt.index_db().dump_chunks().splitlines()]
    assert max(map(len, texts)) <= 200


def test_force_reembeds_everything_and_writes_identical_rows(rt):
    seed(rt, 3)
    run(rt)
    before = rt.index_db().dump_chunks()
    result, io = run(rt, force=True)
    assert result.counts == {"embedded": 3} and io[COMBINED_READS] == 3
    assert rt.index_db().dump_chunks() == before


def test_a_missing_combined_md_fails_that_item_only_and_is_retried(rt):
    keys = seed(rt, 4)
    rt.blobs.delete(combined_key(D, keys[0]))
    result, _ = run(rt)
    assert result.counts == {"failed": 1, "embedded": 3} and not result.complete
    put_item(rt, keys[0], prose(0), title=None)
    result, io = run(rt)
    assert result.counts == {"unchanged": 3, "embedded": 1} and io[COMBINED_READS] == 1


# --- bulk state reads -------------------------------------------------------------------

class CountingCursor(psycopg2.extensions.cursor):
    executed: list[str] = []

    def execute(self, query, vars=None):  # noqa: A002 - psycopg2's signature
        CountingCursor.executed.append(query.decode() if isinstance(query, bytes) else str(query))
        return super().execute(query, vars)

    def copy_expert(self, sql, file, size=8192):
        CountingCursor.executed.append(str(sql))
        return super().copy_expert(sql, file, size)


def _state_queries(rt, monkeypatch, skip: str) -> list[str]:
    """State DB statements from now on, except those containing ``skip`` (the test's own)."""
    seen: list[str] = []
    original = rt.state.execute_sql

    def counted(sql, params=None, *args, **kwargs):
        if skip not in sql:
            seen.append(sql)
        return original(sql, params, *args, **kwargs)

    monkeypatch.setattr(rt.state, "execute_sql", counted)
    return seen


@pytest.mark.parametrize("n", [5, 60])
def test_state_is_read_in_bulk_not_per_item(rt, pg_url, monkeypatch, n):
    seed(rt, n)
    index_db = IndexDB.open(pg_url, rt.data_dir, cursor_factory=CountingCursor)
    try:
        run(rt, index_db=index_db)
        state_sql = _state_queries(rt, monkeypatch, skip='FROM "docket"')
        CountingCursor.executed = []
        result, _ = run(rt, index_db=index_db)
        assert result.counts == {"unchanged": n}
        assert len(state_sql) == 2  # extract's rows + the docket's items, whatever n is
        assert len(CountingCursor.executed) == 2  # index state: one per collection
        # A changed item: still no per-item reads; its writes are its own.
        put_item(rt, f"{D}-0002", "changed text about airline refunds", sources="s9", title=None)
        state_sql.clear()
        CountingCursor.executed = []
        run(rt, index_db=index_db)
        assert len(state_sql) == 2
        reads = [q for q in CountingCursor.executed if q.lstrip().upper().startswith("SELECT")]
        # The index state (one per collection), which of its texts have a stored vector, the
        # vectors its chunks point to (held), its old vector that may go: whatever n is.
        assert len(reads) == 5
    finally:
        index_db.close()


@pytest.mark.parametrize("n", [12, 100])
def test_a_first_build_writes_in_bulk_and_builds_the_hnsw_index_after(rt, pg_url, n):
    seed(rt, n)  # one distinct chunk each; embed_batch is 8
    index_db = IndexDB.open(pg_url, rt.data_dir, cursor_factory=CountingCursor)
    try:
        CountingCursor.executed = []
        result, io = run(rt, index_db=index_db)
        assert result.counts == {"embedded": n}
        assert io[EMBED_CALLS] == -(-n // 8)  # still embedded in full batches of 8
        executed = CountingCursor.executed
        writes = [q for q in executed if q.lstrip()[:6].upper() in ("INSERT", "DELETE", "UPDATE", "COPY C")]
        # The items of several embed batches (of 8 here) are written together, in four
        # statements (vectors, old chunks, chunks by COPY, states) whatever their count: not
        # three per item, nor a transaction per embed batch.
        assert n < WRITE_TEXTS and len(writes) == 4
        assert len([q for q in executed if q.startswith("COPY vectors_in")]) == 1
        [build] = [i for i, q in enumerate(executed) if "CREATE INDEX" in q]
        assert all(i < build for i, q in enumerate(executed) if "INSERT INTO chunk_vectors" in q)
        # An incremental run puts its vectors in the existing index: no build.
        put_item(rt, f"{D}-0002", "changed text about zebra quartz xylophones", sources="s9", title=None)
        CountingCursor.executed = []
        result, _ = run(rt, index_db=index_db)
        assert result.counts == {"unchanged": n - 1, "embedded": 1}
        assert not [q for q in CountingCursor.executed if "CREATE INDEX" in q]
    finally:
        index_db.close()
    assert search(rt.index_db(), HashingEmbedder(), "zebra quartz", k=1)[0].item_key == f"{D}-0002"


# --- what the chunks carry -------------------------------------------------------------

def test_chunks_carry_search_metadata_and_page_numbers(rt):
    pages = "<!-- page 1 -->\n\n" + prose(1, 3) + "\n\n<!-- page 2 -->\n\n" + prose(2, 3)
    put_item(rt, f"{D}-0001", "See attached file(s)", attachment=pages)
    run(rt)
    hits = search(rt.index_db(), HashingEmbedder(), prose(2, 3)[:300], k=3)
    assert hits[0].page == 2 and hits[0].section == "attachment_1.pdf"
    assert hits[0].metadata["submitter"] == "Pat Doe"
    assert hits[0].metadata["organization"] == "Rural Health Alliance"
    assert hits[0].metadata["title"] == f"Comment {D}-0001"
    assert "Pat Doe (Rural Health Alliance)" in format_hits(hits) and "p.2" in format_hits(hits)
    assert {h.page for h in search(rt.index_db(), HashingEmbedder(), prose(1, 3)[:300], k=1)} == {1}


def test_a_metadata_change_reaches_the_chunks(rt):
    seed(rt, 2)
    run(rt)
    Item.update(submitter="Sam Roe").where(Item.key == f"{D}-0001").execute()
    result, io = run(rt)
    assert result.counts == {"unchanged": 1, "embedded": 1} and io[COMBINED_READS] == 1
    metadata = {json.loads(line)[1]: json.loads(json.loads(line)[10])
                for line in rt.index_db().dump_chunks().splitlines()}
    assert metadata[f"{D}-0001"]["submitter"] == "Sam Roe"
    assert metadata[f"{D}-0002"]["submitter"] == "Pat Doe"


# --- Luigi: the marker in the index DB ---------------------------------------------------

def prepare_docket(rt, sealed: bool) -> None:
    """Upstream stages complete in the state DB, so only IndexDocket has work."""
    now = iso(utcnow())
    sealed_at = dockets.seal(D, "manual") if sealed else None
    # A sealed docket was last pulled long ago; an open one in this freshness window.
    Docket.update(last_pull_at="2020-01-01T00:00:00.000000Z" if sealed else now).where(
        Docket.id == D).execute()
    upstream = {"fetch": ("", "f"), "backfill": ("f", "b"),
                "extract": ("b", item_states.docket_output_fingerprint("extract", D))}
    for stage, (input_fp, output_fp) in upstream.items():
        markers.write_marker(D, stage, version=1, sealed_at=sealed_at, input_fingerprint=input_fp,
                             output_fingerprint=output_fp, run_id="seed")


def drop_and_recreate(pg_url: str) -> None:
    url = urlparse(pg_url)
    name = url.path.lstrip("/")
    conn = psycopg2.connect(url._replace(path="/postgres").geturl())
    conn.autocommit = True
    with conn.cursor() as cur:
        cur.execute(f'DROP DATABASE "{name}" WITH (FORCE)')
        cur.execute(f'CREATE DATABASE "{name}"')
    conn.close()


@pytest.mark.parametrize("sealed", [True, False], ids=["sealed", "open"])
def test_index_all_reindexes_a_dropped_index_db_then_is_a_noop(tmp_path, pg_url, sealed):
    rt = open_runtime(tmp_path, pg_url)
    try:
        dockets.ensure_dockets([D], "list")
        seed(rt, 5)
        prepare_docket(rt, sealed)
        with counters.measure() as io:
            assert build(IndexAll())
        assert io[COMBINED_READS] == 5 and io[EMBED_CALLS] >= 1
        before = rt.index_db().dump_chunks()
        with counters.measure() as io:
            assert build(IndexAll())
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(COMBINED_READS, 0) == 0
        rt.close()  # as cron would: the next run is a new process
        drop_and_recreate(pg_url)
        rt = open_runtime(tmp_path, pg_url)
        assert not index_task().complete()
        with counters.measure() as io:
            assert build(IndexAll())
        assert io[STAGE_CALLS] == 1 and io[COMBINED_READS] == 5 and io[EMBED_CALLS] >= 1
        assert rt.index_db().dump_chunks() == before
        with counters.measure() as io:
            assert build(IndexAll())
        assert io.get(STAGE_CALLS, 0) == 0 and io.get(EMBED_CALLS, 0) == 0
    finally:
        set_runtime(None)
        rt.close()


def test_a_sealed_indexed_docket_is_pruned_until_unsealed_resealed_or_wiped(rt, pg_url):
    seed(rt, 3)
    prepare_docket(rt, sealed=True)
    assert build(IndexAll())
    assert index_task().complete()
    with counters.measure() as io:
        assert build(IndexAll())
    assert io.get(STAGE_CALLS, 0) == 0
    dockets.unseal(D)
    assert not index_task().complete()  # open now, and not pulled in this window
    dockets.seal(D, "manual")
    assert not index_task().complete()  # another seal: the old marker does not count
    for stage in ("fetch", "backfill", "extract", "ocr"):  # upstream redone under the new seal
        marker = markers.read_marker(D, stage)
        markers.write_marker(D, stage, version=1, sealed_at=dockets.get_docket(D).sealed_at,
                             input_fingerprint=marker.input_fingerprint,
                             output_fingerprint=marker.output_fingerprint, run_id="seed")
    with counters.measure() as io:
        assert build(IndexAll())
    # The index under the new seal, nothing to re-embed; and sections, whose marker is written
    # only while the index's says done (the index's new one), finding nothing to do.
    assert io[STAGE_CALLS] == 2 and io.get(EMBED_CALLS, 0) == 0
    assert index_task().complete()
    with psycopg2.connect(pg_url) as conn, conn.cursor() as cur:  # wipe the index data
        cur.execute("TRUNCATE chunks, index_state, index_docket_state")
    assert not index_task().complete()  # the next run notices


def test_index_all_reindexes_a_sealed_docket_when_the_index_config_changes(tmp_path, pg_url):
    rt = open_runtime(tmp_path, pg_url)
    try:
        dockets.ensure_dockets([D], "list")
        seed(rt, 3)
        prepare_docket(rt, sealed=True)
        assert build(IndexAll())
        rt.close()
        rt = open_runtime(tmp_path, pg_url, chunk_chars=300)  # same for a new embedder
        with counters.measure() as io:
            assert build(IndexAll())
        assert io.get(COMBINED_READS, 0) == 3
    finally:
        set_runtime(None)
        rt.close()


# --- search over a generated corpus with known topics -------------------------------------


def test_search_with_hashing_finds_a_comment_on_the_asked_topic(rt):
    topics = seed_topics(rt, per_topic=2)
    run(rt)
    found = {t.slug: search(rt.index_db(), HashingEmbedder(), t.query, k=1) for t in TOPICS}
    right = sum(bool(hits) and topics[hits[0].item_key] == t.slug for t, hits in zip(TOPICS, found.values(), strict=True))
    # bag-of-words: most topics, not necessarily all (a query none of whose words a comment
    # holds, under the hashing floor, finds nothing: never another topic's comment)
    assert right >= len(TOPICS) - 2, found
    assert all(topics[hits[0].item_key] == slug for slug, hits in found.items() if hits)


def test_search_with_minilm_returns_the_asked_topic_first(rt):
    pytest.importorskip("sentence_transformers")
    from pipeline.index.embedders import make_embedder

    topics = seed_topics(rt, per_topic=30 // len(TOPICS) + 1)
    minilm = make_embedder("minilm")
    rt.settings = Settings({**rt.settings.values, "embed_batch": 64}, rt.settings.origins)
    result, io = run(rt, embedder=minilm)
    assert result.counts == {"embedded": len(topics)}
    for topic in TOPICS:
        hits = search(rt.index_db(), minilm, topic.query, k=3)
        assert topics[hits[0].item_key] == topic.slug, (topic.query, hits[0].text[:200])
        assert hits[0].metadata["submitter"] == "Pat Doe"


def _lines_differing(a: str, b: str) -> list[str]:
    return sorted(set(a.splitlines()) ^ set(b.splitlines()))
