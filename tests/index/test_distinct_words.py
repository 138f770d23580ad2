"""Each distinct chunk text's words (its tsvector) are parsed and GIN-indexed once, beside
its vector; a chunk keeps only its names' words. Counted with the index's own rows, and an
index of version 5 (a tsvector per chunk row) upgraded in place keeps every chunk's words
and every search result, on a real PostgreSQL."""

from __future__ import annotations

import json
import random

import psycopg2
import pytest

from pipeline.index import migrations
from pipeline.index.chunking import Chunk
from pipeline.index.database import SCHEMA_VERSION, IndexDB
from pipeline.index.embedders import HashingEmbedder
from pipeline.index.migrations import name_words
from pipeline.index.search import search
from tests.fixtures.index_inputs import D as STAGE_DOCKET
from tests.fixtures.index_inputs import put_item, run

pytestmark = pytest.mark.postgres

EMBEDDER = HashingEmbedder(dim=64)
D = "EPA-2026-0003"
LETTERS = [
    "I oppose the cuts to rural hospital payments. Clinics in my county would close.",
    "Protect the wetlands permit program: our drinking water depends on these streams.",
    "Broadband subsidies must reach tribal lands, where the internet is slow or absent.",
]
WORDS = "airline refund nurse staffing telehealth clinic permit subsidy cancelled flights".split()


def unique_text(i: int) -> str:
    rng = random.Random(i)
    return " ".join(rng.choice(WORDS) for _ in range(25)).capitalize() + f". Comment {i}."


def seed_campaign(rt, n: int) -> None:
    """n comments, 80 % of them copies of LETTERS, one chunk each."""
    for i in range(n):
        put_item(rt, f"{STAGE_DOCKET}-{i + 1:04d}", LETTERS[i % len(LETTERS)] if i % 5 else unique_text(i),
                 title=None)


QUERIES = ["rural hospital payments", '"drinking water"', "Valley Clinic", "hospital Valley",
           "tribal -internet", "airline refund", "Comment 7", "hospital or broadband"]


def _rows(cur, sql: str) -> list:
    cur.execute(sql)
    return cur.fetchall()


def test_each_distinct_text_has_its_words_stored_once(rt):
    seed_campaign(rt, 40)
    run(rt)
    with rt.index_db()._conn, rt.index_db()._conn.cursor() as cur:  # noqa: SLF001 - the test reads the tables
        [(chunks, texts, words)] = _rows(cur, """SELECT (SELECT count(*) FROM chunks),
                                                 (SELECT count(DISTINCT text) FROM chunks),
                                                 (SELECT count(tsv) FROM chunk_vectors)""")
        columns = {name for (name,) in _rows(cur, "SELECT column_name FROM information_schema.columns"
                                                  " WHERE table_name = 'chunks'")}
    assert chunks == 40 and texts == words == len(LETTERS) + 8  # 3 letters, 8 own texts
    assert "tsv" not in columns and "name_words" in columns


def _version_5(pg_url: str) -> None:
    """An index of version 5 as its writer left it: a tsvector on every chunk row."""
    conn = psycopg2.connect(pg_url)
    with conn, conn.cursor() as cur:
        cur.execute("CREATE TABLE index_schema_version (version integer PRIMARY KEY,"
                    " applied_at timestamptz NOT NULL DEFAULT now())")
        for version, statements in migrations.MIGRATIONS[:5]:  # the old schema
            for statement in statements:
                cur.execute(statement)
            cur.execute("INSERT INTO index_schema_version (version) VALUES (%s)", (version,))
        for i in range(24):
            text = LETTERS[i % 3] if i % 4 else unique_text(i)
            who = {"submitter": f"Person {i}", "organization": "Valley Clinic" if i % 6 == 0 else ""}
            cur.execute(
                """INSERT INTO chunk_vectors (embedder_id, text_hash, dim, embedding)
                   VALUES (%s, encode(sha256(convert_to(%s, 'UTF8')), 'hex'), 64, %s::vector)
                   ON CONFLICT DO NOTHING""",
                (EMBEDDER.id, text, str(EMBEDDER.embed([text])[0])))
            cur.execute(
                """INSERT INTO chunks (collection, item_key, ordinal, docket, text, section, embedder_id,
                                       dim, vector_id, metadata)
                   SELECT 'comments', %s, 0, %s, %s, 'Comment', %s, 64, id, %s FROM chunk_vectors
                   WHERE text_hash = encode(sha256(convert_to(%s, 'UTF8')), 'hex')""",
                (f"K-{i:02d}", D, text, EMBEDDER.id, json.dumps(who), text))
    conn.close()


def _results(db: IndexDB) -> list:
    return [[(h.item_key, h.ordinal, round(h.fused, 9)) for h in search(db, EMBEDDER, query, k=30, mode=mode)]
            for query in QUERIES for mode in ("text", "hybrid")]


def test_a_store_of_version_5_keeps_every_chunks_words_and_every_search_result(pg_url, pg_server, tmp_path):
    from tests.fixtures.state_fixtures import new_pg_database

    _version_5(pg_url)
    conn = psycopg2.connect(pg_url)
    with conn, conn.cursor() as cur:
        old_words = _rows(cur, "SELECT item_key, tsv::text FROM chunks ORDER BY item_key")
    conn.close()
    fresh_url = new_pg_database(pg_server)  # the same chunks written today, for the answers
    with IndexDB.open(pg_url, tmp_path) as upgraded, \
            IndexDB.open(fresh_url, tmp_path) as fresh:
        assert upgraded.schema_version() == SCHEMA_VERSION
        with upgraded._conn, upgraded._conn.cursor() as cur:  # noqa: SLF001 - the test reads the tables
            # A chunk's words are its text's, stored once, and its names': as they were.
            assert _rows(cur, f"""SELECT c.item_key, (v.tsv || {name_words("c.metadata")})::text
                                  FROM chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id
                                  ORDER BY c.item_key""") == old_words
            rows = _rows(cur, "SELECT item_key, text, metadata FROM chunks ORDER BY item_key")
        for key, text, metadata in rows:
            fresh.replace_item("comments", key, D, [Chunk(0, text, None, "Comment")], EMBEDDER.embed([text]),
                               "fp", "h", EMBEDDER.id, metadata)
        results = _results(upgraded)
        assert results == _results(fresh)
        # Names are words: the organisation, alone or beside a word of the text.
        by_name = dict(zip([(q, m) for q in QUERIES for m in ("text", "hybrid")], results, strict=True))
        assert {key for key, _, _ in by_name[("Valley Clinic", "text")]} == {"K-00", "K-06", "K-12", "K-18"}
        assert {key for key, _, _ in by_name[("hospital Valley", "text")]} == {"K-06", "K-18"}  # text + names
        assert [key for key, _, _ in by_name[("Comment 7", "text")]] == []  # 7 is not among them
