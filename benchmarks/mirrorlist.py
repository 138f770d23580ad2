"""Listing and diffing one big mirror docket: ``python -m benchmarks mirrorlist [--comments N] [--s3]``.

What fetch from the mirror does before any GET: walk the docket's folder (a LIST on S3),
classify every key, compare each object's size and version with the stored rows, and
record the new ones. The docket is a local folder of N tiny comment files (made once under
``--root`` and reused), or with ``--s3`` a moto bucket of the same keys (``mirror_rig``:
its own process, filled through moto's backend) listed over HTTP, 1,000 keys a LIST; the
state DB is SQLite. Three passes: the first (every object new,
all recorded), a rerun with nothing changed, and a rerun after one file changed. Wall time
per pass and the process's peak resident memory are printed as a Markdown table row.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from contextlib import contextmanager
from pathlib import Path

from benchmarks.common import ROOT
from devtools.mirror_layout import DocketFolders
from pipeline.sources.mirror import LocalMirror, open_mirror
from pipeline.sources.mirror_listing import diff_listing
from pipeline.store import mirror_objects
from pipeline.store.db import open_state_db
from pipeline.store.models import database

DOCKET = "EPA-HQ-OAR-2025-0001"
BUCKET = "mirrorlist-bench"


def make_docket(root: Path, comments: int) -> None:
    """The docket folder with ``comments`` comment files of a few bytes (kept if complete)."""
    folders = DocketFolders.new(root, "EPA", DOCKET)
    folder = folders.comments
    if folder.is_dir() and sum(1 for _ in folder.iterdir()) == comments:
        return
    folders.create_folders()
    for n in range(comments):
        folders.comment_file(f"{DOCKET}-{n + 2:06d}").write_bytes(b"{}")


def one_pass(mirror, now: str) -> tuple[float, int, int, float, float]:
    """(seconds, objects listed, objects new or changed, peak RSS MB by its end, CPU
    seconds of this process) of one list + diff + record."""
    started, cpu = time.perf_counter(), time.process_time()
    listing = mirror.docket_listing(DOCKET, "EPA")
    diff = diff_listing(listing.objects, mirror_objects.stored_objects(DOCKET))
    with database.atomic():
        mirror_objects.record_listed(DOCKET, [*diff.new, *diff.changed], now)
    seconds = time.perf_counter() - started
    return seconds, len(listing.objects), len(diff.new) + len(diff.changed), peak_mb(), time.process_time() - cpu


@contextmanager
def _folder(root: Path, comments: int):
    make_docket(root / "mirror", comments)
    changed = root / "mirror" / _first_comment_key()

    def change() -> None:
        changed.write_bytes(b'{"changed": true}')

    try:
        yield LocalMirror(root / "mirror"), change
    finally:
        changed.write_bytes(b"{}")


@contextmanager
def _bucket(root: Path, comments: int):
    """The same keys in a moto bucket (its own process), read signed with dummy keys."""
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    folders = DocketFolders.new(Path("."), "EPA", DOCKET)
    keys = root / "keys.txt"
    root.mkdir(parents=True, exist_ok=True)
    keys.write_text("\n".join(folders.comment_file(f"{DOCKET}-{n + 2:06d}").as_posix() for n in range(comments)))
    rig = subprocess.Popen([sys.executable, "-m", "benchmarks.mirror_rig", "--bucket", BUCKET, "--keys-from",
                            str(keys)], stdout=subprocess.PIPE, text=True, cwd=ROOT)
    try:
        url = rig.stdout.readline().split()[-1]
        mirror = open_mirror(f"s3://{BUCKET}", s3_endpoint_url=url, unsigned=False)

        def change() -> None:
            mirror.client.put_object(Bucket=BUCKET, Key=_first_comment_key(), Body=b'{"changed": true}')

        yield mirror, change
    finally:
        rig.terminate()
        rig.wait(timeout=30)


def _first_comment_key() -> str:
    return DocketFolders.new(Path("."), "EPA", DOCKET).comment_file(f"{DOCKET}-000002").as_posix()


def peak_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux: KiB


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--comments", type=int, default=200_000)
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "docketeer-mirrorlist")
    parser.add_argument("--s3", action="store_true", help="list a moto bucket of the same keys instead")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with (_bucket if args.s3 else _folder)(args.root, args.comments) as (mirror, change):
        print(f"docket ready in {time.perf_counter() - started:.1f} s ({args.comments:,} comments, {mirror!r})")
        with tempfile.TemporaryDirectory() as data:
            open_state_db("", Path(data))
            baseline = peak_mb()
            first = one_pass(mirror, "2026-12-01T00:00:00Z")
            again = one_pass(mirror, "2026-12-01T01:00:00Z")
            change()
            one = one_pass(mirror, "2026-12-01T02:00:00Z")
            database.close()
    print(f"before the first pass: peak RSS {baseline:.0f} MB (Python, peewee, the state DB)")
    print("| pass | objects listed | new or changed | wall time | CPU of this process | peak RSS by its end |")
    print("|---|---|---|---|---|---|")
    for name, (seconds, listed, fresh, peak, cpu) in (("first (all new, recorded)", first), ("rerun, unchanged", again),
                                           ("rerun, one file changed", one)):
        print(f"| {name} | {listed:,} | {fresh:,} | {seconds:.1f} s | {cpu:.1f} s | {peak:.0f} MB |")
    return 0
