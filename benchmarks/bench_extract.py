"""Pages per second of the extract stage against a plain PyMuPDF loop over the same PDFs.

    .venv/bin/python -m benchmarks bench_extract [--pdfs 200] [--pages 10] [--rounds 21]

Generates ``--pdfs`` text PDFs of ``--pages`` pages each (make_corpus prose, one PDF per
comment), stores them the way backfill does (item, attachment and backfill rows in a
SQLite state DB, blobs in a local folder), then times:

* plain:   one process, ``pymupdf.open`` + ``page.get_text()`` for every page, nothing else;
* plain+write: the same, and each PDF's text written to a file of its own (the same path
  every round, so it is overwritten as the stage overwrites each combined.md; no fsync):
  the least the stage must do, which keeps a text file per comment;
* stage/1: ``extract_docket`` with one worker process (all of it: plan, reads, combined.md
  written and fsynced, state rows);
* stage/2: the same with two worker processes.

Every stage run is given a new extractor version, so every item is re-extracted (that is
what a version bump does). The fork server that starts the workers is started once before
the timings (its start is printed apart: it is paid once per process). The contenders run
in ``--rounds`` rounds, each once per round; the table shows each one's best round, the
comparisons the median of the per-round ratios (runs of one round ran seconds apart, so
they saw the same machine; see ``rounds_of``).
Targets: stage/1 at most 10 % slower than plain (and than plain+write); stage/2 at least 1.6x stage/1 on 2 cores.
"""

from __future__ import annotations

import argparse
import hashlib
import io
import os
import random
import statistics
import tempfile
import time
from pathlib import Path

from benchmarks.common import open_runtime
from devtools.corpus_topics import TOPICS
from devtools.make_corpus import text_pdf, topic_prose
from pipeline.counters import PDF_OPENS, counters
from pipeline.engine.stage import StageContext
from pipeline.extract.pool import WORKER_CPU_US
from pipeline.extract.stage import extract_docket
from pipeline.runtime import Runtime
from pipeline.store import dockets, item_states, items
from pipeline.store.blobs import attachment_key
from pipeline.store.models import Attachment, Item, database

DOCKET = "BENCH-2026-0001"
STAMP = "2026-01-01T00:00:00Z"


def make_runtime(folder: Path, workers: int) -> Runtime:
    return open_runtime({
        "DOCKETEER_DATA_DIR": str(folder / "data"),
        "DOCKETEER_DISCOVER": "none",
        "DOCKETEER_EXTRACT_WORKERS": str(workers),
    })


def generate(rt: Runtime, pdfs: int, pages: int, seed: int = 2026) -> list[Path]:
    """``pdfs`` comments with one ``pages``-page PDF each; returns the blob paths."""
    rng = random.Random(seed)
    dockets.ensure_dockets([DOCKET], discovered_by="bench")
    paths = []
    with database.atomic():
        for n in range(1, pdfs + 1):
            key = f"{DOCKET}-{n:05d}"
            topic = rng.choice(TOPICS)
            data = text_pdf([topic_prose(rng, topic, 4) for _ in range(pages)])
            paths.append(store_comment(rt, key, data))
    return paths


def store_comment(rt: Runtime, key: str, pdf: bytes) -> Path:
    """What backfill leaves: the item, its attachment row and blob, and an ok backfill row."""
    stored = rt.blobs.ingest(io.BytesIO(pdf), max_bytes=1 << 30)
    detail = hashlib.sha256(key.encode()).hexdigest()
    Item.insert(key=key, docket=DOCKET, kind="comment", body="See attached file(s)",
                detail_hash=detail, created_at=STAMP, updated_at=STAMP).execute()
    Attachment.insert(item=key, filename="attachment_1.pdf", ordinal=1, format="pdf",
                      sha256=stored.sha256, size=stored.size).execute()
    content = items.content_digest({"detail": detail, "files": [["attachment_1.pdf", stored.sha256]]})
    item_states.transition("backfill", key, DOCKET, "ok", run_id="bench", content_hash=content)
    return rt.blobs.local_path(attachment_key(stored.sha256))


def plain_loop(paths: list[Path]) -> None:
    """The floor: PyMuPDF alone, one process, the text of every page joined."""
    import pymupdf

    for path in paths:
        with pymupdf.open(path) as doc:
            "\n\n".join(page.get_text().strip() for page in doc)


def plain_write_loop(paths: list[Path], folder: Path) -> None:
    """The floor with the write: the same loop, each text written to its own file."""
    import pymupdf

    folder.mkdir(exist_ok=True)
    for n, path in enumerate(paths):
        with pymupdf.open(path) as doc:
            text = "\n\n".join(page.get_text().strip() for page in doc)
        (folder / f"{n}.txt").write_text(text, encoding="utf-8")


def stage_run(rt: Runtime, workers: int, version: str) -> float:
    """Runs the stage; returns the worker processes' CPU seconds."""
    rt.settings.values["extract_workers"] = workers
    ctx = StageContext(runtime=rt, run_id=version)
    with counters.measure() as io_done:
        result = extract_docket(ctx, dockets.require_docket(DOCKET), version=version)
    assert result.counts.get("ok") == io_done[PDF_OPENS], (result.counts, io_done)
    return io_done.get(WORKER_CPU_US, 0) / 1e6


def rounds_of(rounds: int, runs: dict) -> dict[str, list[tuple[float, float, float]]]:
    """name -> one (wall seconds, CPU seconds of every process involved, CPU seconds of
    this process alone: the stage's own share beside the workers' reads) per round.

    Every round runs each contender once, back to back, in an order that rotates from
    round to round: this machine's speed drifts by 10-30 % within a minute (shared host),
    so only runs close together in time compare, and no contender always goes first."""
    names = list(runs)
    results = {name: [] for name in names}
    for n in range(rounds):
        for name in names[n % len(names):] + names[:n % len(names)]:
            started, cpu = time.perf_counter(), time.process_time()
            children_cpu = runs[name]() or 0.0
            wall = time.perf_counter() - started
            own_cpu = time.process_time() - cpu
            results[name].append((wall, own_cpu + children_cpu, own_cpu))
    return results


def ratio_summary(over: list[tuple], base: list[tuple], field: int) -> str:
    """Per-round ratios of ``over`` to ``base`` (same round, so same machine speed):
    median and range, as a percentage over ``base``."""
    ratios = sorted((o[field] / b[field] - 1) * 100 for o, b in zip(over, base, strict=True))
    return (f"median {statistics.median(ratios):+.1f} % (rounds: {ratios[0]:+.1f} % "
            f"to {ratios[-1]:+.1f} %)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--pdfs", type=int, default=200)
    parser.add_argument("--pages", type=int, default=10)
    parser.add_argument("--rounds", type=int, default=21)
    args = parser.parse_args(argv)
    with tempfile.TemporaryDirectory() as folder:
        rt = make_runtime(Path(folder), workers=1)
        started = time.perf_counter()
        paths = generate(rt, args.pdfs, args.pages)
        total = args.pdfs * args.pages
        print(f"{args.pdfs} PDFs x {args.pages} pages = {total} pages, generated in "
              f"{time.perf_counter() - started:.1f} s; {os.cpu_count()} cores, "
              f"load average {os.getloadavg()[0]:.1f}")
        started = time.perf_counter()
        stage_run(rt, 1, "bench-warm")  # starts the fork server: paid once per process
        print(f"first stage run incl. fork server start: {time.perf_counter() - started:.2f} s")

        versions = iter(range(10_000))
        results = rounds_of(args.rounds, {
            "plain": lambda: plain_loop(paths),
            "plain+write": lambda: plain_write_loop(paths, Path(folder, "plain-texts")),
            "stage/1": lambda: stage_run(rt, 1, f"bench-{next(versions)}"),
            "stage/2": lambda: stage_run(rt, 2, f"bench-{next(versions)}"),
        })
        print(f"best of {args.rounds} rounds:")
        print("run          wall s   pages/s   CPU s  pages/CPU-s  parent CPU s")
        for name, runs in results.items():
            wall, cpu, own_cpu = (min(run[i] for run in runs) for i in range(3))
            print(f"{name:<12} {wall:6.2f} {total / wall:9.1f} {cpu:7.2f} {total / cpu:9.1f}"
                  f"    {own_cpu:10.2f}")
        print("median of the rounds, CPU s: " + ", ".join(
            f"{name} {statistics.median(run[1] for run in runs):.2f}" for name, runs in results.items())
            + "; stage/1's own process " + f"{statistics.median(run[2] for run in results['stage/1']):.2f}")
        plain, single, pool = results["plain"], results["stage/1"], results["stage/2"]
        print("stage/1 over plain, wall: " + ratio_summary(single, plain, 0))
        print("stage/1 over plain, CPU:  " + ratio_summary(single, plain, 1)
              + "  (target <= +10 %)")
        written = results["plain+write"]
        print("plain+write over plain, wall: " + ratio_summary(written, plain, 0)
              + "; CPU: " + ratio_summary(written, plain, 1))
        print("stage/1 over plain+write, wall: " + ratio_summary(single, written, 0))
        print("stage/1 over plain+write, CPU:  " + ratio_summary(single, written, 1)
              + "  (target <= +10 %)")
        speedups = sorted(s[0] / p[0] for s, p in zip(single, pool, strict=True))
        print(f"stage/2 speed-up over stage/1: median {statistics.median(speedups):.2f}x "
              f"(rounds: {speedups[0]:.2f}x to {speedups[-1]:.2f}x; target >= 1.6x on 2 cores); "
              f"load average now {os.getloadavg()[0]:.1f}")
        rt.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
