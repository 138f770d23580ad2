"""Each distinct chunk text is embedded once and stored as one vector: form-letter copies,
across a docket and across dockets, point to it. Counted with the embedder's counters and
the index's own rows, on a real PostgreSQL + pgvector."""

from __future__ import annotations

import random

import psycopg2
import pytest

from pipeline.counters import EMBEDDED_TEXTS, counters
from pipeline.index.chunking import Chunk
from pipeline.index.database import SCHEMA_VERSION, IndexDB, VectorsGone
from pipeline.index.embedders import HashingEmbedder
from pipeline.index.migrations import MIGRATIONS
from pipeline.index.search import search
from pipeline.store import dockets
from tests.fixtures.index_inputs import D, put_item, run

pytestmark = pytest.mark.postgres

E = "EPA-2026-0002"
LETTERS = [
    "I oppose the cuts to rural hospital payments. Clinics in my county would close.",
    "Protect the wetlands permit program: our drinking water depends on these streams.",
    "Broadband subsidies must reach tribal lands, where the internet is slow or absent.",
]
WORDS = ("airline refund quality measure reporting burden nurse staffing telehealth clinic "
         "permit subsidy cancelled flights passengers cash").split()


def unique_text(i: int) -> str:
    rng = random.Random(i)
    return " ".join(rng.choice(WORDS) for _ in range(25)).capitalize() + f". Comment {i}."


def seed_campaign(rt, n: int, *, docket: str = D) -> dict[str, str]:
    """n comments, 80 % of them copies of LETTERS: key -> its text."""
    texts = {}
    for i in range(n):
        key = f"{docket}-{i + 1:04d}"
        texts[key] = LETTERS[i % len(LETTERS)] if i % 5 else unique_text(i)
        put_item(rt, key, texts[key], docket=docket, title=None)  # one chunk each: its body
    return texts


def vector_rows(rt) -> int:
    with rt.index_db()._conn, rt.index_db()._conn.cursor() as cur:  # noqa: SLF001 - the test reads the table
        cur.execute("SELECT count(*) FROM chunk_vectors")
        return cur.fetchone()[0]


def distinct_chunk_texts(rt) -> set[str]:
    import json

    return {json.loads(line)[4] for line in rt.index_db().dump_chunks().splitlines()}


def test_copies_are_embedded_once_stored_once_and_all_found(rt):
    texts = seed_campaign(rt, 50)
    result, io = run(rt)
    assert result.counts == {"embedded": 50}
    distinct = distinct_chunk_texts(rt)
    # 10 unique comments + 3 letters, one chunk each: 13 texts embedded for 50 comments.
    assert len(distinct) == 13
    assert io[EMBEDDED_TEXTS] == len(distinct)
    assert vector_rows(rt) == len(distinct)
    assert sum(rt.index_db().chunk_counts().values()) == 50

    before = rt.index_db().dump_chunks(), rt.index_db().dump_state(), vector_rows(rt)
    second, io = run(rt)  # a rerun: nothing read, embedded or written
    assert second.counts == {"unchanged": 50} and io.get(EMBEDDED_TEXTS, 0) == 0
    assert (rt.index_db().dump_chunks(), rt.index_db().dump_state(), vector_rows(rt)) == before

    # Every copy is found: the one vector leads to each comment that holds the letter.
    copies = {key for key, text in texts.items() if text == LETTERS[1]}
    hits = search(rt.index_db(), HashingEmbedder(), "wetlands drinking water streams", k=50,
                  mode="vector", per_item=True)
    assert copies <= {hit.item_key for hit in hits}


def test_a_text_another_docket_holds_is_not_embedded_again(rt):
    seed_campaign(rt, 20)
    run(rt)
    vectors = vector_rows(rt)
    dockets.ensure_dockets([E], "list")
    for i, letter in enumerate(LETTERS):
        put_item(rt, f"{E}-{i:04d}", letter, docket=E, title=None)
    result, io = run(rt, docket=E)
    assert result.counts == {"embedded": 3}
    assert io.get(EMBEDDED_TEXTS, 0) == 0  # each letter's vector was there already
    assert vector_rows(rt) == vectors


def test_a_text_shared_by_no_chunk_any_more_loses_its_vector(rt):
    texts = seed_campaign(rt, 10)
    run(rt)
    [only] = [key for key, text in texts.items() if text == unique_text(0)]
    shared = next(key for key, text in texts.items() if text == LETTERS[1])
    vectors = vector_rows(rt)
    put_item(rt, only, "A new text about airline refunds.", sources="s2", title=None)
    put_item(rt, shared, "Another new text about nurse staffing.", sources="s2", title=None)
    result, io = run(rt)
    assert result.counts == {"unchanged": 8, "embedded": 2} and io[EMBEDDED_TEXTS] == 2
    # The unique text's vector went with its chunk; the letter's stays for its other copies.
    assert vector_rows(rt) == vectors + 1
    assert LETTERS[1] in distinct_chunk_texts(rt) and unique_text(0) not in distinct_chunk_texts(rt)
    rt.index_db().purge_docket(D)
    assert vector_rows(rt) == 0


def test_force_embeds_each_distinct_text_once_and_writes_identical_rows(rt):
    seed_campaign(rt, 30)
    run(rt)
    before = rt.index_db().dump_chunks(), vector_rows(rt)
    result, io = run(rt, force=True)
    assert result.counts == {"embedded": 30}
    assert io[EMBEDDED_TEXTS] == len(distinct_chunk_texts(rt)) == before[1]
    assert (rt.index_db().dump_chunks(), vector_rows(rt)) == before


def test_a_chunk_whose_stored_vector_was_dropped_meanwhile_writes_nothing(rt):
    db = rt.index_db()
    embedder = HashingEmbedder()
    chunk = Chunk(0, "a text nobody stored", None, "Comment")
    before = db.dump_chunks(), db.dump_state()
    with pytest.raises(VectorsGone) as gone:
        db.replace_item("comments", "K-1", D, [chunk], [None], "fp", "h", embedder.id)
    assert len(gone.value.text_hashes) == 1
    assert (db.dump_chunks(), db.dump_state()) == before
    db.replace_item("comments", "K-1", D, [chunk], embedder.embed([chunk.text]), "fp", "h", embedder.id)
    assert db.chunk_counts() == {("comments", "K-1"): 1}


def test_a_store_of_version_4_is_upgraded_in_place_without_embedding(pg_url, tmp_path):
    """Chunks written with their own vectors (before migration 5) keep their text and
    vector; copies end up pointing to one vector, and search uses the new HNSW index."""
    embedder = HashingEmbedder(dim=64)
    conn = psycopg2.connect(pg_url)
    with conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE index_schema_version (version integer PRIMARY KEY,"
                    " applied_at timestamptz NOT NULL DEFAULT now())")
        for version, statements in MIGRATIONS[:4]:
            for statement in statements:
                cur.execute(statement)
            cur.execute("INSERT INTO index_schema_version (version) VALUES (%s)", (version,))
        cur.execute("CREATE INDEX chunks_hnsw_64 ON chunks USING hnsw ((embedding::vector(64))"
                    " vector_cosine_ops) WHERE dim = 64")
        for i in range(12):
            text = LETTERS[i % 3] if i % 4 else unique_text(i)
            cur.execute(
                """INSERT INTO chunks (collection, item_key, ordinal, docket, text, section,
                                       embedder_id, dim, embedding, metadata)
                   VALUES ('comments', %s, 0, %s, %s, 'Comment', %s, 64, %s::vector, '{}')""",
                (f"K-{i:02d}", D, text, embedder.id, str(embedder.embed([text])[0])),
            )
        cur.execute("SELECT item_key, text, embedding::text FROM chunks ORDER BY item_key")
        old_rows = cur.fetchall()
    conn.close()

    with counters.measure() as io:
        db = IndexDB.open(pg_url, tmp_path)
    try:
        assert db.schema_version() == SCHEMA_VERSION and io.get(EMBEDDED_TEXTS, 0) == 0
        with db._conn, db._conn.cursor() as cur:  # noqa: SLF001 - the test reads the tables
            cur.execute("""SELECT c.item_key, c.text, v.embedding::text FROM chunks c
                           JOIN chunk_vectors v ON v.id = c.vector_id ORDER BY c.item_key""")
            assert cur.fetchall() == old_rows
            cur.execute("SELECT count(*) FROM chunk_vectors")
            assert cur.fetchone()[0] == len({text for _, text, _ in old_rows}) == 6
            cur.execute("SELECT indexname FROM pg_indexes WHERE indexname LIKE 'chunks_hnsw_%'")
            assert cur.fetchall() == [("chunks_hnsw_64",)]
        [hit] = search(db, embedder, LETTERS[2], k=1, mode="vector")
        assert hit.text == LETTERS[2]
    finally:
        db.close()


def test_a_new_chunker_version_rewrites_every_item_and_embeds_only_changed_texts(rt, monkeypatch):
    from pipeline.index import stage

    seed_campaign(rt, 20)
    run(rt)
    monkeypatch.setattr(stage, "CHUNKER_VERSION", "chunk-next")
    result, io = run(rt)
    assert result.counts == {"embedded": 20}  # every item re-chunked and written again
    assert io.get(EMBEDDED_TEXTS, 0) == 0  # its chunks' texts did not change: vectors kept


def test_the_index_stage_keeps_chunks_within_the_embedders_token_budget(rt):
    from pipeline.index.chunking import counted_words_and_marks

    dense = "\n\n".join(" ".join(f"({p}.{n}) 42 CFR 482.12(a)(1)-(3), §§ 412.8; 3.7% ($1,204.50)."
                                 for n in range(4)) for p in range(10))
    put_item(rt, f"{D}-0001", "See attached file(s)", attachment=dense, title=None)
    run(rt)
    texts = distinct_chunk_texts(rt)
    assert len(texts) > 1
    assert max(map(counted_words_and_marks, texts)) <= HashingEmbedder.MAX_TOKENS
    assert max(map(len, texts)) < 1100  # the tokens bound these chunks, not the 1,200 characters


def test_a_vector_dropped_between_lookup_and_write_is_embedded_again(rt, pg_url):
    """Another writer replaces the last chunks of a text after this run found its vector
    stored: the write finds it gone, embeds it here and writes the batch."""
    seed_campaign(rt, 5)
    run(rt)
    dockets.ensure_dockets([E], "list")
    put_item(rt, f"{E}-0001", LETTERS[1], docket=E, title=None)
    db = rt.index_db()
    other = IndexDB.open(pg_url, rt.data_dir)  # the other writer's own connection
    looked_up = db.stored_texts

    def then_purged(embedder_id, hashes):
        found = looked_up(embedder_id, hashes)
        other.purge_docket(D)  # the letter's last chunks elsewhere go, and its vector
        return found

    db.stored_texts = then_purged
    try:
        result, io = run(rt, docket=E, index_db=db)
    finally:
        del db.stored_texts
        other.close()
    assert result.counts == {"embedded": 1}
    assert io[EMBEDDED_TEXTS] == 1  # embedded again after the write found it gone
    assert distinct_chunk_texts(rt) == {LETTERS[1]} and vector_rows(rt) == 1


def test_a_copy_with_a_title_of_its_own_still_points_to_the_letters_vector(rt):
    """Titles name their senders ("Comment from ..."): the title is a chunk of its own, so
    every copy's body is still one text, embedded once."""
    for i in range(6):
        put_item(rt, f"{D}-{i + 1:04d}", LETTERS[0], title=f"Comment from Sender {i + 1}")
    result, io = run(rt)
    assert result.counts == {"embedded": 6}
    distinct = distinct_chunk_texts(rt)
    assert LETTERS[0] in distinct and len(distinct) == 7  # the letter once, six titles
    assert io[EMBEDDED_TEXTS] == 7 and vector_rows(rt) == 7
    assert sum(rt.index_db().chunk_counts().values()) == 12
