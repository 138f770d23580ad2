"""Organisations: grouping quality on a planted corpus, the cost of resolving many comments,
and the work a few new comments cost.

    .venv/bin/python -m benchmarks organisations [--quality-organisations 1500] [--comments 100000]
        [--dockets 10] [--organisations 6000] [--new 40] [--state-url ...]

1. Quality: three dockets of planted comments (``devtools/organisation_corpus.py``: names
   written in capitals, with "The", legal suffixes, "Assn.", "&", typos, "on behalf of",
   paired and bare acronyms, in titles and signature blocks; people with no organisation),
   resolved by the stage's function; pairwise precision and recall of the grouping, and the
   confusion cases (a found organisation holding two planted ones; a planted one split).
2. Cost: ``--comments`` comments over ``--dockets`` dockets, written with the distinct name
   strings the corpus gives (about 20,000 for the defaults), resolved docket by docket from
   nothing (timed, with the load average before and after).
3. Incremental: ``--new`` more comments in one docket: the run resolves exactly those,
   writes no other comment's rows, and a second run resolves nothing.

Results are printed as one JSON object for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import tempfile
import time
from dataclasses import replace
from pathlib import Path

from benchmarks.common import open_runtime
from devtools.campaign_corpus import pair_scores
from devtools.organisation_corpus import organisation_comments, seed_store, truth
from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.engine.stage import StageContext
from pipeline.organisations.stage import STAGE, resolve_docket
from pipeline.runtime import set_runtime
from pipeline.store import dockets
from pipeline.store.models import ItemState, Organisation, OrganisationMember

CONFUSIONS_SHOWN = 10


def runtime_in(folder: Path, args):
    return open_runtime({"DOCKETEER_DATA_DIR": str(folder), "DOCKETEER_STATE_URL": args.state_url,
                         "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing"})


def resolve_all(docket_ids: list[str], rt, run_id: str) -> tuple[float, dict, dict]:
    counts: dict[str, int] = {}
    with counters.measure() as io:
        started = time.perf_counter()
        for docket_id in docket_ids:
            result = resolve_docket(StageContext(runtime=rt, run_id=run_id), dockets.require_docket(docket_id))
            for outcome, n in result.counts.items():
                counts[outcome] = counts.get(outcome, 0) + n
        seconds = time.perf_counter() - started
    return seconds, counts, io


def membership() -> dict[str, str]:
    """item -> its first organisation (the planted comments name one each)."""
    return dict(OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation)
                .where(OrganisationMember.position == 0).tuples())


def confusions(planted: dict[str, str | None], found: dict[str, str]) -> dict:
    holds: dict[str, set] = {}
    spread: dict[str, set] = {}
    for item, org in found.items():
        holds.setdefault(org, set()).add(planted[item])
    for item, name in planted.items():
        if name is not None:
            spread.setdefault(name, set()).add(found.get(item))
    names = dict(Organisation.select(Organisation.id, Organisation.name).tuples())
    merged = [{"found": names.get(org, org), "planted": sorted(str(n) for n in held)}
              for org, held in sorted(holds.items()) if len(held) > 1]
    split = [{"planted": name, "found": sorted(names.get(o, "(none)") if o else "(none)" for o in orgs)}
             for name, orgs in sorted(spread.items()) if len(orgs) > 1]
    return {"merged": len(merged), "split": len(split), "merged_cases": merged[:CONFUSIONS_SHOWN],
            "split_cases": split[:CONFUSIONS_SHOWN]}


def quality(folder: Path, args) -> dict:
    rt = runtime_in(folder, args)
    docket_ids = [f"QUAL-2026-{n:04d}" for n in range(1, 4)]
    planted = organisation_comments(docket_ids, args.quality_organisations, args.quality_comments, seed=11)
    seed_store(planted)
    seconds, counts, _ = resolve_all(docket_ids, rt, "quality")
    found = membership()
    precision, recall = pair_scores(truth(planted), found)
    several = OrganisationMember.select().where(OrganisationMember.position > 0).count()
    result = {"comments": len(planted), "planted_organisations": len({c.organisation for c in planted} - {None}),
              "comments_split_wrongly": several,
              "found_organisations": len(set(found.values())), **counts,
              "precision": round(precision, 4), "recall": round(recall, 4), "seconds": round(seconds, 2),
              **confusions(truth(planted), found)}
    rt.close()
    return result


def splitting(folder: Path, args) -> dict:
    """Fields naming two or three planted associations, and single names written like lists:
    how many are split into exactly the organisations they name, and kept whole."""
    import random

    from devtools.organisation_corpus import (
        LIST_LIKE_NAMES,
        PlantedComment,
        multi_organisation_fields,
        planted_names,
    )
    from pipeline.organisations.names import normalise

    rt = runtime_in(folder, args)
    docket = "SPLIT-2026-0001"
    rng = random.Random(14)
    fields = multi_organisation_fields(rng, planted_names(rng, 400), args.multi)
    comments = [PlantedComment(f"{docket}-{n:05d}", docket, "Jo Ng", field, "Comment", "", None)
                for n, (field, _) in enumerate(fields, start=1)]
    whole = [PlantedComment(f"{docket}-{n:05d}", docket, "Jo Ng", name, "Comment", "", name)
             for n, name in enumerate(LIST_LIKE_NAMES, start=len(comments) + 1)]
    seed_store(comments + whole)
    resolve_all([docket], rt, "splitting")
    names = dict(Organisation.select(Organisation.id, Organisation.normalised).tuples())
    found: dict[str, list[str]] = {}
    for item, org in (OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation)
                      .order_by(OrganisationMember.item, OrganisationMember.position).tuples()):
        found.setdefault(item, []).append(names.get(org, org))
    right = [c.key for c, (_, parts) in zip(comments, fields, strict=True)
             if found.get(c.key) == [normalise(p) for p in parts]]
    wrong = [{"field": f, "found": found.get(c.key)} for c, (f, _) in zip(comments, fields, strict=True)
             if c.key not in right]
    kept = [c.key for c in whole if len(found.get(c.key, [])) == 1]
    rt.close()
    return {"multi_fields": len(comments), "split_right": len(right), "list_like_names": len(whole),
            "kept_whole": len(kept), "wrong_cases": wrong[:CONFUSIONS_SHOWN],
            "split_list_like": [c.organization for c in whole if c.key not in kept]}


def cost(folder: Path, args) -> dict:
    rt = runtime_in(folder, args)
    docket_ids = [f"COST-2026-{n:04d}" for n in range(1, args.dockets + 1)]
    planted = organisation_comments(docket_ids, args.organisations, args.comments // args.dockets, seed=12)
    seed_store(planted)
    distinct = len({c.organization for c in planted if c.organization} | {c.title for c in planted})
    load_before = os.getloadavg()
    seconds, counts, io = resolve_all(docket_ids, rt, "full")
    load_after = os.getloadavg()
    result = {"comments": len(planted), "dockets": args.dockets, "distinct_name_strings":
              len({c.organization for c in planted if c.organization}), "distinct_fields_and_titles": distinct,
              "organisations_found": Organisation.select().count(), **counts, "seconds": round(seconds, 1),
              "comments_per_second": round(len(planted) / seconds), "load_average_before": load_before,
              "load_average_after": load_after}

    # The new comments: keys past the docket's last, seeded and resolved alone.
    last = max(int(c.key.rsplit("-", 1)[1]) for c in planted if c.docket == docket_ids[0])
    fresh = [replace(c, key=f"{docket_ids[0]}-{last + n:05d}") for n, c in
             enumerate(organisation_comments(docket_ids[:1], args.organisations, args.new, seed=13), start=1)]
    members_before = sorted(OrganisationMember.select().tuples())
    seed_store(fresh)
    new_s, new_counts, new_io = resolve_all(docket_ids, rt, "new")
    rewritten = ItemState.select().where((ItemState.stage == STAGE) & (ItemState.run_id == "new")).count()
    members_after = sorted(OrganisationMember.select().tuples())
    again_s, again_counts, again_io = resolve_all(docket_ids, rt, "again")
    result["incremental"] = {
        "new": len(fresh), **new_counts, "seconds": round(new_s, 3), "state_rows_written": rewritten,
        "earlier_members_unchanged": set(members_before) <= set(members_after),
        "members_added": len(members_after) - len(members_before),
        "second_run_counts": again_counts, "second_run_rows_written": again_io.get(ROWS_WRITTEN, 0)}

    # The alias file names one spelling (renamed into an organisation of its own): the comments
    # written with that spelling, in any docket, are redone, and no other.
    from peewee import fn

    variant, expected = (OrganisationMember.select(OrganisationMember.variant, fn.COUNT(OrganisationMember.item))
                         .group_by(OrganisationMember.variant).order_by(fn.COUNT(OrganisationMember.item).desc(),
                                                                        OrganisationMember.variant).tuples().first())
    (rt.settings.data_path / "organisations.yaml").write_text(
        f"organisations:\n  - name: Renamed Organisation\n    variants: [{json.dumps(variant)}]\n")
    alias_s, alias_counts, _ = resolve_all(docket_ids, rt, "alias")
    redone = ItemState.select().where((ItemState.stage == STAGE) & (ItemState.run_id == "alias")).count()
    result["alias_edit"] = {"spelling": variant, "comments_written_with_it": expected, "redone": redone,
                            **alias_counts, "seconds": round(alias_s, 2)}
    rt.close()
    set_runtime(None)
    return result


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quality-organisations", type=int, default=1500)
    parser.add_argument("--quality-comments", type=int, default=3000, help="per docket")
    parser.add_argument("--comments", type=int, default=100_000)
    parser.add_argument("--dockets", type=int, default=10)
    parser.add_argument("--organisations", type=int, default=6000)
    parser.add_argument("--new", type=int, default=40)
    parser.add_argument("--multi", type=int, default=200, help="fields naming several organisations")
    parser.add_argument("--state-url", default="")
    args = parser.parse_args(argv)
    folder = Path(tempfile.mkdtemp(prefix="bench-organisations-"))
    try:
        results = {"quality": quality(folder / "quality", args), "splitting": splitting(folder / "splitting", args),
                   "cost": cost(folder / "cost", args)}
    finally:
        shutil.rmtree(folder, ignore_errors=True)
    print(json.dumps(results, indent=2))
    q, c, sp = results["quality"], results["cost"], results["splitting"]
    inc = c["incremental"]
    ok = (q["precision"] >= 0.95 and q["recall"] >= 0.95 and c["seconds"] < 300 and q["merged"] == 0
          and sp["split_right"] == sp["multi_fields"] and sp["kept_whole"] == sp["list_like_names"]
          and c["alias_edit"]["redone"] == c["alias_edit"]["comments_written_with_it"]
          and inc["state_rows_written"] == args.new and inc["earlier_members_unchanged"]
          and inc["second_run_counts"] == {} and inc["second_run_rows_written"] == 0)
    print("PASS" if ok else "FAIL")
    return 0 if ok else 1
