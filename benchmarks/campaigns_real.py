"""Campaign groups on real comments: the three CDO-pilot dockets of ../shared/realdata.

    .venv/bin/python -m benchmarks campaigns_real [--realdata ../shared/realdata] [--samples 3]
        [--threshold 0.5] [--state-url ...]

Each docket's comments (1,567 in all, their text the body as the mirror holds it) are
seeded as extract leaves them and grouped by the stage's function, one store per docket.
Per docket (``devtools/cdo_letters.py`` says how each figure is made):

* pairwise precision and recall of docketeer's groups against the pilot's ``clust``
  (Louvain clusters) and ``comp`` (connected components) groups, and the pilot's own
  precision against the letters read by eye;
* precision against the letters read by eye (by the sentence rule alone, and with the
  comments read one by one), and containment recall (a letter plus a note of its own);
* the disagreements with the pilot's clusters: each (docketeer group, pilot cluster) cell
  where one puts comments together and the other does not, its pairs, whose side the letters
  read by eye take, and ``--samples`` comment pairs of it to read.

Prints one JSON object per docket and PASS when every docket's precision against the letters
is at least 0.98 and its containment recall at least 0.9.
"""

from __future__ import annotations

import argparse
import json
import random
import shutil
import tempfile
import time
from collections import Counter
from pathlib import Path

from benchmarks.common import ROOT, open_runtime
from devtools import cdo_letters
from devtools.campaign_corpus import seed_store
from pipeline.campaigns.stage import group_docket
from pipeline.engine.stage import StageContext
from pipeline.runtime import set_runtime
from pipeline.store import dockets, item_states
from pipeline.store.models import CampaignMember

PRECISION_TARGET = 0.98
CONTAINMENT_TARGET = 0.9


def grouped(folder: Path, args, docket: str, comments) -> tuple[dict[str, str], dict[str, str], float]:
    """(item -> campaign, item -> why skipped, seconds) of one docket grouped from scratch."""
    rt = open_runtime({"DOCKETEER_DATA_DIR": str(folder), "DOCKETEER_STATE_URL": args.state_url,
                       "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing",
                       "DOCKETEER_CAMPAIGN_THRESHOLD": str(args.threshold)})
    try:
        seed_store(rt, docket, comments)
        started = time.perf_counter()
        group_docket(StageContext(runtime=rt, run_id="bench"), dockets.require_docket(docket))
        seconds = time.perf_counter() - started
        found = dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign).tuples())
        skipped = {k: r.reason for k, r in item_states.rows_in_states("campaigns", docket, ("skipped",)).items()}
        return found, skipped, seconds
    finally:
        rt.close()
        set_runtime(None)


def disagreements(docket: str, texts: dict[str, str], found: dict[str, str], pilot: dict[str, str],
                  samples: int, rng: random.Random) -> list[dict]:
    """The cells where docketeer and the pilot's clusters differ, largest first: pairs docketeer
    puts together and the pilot apart (``docketeer_only``) and the other way (``pilot_only``; a
    comment docketeer skipped is in a group of its own), each with the letters' verdict."""
    letters = cdo_letters.Letters(docket, texts)
    carried = {k: letters.carried(k, t) for k, t in texts.items()}
    mine = {k: found.get(k, f"skipped:{k}") for k in texts}
    cells: dict[tuple[str, str, str], list[tuple[str, str]]] = {}
    keys = sorted(texts)
    for i, a in enumerate(keys):
        for b in keys[i + 1:]:
            together, theirs = mine[a] == mine[b], pilot[a] == pilot[b]
            if together == theirs:
                continue
            side = "docketeer_only" if together else "pilot_only"
            groups = (mine[a], mine[b]) if together else tuple(sorted((mine[a], mine[b])))
            cell = (side, "|".join(groups), "|".join(sorted({pilot[a], pilot[b]})))
            cells.setdefault(cell, []).append((a, b))
    rows = []
    for (side, groups, clusters), pairs in sorted(cells.items(), key=lambda c: -len(c[1])):
        same_letter = sum(bool(carried[a] & carried[b]) for a, b in pairs)
        together_right = same_letter if side == "docketeer_only" else len(pairs) - same_letter
        rows.append({"side": side, "docketeer_groups": groups, "pilot_clusters": clusters, "pairs": len(pairs),
                     "pairs_of_one_letter": same_letter,
                     "docketeer_right": together_right, "pilot_right": len(pairs) - together_right,
                     "sample": [[a, b, sorted(carried[a]), sorted(carried[b])]
                                for a, b in rng.sample(pairs, min(samples, len(pairs)))]})
    return rows


def measure(folder: Path, args, docket: str) -> dict:
    comments = cdo_letters.comments(args.realdata, docket)
    texts = {c.key: c.body for c in comments}
    found, skipped, seconds = grouped(folder / docket, args, docket, comments)
    scores = cdo_letters.scores(args.realdata, docket, texts, found)
    by_rule = cdo_letters.letter_pairs_right(cdo_letters.Letters(docket, texts, read=False), texts, found)
    pilot = cdo_letters.pilot_groups(args.realdata, docket, "clust")
    cells = disagreements(docket, texts, found, pilot, args.samples, random.Random(docket))
    sizes = sorted(Counter(found.values()).values(), reverse=True)
    return {"docket": docket, "seconds": round(seconds, 2), "groups_of_2_or_more": sum(1 for n in sizes if n > 1),
            "largest": sizes[:8], "skipped": len(skipped),
            "skipped_reasons": Counter(r.split(":")[0] for r in skipped.values()),
            **scores,
            "precision_letters_by_rule": round(by_rule[0] / by_rule[1], 4) if by_rule[1] else 1.0,
            "disagreements": {"cells": len(cells),
                              "pairs": sum(c["pairs"] for c in cells),
                              "docketeer_right": sum(c["docketeer_right"] for c in cells),
                              "pilot_right": sum(c["pilot_right"] for c in cells),
                              "largest": cells[:args.cells]}}


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--realdata", type=Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--state-url", default="")
    parser.add_argument("--samples", type=int, default=3, help="comment pairs shown per disagreement cell")
    parser.add_argument("--cells", type=int, default=12, help="disagreement cells shown per docket")
    args = parser.parse_args(argv)
    if not (args.realdata / "labels" / "campaigns-cdo.csv").is_file():
        print(f"no CDO labels under {args.realdata}: pass --realdata DIR")
        return 2
    folder = Path(tempfile.mkdtemp(prefix="bench-campaigns-real-"))
    ok = True
    try:
        for docket in cdo_letters.DOCKETS:
            row = measure(folder, args, docket)
            ok &= row["precision_letters"] >= PRECISION_TARGET and row["containment_recall"] >= CONTAINMENT_TARGET
            print(json.dumps(row), flush=True)
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
