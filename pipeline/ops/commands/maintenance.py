"""The store's upkeep: ``docketeer verify``, ``snapshot`` and ``restore``.

``pipeline.ops.verify`` and ``.snapshot`` are imported inside the commands: they bring the
stores and the stages, which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

from datetime import timedelta
from pathlib import Path

from pipeline.clock import eastern_instant
from pipeline.ops.commands.command_line import command, open_runtime, parse_duration


def register(commands) -> None:
    verify = commands.add_parser("verify", help="check the store against itself; PASS or FAIL")
    verify.add_argument("--full", action="store_true", help="hash every blob, not a sample")
    verify.add_argument("--sample", type=int, default=100, help="blobs hashed without --full")
    verify.add_argument("--pending-older-than", type=parse_duration, default=timedelta(hours=1),
                        metavar="DURATION", help="pending rows older than this fail (default 1h)")
    verify.add_argument("--out", help="folder for status.json and inventory.csv (default: data_dir)")
    snapshot = commands.add_parser("snapshot", help="consistent copy of the state DB and a dump of the index DB")
    snapshot.add_argument("dest", metavar="DEST", help="a new or empty folder")
    restore = commands.add_parser("restore", help="load a snapshot into a data folder without a store, then verify it; "
                                                   "exit 0 restored (blobs still to put back: said so), "
                                                   "1 a check failed, 2 refused")
    restore.add_argument("snapshot", metavar="SNAPSHOT", help="the folder `docketeer snapshot` wrote")


@command
def cmd_verify(args) -> int:
    from pipeline.ops import verify

    rt = open_runtime()
    report = verify.run_checks(rt, full=args.full, sample=args.sample, pending_age=args.pending_older_than,
                               index_db=rt.existing_index_db())
    status, inventory = verify.write_report(report, Path(args.out) if args.out else rt.data_dir)
    print("\n".join(report.lines()))
    print(f"wrote {status} and {inventory}")
    print("PASS" if report.passed else "FAIL")
    return 0 if report.passed else 1


@command
def cmd_snapshot(args) -> int:
    from pipeline.ops.snapshot import take_snapshot

    snap = take_snapshot(open_runtime(), Path(args.dest))
    print("\n".join(snap.lines()))
    print(f"snapshot taken at {eastern_instant(snap.taken_at)} in {snap.dest} (blobs are not copied: back up the blob folder)")
    return 0


@command
def cmd_restore(args) -> int:
    from pipeline.config import load_settings
    from pipeline.ops import verify
    from pipeline.ops.snapshot import restore_snapshot

    restored = restore_snapshot(load_settings(), Path(args.snapshot))
    print("\n".join(restored.lines()))
    rt = open_runtime()  # the restored store, checked as `docketeer verify` checks it
    report, blobs_missing = verify.check_restored(rt)
    print("\n".join(report.lines()))
    if not report.passed:
        print("FAIL")
        return 1
    blobs = rt.settings.blob_url or rt.settings.derived_places()["blob_url"]
    if blobs_missing:  # not a failure: the snapshot never held them, putting them back is the next step
        print("state restored")
        print(f"blobs missing: put the blob folder back at {blobs} (or point blob_url at it), "
              "then run docketeer verify")
        return 0
    print(f"state restored; the blobs at {blobs} are checked with it")
    print("PASS")
    return 0
