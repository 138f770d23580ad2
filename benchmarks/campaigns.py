"""Campaign groups: quality on a planted corpus, and incremental cost against a full grouping.

    .venv/bin/python -m benchmarks campaigns [--quality 3000] [--items 20000] [--new 40]
        [--threshold 0.5] [--state-url ...]

1. Quality: ``--quality`` comments of one docket from ``devtools/campaign_corpus.py``
   (planted campaigns with names, salutations, inserted and deleted sentences, reordered
   paragraphs, some sent as attachments, beside independent comments on the same topic),
   grouped by the stage's function; precision and recall of group membership over pairs.
2. ``--scaling 2000,20000``: instead of 1 and 3, each size grouped from scratch against bare
   datasketch (shingles, MinHash in bulk, an LSH query and insert per comment) on the same
   texts, CPU of this process; up to ``--every-up-to`` comments also with every member of a
   group compared (as before the bounded set), and whether the groups are the same. Each
   size's groups are digested (``groups_digest``); ``--same-as FILE`` (an earlier run's
   output, e.g. of an older release) says whether they are the same as that run's;
   ``--bare-from FILE`` takes the bare figure from such a run instead of measuring it again.
   ``--rounds N``: bare and the grouping N times each, in turn and in the opposite order
   each round (neither always pays the process's warm-up), medians compared.
3. Incremental: a docket of ``--items`` comments grouped from scratch (timed), then
   ``--new`` more comments seeded and grouped (timed, side by side in this one run): the
   run must compare exactly ``--new`` comments (counter ``campaign_compares``), place them
   as planted, and cost under 5 % of the full grouping. Then a second store is grouped from
   scratch over all ``--items + --new`` comments: its groups, ids and representatives must
   equal the incremental store's.

Results are printed as one JSON object (and a table line per figure) for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import shutil
import statistics
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


def bare_datasketch(comments) -> float:
    """CPU seconds of the bare operation the grouping wraps: each comment's text normalised
    and shingled, MinHash signatures in bulk, each queried against an LSH of the earlier
    ones and inserted (datasketch alone: no exact check, no store)."""
    from datasketch import MinHash, MinHashLSH

    from pipeline.campaigns import text as campaign_text
    from pipeline.campaigns.grouping import NUM_PERM

    started = time.process_time()
    shingle_sets = [campaign_text.shingles(campaign_text.normalise(c.attachment or c.body, c.submitter))
                    for c in comments]
    signatures = MinHash.bulk([[s.encode() for s in sh] for sh in shingle_sets], num_perm=NUM_PERM)
    lsh = MinHashLSH(threshold=0.5, num_perm=NUM_PERM)
    for comment, signature in zip(comments, signatures, strict=True):
        lsh.query(signature)
        lsh.insert(comment.key, signature, check_duplication=False)
    return time.process_time() - started


def scaling(folder: Path, args, size: int, earlier: dict[int, str], bare_of: dict[int, float]) -> dict:
    """Grouping ``size`` planted comments from scratch against bare datasketch on the same
    texts (CPU of this process); up to ``--every-up-to`` also with every member compared, as
    before the bounded set, and whether the groups are the same.

    With ``--rounds N`` bare and the grouping (each round into a new store) run N times in
    turn, in the opposite order each round, and the medians are compared: whichever ran
    first in the process paid its warm-up (first calls, the heap growing), which at 2,000
    comments moved the bare figure alone by half."""
    from pipeline.campaigns import grouping
    from pipeline.campaigns.grouping import CAMPAIGN_ESTIMATES

    comments = campaign_comments(DOCKET, size, seed=3)
    rounds = max(1, args.rounds)
    bares: list[float] = []
    measured: list[dict] = []
    dumps: dict[str, list] = {"bounded": [], "every": []}

    def bare_once() -> None:
        if size not in bare_of:
            bares.append(bare_datasketch(comments))

    for n in range(rounds):
        if n % 2 == 0:
            bare_once()
        measured.append(_grouped(folder / f"scaling-{size}-bounded-{n}", args, comments, dumps["bounded"]))
        if n % 2 == 1:
            bare_once()
    bare = bare_of.get(size) or round(statistics.median(bares), 2)
    row = {"comments": size, "bare_cpu_s": bare, **({"bare_from_earlier_run": True} if size in bare_of else {})}
    if size <= args.every_up_to:
        bounded = grouping.REPRESENTED_AT, grouping.COMPARED_PER_GROUP
        grouping.REPRESENTED_AT, grouping.COMPARED_PER_GROUP = 2.0, 10**9
        try:
            every = _grouped(folder / f"scaling-{size}-every", args, comments, dumps["every"])
        finally:
            grouping.REPRESENTED_AT, grouping.COMPARED_PER_GROUP = bounded
    for name, runs in (("bounded", measured), ("every", [every] if dumps["every"] else [])):
        if not runs:
            continue
        cpu = statistics.median(r["cpu"] for r in runs)
        io = runs[0]["io"]
        row[name] = {"cpu_s": round(cpu, 2), "wall_s": round(statistics.median(r["wall"] for r in runs), 2),
                     "to_bare": round(cpu / row["bare_cpu_s"], 2),
                     "estimates": io.get(CAMPAIGN_ESTIMATES, 0),
                     "jaccard_checks": io.get(CAMPAIGN_CANDIDATES, 0),
                     "precision": runs[0]["precision"], "recall": runs[0]["recall"]}
    if rounds > 1:
        row["rounds"] = {"bare_cpu_s": [round(b, 3) for b in bares],
                         "bounded_cpu_s": [round(r["cpu"], 3) for r in measured],
                         "to_bare_each": [round(r["cpu"] / b, 2) for r, b in zip(measured, bares, strict=True)]
                         if bares else [],
                         "same_groups_each_round": all(d == dumps["bounded"][0] for d in dumps["bounded"])}
    if dumps["every"]:
        row["same_groups_as_every_member"] = dumps["every"][0] == dumps["bounded"][0]
    # Members, groups, ids, representatives and added sentences in one digest: two runs (say
    # this code's and an earlier release's, ``--same-as``) grouped alike when theirs are equal.
    row["groups_digest"] = hashlib.sha256(repr(dumps["bounded"][0]).encode()).hexdigest()[:16]
    if size in earlier:
        row["same_groups_as_earlier"] = earlier[size] == row["groups_digest"]
    set_runtime(None)
    return row


def _grouped(folder: Path, args, comments, dumps: list) -> dict:
    """One grouping from scratch into a new store: its CPU and wall seconds, counters and
    pair scores; its groups appended to ``dumps``."""
    rt = runtime_in(folder, args)
    seed_store(rt, DOCKET, comments)
    cpu = time.process_time()
    seconds, _, io = timed_grouping(rt)
    cpu = time.process_time() - cpu
    precision, recall = pair_scores({c.key: c.campaign for c in comments}, membership())
    dumps.append(groups_dump())
    rt.close()
    return {"cpu": cpu, "wall": seconds, "io": io, "precision": round(precision, 4), "recall": round(recall, 4)}


def _earlier(path: str, figure: str) -> dict:
    """comments -> ``figure``, from the JSON lines an earlier ``--scaling`` run printed."""
    found = {}
    for line in Path(path).read_text().splitlines():
        if line.startswith("{"):
            row = json.loads(line)
            found[row["comments"]] = row.get(figure)
    return found


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality", type=int, default=3000)
    parser.add_argument("--items", type=int, default=20000)
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--threshold", type=float, default=0.5)
    parser.add_argument("--state-url", default="")
    parser.add_argument("--scaling", default="",
                        help="comma-separated sizes: grouping from scratch against bare datasketch, alone")
    parser.add_argument("--every-up-to", type=int, default=2000,
                        help="with --scaling: also compare with every member up to this size")
    parser.add_argument("--rounds", type=int, default=1,
                        help="with --scaling: bare and the grouping this many times each, in turn "
                             "(the opposite order each round); their medians are compared")
    parser.add_argument("--same-as", default="",
                        help="with --scaling: an earlier run's output, whose groups each size must equal")
    parser.add_argument("--bare-from", default="",
                        help="with --scaling: take bare datasketch's CPU from an earlier run's output "
                             "(the same texts and code; at 200,000 it takes over ten minutes)")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-campaigns-"))
    if args.scaling:
        earlier = _earlier(args.same_as, "groups_digest") if args.same_as else {}
        bare_of = _earlier(args.bare_from, "bare_cpu_s") if args.bare_from else {}
        try:
            for size in [int(n) for n in args.scaling.split(",") if n]:
                print(json.dumps(scaling(folder, args, size, earlier, bare_of)), flush=True)
        finally:
            shutil.rmtree(folder, ignore_errors=True)
        return 0
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
