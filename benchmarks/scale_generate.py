"""How fast the scale corpus generator writes: ``python -m benchmarks scale_generate``.

    python -m benchmarks scale_generate [--root DIR] [--sizes 20000,200000] [--attachments 0.1]
        [--profile mass-mail-95] [--workers 2] [--listing 276000] [--listing-folders 20000] [--s3]

For each size, a docket of that many comments (``devtools.scale_corpus``) written text-only,
then with ``--attachments`` of them carrying a file; then a listing of ``--listing`` dockets
as mirror keys, and ``--listing-folders`` dockets written as folders with their records;
with ``--s3``, the listing served as a bucket and its dockets listed as discovery lists them.
Each output is counted after its run (every comment file there, every key listed) and
removed before the next. Beside the figures: the rate at which this file system creates
small files right now, from this process alone (the floor any generator writing a file per
comment stands on), and the CPU seconds of the writer's processes (comments a CPU second:
what the generator costs when the disk and the cores are not shared). Printed as Markdown
table rows for docs/BENCHMARKS.md.
"""

from __future__ import annotations

import argparse
import os
import resource
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from devtools import mirror_layout as layout
from devtools.scale_corpus import PROFILES, listing_name, write_listing, write_scale_docket
from pipeline.sources.mirror import open_mirror

DOCKET = "EPA-HQ-OAR-2026-0001"
BUCKET = "scale-listing"
FLOOR_FILES = 5000


def cpu_seconds() -> float:
    """User and system CPU of this process and of its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def file_floor(root: Path) -> float:
    """Small files (2 KB) this file system creates a second from one process, now."""
    folder = root / "floor"
    folder.mkdir(parents=True, exist_ok=True)
    body = b"x" * 2048
    started = time.perf_counter()
    for n in range(FLOOR_FILES):
        layout.write_file(folder / f"{n}.json", body)
    seconds = time.perf_counter() - started
    shutil.rmtree(folder)
    return FLOOR_FILES / seconds


def docket_row(root: Path, comments: int, share: float, args) -> str:
    out = root / "docket"
    shutil.rmtree(out, ignore_errors=True)
    cpu = cpu_seconds()
    truth = write_scale_docket(out, DOCKET, comments, profile=args.profile, seed=7, attachment_share=share,
                               workers=args.workers)
    cpu = cpu_seconds() - cpu
    folders = layout.DocketFolders.new(out, "EPA", DOCKET)
    written = sum(1 for _ in os.scandir(folders.comments))
    files = sum(1 for _ in os.scandir(folders.comment_attachments))
    assert written == comments and files == truth.attachments, (written, files, truth.attachments)
    shutil.rmtree(out)
    what = "text only" if not share else f"{share:.0%} with a file ({files:,} files)"
    return (f"| docket, {comments:,} comments, {what} | {truth.seconds:.1f} s | "
            f"{comments / truth.seconds:,.0f} comments/s | {comments / cpu:,.0f} comments/CPU s |")


def listing_row(root: Path, dockets: int, folders: bool) -> str:
    out = root / "listing"
    shutil.rmtree(out, ignore_errors=True)
    cpu, started = cpu_seconds(), time.perf_counter()
    ids = write_listing(out, dockets, folders=folders)
    seconds, cpu = time.perf_counter() - started, cpu_seconds() - cpu
    keys = sum(1 for _ in (out / listing_name(dockets)).open())
    assert len(set(ids)) == dockets and keys == 2 * dockets, (len(set(ids)), keys)
    if folders:
        listed = sum(1 for agency in os.scandir(layout.raw_data(out)) for _ in os.scandir(agency.path))
        assert listed == dockets, listed
    shutil.rmtree(out)
    what = "keys and folders with their records" if folders else "keys"
    return (f"| listing, {dockets:,} dockets, {what} | {seconds:.1f} s | {dockets / seconds:,.0f} dockets/s "
            f"| {dockets / cpu:,.0f} dockets/CPU s |")


def s3_row(root: Path, dockets: int) -> str:
    """The listing served as a bucket by ``benchmarks.mirror_rig`` (its own process, every key
    with the body ``{}``) and listed by discovery's lister (``S3Mirror.list_dockets``: a
    delimited LIST of the agencies, then of each agency's dockets, 1,000 a page)."""
    out = root / "listing"
    shutil.rmtree(out, ignore_errors=True)
    ids = write_listing(out, dockets)
    os.environ.update({"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"})
    started = time.perf_counter()
    rig = subprocess.Popen([sys.executable, "-m", "benchmarks.mirror_rig", "--bucket", BUCKET, "--keys-from",
                            str(out / listing_name(dockets))], stdout=subprocess.PIPE, text=True)
    try:
        url = rig.stdout.readline().split()[-1]
        filled = time.perf_counter() - started
        mirror = open_mirror(f"s3://{BUCKET}", s3_endpoint_url=url, unsigned=False)
        started = time.perf_counter()
        refs = mirror.list_dockets()
        seconds = time.perf_counter() - started
    finally:
        rig.terminate()
        rig.wait(timeout=60)
        shutil.rmtree(out)
    assert sorted(ref.docket_id for ref in refs) == sorted(ids), len(refs)
    return (f"| listing, {dockets:,} dockets as a bucket (the rig, filled in {filled:.0f} s): "
            f"`list_dockets` over S3 | {seconds:.1f} s | {dockets / seconds:,.0f} dockets/s | |")


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks scale_generate", description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(tempfile.gettempdir()) / "docketeer-scale-generate")
    parser.add_argument("--sizes", default="20000,200000", help="comments per docket, comma-separated")
    parser.add_argument("--attachments", type=float, default=0.1, help="the share with a file (0: skip those runs)")
    parser.add_argument("--profile", choices=sorted(PROFILES), default="mass-mail-95")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--listing", type=int, default=276_000)
    parser.add_argument("--listing-folders", type=int, default=20_000, help="0: skip")
    parser.add_argument("--s3", action="store_true",
                        help="also serve the listing as a bucket (mirror_rig) and list its dockets over S3")
    args = parser.parse_args(argv)
    sizes = [int(n) for n in args.sizes.split(",") if n.strip()]
    args.root.mkdir(parents=True, exist_ok=True)
    print(f"root {args.root} ({os.cpu_count()} cores, load {os.getloadavg()[0]:.1f}); this file system creates "
          f"{file_floor(args.root):,.0f} small files/s from one process now")
    print("| what | wall time | rate | rate per CPU second |")
    print("|---|---|---|---|")
    for share in (0.0, args.attachments) if args.attachments else (0.0,):
        for comments in sizes:
            print(docket_row(args.root, comments, share, args), flush=True)
    print(listing_row(args.root, args.listing, folders=False), flush=True)
    if args.listing_folders:
        print(listing_row(args.root, args.listing_folders, folders=True), flush=True)
    if args.s3:
        print(s3_row(args.root, args.listing), flush=True)
    return 0
