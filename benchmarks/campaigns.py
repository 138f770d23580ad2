"""Campaign groups: quality on a planted corpus, and incremental cost against a full grouping.

    .venv/bin/python -m benchmarks campaigns [--quality 3000] [--items 20000] [--new 40]
        [--threshold 0.5] [--state-url ...]

1. Quality: ``--quality`` comments of one docket from ``devtools/campaign_corpus.py``
   (planted campaigns with names, salutations, inserted and deleted sentences, reordered
   paragraphs, some sent as attachments, beside independent comments on the same topic),
   grouped by the stage's function; precision and recall of group membership over pairs.
2. Incremental: a docket of ``--items`` comments grouped from scratch (timed), then
   ``--new`` more comments seeded and grouped (timed, side by side in this one run): the
   run must compare exactly ``--new`` comments (counter ``campaign_compares``), place them
   as planted, and cost under 5 % of the full grouping. Then a second store is grouped from
   scratch over all ``--items + --new`` comments: its groups, ids and representatives must
   equal the incremental store's.

Results are printed as one JSON object (and a table line per figure) for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import open_runtime
from devtools.campaign_corpus import campaign_comments, pair_scores, seed_store
from pipeline.campaigns.grouping import CAMPAIGN_CANDIDATES, CAMPAIGN_COMPARES
from pipeline.campaigns.stage import group_docket
from pipeline.counters import counters
from pipeline.engine.stage import StageContext
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import Campaign, CampaignMember

DOCKET = "BENCH-2026-0001"


def runtime_in(folder: Path, args):
    return open_runtime({"DOCKETEER_DATA_DIR": str(folder), "DOCKETEER_STATE_URL": args.state_url,
                         "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing",
                         "DOCKETEER_CAMPAIGN_THRESHOLD": str(args.threshold)})


def timed_grouping(rt) -> tuple[float, dict, dict]:
    with counters.measure() as io:
        started = time.perf_counter()
        result = group_docket(StageContext(runtime=rt, run_id="bench"), dockets.require_docket(DOCKET))
        seconds = time.perf_counter() - started
    return seconds, result.counts, io


def membership() -> dict[str, str]:
    return dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign).tuples())


def groups_dump() -> tuple[list, list]:
    return (sorted(CampaignMember.select(CampaignMember.item, CampaignMember.campaign,
                                         CampaignMember.added_sentences).tuples()),
            sorted(Campaign.select().tuples()))


def quality(folder: Path, args) -> dict:
    rt = runtime_in(folder, args)
    planted = campaign_comments(DOCKET, args.quality, seed=1)
    seed_store(rt, DOCKET, planted)
    seconds, counts, _ = timed_grouping(rt)
    precision, recall = pair_scores({c.key: c.campaign for c in planted}, membership())
    groups = Campaign.select().where(Campaign.size > 1).count()
    rt.close()
    return {"comments": args.quality, "planted_campaigns": len({c.campaign for c in planted} - {None}),
            "campaign_comments": sum(1 for c in planted if c.campaign),
            "attached": sum(1 for c in planted if c.attachment), "groups_found": groups,
            "precision": round(precision, 4), "recall": round(recall, 4), "seconds": round(seconds, 2)}


def incremental(folder: Path, args) -> dict:
    first = campaign_comments(DOCKET, args.items, seed=2)
    more = campaign_comments(DOCKET, args.new, seed=2, first=args.items + 1)
    rt = runtime_in(folder / "incremental", args)
    seed_store(rt, DOCKET, first)
    full_s, _, full_io = timed_grouping(rt)
    seed_store(rt, DOCKET, more)
    new_s, _, new_io = timed_grouping(rt)
    found = membership()
    truth = {c.key: c.campaign for c in first + more}
    precision, recall = pair_scores(truth, found)
    new_right = _new_placed_as_planted(first, more, found)
    incremental_dump = groups_dump()
    rt.close()

    scratch = runtime_in(folder / "scratch", args)
    seed_store(scratch, DOCKET, first + more)
    rebuild_s, _, _ = timed_grouping(scratch)
    same = groups_dump() == incremental_dump
    scratch.close()
    set_runtime(None)
    return {"items": args.items, "new": args.new, "full_s": round(full_s, 2),
            "full_compares": full_io.get(CAMPAIGN_COMPARES, 0),
            "full_jaccard_checks": full_io.get(CAMPAIGN_CANDIDATES, 0),
            "incremental_s": round(new_s, 3), "incremental_compares": new_io.get(CAMPAIGN_COMPARES, 0),
            "incremental_jaccard_checks": new_io.get(CAMPAIGN_CANDIDATES, 0),
            "incremental_rows_written": new_io.get("rows_written", 0),
            "incremental_share": round(new_s / full_s, 4), "new_placed_as_planted": new_right,
            "precision_after": round(precision, 4), "recall_after": round(recall, 4),
            "rebuild_s": round(rebuild_s, 2), "rebuild_same_groups_and_ids": same}


def _new_placed_as_planted(first, more, found: dict[str, str]) -> float:
    """Share of the new comments whose group holds exactly the earlier comments of their
    planted campaign (an independent one: a group of its own)."""
    planted_of = {c.key: c.campaign for c in first + more}
    right = 0
    for c in more:
        group = {k for k, g in found.items() if g == found[c.key]} - {c.key}
        if c.campaign is None:
            right += not group
        else:
            right += bool(group) and all(planted_of[k] == c.campaign for k in group)
    return round(right / len(more), 4)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", type=int, default=3000)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--state-url", default="")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-campaigns-"))
    try:
        results = {"quality": quality(folder / "quality", args), "incremental": incremental(folder, args)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(results, indent=2))
    inc = results["incremental"]
    ok = (results["quality"]["precision"] >= 0.95 and results["quality"]["recall"] >= 0.95
          and inc["incremental_compares"] == args.new and inc["incremental_share"] < 0.05
          and inc["rebuild_same_groups_and_ids"])
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
