"""Topic maps of real dockets: the CDO pilot's three form-letter dockets and NIST-2021-0006,
read from ``../shared/realdata/mirror`` (comments listed from the mirror: the pilot's
dockets have no docket JSON), taken through IndexAll with the MiniLM embedder, and each map
printed: per topic its label (distinctive terms), comments and submissions (a campaign's
copies counted), and two representatives (comment id and the sentence that says most of
the topic's terms), for docs/BENCHMARKS.md.

    .venv/bin/python -m benchmarks topics_real [--work DIR] [--embedder minilm] [--json]

``--work`` keeps the store (a second run maps again from it, without embedding anything:
TopicsAll --force); without it a temporary folder is used and removed.
"""

from __future__ import annotations

import argparse
import json
import shutil
import tempfile
import time
from pathlib import Path

from benchmarks.common import ROOT, Store, build

REALDATA = ROOT.parent / "shared" / "realdata"
DOCKETS = ("EPA-HQ-OA-2018-0259", "EPA-HQ-OPP-2015-0481", "USDA-2020-0009", "NIST-2021-0006")


def topic_maps(dockets) -> dict:
    """Each docket's map as printed: its message, comments, and topics."""
    from pipeline.reading import topics as shown_maps
    from pipeline.store.models import Item

    maps = {}
    for docket in dockets:
        mapped = shown_maps.map_of(docket)
        comments = Item.select().where((Item.docket == docket) & (Item.kind == "comment")).count()
        maps[docket] = {"comments": comments, "message": mapped.message if mapped else "no map", "topics": [
            {"id": t.id, "label": t.label, "comments": t.comments, "submissions": t.submissions,
             "representatives": [{"item": r["item"], "sentence": r.get("sentence") or r["text"][:300]}
                                 for r in t.representatives[:2]]}
            for t in shown_maps.topics_of(docket)]}
    return maps


def printed(maps: dict) -> str:
    lines = []
    for docket, found in maps.items():
        lines.append(f"{docket}: {found['comments']} comments, {len(found['topics'])} topic(s)"
                     + (f" ({found['message']})" if found["message"] else ""))
        for t in found["topics"]:
            lines.append(f"  {t['id'].rsplit(':', 1)[-1]} [{t['label']}] comments {t['comments']}, "
                         f"submissions {t['submissions']}")
            for r in t["representatives"]:
                lines.append(f"    {r['item']}: {r['sentence']}")
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="benchmarks topics_real", description=__doc__.split("\n\n")[0])
    parser.add_argument("--work", type=Path, default=None, help="store folder (kept); default: a temporary one")
    parser.add_argument("--embedder", default="minilm", choices=("minilm", "hashing"))
    parser.add_argument("--json", action="store_true", help="print the maps as JSON")
    args = parser.parse_args(argv)
    if not (REALDATA / "mirror").is_dir():
        print(f"benchmarks topics_real: {REALDATA}/mirror is absent")
        return 2
    from pipeline.tasks import IndexAll, TopicsAll

    work = args.work or Path(tempfile.mkdtemp(prefix="topics-real-"))
    try:
        store = Store(work / "data", dockets=list(DOCKETS), source="mirror", list_source="mirror",
                      mirror_url=str(REALDATA / "mirror"), embedder=args.embedder, topics="true")
        with store:
            started = time.perf_counter()
            ok = build(IndexAll())
            indexed_s = time.perf_counter() - started
            started = time.perf_counter()
            ok = build(TopicsAll(force=True)) and ok  # mapped again, timed alone
            mapped_s = time.perf_counter() - started
            maps = topic_maps(DOCKETS)
        if args.json:
            print(json.dumps(maps, indent=1))
        else:
            print(printed(maps))
            print(f"\nIndexAll {indexed_s:.0f} s; the four maps made again (TopicsAll --force) in {mapped_s:.1f} s"
                  f" ({args.embedder}); {'ok' if ok else 'A RUN FAILED'}")
        return 0 if ok else 1
    finally:
        if args.work is None:
            shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    import sys

    sys.exit(main(sys.argv[1:]))
