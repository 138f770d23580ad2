"""Embedding throughput (chunks/s) of the hashing and MiniLM embedders on generated comments.

    .venv/bin/python -m benchmarks bench_embedders [--chunks 500] [--batch-size 64] [--models DIR]

``minilm`` is sentence-transformers (torch); ``minilm-onnx`` the same model under ONNX Runtime.

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


def bench(name: str, texts: list[str], batch_size: int, models: str) -> None:
    loaded = _onnx_minilm(models) if name == "minilm-onnx" else loaded_embedder(name)
    if loaded is None:
        return
    embedder, load_s = loaded
    started, cpu_started = time.perf_counter(), time.process_time()
    vectors = embed_in_batches(embedder, texts, batch_size)
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    assert len(vectors) == len(texts)
    print(
        f"{name:<11} {len(texts)} chunks in {elapsed:7.2f} s = {len(texts) / elapsed:9.1f} chunks/s"
        f"  ({len(texts) / cpu:.1f} chunks per CPU-second; dim {embedder.dim}, batch {batch_size},"
        f" load+warm-up {load_s:.2f} s)"
    )


def _onnx_minilm(models: str):
    """MiniLM under ONNX Runtime (``minilm`` alone is the torch path), its export in ``models``."""
    from pipeline.index.embedders import make_embedder

    started = time.perf_counter()
    embedder = make_embedder("minilm", cache_dir=models)
    embedder.embed(["warm up"])
    return embedder, time.perf_counter() - started


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--chunks", type=int, default=500)
    parser.add_argument("--batch-size", type=int, default=64)
    parser.add_argument("--embedders", default="hashing,minilm,minilm-onnx")
    parser.add_argument("--models", default="data/models",
                        help="folder of minilm-onnx's export (made there on first use)")
    args = parser.parse_args(argv)
    texts = generated_chunks(args.chunks)
    mean_chars = sum(map(len, texts)) / len(texts)
    print(f"{len(texts)} chunks, mean {mean_chars:.0f} chars")
    for name in args.embedders.split(","):
        bench(name.strip(), texts, args.batch_size, args.models)


if __name__ == "__main__":
    main()
