"""Embedding throughput (chunks/s) of the hashing and MiniLM embedders on generated comments.

    .venv/bin/python -m benchmarks bench_embedders [--chunks 500] [--batch-size 64]

The chunks are real ``chunk_text`` output (default 1,200-char chunks) over generated
comment prose, so their lengths match what the index stage embeds. MiniLM's one-off model
load is timed apart from the embedding; MiniLM is skipped when its extra is not installed.
"""

from __future__ import annotations

import argparse
import random
import time

from benchmarks.common import loaded_embedder
from pipeline.index.chunking import chunk_text
from pipeline.index.embedders import embed_in_batches

VOCABULARY = (
    "medicare payment rural hospital patients physician fee schedule reimbursement "
    "telehealth clinic access nurse staffing rule proposed comment agency burden cost "
    "small practice quality reporting measure rate update beneficiaries coverage data "
    "wetlands water streams permit broadband tribal subsidy airline refund passengers"
).split()


def generated_chunks(count: int, seed: int = 2026) -> list[str]:
    """At least ``count`` chunk texts cut by chunk_text from generated multi-paragraph comments."""
    rng = random.Random(seed)
    texts: list[str] = []
    while len(texts) < count:
        paragraphs = [
            " ".join(rng.choice(VOCABULARY) for _ in range(rng.randint(30, 120))).capitalize() + "."
            for _ in range(rng.randint(3, 12))
        ]
        chunks = chunk_text([("attachment_1.pdf", "\n\n".join(paragraphs))])
        texts.extend(c.text for c in chunks)
    return texts[:count]


def bench(name: str, texts: list[str], batch_size: int) -> None:
    loaded = loaded_embedder(name)
    if loaded is None:
        return
    embedder, load_s = loaded
    started = time.perf_counter()
    vectors = embed_in_batches(embedder, texts, batch_size)
    elapsed = time.perf_counter() - started
    assert len(vectors) == len(texts)
    print(
        f"{name:<8} {len(texts)} chunks in {elapsed:7.2f} s = {len(texts) / elapsed:9.1f} chunks/s"
        f"  (dim {embedder.dim}, batch {batch_size}, load+warm-up {load_s:.2f} s)"
    )


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--embedders", default="hashing,minilm")
    args = parser.parse_args(argv)
    texts = generated_chunks(args.chunks)
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"{len(texts)} chunks, mean {mean_chars:.0f} chars")
    for name in args.embedders.split(","):
        bench(name.strip(), texts, args.batch_size)


if __name__ == "__main__":
    main()
