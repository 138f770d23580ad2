"""Lineage: the cost of tying many comments to the documents they answer, and the work a few
new comments cost.

    .venv/bin/python -m benchmarks lineage [--comments 100000] [--new 40] [--state-url ...]

A generated rule (``devtools/lineage_corpus.py``: a proposed rule's docket and the final
rule's, one RIN) with ``--comments`` comments split between them as backfill leaves them,
tied by the stage's function from nothing (timed, with the load average before and after);
then ``--new`` more comments on the final rule: the run ties exactly those, writes no other
comment's rows, and a second run writes nothing. Results are one JSON object for
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
from devtools.lineage_corpus import FINAL_DOCKET, PROPOSED_DOCKET, seed_comments, seed_rule
from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.engine.stage import StageContext
from pipeline.lineage.stage import STAGE, link_docket
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import ItemState, LineageComment

DOCKETS = (PROPOSED_DOCKET, FINAL_DOCKET)


def tie_all(rt, run_id: str) -> tuple[float, dict, dict]:
    counts: dict[str, int] = {}
    with counters.measure() as io:
        started = time.perf_counter()
        for docket_id in DOCKETS:
            result = link_docket(StageContext(runtime=rt, run_id=run_id), dockets.require_docket(docket_id))
            for outcome, n in result.counts.items():
                counts[outcome] = counts.get(outcome, 0) + n
        seconds = time.perf_counter() - started
    return seconds, counts, io


def run(folder: Path, args) -> dict:
    rt = open_runtime({"DOCKETEER_DATA_DIR": str(folder), "DOCKETEER_STATE_URL": args.state_url,
                       "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing"})
    seed_rule()
    half = args.comments // 2
    seed_comments(PROPOSED_DOCKET, 1, half)
    seed_comments(FINAL_DOCKET, 1, args.comments - half)
    load_before = os.getloadavg()
    seconds, counts, io = tie_all(rt, "full")
    load_after = os.getloadavg()
    result = {"comments": args.comments, **counts, "seconds": round(seconds, 2),
              "comments_per_second": round(args.comments / seconds), "rows_written": io.get(ROWS_WRITTEN, 0),
              "load_average_before": load_before, "load_average_after": load_after}
    ties_before = sorted(LineageComment.select().tuples())
    seed_comments(FINAL_DOCKET, args.comments - half + 1, args.new)
    new_s, new_counts, _ = tie_all(rt, "new")
    ties_after = sorted(LineageComment.select().tuples())
    again_s, again_counts, again_io = tie_all(rt, "again")
    result["incremental"] = {
        "new": args.new, **new_counts, "seconds": round(new_s, 3),
        "state_rows_written": ItemState.select().where((ItemState.stage == STAGE) & (ItemState.run_id == "new")).count(),
        "ties_added": len(ties_after) - len(ties_before), "earlier_ties_unchanged": set(ties_before) <= set(ties_after),
        "second_run_counts": again_counts, "second_run_seconds": round(again_s, 3),
        "second_run_rows_written": again_io.get(ROWS_WRITTEN, 0)}
    rt.close()
    set_runtime(None)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=100_000)
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--state-url", default="")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-lineage-"))
    try:
        result = run(folder, args)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(result, indent=2))
    inc = result["incremental"]
    ok = (result.get("tied") == args.comments and inc.get("tied") == args.new and inc["ties_added"] == args.new
          and inc["state_rows_written"] == args.new and inc["earlier_ties_unchanged"]
          and inc["second_run_counts"] == {} and inc["second_run_rows_written"] == 0)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
