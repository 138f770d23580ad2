"""Topic maps: quality against planted topics, incremental placement, and cost at scale.

    .venv/bin/python -m benchmarks topics [--quality 3000] [--embedder minilm] [--new 40]
        [--items 20000]

1. Quality: ``--quality`` comments from ``devtools/topic_corpus.py`` (the corpus generator's
   topics as truth), embedded with ``--embedder`` and stored as the index leaves them, mapped
   by the TopicMap stage's function; adjusted mutual information and NMI of its topics with
   the planted ones (an unplaced comment is a class of its own), beside k-means with the
   true k over the same comment vectors; whether each planted topic's label names one of
   its key terms. Twice: the even corpus, and the hard one (uneven sizes, borrowed
   sentences, off-topic comments).
2. Incremental (on the even corpus): ``--new`` comments more, mapped: how many were placed,
   whether the topic ids stayed; then a forced re-cluster of the unchanged data: whether
   the topics and ids are the same.
3. Cost: a docket of ``--items`` comments (hashing vectors: the clustering's cost, not the
   embedder's) mapped from scratch, timed, with the load average; then its docket page (with
   the Topics section), its browse page (with the Topic facet) and that page narrowed to the
   largest topic, each rendered through Starlette's TestClient, the median of 5.

Results are printed as one JSON object for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import open_runtime
from devtools.corpus_topics import TOPICS
from devtools.topic_corpus import hard_topic_comments, seed_index, topic_comments
from pipeline.engine.stage import StageContext
from pipeline.index.embedders import HashingEmbedder, make_embedder
from pipeline.reading import topics as topic_maps
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import TopicMember
from pipeline.topics.stage import map_docket


def load() -> str:
    return Path("/proc/loadavg").read_text().split(" ")[0]


def mapped(runtime, docket: str, force: bool = False):
    started = time.perf_counter()
    result = map_docket(StageContext(runtime=runtime, run_id="bench", force=force), dockets.require_docket(docket))
    return result, time.perf_counter() - started


def assignment(docket: str) -> dict[str, str | None]:
    return dict(TopicMember.select(TopicMember.item, TopicMember.topic).where(TopicMember.docket == docket).tuples())


def quality(runtime, docket: str, comments, embedder) -> dict:
    import numpy as np
    from sklearn.cluster import KMeans
    from sklearn.metrics import adjusted_mutual_info_score, normalized_mutual_info_score

    from pipeline.topics.clustering import normalised

    started = time.perf_counter()
    seed_index(runtime, docket, comments, embedder)
    embedded = time.perf_counter() - started
    result, seconds = mapped(runtime, docket)
    found = assignment(docket)
    keys = [c.key for c in comments]
    truth = [c.topic or "(off-topic)" for c in comments]
    labels = [found.get(k) or f"(unplaced {k})" for k in keys]
    # the baseline: k-means with the true k over the same comment vectors (mean of passages)
    vectors = np.vstack([np.mean(normalised(np.asarray(embedder.embed(list(c.paragraphs)))), axis=0) for c in comments])
    k = len({c.topic for c in comments})
    kmeans = KMeans(n_clusters=k, n_init=10, random_state=0).fit_predict(normalised(vectors))
    named = 0
    topics = topic_maps.topics_of(docket)
    for planted in TOPICS:
        members = [t for t in topics if t.id in {found.get(c.key) for c in comments if c.topic == planted.slug}]
        key_words = {w.lower() for w in planted.label.split() if len(w) > 3}
        best = max(members, key=lambda t: sum(1 for c in comments if c.topic == planted.slug
                                              and found.get(c.key) == t.id), default=None)
        if best and any(w.rstrip("s") in best.label.lower() for w in key_words):
            named += 1
    return {"comments": len(comments), "embed_seconds": round(embedded, 1), "map_seconds": round(seconds, 2),
            "topics": len(topics), "unplaced": sum(1 for k in keys if not found.get(k)),
            "ami": round(adjusted_mutual_info_score(truth, labels), 3),
            "nmi": round(normalized_mutual_info_score(truth, labels), 3),
            "kmeans_true_k_ami": round(adjusted_mutual_info_score(truth, kmeans), 3),
            "kmeans_true_k_nmi": round(normalized_mutual_info_score(truth, kmeans), 3),
            "labels_naming_key_terms": f"{named}/{len(TOPICS)}",
            "labels": [t.label for t in topics], "counts": result.counts}


def incremental(runtime, docket: str, start: int, new: int, embedder) -> dict:
    ids = {t.id for t in topic_maps.topics_of(docket)}
    before = assignment(docket)
    seed_index(runtime, docket, topic_comments(docket, new, seed=99, start=start), embedder)
    result, seconds = mapped(runtime, docket)
    after = assignment(docket)
    same_ids = {t.id for t in topic_maps.topics_of(docket)} == ids
    forced, forced_seconds = mapped(runtime, docket, force=True)
    again = assignment(docket)
    return {"new": new, "counts": result.counts, "seconds": round(seconds, 2), "topic_ids_unchanged": same_ids,
            "earlier_comments_unchanged": all(after[k] == v for k, v in before.items()),
            "forced_counts": forced.counts, "forced_same_ids": {t.id for t in topic_maps.topics_of(docket)} == ids,
            "forced_same_assignment": sum(again[k] == after[k] for k in after) / len(after)}


def page_render_ms(runtime, path: str, shows: str) -> float:
    """The median of 5 renderings of ``path`` (each must show ``shows``), in milliseconds."""
    from starlette.testclient import TestClient

    from pipeline.web import pages
    from pipeline.web.app import make_app

    times = []
    with TestClient(make_app(runtime, pages.WarmSearch(runtime)), base_url="http://127.0.0.1") as client:
        for _ in range(5):
            started = time.perf_counter()
            page = client.get(path)
            times.append(time.perf_counter() - started)
            assert page.status_code == 200 and shows in page.text
    return round(sorted(times)[2] * 1000, 1)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks topics")
    parser.add_argument("--quality", type=int, default=3000)
    parser.add_argument("--embedder", default="minilm")
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--items", type=int, default=20000)
    args = parser.parse_args(argv)
    root = Path(tempfile.mkdtemp(prefix="bench-topics-"))
    report = {"load_before": load()}
    try:
        runtime = open_runtime({"DOCKETEER_DATA_DIR": str(root / "data"), "DOCKETEER_DISCOVER": "none",
                                "DOCKETEER_EMBEDDER": "hashing"})
        embedder = make_embedder(args.embedder) if args.embedder != "hashing" else HashingEmbedder(384)
        if args.quality:
            report["even"] = quality(runtime, "TOP-2026-0001", topic_comments("TOP-2026-0001", args.quality), embedder)
            report["incremental"] = incremental(runtime, "TOP-2026-0001", args.quality + 1, args.new, embedder)
            report["hard"] = quality(runtime, "TOP-2026-0002", hard_topic_comments("TOP-2026-0002", args.quality),
                                     embedder)
        if args.items:
            docket = "TOP-2026-0003"
            seed_index(runtime, docket, topic_comments(docket, args.items, seed=3), HashingEmbedder(384))
            load_at = load()
            result, seconds = mapped(runtime, docket)
            report["scale"] = {"comments": args.items, "embedder": "hashing 384", "seconds": round(seconds, 1),
                               "load": load_at, "topics": len(topic_maps.topics_of(docket)), "counts": result.counts,
                               "docket_page_ms": page_render_ms(runtime, f"/docket/{docket}", "<h2>Topics</h2>"),
                               # The browse page with its Topic facet, then narrowed to the largest topic.
                               "browse_page_ms": page_render_ms(runtime, f"/comments?docket={docket}",
                                                                'data-facet="topic"'),
                               "browse_topic_ms": page_render_ms(
                                   runtime, f"/comments?docket={docket}&topic={topic_maps.topics_of(docket)[0].id}",
                                   'data-facet="topic"')}
        report["load_after"] = load()
        print(json.dumps(report, indent=1))
        runtime.close()
        set_runtime(None)
    finally:
        shutil.rmtree(root, ignore_errors=True)
    return 0
