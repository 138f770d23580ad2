"""Organisations resolved from the real share, each with the line it was read from, judged.

    .venv/bin/python -m benchmarks organisations_real [--realdata ../shared/realdata]
        [--verdicts benchmarks/organisations_real_verdicts.csv] [--markdown]

Every comment of ``REALDATA/mirror/raw-data`` (the CDO dockets, NIST-2021-0006 and the smaller
ones) is written to a new SQLite state DB as backfill leaves it (``devtools.real_organisations``)
and resolved by the stage's own function, docket by docket. Each organisation a comment was
given is listed with where it came from (the record's field, its title or a signature line)
and that line. Each is judged by reading: the verdicts file (``item, organisation, verdict,
note``; ``verdict`` is ``right`` or ``wrong``) holds the reading, so the precision is computed,
never typed in. A resolved organisation with no verdict yet is listed as unjudged and the run
exits 1, so a change that finds a new one is read before it is counted.

Prints one JSON object (the precision, the counts by source, every row), or with
``--markdown`` the table for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import csv
import json
import tempfile
from pathlib import Path

from benchmarks.common import open_runtime
from devtools.organisation_corpus import seed_store
from devtools.real_organisations import real_comments
from pipeline.engine.stage import StageContext
from pipeline.organisations.stage import resolve_docket
from pipeline.store import dockets
from pipeline.store.models import Organisation, OrganisationMember

ROOT = Path(__file__).resolve().parents[1]
VERDICTS = Path(__file__).with_name("organisations_real_verdicts.csv")
SOURCES = {"organization": "field", "title": "title", "signature": "signature"}


def resolved_rows(realdata: Path) -> tuple[int, list[dict]]:
    """(comments read, one row per organisation given to a comment) from a fresh store."""
    comments = real_comments(realdata)
    with tempfile.TemporaryDirectory(prefix="orgs-real-") as folder:
        rt = open_runtime({"DOCKETEER_DATA_DIR": folder, "DOCKETEER_STATE_URL": "",
                           "DOCKETEER_DISCOVER": "none", "DOCKETEER_EMBEDDER": "hashing"})
        try:
            seed_store(comments)
            for docket_id in sorted({c.docket for c in comments}):
                resolve_docket(StageContext(runtime=rt, run_id="real"), dockets.require_docket(docket_id))
            names = dict(Organisation.select(Organisation.id, Organisation.name).tuples())
            rows = [{"docket": m.docket, "item": m.item, "position": m.position,
                     "organisation": names.get(m.organisation, m.organisation), "written": m.written,
                     "source": SOURCES.get(m.source, m.source), "evidence": m.evidence}
                    for m in OrganisationMember.select().order_by(OrganisationMember.item, OrganisationMember.position)]
        finally:
            rt.close()
    return len(comments), rows


def read_verdicts(path: Path) -> dict[tuple[str, str], tuple[str, str]]:
    """(item, organisation) -> (verdict, note)."""
    if not path.exists():
        return {}
    with path.open(newline="", encoding="utf-8") as f:
        return {(r["item"], r["organisation"]): (r["verdict"].strip(), r.get("note", "").strip())
                for r in csv.DictReader(f)}


def judged(rows: list[dict], verdicts: dict) -> dict:
    for row in rows:
        row["verdict"], row["note"] = verdicts.get((row["item"], row["organisation"]), ("", ""))
    right = sum(1 for r in rows if r["verdict"] == "right")
    wrong = sum(1 for r in rows if r["verdict"] == "wrong")
    by_source: dict[str, dict[str, int]] = {}
    for r in rows:
        entry = by_source.setdefault(r["source"], {"resolved": 0, "right": 0, "wrong": 0})
        entry["resolved"] += 1
        if r["verdict"] in ("right", "wrong"):
            entry[r["verdict"]] += 1
    return {"resolved": len(rows), "right": right, "wrong": wrong,
            "unjudged": [(r["item"], r["organisation"]) for r in rows if r["verdict"] not in ("right", "wrong")],
            "precision": round(right / (right + wrong), 3) if right + wrong else None, "by_source": by_source}


def markdown(rows: list[dict]) -> str:
    lines = ["| docket | comment | organisation | from | evidence (as written) | verdict |",
             "| --- | --- | --- | --- | --- | --- |"]
    for r in rows:
        evidence = " ".join((r["evidence"] or "").split()).replace("|", "\\|")
        verdict = r["verdict"] + (f": {r['note']}" if r["note"] else "")
        lines.append(f"| {r['docket']} | {r['item'].removeprefix(r['docket'] + '-')} | "
                     f"{r['organisation'].replace('|', chr(92) + '|')} | {r['source']} | {evidence} | {verdict} |")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--realdata", type=Path, default=ROOT.parent / "shared" / "realdata")
    parser.add_argument("--verdicts", type=Path, default=VERDICTS)
    parser.add_argument("--markdown", action="store_true", help="the table for docs/BENCHMARKS.md")
    args = parser.parse_args(argv)
    if not (args.realdata / "mirror" / "raw-data").is_dir():
        print(f"organisations_real: no real share at {args.realdata}")
        return 2
    comments, rows = resolved_rows(args.realdata)
    summary = {"comments": comments, **judged(rows, read_verdicts(args.verdicts))}
    if args.markdown:
        print(markdown(rows))
        print(f"\n{summary['right']} right, {summary['wrong']} wrong of {summary['resolved']} resolved "
              f"({len(summary['unjudged'])} unjudged): precision {summary['precision']}")
    else:
        print(json.dumps({**summary, "rows": rows}, indent=1))
    return 1 if summary["unjudged"] else 0
