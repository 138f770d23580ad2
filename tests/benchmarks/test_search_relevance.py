"""The relevance benchmark's corpus plants what its queries ask, and its figures come from
the search people use (one result per comment), on the real embedded PostgreSQL."""

from __future__ import annotations

import pytest

from benchmarks.search_relevance import corpus, evaluate
from pipeline.index.chunking import chunk_text
from pipeline.index.database import IndexDB
from pipeline.index.embedders import make_embedder


def test_each_query_has_its_relevant_comments_and_near_misses_lack_what_they_ask():
    comments, queries = corpus(200)
    assert {q.kind for q in queries} == {"exact", "paraphrase", "name", "id", "phrase"}
    for query in queries:
        assert query.relevant and query.relevant <= set(comments)
        if query.kind in ("exact", "name", "id"):
            holding = {key for key, text in comments.items() if query.text in text}
            assert holding == query.relevant, query
        if query.kind == "phrase":
            phrase = query.text.strip('"')
            assert {key for key, text in comments.items() if phrase in text} == query.relevant


@pytest.mark.postgres
def test_hybrid_search_puts_every_exact_sentence_first(pg_url, tmp_path):
    embedder = make_embedder("hashing", dim=256)
    comments, queries = corpus(150)
    db = IndexDB.open(pg_url, tmp_path)
    try:
        for key, text in comments.items():
            chunks = chunk_text([("Inline comment", text)], max_chars=2000, overlap=100)
            db.replace_item("comments", key, "CMS-2026-0001", chunks, embedder.embed([c.text for c in chunks]),
                            "fp", "h", embedder.id, {"kind": "comment"})
        hybrid = evaluate(db, embedder, queries, "hybrid")
        vector = evaluate(db, embedder, queries, "vector")
    finally:
        db.close()
    assert hybrid["exact"] == (1.0, 1.0) and vector["exact"][0] < 1.0
    assert hybrid["phrase"] == (1.0, 1.0)
