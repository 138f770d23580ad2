"""Where each embedder's relevance floor comes from: the best cosine similarity that unrelated
queries and genuine paraphrase queries reach in real comments.

    .venv/bin/python -m benchmarks search_floor [--realdata ../shared/realdata] [--embedder minilm|minilm-int8|hashing]

The comments are the real public comments of ``realdata/mirror`` (1,613: three form-letter
dockets and a few others), chunked as the index stage chunks them (``chunk_text`` with the
embedder's own token budget). Each query's best cosine over every chunk is what an exact scan
of the index would report as its best score. A floor separates the two kinds when every
unrelated query's best lies below it and every paraphrase's best above it; the embedder's
``SEARCH_FLOOR`` (``pipeline/index/embedders.py``) is chosen in that gap.
"""

from __future__ import annotations

import argparse
import json
from pathlib import Path

# Words found in no comment of the set (nor in regulation prose): a search for them must find nothing.
UNRELATED = [
    "zebra giraffe volcano",
    "recipe for banana bread",
    "offside rule in football",
    "best hiking trails in Colorado",
    "how to tune a guitar",
    "quantum chromodynamics on the lattice",
]
# Each says what some comments say, in words of its own (few or none of theirs).
PARAPHRASES = [
    "science used by the agency should not be thrown out just because the raw data is confidential",
    "rat poison harms owls, hawks and other wildlife that eat the rodents",
    "faith-based charities should get government grants on equal terms with secular groups",
    "studies that keep patients' health records private would be excluded from rulemaking",
    "keep the ban on second generation anticoagulant rodenticides sold to consumers",
    "religious groups must not be forced to give up their beliefs to take part in federal programs",
    "China is gaining influence over international technology standards bodies",
]


def comment_texts(realdata: Path) -> list[str]:
    texts = []
    for path in sorted((realdata / "mirror" / "raw-data").glob("*/*/text-*/comments/*.json")):
        attributes = json.loads(path.read_text(encoding="utf-8"))["data"].get("attributes") or {}
        if (attributes.get("comment") or "").strip():
            texts.append(attributes["comment"])
    return texts


def best_cosines(embedder, texts: list[str], queries: list[str]) -> list[float]:
    import numpy as np

    from pipeline.index.chunking import chunk_text
    from pipeline.index.embedders import embed_in_batches, token_budget_of

    budget = token_budget_of(embedder)
    chunks = [c.text for text in texts for c in chunk_text([("", text)], tokens=budget)]
    chunks = list(dict.fromkeys(chunks))  # the index embeds each distinct text once
    matrix = np.asarray(embed_in_batches(embedder, chunks, 64), dtype=np.float32)
    asked = np.asarray(embedder.embed(queries), dtype=np.float32)
    print(f"{len(texts)} comments, {len(chunks)} distinct chunks")
    return [float(row.max()) for row in asked @ matrix.T]


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=Path("../shared/realdata"))
    parser.add_argument("--embedder", choices=["minilm", "minilm-int8", "hashing"], default="minilm")
    parser.add_argument("--model-cache", default=None,
                        help="MiniLM's ONNX export folder (default: torch; minilm-int8 needs one)")
    args = parser.parse_args(argv)
    from pipeline.index.embedders import make_embedder

    options = {"cache_dir": args.model_cache} if args.embedder.startswith("minilm") and args.model_cache else {}
    embedder = make_embedder(args.embedder, **options)
    texts = comment_texts(args.realdata)
    scores = best_cosines(embedder, texts, UNRELATED + PARAPHRASES)
    print(f"embedder {embedder.id}, floor {embedder.search_floor}")
    for kind, queries, part in (("unrelated", UNRELATED, scores[:len(UNRELATED)]),
                                ("paraphrase", PARAPHRASES, scores[len(UNRELATED):])):
        for query, best in zip(queries, part, strict=True):
            print(f"  {kind:<10} {best:.3f}  {query}")
    unrelated, paraphrase = max(scores[:len(UNRELATED)]), min(scores[len(UNRELATED):])
    print(f"highest unrelated {unrelated:.3f}, lowest paraphrase {paraphrase:.3f}")
    return 0
