"""MiniLM quantised to int8 against MiniLM (fp32) on real text: speed, and how much of fp32's
top ten int8 finds.

    .venv/bin/python -m benchmarks int8 [--work DIR] [--batch-sizes 16,64] [--speed-passages 600]
        [--sample 500] [--repeat 2] [--store-embedder minilm|minilm-int8]

The passages are the index's own: every docket of ``../shared/realdata/mirror`` goes through
IndexAll once (as ``search_judged`` builds its store, with ``minilm`` unless
``--store-embedder`` says; ``--work`` keeps it, and a later run, or ``search_judged --work`` on
the same folder, reuses it), and the distinct chunk
texts of its comments and documents are read back from the index DB: chunked by
``pipeline/index/chunking.py`` with MiniLM's token budget, which int8 shares (same tokenizer).

* Speed: the same passages (``--speed-passages``, a seeded sample) embedded by each, at each
  batch size, ``--repeat`` rounds in alternating order (the machine is shared: a round's load
  falls on both); passages per second of wall time and per CPU-second of the process. Loads
  are timed apart, from the model cache (the int8 copy made there once, timed too if made now).
* Recall@10 of int8 against fp32: every passage embedded by both; for each query, the ten
  passages nearest by fp32 (exact, cosine) against the ten nearest by int8, as share of fp32's
  ten that int8's holds. Queries: the judged queries of ``benchmarks/judged_queries.yaml``
  (within their docket when they name one), and ``--sample`` passages each asking for its
  nearest others. "within ties" counts an int8 pick as found when its fp32 cosine reaches
  fp32's tenth best less 0.001 (form letters give near-equal copies that swap places).

The decision the figures feed (docs/BENCHMARKS.md): ``minilm`` stays the default unless int8's
recall@10 on real text is at least 0.97 on both query sets.
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import Store, build
from benchmarks.search_judged import QUERIES, REALDATA, load_queries

K = 10
TIE = 0.001  # cosine within which fp32 sees two passages as equally near
CROWDED = 0.95  # fp32's tenth best cosine from which a passage's ten nearest are near-copies
THRESHOLD = 0.97  # int8's recall@10 on real text that would let it be the default


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks int8", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="store folder (kept); default: a temporary one")
    parser.add_argument("--model-cache", default="", help="where the exports are kept (default: the store's)")
    parser.add_argument("--store-embedder", default="minilm", choices=("minilm", "minilm-int8"),
                        help="what the store indexes with (the chunks are the same: one tokenizer); "
                             "the one it was last built with, to reuse --work without embedding it again")
    parser.add_argument("--batch-sizes", default="16,64")
    parser.add_argument("--speed-passages", type=int, default=600)
    parser.add_argument("--sample", type=int, default=500, help="passages asked as queries")
    parser.add_argument("--repeat", type=int, default=2, help="speed rounds per batch size")
    parser.add_argument("--seed", type=int, default=2026)
    args = parser.parse_args(argv)
    if not (REALDATA / "mirror").is_dir():
        print(f"benchmarks int8: {REALDATA}/mirror is absent")
        return 2
    work = args.work or Path(tempfile.mkdtemp(prefix="int8-"))
    try:
        passages, models, ok = indexed_passages(work, args.model_cache, args.store_embedder)
        if not ok:
            print("benchmarks int8: IndexAll failed on the real mirror")
            return 1
        report(passages, models, args)
        return 0
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


def indexed_passages(work: Path, model_cache: str, embedder: str) -> tuple[list[tuple[str, str, str]], str, bool]:
    """(collection, docket, text) of every distinct chunk text the index holds after IndexAll
    over the real mirror with ``embedder``; the model cache folder; whether IndexAll succeeded."""
    from pipeline.tasks import IndexAll

    dockets = sorted(p.name for p in (REALDATA / "mirror").glob("raw-data/*/*") if p.is_dir())
    store = Store(work / "data", dockets=dockets, source="mirror", list_source="mirror",
                  mirror_url=str(REALDATA / "mirror"), embedder=embedder, ocr="true",
                  **({"model_cache": model_cache} if model_cache else {}))
    with store:
        started = time.perf_counter()
        ok = build(IndexAll())
        print(f"IndexAll over {len(dockets)} real dockets: {time.perf_counter() - started:.0f} s")
        index_db = store.rt.index_db()
        with index_db._conn, index_db._conn.cursor() as cur:
            # The benchmark's own read: IndexDB has no method for a listing only it needs.
            cur.execute("SELECT min(collection), min(docket), text FROM chunks GROUP BY text ORDER BY 3")
            passages = [tuple(row) for row in cur.fetchall()]
        return passages, str(store.rt.settings.model_cache_path), ok


def report(passages: list[tuple[str, str, str]], models: str, args) -> None:
    import numpy as np

    from pipeline.index.embedders import embed_in_batches

    texts = [text for _, _, text in passages]
    kinds = {c: sum(1 for p in passages if p[0] == c) for c in sorted({p[0] for p in passages})}
    print(f"{len(texts)} distinct passages ({', '.join(f'{n} {c}' for c, n in kinds.items())}), "
          f"mean {statistics.mean(map(len, texts)):.0f} chars; {os.cpu_count()} cores, "
          f"load average {os.getloadavg()[0]:.1f}")
    embedders = loaded(models)
    rng = random.Random(args.seed)
    sample = rng.sample(texts, min(args.speed_passages, len(texts)))
    for batch_size in (int(b) for b in args.batch_sizes.split(",")):
        speeds(embedders, sample, batch_size, args.repeat)
    vectors = {}
    for name, embedder in embedders.items():
        started = time.perf_counter()
        vectors[name] = np.asarray(embed_in_batches(embedder, texts, 64), dtype=np.float32)
        print(f"{name:<11} every passage embedded in {time.perf_counter() - started:.0f} s")
    same = (vectors["minilm"] * vectors["minilm-int8"]).sum(axis=1)
    print(f"cosine of a passage's int8 vector to its fp32 vector: min {same.min():.4f}, "
          f"median {np.median(same):.4f}, mean {same.mean():.4f}")
    judged = judged_recall(embedders, vectors, passages)
    asked = passage_recall(vectors, rng.sample(range(len(texts)), min(args.sample, len(texts))))
    lowest = min(judged[0], asked[0])
    print(f"decision: int8 recall@10 against fp32 on real text {lowest:.3f} (the lower of the two) "
          + (f">= {THRESHOLD}: int8 could be the default" if lowest >= THRESHOLD
             else f"< {THRESHOLD}: the default stays minilm (fp32); minilm-int8 is opt-in")
          + f"; load average {os.getloadavg()[0]:.1f}")


def loaded(models: str) -> dict:
    """fp32 and int8 MiniLM from the model cache, each load timed (and the int8 copy's making)."""
    from pipeline.counters import MODEL_EXPORTS, counters
    from pipeline.index.embedders import make_embedder

    embedders = {}
    for name in ("minilm", "minilm-int8"):
        with counters.measure() as io:
            started = time.perf_counter()
            embedder = make_embedder(name, cache_dir=models)
            embedder.embed(["warm up"])
            seconds = time.perf_counter() - started
        made = f", {io[MODEL_EXPORTS]} model file(s) made first" if io.get(MODEL_EXPORTS) else ""
        print(f"{name:<11} {embedder.id} loaded in {seconds:.2f} s{made}")
        embedders[name] = embedder
    return embedders


def speeds(embedders: dict, texts: list[str], batch_size: int, repeat: int) -> None:
    """Passages per second (wall) and per CPU-second of each embedder on ``texts``, rounds in
    alternating order; the median round of each, and every round."""
    from pipeline.index.embedders import embed_in_batches

    rounds: dict[str, list[tuple[float, float]]] = {name: [] for name in embedders}
    for n in range(repeat):
        for name in (list(embedders) if n % 2 == 0 else list(reversed(embedders))):
            started, cpu = time.perf_counter(), time.process_time()
            embed_in_batches(embedders[name], texts, batch_size)
            wall, used = time.perf_counter() - started, time.process_time() - cpu
            rounds[name].append((len(texts) / wall, len(texts) / used))
    medians = {name: (statistics.median(r[0] for r in runs), statistics.median(r[1] for r in runs))
               for name, runs in rounds.items()}
    for name, (wall, cpu) in medians.items():
        each = ", ".join(f"{w:.1f}" for w, _ in rounds[name])
        print(f"batch {batch_size:>3}  {name:<11} {wall:6.1f} passages/s ({each}), {cpu:6.1f} per CPU-second")
    print(f"batch {batch_size:>3}  int8 / fp32: {medians['minilm-int8'][0] / medians['minilm'][0]:.2f}x passages/s, "
          f"{medians['minilm-int8'][1] / medians['minilm'][1]:.2f}x per CPU-second; "
          f"load average {os.getloadavg()[0]:.1f}")


def overlap(fp32_scores, int8_scores, k: int = K) -> tuple[float, float, float]:
    """(recall@k, recall@k within ties, fp32's k-th best cosine) of int8's k nearest against
    fp32's, over one query's scores (cosine per passage; a passage left out scores -inf)."""
    import numpy as np

    k = min(k, int(np.isfinite(fp32_scores).sum()))
    if k == 0:
        return 1.0, 1.0, 0.0
    ours = np.argsort(-fp32_scores, kind="stable")[:k]
    theirs = np.argsort(-int8_scores, kind="stable")[:k]
    tenth = float(fp32_scores[ours[-1]])
    strict = len(set(ours.tolist()) & set(theirs.tolist())) / k
    tied = float((fp32_scores[theirs] >= tenth - TIE).sum()) / k
    return strict, tied, tenth


def judged_recall(embedders: dict, vectors: dict, passages: list) -> tuple[float, float]:
    """Mean recall@10 of int8 against fp32 over the judged queries (their docket's passages
    when they name one)."""
    import numpy as np

    queries = load_queries(QUERIES)
    asked = {name: np.asarray(e.embed([q.query for q in queries]), dtype=np.float32)
             for name, e in embedders.items()}
    dockets = np.array([docket for _, docket, _ in passages])
    figures = []
    for n, q in enumerate(queries):
        outside = (dockets != q.docket) if q.docket else np.zeros(len(passages), dtype=bool)
        scores = []
        for name in ("minilm", "minilm-int8"):
            s = vectors[name] @ asked[name][n]
            s[outside] = -np.inf
            scores.append(s)
        figures.append(overlap(*scores))
    return _print_recall(f"{len(queries)} judged queries", figures)


def passage_recall(vectors: dict, chosen: list[int]) -> tuple[float, float]:
    """Mean recall@10 of int8 against fp32 with each chosen passage asking for its nearest
    others (itself left out)."""
    import numpy as np

    figures = []
    for i in chosen:
        scores = []
        for name in ("minilm", "minilm-int8"):
            s = vectors[name] @ vectors[name][i]
            s[i] = -np.inf
            scores.append(s)
        figures.append(overlap(*scores))
    # A form letter's passage has tens of near-copies: its ten nearest are near-ties that the
    # smallest change reorders. Said apart, so the figure of the other passages is seen too.
    crowded = [f for f in figures if f[2] >= CROWDED]
    if crowded and len(crowded) < len(figures):
        _print_recall(f"{len(crowded)} of them with ten near-copies (fp32 10th cosine >= {CROWDED})", crowded)
        _print_recall(f"{len(figures) - len(crowded)} of them without", [f for f in figures if f[2] < CROWDED])
    return _print_recall(f"{len(chosen)} passages as queries", figures)


def _print_recall(label: str, figures: list[tuple]) -> tuple[float, float]:
    strict = statistics.mean(f[0] for f in figures)
    tied = statistics.mean(f[1] for f in figures)
    whole = sum(1 for f in figures if f[0] == 1.0)
    worst = min(f[0] for f in figures)
    print(f"recall@10 int8 vs fp32, {label}: {strict:.3f} (within ties {tied:.3f}); "
          f"all ten found for {whole} of {len(figures)}, worst {worst:.1f}")
    return strict, tied


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
