"""A first HNSW build at PostgreSQL's default ``maintenance_work_mem`` against the memory the
index DB gives it.

    .venv/bin/python -m benchmarks hnsw_build [--vectors 60000] [--dim 384] [--work DIR]
        [--server-memory 64MB]

``--vectors`` distinct vectors of ``--dim`` dimensions (clusters of five near copies, as
passages of one letter with small edits are; seeded, so every run builds the same graph) are
stored by ``IndexDB.replace_items(index_after=True)``, as a docket's first index build stores
them, into the embedded server under ``--work``. Then the dimension's HNSW index is built
twice: as PostgreSQL would with the server's own setting (the same ``CREATE INDEX`` the index
DB sends, nothing raised) and by ``IndexDB.ensure_dimension_index``, which sizes the build's
memory first. Wall seconds, PostgreSQL's CPU seconds (its ended parallel workers counted), and
whether pgvector said the graph no longer fit and went on on disk. ``--server-memory`` sets
the session's ``maintenance_work_mem`` first, as a server configured so would have it.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

import numpy as np

from benchmarks.bench_index import postgres_cpu
from pipeline.index.chunking import Chunk
from pipeline.index.database import IndexDB, ItemRows
from pipeline.index.dimension_indexes import indexed_expression, operator_class

SPILLED = "no longer fits"


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks hnsw_build", description=__doc__.splitlines()[0])
    parser.add_argument("--vectors", type=int, default=60000)
    parser.add_argument("--dim", type=int, default=384)
    parser.add_argument("--work", type=Path, help="a folder for the embedded server (default: a temporary one)")
    parser.add_argument("--server-memory", help="maintenance_work_mem as the server's setting (default: its own)")
    args = parser.parse_args(argv)
    work = args.work or Path(tempfile.mkdtemp(prefix="hnsw-build-"))
    try:
        figures = measure(work, args.vectors, args.dim, args.server_memory)
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)
    print(json.dumps(figures, indent=2))
    return 0


def measure(work: Path, vectors: int, dim: int, server_memory: str | None = None) -> dict:
    db = IndexDB.open(None, work)
    try:
        store_vectors(db, vectors, dim)
        if server_memory:
            with db._conn.cursor() as cur:
                cur.execute("SELECT set_config('maintenance_work_mem', %s, false)", (server_memory,))
            db._conn.commit()
        figures = {"vectors": vectors, "dim": dim, "load_before": os.getloadavg()[0]}
        figures["server_setting"] = timed(db, work, lambda: plain_build(db, dim))
        drop(db, dim)
        figures["sized_by_index_db"] = timed(db, work, lambda: db.ensure_dimension_index(dim))
        figures["load_after"] = os.getloadavg()[0]
        return figures
    finally:
        db.close()


def store_vectors(db: IndexDB, vectors: int, dim: int, batch: int = 5000) -> None:
    rng = np.random.default_rng(1)
    letters = rng.standard_normal((-(-vectors // 5), dim)).astype(np.float32)
    for start in range(0, vectors, batch):
        rows = []
        for i in range(start, min(start + batch, vectors)):
            vector = letters[i // 5] + 0.3 * rng.standard_normal(dim).astype(np.float32)
            rows.append(ItemRows("comments", f"BENCH-{i:07d}", "BENCH-2026-0001",
                                 [Chunk(0, f"passage {i}", None, "Comment")], [vector.tolist()], "fp", "h", {}))
        db.replace_items(rows, f"bench-{dim}", index_after=True)


def plain_build(db: IndexDB, dim: int) -> None:
    """The index DB's CREATE INDEX with nothing raised: what the server's setting gives."""
    with db._conn, db._conn.cursor() as cur:
        cur.execute(f"CREATE INDEX chunks_hnsw_{dim} ON chunk_vectors USING hnsw"
                    f" (({indexed_expression(dim)}) {operator_class(dim)}) WHERE dim = {dim}")


def drop(db: IndexDB, dim: int) -> None:
    with db._conn, db._conn.cursor() as cur:
        cur.execute(f"DROP INDEX chunks_hnsw_{dim}")
    db._indexed_dims.discard(dim)


def timed(db: IndexDB, work: Path, build) -> dict:
    db._conn.notices.clear()
    cpu, started = postgres_cpu(work), time.perf_counter()
    build()
    wall, cpu = time.perf_counter() - started, postgres_cpu(work) - cpu
    spilled = [n.split("\n")[0] for n in db._conn.notices if SPILLED in n]
    return {"wall_s": round(wall, 2), "postgres_cpu_s": round(cpu, 2), "spilled": spilled[0] if spilled else None}
