"""Listing and diffing one big mirror docket: ``python -m benchmarks mirrorlist [--comments N]``.

What fetch from the mirror does before any GET: walk the docket's folder (a LIST on S3),
classify every key, compare each object's size and version with the stored rows, and
record the new ones. The docket is a local folder of N tiny comment files (made once under
``--root`` and reused); the state DB is SQLite. Three passes: the first (every object new,
all recorded), a rerun with nothing changed, and a rerun after one file changed. Wall time
per pass and the process's peak resident memory are printed as a Markdown table row.
"""

from __future__ import annotations

import argparse
import resource
import tempfile
import time
from pathlib import Path

from devtools.mirror_layout import DocketFolders
from pipeline.sources.mirror import LocalMirror
from pipeline.sources.mirror_listing import diff_listing
from pipeline.store import mirror_objects
from pipeline.store.db import open_state_db
from pipeline.store.models import database

DOCKET = "EPA-HQ-OAR-2025-0001"


def make_docket(root: Path, comments: int) -> None:
    """The docket folder with ``comments`` comment files of a few bytes (kept if complete)."""
    folders = DocketFolders.new(root, "EPA", DOCKET)
    folder = folders.comments
    if folder.is_dir() and sum(1 for _ in folder.iterdir()) == comments:
        return
    folders.create_folders()
    for n in range(comments):
        folders.comment_file(f"{DOCKET}-{n + 2:06d}").write_bytes(b"{}")


def one_pass(mirror: LocalMirror, now: str) -> tuple[float, int, int, float]:
    """(seconds, objects listed, objects new or changed, peak RSS MB by its end) of one
    list + diff + record."""
    started = time.perf_counter()
    listing = mirror.docket_listing(DOCKET, "EPA")
    diff = diff_listing(listing.objects, mirror_objects.stored_objects(DOCKET))
    with database.atomic():
        mirror_objects.record_listed(DOCKET, [*diff.new, *diff.changed], now)
    seconds = time.perf_counter() - started
    return seconds, len(listing.objects), len(diff.new) + len(diff.changed), peak_mb()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=200_000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "docketeer-mirrorlist")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    make_docket(args.root / "mirror", args.comments)
    print(f"docket folder ready in {time.perf_counter() - started:.1f} s ({args.comments:,} comments)")
    with tempfile.TemporaryDirectory() as data:
        open_state_db("", Path(data))
        mirror = LocalMirror(args.root / "mirror")
        baseline = peak_mb()
        first = one_pass(mirror, "2026-12-01T00:00:00Z")
        again = one_pass(mirror, "2026-12-01T01:00:00Z")
        changed = next(iter(sorted((args.root / "mirror").rglob("*-000002.json"))))
        changed.write_bytes(b'{"changed": true}')
        one = one_pass(mirror, "2026-12-01T02:00:00Z")
        changed.write_bytes(b"{}")
        database.close()
    print(f"before the first pass: peak RSS {baseline:.0f} MB (Python, peewee, the state DB)")
    print("| pass | objects listed | new or changed | wall time | peak RSS by its end |")
    print("|---|---|---|---|---|")
    for name, (seconds, listed, fresh, peak) in (("first (all new, recorded)", first), ("rerun, unchanged", again),
                                           ("rerun, one file changed", one)):
        print(f"| {name} | {listed:,} | {fresh:,} | {seconds:.1f} s | {peak:.0f} MB |")
    return 0
