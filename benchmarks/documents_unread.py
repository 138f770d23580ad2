"""The schema v17 upgrade over many dockets: marking those fetched from the API before their
documents were stored, and dropping their fetch and lineage markers.

    .venv/bin/python -m benchmarks documents_unread [--dockets 100000] [--state-url ...]

A store at schema 16 with ``--dockets`` resolved dockets, each with fetch, backfill and lineage
markers: a third with a stored document (resolved under 0.4.0), a third with a mirror listing
(mirror-fed), a third with neither (fetched from the API before 0.4.0). The upgrade is timed
as the next open runs it (``ensure_schema``), with the load average before and after; it must
mark exactly the last third and drop exactly their two markers each. One JSON object for
docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import open_runtime
from pipeline.runtime import set_runtime
from pipeline.store import db as state_db
from pipeline.store.models import Docket, DocketDocument, DocketStage, Meta, MirrorObject, database

BATCH = 500  # rows per INSERT: SQLite's variable limit is 32,766
STAGES = ("fetch", "backfill", "lineage")


def _insert(model, rows: list[dict]) -> None:
    with database.atomic():
        for start in range(0, len(rows), BATCH):
            model.insert_many(rows[start:start + BATCH]).execute()


def seed(count: int) -> list[str]:
    """The dockets; returns those fetched from the API before their documents were stored."""
    now = "2025-06-01T00:00:00.000000Z"
    ids = [f"EPA-2024-{n:06d}" for n in range(count)]
    _insert(Docket, [{"id": d, "resolved_at": now, "last_pull_at": now, "discovered_by": "list"} for d in ids])
    _insert(DocketDocument, [{"document": f"{d}-0001", "docket": d, "document_type": "Rule"} for d in ids[0::3]])
    _insert(MirrorObject, [{"key": f"raw-data/EPA/{d}/text-{d}/docket/{d}.json", "docket": d, "size": 1,
                            "modified": "1", "state": "listed", "seen_at": now, "item": ""} for d in ids[1::3]])
    _insert(DocketStage, [{"docket": d, "stage": s, "version": 1, "input_fingerprint": "i",
                           "output_fingerprint": "o", "completed_at": now, "run_id": "seed"}
                          for d in ids for s in STAGES])
    return ids[2::3]


def run(folder: Path, args) -> dict:
    rt = open_runtime({"DOCKETEER_DATA_DIR": str(folder), "DOCKETEER_STATE_URL": args.state_url,
                       "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing"})
    db = rt.state
    unread = seed(args.dockets)
    db.execute_sql("ALTER TABLE docket DROP COLUMN documents_unread")
    Meta.update(value="16").where(Meta.key == "schema_version").execute()
    load_before = os.getloadavg()
    started = time.perf_counter()
    state_db.ensure_schema(db)
    seconds = time.perf_counter() - started
    load_after = os.getloadavg()
    marked = sorted(d for (d,) in Docket.select(Docket.id).where(Docket.documents_unread == 1).tuples())
    dropped = args.dockets * len(STAGES) - DocketStage.select().count()
    kept_theirs = DocketStage.select().where(DocketStage.docket.in_(unread[:BATCH])
                                             & (DocketStage.stage != "backfill")).count()
    result = {"dockets": args.dockets, "state_db": "postgresql" if args.state_url else "sqlite",
              "marked": len(marked), "marked_exactly_the_api_fetched": marked == unread,
              "markers_dropped": dropped, "their_fetch_and_lineage_markers_left": kept_theirs,
              "seconds": round(seconds, 3), "load_average_before": load_before, "load_average_after": load_after}
    rt.close()
    set_runtime(None)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--dockets", type=int, default=100_000)
    parser.add_argument("--state-url", default="")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-documents-unread-"))
    try:
        result = run(folder, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result, indent=2))
    ok = (result["marked_exactly_the_api_fetched"] and result["markers_dropped"] == 2 * result["marked"]
          and result["their_fetch_and_lineage_markers_left"] == 0)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
