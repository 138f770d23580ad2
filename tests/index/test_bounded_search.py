"""The work a search does at scale, counted: the full-text half ranks at most
``TEXT_CANDIDATES`` matches, the vector half asks the graph for distinct vectors, and
``hnsw.ef_search`` comes from the ``search_ef`` setting."""

from __future__ import annotations

import psycopg2.extensions
import pytest

from pipeline.config import load_settings
from pipeline.counters import TEXT_RANKED, counters
from pipeline.index import database, search_queries
from pipeline.index.chunking import chunk_text
from pipeline.index.database import DEFAULT_EF_SEARCH, IndexDB
from pipeline.index.embedders import make_embedder
from pipeline.index.search import search

pytestmark = pytest.mark.postgres

HASHING = make_embedder("hashing", dim=64)
FORM_LETTER = "Protect the wetlands and the streams that feed our drinking water."


def _recording_cursor():
    statements: list[bytes] = []

    class RecordingCursor(psycopg2.extensions.cursor):
        def execute(self, query, vars=None):  # noqa: A002 - psycopg2's signature
            try:
                return super().execute(query, vars)
            finally:
                statements.append(self.query)

    return RecordingCursor, statements


def _put(db: IndexDB, key: str, text: str) -> None:
    chunks = chunk_text([("Comment", text)], max_chars=400, overlap=40)
    db.replace_item("comments", key, "EPA-2026-0001", chunks, HASHING.embed([c.text for c in chunks]),
                    "fp", "h", HASHING.id, {"submitter": f"Person {key}"})


def _matching_comments(db: IndexDB, count: int) -> None:
    """``count`` comments holding "wetlands" 1..count times: both ranks order them alike."""
    for n in range(1, count + 1):
        _put(db, f"c{n:03d}", " ".join(["wetlands"] * n) + f" comment number {n}.")


def test_the_full_text_half_ranks_at_most_the_bound(pg_url, tmp_path, monkeypatch):
    with IndexDB.open(pg_url, tmp_path) as db:
        _matching_comments(db, 30)
        [vector] = HASHING.embed(["wetlands"])
        before = counters.get(TEXT_RANKED)
        unbounded = db.text_search("wetlands", vector, k=5, embedder_id=HASHING.id)
        assert counters.get(TEXT_RANKED) - before == 30  # every match, under the default bound
        monkeypatch.setattr(search_queries, "TEXT_CANDIDATES", 8)
        before = counters.get(TEXT_RANKED)
        bounded = db.text_search("wetlands", vector, k=5, embedder_id=HASHING.id)
        assert counters.get(TEXT_RANKED) - before == 8
        assert [h.item_key for h in bounded] == [h.item_key for h in unbounded] == [
            "c030", "c029", "c028", "c027", "c026"]
        # A caller asking for more than the bound gets its k ranked, no fewer.
        before = counters.get(TEXT_RANKED)
        assert len(db.text_search("wetlands", vector, k=12, embedder_id=HASHING.id)) == 12
        assert counters.get(TEXT_RANKED) - before == 12


def test_the_vector_half_asks_for_the_nearest_distinct_vectors(pg_url, tmp_path):
    cursor, statements = _recording_cursor()
    with IndexDB.open(pg_url, tmp_path, cursor_factory=cursor) as db:
        for n in range(6):
            _put(db, f"copy{n}", FORM_LETTER)
        _put(db, "own1", "Airline passengers deserve cash refunds for cancelled flights.")
        _put(db, "own2", "Broadband subsidies should reach tribal lands with slow internet.")
        statements.clear()
        hits = db.search(HASHING.embed([FORM_LETTER])[0], k=4, embedder_id=HASHING.id)
    assert [h.item_key for h in hits] == ["copy0", "copy1", "copy2", "copy3"]
    vector_sql = [s for s in statements if b"ORDER BY" in s]
    # One statement: the 4 nearest vectors (the form letter's one among them) hold >= 4 chunks.
    assert len(vector_sql) == 1 and b"WITH nearest AS MATERIALIZED" in vector_sql[0]


def test_a_filter_that_leaves_too_few_searches_the_filtered_chunks(pg_url, tmp_path):
    with IndexDB.open(pg_url, tmp_path) as db:
        for n in range(6):
            _put(db, f"copy{n}", FORM_LETTER)
        for n in range(3):
            _put(db, f"own{n}", f"Airline passengers number {n} deserve cash refunds.")
        hits = db.search(HASHING.embed([FORM_LETTER])[0], k=3, embedder_id=HASHING.id,
                         filters=database.SearchFilters(items=("own0", "own1", "own2")))
    assert sorted(h.item_key for h in hits) == ["own0", "own1", "own2"]


def test_ef_search_comes_from_the_search_ef_setting(pg_url, tmp_path):
    assert load_settings({}).search_ef == DEFAULT_EF_SEARCH
    assert load_settings({"DOCKETEER_SEARCH_EF": "400"}).search_ef == 400
    cursor, statements = _recording_cursor()
    with IndexDB.open(pg_url, tmp_path, cursor_factory=cursor, ef_search=300) as db:
        _put(db, "one", FORM_LETTER)
        statements.clear()
        search(db, HASHING, "wetlands streams", k=10)  # asks each ranking for 40 chunks
        db.search(HASHING.embed(["wetlands"])[0], k=500, embedder_id=HASHING.id)
    ef = [s for s in statements if b"hnsw.ef_search" in s]
    assert ef[0].endswith(b"'300', true)")  # the setting, above the 40 asked
    assert ef[-1].endswith(b"'500', true)")  # a search asking for more asks more


def _chunks_read_per_text(db: IndexDB, sql: str, params: dict) -> list[float]:
    """Rows per loop of each scan of ``chunks`` a LIMIT stops (a text's chunks read in order,
    a few at a time), from the statement's plan (EXPLAIN ANALYZE)."""
    def walk(node, under_limit=False):
        found = [node["Actual Rows"]] if under_limit and node.get("Relation Name") == "chunks" else []
        for child in node.get("Plans", []):
            found += walk(child, node["Node Type"] == "Limit")
        return found

    with db._conn, db._conn.cursor() as cur:  # noqa: SLF001 - the test reads the plan
        # A table of a few dozen rows is read whole (a sequential scan is cheaper there); the
        # plan asked of a big one is what is judged.
        cur.execute("SET LOCAL enable_seqscan = off")
        cur.execute("EXPLAIN (ANALYZE, FORMAT JSON) " + sql, params)
        [[plan]] = cur.fetchall()[0]
    return walk(plan["Plan"])


def test_a_form_letters_copies_are_one_text_to_rank_and_k_chunks_to_read(pg_url, tmp_path):
    """The full-text half ranks distinct texts: 60 copies of a letter are one candidate, so
    the comments of their own are ranked too, and the letter's copies are read k at a time."""
    with IndexDB.open(pg_url, tmp_path) as db:
        for n in range(60):
            _put(db, f"copy{n:02d}", FORM_LETTER)
        for n in range(1, 4):
            _put(db, f"own{n}", " ".join(["wetlands"] * (n + 1)) + f" matter to us, says person {n}.")
        [vector] = HASHING.embed(["wetlands"])
        before = counters.get(TEXT_RANKED)
        hits = db.text_search("wetlands", vector, k=5, embedder_id=HASHING.id)
        assert counters.get(TEXT_RANKED) - before == 4  # the letter and three own texts, not 63 rows
        assert [h.item_key for h in hits] == ["own3", "own2", "own1", "copy00", "copy01"]
        params = {"query": "wetlands", "vector": search_queries.Vector(vector), "embedder": HASHING.id,
                  "k": 5, "candidates": 400, **database.SearchFilters().params()}
        reads = _chunks_read_per_text(db, search_queries._text_statement(HASHING.dim), params)
        assert reads and max(reads) <= 5  # the letter's first chunks, not its 60


def test_the_vector_half_reads_at_most_k_chunks_of_each_nearest_vector(pg_url, tmp_path):
    with IndexDB.open(pg_url, tmp_path) as db:
        for n in range(60):
            _put(db, f"copy{n:02d}", FORM_LETTER)
        _put(db, "own1", "Airline passengers deserve cash refunds for cancelled flights.")
        [vector] = HASHING.embed([FORM_LETTER])
        nearest, _ = search_queries._vector_statements(HASHING.dim, False)
        params = {"query": search_queries.Vector(vector), "embedder": HASHING.id, "k": 3, "must": None,
                  **database.SearchFilters().params()}
        reads = _chunks_read_per_text(db, nearest, params)
        assert reads and max(reads) <= 3  # the letter's first three chunks, not its 60
        hits = db.search(vector, k=3, embedder_id=HASHING.id)
    assert [h.item_key for h in hits] == ["copy00", "copy01", "copy02"]
