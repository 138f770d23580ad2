"""Listing and diffing one big mirror docket: ``python -m benchmarks mirrorlist [--comments N] [--s3]``.

What fetch from the mirror does before any GET: walk the docket's folder (a LIST on S3),
compare each page of objects' sizes and versions with the stored rows of the page's keys,
and record the new ones (fetch files them by item to read first; here they are recorded). The docket is a local folder of N tiny comment files (made once under
``--root`` and reused), or with ``--s3`` a moto bucket of the same keys (``mirror_rig``:
its own process, filled through moto's backend, answering listings from a sorted key index
as S3 pages in O(page); ``--moto-paging``: moto's own paging, which walks every key for
each page) listed over HTTP, 1,000 keys a LIST; the state DB is SQLite. The S3 server's
CPU is reported beside this process's. Three passes: the first (every object new,
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

import psutil

from benchmarks.common import ROOT
from devtools.mirror_layout import DocketFolders
from pipeline.fetch import mirror as fetch_mirror
from pipeline.fetch.mirror_listing import ListingTally, diff_page
from pipeline.fetch.walk import batches
from pipeline.sources.mirror import LocalMirror, open_mirror
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


def one_pass(mirror, now: str, server_cpu) -> tuple[float, int, int, float, float, float]:
    """(seconds, objects listed, objects new or changed, peak RSS MB by its end, CPU
    seconds of this process, CPU seconds of the S3 server) of one list + diff + record."""
    started, cpu, server = time.perf_counter(), time.process_time(), server_cpu()
    tally = ListingTally(mirror_objects.count_listed(DOCKET))
    for page in batches(mirror.docket_entries(DOCKET, "EPA"), fetch_mirror.PAGE):
        # As fetch compares its walk: a page against the stored rows of the page's keys.
        diff = diff_page(page, mirror_objects.stored_of([entry.key for entry in page]))
        tally.add(len(page), diff)
        with database.atomic():
            mirror_objects.record_listed(DOCKET, diff.fresh(), now)
    seconds = time.perf_counter() - started
    return (seconds, tally.listed, tally.new + tally.changed, peak_mb(),
            time.process_time() - cpu, server_cpu() - server)


@contextmanager
def _folder(root: Path, comments: int, moto_paging: bool = False):
    make_docket(root / "mirror", comments)
    changed = root / "mirror" / _first_comment_key()

    def change() -> None:
        changed.write_bytes(b'{"changed": true}')

    try:
        yield LocalMirror(root / "mirror"), change, lambda: 0.0
    finally:
        changed.write_bytes(b"{}")


@contextmanager
def _bucket(root: Path, comments: int, moto_paging: bool = False):
    """The same keys in a moto bucket (its own process), read signed with dummy keys; the
    rig answers listings from a sorted key index unless ``moto_paging`` (see mirror_rig)."""
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    folders = DocketFolders.new(Path("."), "EPA", DOCKET)
    keys = root / "keys.txt"
    root.mkdir(parents=True, exist_ok=True)
    keys.write_text("\n".join(folders.comment_file(f"{DOCKET}-{n + 2:06d}").as_posix() for n in range(comments)))
    rig = subprocess.Popen([sys.executable, "-m", "benchmarks.mirror_rig", "--bucket", BUCKET, "--keys-from",
                            str(keys), *(["--moto-paging"] if moto_paging else [])],
                           stdout=subprocess.PIPE, text=True, cwd=ROOT)
    rig_process = psutil.Process(rig.pid)
    try:
        url = rig.stdout.readline().split()[-1]
        mirror = open_mirror(f"s3://{BUCKET}", s3_endpoint_url=url, unsigned=False)

        def change() -> None:
            mirror.client.put_object(Bucket=BUCKET, Key=_first_comment_key(), Body=b'{"changed": true}')

        yield mirror, change, lambda: sum(rig_process.cpu_times()[:2])
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
    parser.add_argument("--moto-paging", action="store_true",
                        help="with --s3: moto's own paging (every key walked per page), not the rig's sorted index")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    with (_bucket if args.s3 else _folder)(args.root, args.comments, args.moto_paging) as (mirror, change, server):
        print(f"docket ready in {time.perf_counter() - started:.1f} s ({args.comments:,} comments, {mirror!r})")
        with tempfile.TemporaryDirectory() as data:
            open_state_db("", Path(data))
            baseline = peak_mb()
            first = one_pass(mirror, "2026-12-01T00:00:00Z", server)
            again = one_pass(mirror, "2026-12-01T01:00:00Z", server)
            change()
            one = one_pass(mirror, "2026-12-01T02:00:00Z", server)
            database.close()
    print(f"before the first pass: peak RSS {baseline:.0f} MB (Python, peewee, the state DB)")
    print("| pass | objects listed | new or changed | wall time | CPU of this process | CPU of the S3 server "
          "| peak RSS by its end |")
    print("|---|---|---|---|---|---|---|")
    for name, (seconds, listed, fresh, peak, cpu, server_cpu) in (
            ("first (all new, recorded)", first), ("rerun, unchanged", again), ("rerun, one file changed", one)):
        print(f"| {name} | {listed:,} | {fresh:,} | {seconds:.1f} s | {cpu:.1f} s | {server_cpu:.1f} s "
              f"| {peak:.0f} MB |")
    return 0
