"""Search on real text, judged by reading: docketeer's search against bare pgvector cosine and
bare PostgreSQL full text, on the queries of ``benchmarks/judged_queries.yaml``.

    .venv/bin/python -m benchmarks search_judged [--embedder minilm|minilm-int8|hashing] [--work DIR]
        [--queries benchmarks/judged_queries.yaml] [--per-query]

Every docket of ``../shared/realdata/mirror`` goes through IndexAll once (as ``topics_real``
builds its store; ``--work`` keeps it, and a second run reuses it without embedding again).
Then each query is run three ways, one result per item, ten results:

* ``docketeer``: ``pipeline.index.search.search`` (hybrid, per item), whatever it does today,
  relevance floor included once it has one;
* ``cosine``: the items whose chunks' vectors are nearest the query's (exact scan, no graph);
* ``fulltext``: the items whose chunks match ``websearch_to_tsquery`` best by ``ts_rank_cd``.

Figures per method, overall and per kind: nDCG@10 (linear gains, the judged grades), MRR,
recall@10 (relevant items in the ten over min(relevant, 10): a form letter's 400 copies
cannot all be in ten), and over the queries with no right answer the share answered with
nothing. Bare cosine always answers (every vector has a nearest neighbour).
"""

from __future__ import annotations

import argparse
import math
import os
import shutil
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path

import yaml

from benchmarks.common import ROOT, Store, build

REALDATA = ROOT.parent / "shared" / "realdata"
QUERIES = Path(__file__).with_name("judged_queries.yaml")
K = 10
METHODS = ("docketeer", "cosine", "fulltext")
NO_ANSWER = "none"  # the kind of a query the corpus holds no answer to


# --- the query file -----------------------------------------------------------------------

@dataclass
class Judged:
    id: str
    kind: str
    query: str
    docket: str | None
    note: str
    ids: dict[str, int]  # item id -> grade (2 clearly answers, 1 partly), listed by hand
    rules: list[dict] = field(default_factory=list)  # {contains, grade, docket?}: every item whose text holds it
    relevant: dict[str, int] = field(default_factory=dict)  # ids and rules, evaluated on the corpus


def load_queries(path: Path = QUERIES) -> list[Judged]:
    """The judged queries as written (rules not yet evaluated). A malformed entry is a
    ValueError naming it."""
    entries = yaml.safe_load(path.read_text(encoding="utf-8"))["queries"]
    queries = []
    for n, entry in enumerate(entries, start=1):
        missing = {"id", "kind", "query", "note"} - set(entry)
        if missing:
            raise ValueError(f"query {entry.get('id', n)}: missing {sorted(missing)}")
        ids = {str(k): int(v) for k, v in (entry.get("relevant") or {}).items()}
        rules = list(entry.get("rules") or [])
        if any(g not in (1, 2) for g in ids.values()) or any(r.get("grade", 2) not in (1, 2) for r in rules):
            raise ValueError(f"query {entry['id']}: grades are 1 or 2")
        if (entry["kind"] == NO_ANSWER) == bool(ids or rules):
            raise ValueError(f"query {entry['id']}: a '{NO_ANSWER}' query has no relevant items, any other has some")
        queries.append(Judged(str(entry["id"]), entry["kind"], str(entry["query"]), entry.get("docket"),
                              entry["note"], ids, rules))
    if len({q.id for q in queries}) != len(queries):
        raise ValueError("query ids repeat")
    return queries


def flat(text: str) -> str:
    """Lower case, one space between words: what a rule's ``contains`` is compared with."""
    return " ".join(text.lower().split())


def resolve(queries: list[Judged], texts: dict[str, tuple[str, str]]) -> list[str]:
    """Fill each query's ``relevant``: its listed ids, then every item (``texts``: id ->
    (docket, text)) a rule selects; a listed grade wins over a rule's. Returns the rules that
    select nothing (a judgement that no longer describes the corpus)."""
    flats = {item: (docket, flat(text)) for item, (docket, text) in texts.items()}
    empty = []
    for q in queries:
        found: dict[str, int] = {}
        for rule in q.rules:
            needle = flat(rule["contains"])
            chosen = [item for item, (docket, text) in flats.items()
                      if (not rule.get("docket") or docket == rule["docket"]) and needle in text]
            if not chosen:
                empty.append(f"{q.id}: {rule['contains']!r}")
            for item in chosen:
                found[item] = max(found.get(item, 0), int(rule.get("grade", 2)))
        q.relevant = {**found, **q.ids}
    return empty


# --- the metrics ----------------------------------------------------------------------------

def ndcg(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    """nDCG@k with linear gains: sum of grade / log2(rank + 1), over the best order's."""
    dcg = sum(grades.get(item, 0) / math.log2(rank + 1) for rank, item in enumerate(ranked[:k], start=1))
    ideal = sum(g / math.log2(rank + 1) for rank, g in enumerate(sorted(grades.values(), reverse=True)[:k], start=1))
    return dcg / ideal if ideal else 0.0


def reciprocal_rank(ranked: list[str], grades: dict[str, int]) -> float:
    return next((1 / rank for rank, item in enumerate(ranked, start=1) if grades.get(item, 0) > 0), 0.0)


def recall(ranked: list[str], grades: dict[str, int], k: int = K) -> float:
    relevant = {item for item, g in grades.items() if g > 0}
    return len(relevant & set(ranked[:k])) / min(len(relevant), k) if relevant else 0.0


# --- the three methods ----------------------------------------------------------------------

def run_docketeer(index_db, embedder, q: Judged) -> tuple[list[str], str]:
    """The item ids docketeer's search gives, and the score it shows; when it answers nothing,
    the best similarity it says it reached ('n/a' from a search that does not say)."""
    from pipeline.index import search as searching

    options = {"docket": q.docket, "k": K, "mode": "hybrid", "per_item": True}
    try:
        hits = searching.search(index_db, embedder, q.query, **options)
    except searching.NothingToSearch:
        return [], "nothing to search"
    if hits:
        return [h.item_key for h in hits], f"top {searching.shown_score(hits[0]):.4f}"
    # The measured path is search() itself; what an empty answer came near to is read only
    # when the search module tells it (search_answer), and not on every search.
    answer = getattr(searching, "search_answer", None)
    best = getattr(answer(index_db, embedder, q.query, **options), "best_score", None) if answer else None
    return [], "empty, best n/a" if best is None else f"empty, best {best:.4f}"


def run_cosine(index_db, embedder, q: Judged) -> tuple[list[str], float]:
    """The K items whose nearest chunk is nearest the query, by an exact scan, and the best
    cosine similarity (how near the nearest text is: what a relevance floor would compare)."""
    from pgvector import Vector

    from pipeline.index.dimension_indexes import cast_type, indexed_expression

    [vector] = embedder.embed([q.query])
    dim = len(vector)
    sql = f"""SELECT c.item_key, 1 - min((v.{indexed_expression(dim)}) <=> %(query)s::{cast_type(dim)})
              FROM chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id
              WHERE v.dim = {dim} AND v.embedder_id = %(embedder)s
                AND (%(docket)s::text IS NULL OR c.docket = %(docket)s)
              GROUP BY c.item_key
              ORDER BY 2 DESC, c.item_key
              LIMIT {K}"""
    rows = _rows(index_db, sql, {"embedder": embedder.id, "docket": q.docket, "query": Vector(vector)})
    return [row[0] for row in rows], (rows[0][1] if rows else math.nan)


def run_fulltext(index_db, embedder, q: Judged) -> list[str]:
    """The K items whose best chunk ranks highest by ts_rank_cd among those matching."""
    from pipeline.index.migrations import TEXT_SEARCH_CONFIG

    sql = f"""SELECT c.item_key
              FROM chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id,
                   websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(query)s) AS w (q)
              WHERE v.embedder_id = %(embedder)s AND v.tsv @@ w.q
                AND (%(docket)s::text IS NULL OR c.docket = %(docket)s)
              GROUP BY c.item_key
              ORDER BY max(ts_rank_cd(v.tsv, w.q)) DESC, c.item_key
              LIMIT {K}"""
    return [row[0] for row in _rows(index_db, sql, {"embedder": embedder.id, "docket": q.docket, "query": q.query})]


def _rows(index_db, sql: str, params: dict) -> list[tuple]:
    # The bare baselines are SQL of their own: IndexDB has no method for a search docketeer
    # does not make, and the benchmark must not add one to the package.
    with index_db._conn, index_db._conn.cursor() as cur:
        cur.execute(sql, params)
        return cur.fetchall()


def indexed_texts(index_db) -> dict[str, tuple[str, str]]:
    """Each indexed item's docket and its chunks' text joined: what rules and ids are checked
    against (what search can find)."""
    with index_db._conn, index_db._conn.cursor() as cur:
        cur.execute("SELECT item_key, min(docket), string_agg(text, ' ' ORDER BY ordinal) FROM chunks GROUP BY item_key")
        return {key: (docket, text) for key, docket, text in cur.fetchall()}


# --- figures --------------------------------------------------------------------------------

def evaluate(index_db, embedder, queries: list[Judged]) -> tuple[dict, list[str]]:
    """Per method and query: (nDCG, RR, recall, empty), and under "nearest" the best cosine
    similarity; and one line per query."""
    scores: dict[str, dict[str, tuple]] = {m: {} for m in METHODS}
    scores["nearest"] = {}
    lines = []
    for q in queries:
        found, shown = run_docketeer(index_db, embedder, q)
        nearest, scores["nearest"][q.id] = run_cosine(index_db, embedder, q)
        ranked = {"docketeer": found, "cosine": nearest, "fulltext": run_fulltext(index_db, embedder, q)}
        for method, items in ranked.items():
            scores[method][q.id] = (ndcg(items, q.relevant), reciprocal_rank(items, q.relevant),
                                    recall(items, q.relevant), not items)
        cells = "  ".join(f"{m[:4]} {_first(ranked[m], q):>5}" for m in METHODS)
        lines.append(f"{q.id:<6} {q.kind:<10} rel {len(q.relevant):>4}  {cells}  "
                     f"cosine best {scores['nearest'][q.id]:.3f}  docketeer: {shown}")
    return scores, lines


def _first(items: list[str], q: Judged) -> str:
    """Where the first relevant item is ('-': not in the ten), or for a no-answer query how
    many results came back."""
    if q.kind == NO_ANSWER:
        return f"n={len(items)}"
    rank = next((r for r, item in enumerate(items, start=1) if q.relevant.get(item, 0) > 0), None)
    return f"#{rank}" if rank else "-"


def table(queries: list[Judged], scores: dict) -> str:
    kinds = sorted({q.kind for q in queries} - {NO_ANSWER})
    answered = [q for q in queries if q.kind != NO_ANSWER]
    none = [q for q in queries if q.kind == NO_ANSWER]
    rows = [f"{'method':<10} {'kind':<11} {'n':>3} {'nDCG@10':>8} {'MRR':>6} {'recall@10':>9}"]
    for method in METHODS:
        for kind in [*kinds, "answerable"]:
            chosen = [q for q in answered if kind in (q.kind, "answerable")]
            figures = [scores[method][q.id] for q in chosen]
            rows.append(f"{method:<10} {kind:<11} {len(chosen):>3} "
                        + " ".join(f"{statistics.mean(f[i] for f in figures):>{w}.3f}"
                                   for i, w in ((0, 8), (1, 6), (2, 9))))
        empty = sum(scores[method][q.id][3] for q in none)
        rows.append(f"{method:<10} {'no answer':<11} {len(none):>3} answered with nothing: {empty}/{len(none)}"
                    + (" (bare cosine always answers)" if method == "cosine" else ""))
    rows.append(_nearness(scores["nearest"], answered, none))
    return "\n".join(rows)


def _nearness(best: dict[str, float], answered: list[Judged], none: list[Judged]) -> str:
    """How near the nearest text is, for queries with an answer and for those without: where
    a floor on cosine similarity could part them, if anywhere."""
    def spread(chosen):
        values = sorted(best[q.id] for q in chosen if not math.isnan(best[q.id]))
        if not values:
            return "none"
        return f"min {values[0]:.3f} median {statistics.median(values):.3f} max {values[-1]:.3f}"
    return (f"best cosine similarity: answerable {spread(answered)}; no answer {spread(none)}")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks search_judged", description=__doc__.split("\n\n")[0])
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "minilm-int8", "hashing"))
    parser.add_argument("--work", type=Path, default=None, help="store folder (kept); default: a temporary one")
    parser.add_argument("--queries", type=Path, default=QUERIES)
    parser.add_argument("--model-cache", default="", help="where the MiniLM export is kept (default: the store's)")
    parser.add_argument("--per-query", action="store_true", help="also print one line per query")
    args = parser.parse_args(argv)
    if not (REALDATA / "mirror").is_dir():
        print(f"benchmarks search_judged: {REALDATA}/mirror is absent")
        return 2
    try:
        queries = load_queries(args.queries)
    except (OSError, ValueError, KeyError, yaml.YAMLError) as exc:
        print(f"benchmarks search_judged: cannot read {args.queries}: {exc}")
        return 2
    from pipeline.clock import eastern_instant, utcnow
    from pipeline.index.stage import embedder_from
    from pipeline.tasks import IndexAll

    work = args.work or Path(tempfile.mkdtemp(prefix="search-judged-"))
    dockets = sorted(p.name for p in (REALDATA / "mirror").glob("raw-data/*/*") if p.is_dir())
    try:
        store = Store(work / "data", dockets=dockets, source="mirror", list_source="mirror",
                      mirror_url=str(REALDATA / "mirror"), embedder=args.embedder, ocr="true",
                      **({"model_cache": args.model_cache} if args.model_cache else {}))
        with store:
            started = time.perf_counter()
            ok = build(IndexAll())
            indexed_s = time.perf_counter() - started
            index_db = store.rt.index_db()
            embedder = embedder_from(store.rt.settings)
            texts = indexed_texts(index_db)
            unknown = sorted({i for q in queries for i in q.ids} - set(texts)) + resolve(queries, texts)
            started = time.perf_counter()
            scores, lines = evaluate(index_db, embedder, queries)
            searched_s = time.perf_counter() - started
        print(f"{eastern_instant(utcnow())}: {len(texts)} items of {len(dockets)} dockets indexed ({embedder.id}), "
              f"IndexAll {indexed_s:.0f} s{'' if ok else ' - A RUN FAILED'}; {len(queries)} queries "
              f"({sum(len(q.relevant) for q in queries)} judged relevant) in {searched_s:.1f} s; "
              f"load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
        if unknown:
            print(f"judged ids not in the index, rules matching nothing: {', '.join(unknown)}")
        if args.per_query:
            print("\n".join(lines))
        print(table(queries, scores))
        return 0 if ok and not unknown else 1
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
