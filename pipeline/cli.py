"""``docketeer``: the admin command. Questions about the store, seals, search and settings.

Every subcommand prints plain text; unknown ids and bad arguments give one clear line on
stderr and a non-zero exit (2; ``verify`` exits 1 when a check fails).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from pipeline.errors import DocketeerError

COMMANDS: dict[str, Callable] = {}
NOT_DONE = ("pending", "stale")  # rows whose stage has not (re)done the item yet


def command(func: Callable) -> Callable:
    COMMANDS[func.__name__.removeprefix("cmd_").replace("_", "-")] = func
    return func


class UnknownItem(DocketeerError):
    pass


_opened: list = []  # runtimes this command used; main() closes them on the way out


def _runtime():
    from pipeline.runtime import get_runtime

    runtime = get_runtime()
    _opened.append(runtime)
    return runtime


def _index_db_if_any(rt):
    """The index DB when one exists; None rather than creating an embedded one to answer."""
    if rt.settings.index_url or (rt.data_dir / "index-pg").is_dir():
        return rt.index_db()
    return None


def _table(rows: list[list], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


def parse_duration(text: str) -> timedelta:
    """'90s', '30m', '1h', '2d' -> timedelta (argparse type: a bad value exits 2 with one line)."""
    match = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration like 30m, 1h or 2d: {text!r}")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match.group(2)]
    return timedelta(**{unit: int(match.group(1))})


# --- settings -----------------------------------------------------------------------------------


@command
def cmd_config(args) -> int:
    from pipeline.config import load_settings

    rows = [[name, value, origin] for name, value, origin in load_settings().masked()]
    print(_table(rows, ["setting", "value", "from"]))
    return 0


# --- dockets and seals --------------------------------------------------------------------------


def comment_progress() -> dict[str, dict[str, int]]:
    """docket -> comments / detailed / extracted, for comments only, in one grouped query.

    comments: listed by fetch; detailed: backfill reached a state other than failed;
    extracted: extract wrote a combined.md (any outcome, including failed attachments).
    """
    from peewee import fn

    from pipeline.store.models import Item, ItemState

    query = (
        ItemState.select(ItemState.docket, ItemState.stage, ItemState.state, fn.COUNT(ItemState.item))
        .join(Item, on=(Item.key == ItemState.item))
        .where((Item.kind == "comment") & ItemState.stage.in_(["fetch", "backfill", "extract"]))
        .group_by(ItemState.docket, ItemState.stage, ItemState.state)
        .tuples()
    )
    progress: dict[str, dict[str, int]] = {}
    column = {"fetch": "comments", "backfill": "detailed", "extract": "extracted"}
    for docket, stage, state, n in query:
        if state in NOT_DONE or (stage == "backfill" and state == "failed"):
            continue
        counts = progress.setdefault(docket, {})
        counts[column[stage]] = counts.get(column[stage], 0) + n
    return progress


@command
def cmd_dockets(args) -> int:
    from pipeline.store.models import Docket

    rt = _runtime()
    progress = comment_progress()
    index_db = _index_db_if_any(rt)
    rows = []
    for d in Docket.select().order_by(Docket.id):
        counts = progress.get(d.id, {})
        # One query per docket: the comments collection's index rows.
        indexed = len(index_db.state_for_docket("comments", d.id)) if index_db else "-"
        rows.append([
            d.id, d.agency or "", d.comment_end_date or "", counts.get("comments", 0),
            counts.get("detailed", 0), counts.get("extracted", 0), indexed, d.pull_watermark or "",
            (d.last_pull_at or "")[:19], f"{d.sealed_at[:19]} ({d.seal_reason})" if d.sealed_at else "open",
        ])
    header = ["docket", "agency", "closes", "comments", "detailed", "extracted", "indexed",
              "watermark", "last pull", "sealed"]
    print(_table(rows, header) if rows else "no dockets known yet")
    return 0


@command
def cmd_seal(args) -> int:
    from pipeline.store import dockets
    from pipeline.store.models import Docket

    _runtime()
    before = dockets.require_docket(args.docket)
    if before.sealed_at:
        print(f"{args.docket}: already sealed at {before.sealed_at} ({before.seal_reason})")
        return 0
    sealed_at = dockets.seal(args.docket, "manual")
    if args.reason:  # the operator's why, kept with the seal ("manual: <text>")
        Docket.update(seal_reason=f"manual: {args.reason}").where(Docket.id == args.docket).execute()
    print(f"{args.docket}: sealed at {sealed_at}" + (f" ({args.reason})" if args.reason else ""))
    return 0


@command
def cmd_unseal(args) -> int:
    from pipeline.store import dockets

    _runtime()
    was = dockets.unseal(args.docket)
    print(f"{args.docket}: " + ("unsealed; its stages run again on the next run" if was else "was not sealed"))
    return 0


# --- item states --------------------------------------------------------------------------------


@command
def cmd_stats(args) -> int:
    from peewee import fn

    from pipeline.store import dockets
    from pipeline.store.models import ItemState

    _runtime()
    query = ItemState.select(ItemState.docket, ItemState.stage, ItemState.state, fn.COUNT(ItemState.item))
    if args.docket:
        dockets.require_docket(args.docket)
        query = query.where(ItemState.docket == args.docket)
    query = query.group_by(ItemState.docket, ItemState.stage, ItemState.state).order_by(
        ItemState.docket, ItemState.stage, ItemState.state)
    rows = [list(row) for row in query.tuples()]
    print(_table(rows, ["docket", "stage", "state", "count"]) if rows else "no items yet")
    return 0


def _index_row(rt, item) -> list[str]:
    from pipeline.stages.index import COLLECTIONS

    index_db = _index_db_if_any(rt)
    if index_db is None:
        return ["index", "-", "no index DB yet", ""]
    state = index_db.state_for_docket(COLLECTIONS.get(item.kind, "comments"), item.docket).get(item.key)
    if state is None:
        return ["index", "-", "not indexed", ""]
    label = "indexed" if state.fingerprint else "stale"
    return ["index", label, f"{state.chunk_count} chunk(s), {state.embedder_id}",
            state.indexed_at.isoformat()[:19]]


@command
def cmd_explain(args) -> int:
    from pipeline.store.models import Attachment, Item, ItemState

    rt = _runtime()
    item = Item.get_or_none(Item.key == args.comment)
    if item is None:
        raise UnknownItem(f"unknown comment {args.comment!r}")
    print(f"{item.kind} {item.key}  docket {item.docket}  posted {item.posted_date or '-'}  "
          f"modified {item.last_modified or '-'}" + ("  WITHDRAWN" if item.withdrawn else ""))
    if item.title:
        print(f"title: {item.title}")
    order = {"fetch": 0, "backfill": 1, "extract": 2}
    rows = sorted(ItemState.select().where(ItemState.item == item.key), key=lambda r: order.get(r.stage, 9))
    stages = [[r.stage, r.state, r.reason or "", r.written_at[:19]] for r in rows]
    print(_table([*stages, _index_row(rt, item)], ["stage", "state", "reason", "at"]))
    _print_attachments(item.key, Attachment, ItemState)
    return 0


def _print_attachments(key: str, Attachment, ItemState) -> None:  # noqa: N803 - model classes
    files = list(Attachment.select().where(Attachment.item == key).order_by(Attachment.ordinal, Attachment.filename))
    states = {(r.stage, r.item): r for r in ItemState.select().where(
        ItemState.stage.in_(["backfill.file", "extract.file"]) & ItemState.item.startswith(f"{key}/"))}
    names = sorted({f.filename for f in files} | {item.split("/", 1)[1] for _, item in states})
    if not names:
        print("attachments: none")
        return
    by_name = {f.filename: f for f in files}
    rows = []
    for name in names:
        row, fetched, extracted = by_name.get(name), states.get(("backfill.file", f"{key}/{name}")), \
            states.get(("extract.file", f"{key}/{name}"))
        rows.append([name, row.format if row else "", row.size if row else "",
                     (row.sha256 or "")[:12] if row else "", fetched.state if fetched else "-",
                     extracted.state if extracted else "-",
                     (extracted.reason if extracted and extracted.reason else
                      fetched.reason if fetched and fetched.reason else "")])
    print("attachments:")
    print(_table(rows, ["file", "format", "bytes", "sha256", "download", "extract", "reason"]))


@command
def cmd_pending(args) -> int:
    from pipeline.clock import iso, parse_iso, utcnow
    from pipeline.store import item_states

    _runtime()
    now = utcnow()
    cutoff = iso(now - args.older_than) if args.older_than else None
    rows = [[r.stage, r.item, r.docket, r.reason or "", r.written_at[:19],
             _age(now - parse_iso(r.written_at))] for r in item_states.all_pending(cutoff)]
    if not rows:
        print("no pending rows" + (f" older than {_age(args.older_than)}" if args.older_than else ""))
        return 0
    print(_table(rows, ["stage", "item", "docket", "reason", "since", "age"]))
    print(f"{len(rows)} pending row(s): a process died mid-item; the next run of the stage repairs them")
    return 0


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"


# --- search, verify, snapshot ------------------------------------------------------------------


@command
def cmd_search(args) -> int:
    from pipeline.index.search import format_hits, search
    from pipeline.stages.index import embedder_from

    runtime = _runtime()
    if args.docket:
        from pipeline.store import dockets

        dockets.require_docket(args.docket)
    hits = search(runtime.index_db(), embedder_from(runtime.settings), args.query,
                  collection=args.collection, docket=args.docket, k=args.k)
    print(format_hits(hits).rstrip() if hits else "no results")
    return 0


@command
def cmd_verify(args) -> int:
    from pipeline import verify

    rt = _runtime()
    report = verify.run_checks(rt, full=args.full, sample=args.sample, pending_age=args.pending_older_than,
                               index_db=_index_db_if_any(rt))
    status, inventory = verify.write_report(report, Path(args.out) if args.out else rt.data_dir)
    print("\n".join(report.lines()))
    print(f"wrote {status} and {inventory}")
    print("PASS" if report.passed else "FAIL")
    return 0 if report.passed else 1


@command
def cmd_snapshot(args) -> int:
    from pipeline.snapshot import take_snapshot

    snap = take_snapshot(_runtime(), Path(args.dest))
    print("\n".join(snap.lines()))
    print(f"snapshot taken at {snap.taken_at} in {snap.dest} (blobs are not copied: back up the blob folder)")
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docketeer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("config", help="effective settings and where each came from (secrets masked)")
    sub.add_parser("dockets", help="known dockets: counts, watermark, last pull, seal")
    seal = sub.add_parser("seal", help="seal a docket by hand (every stage skips it)")
    seal.add_argument("docket")
    seal.add_argument("--reason", default="", help="why; kept with the seal")
    unseal = sub.add_parser("unseal", help="unseal a docket (its stages run again)")
    unseal.add_argument("docket")
    stats = sub.add_parser("stats", help="items per docket, stage and state (from state rows alone)")
    stats.add_argument("--docket")
    explain = sub.add_parser("explain", help="one comment's journey through every stage")
    explain.add_argument("comment", metavar="COMMENT_ID")
    pending = sub.add_parser("pending", help="rows left pending by a dead process, oldest first")
    pending.add_argument("--older-than", type=parse_duration, metavar="DURATION",
                         help="only rows pending longer than this (30m, 1h, 2d)")
    search = sub.add_parser("search", help="semantic search over the index")
    search.add_argument("query")
    search.add_argument("--docket")
    search.add_argument("--collection", choices=["comments", "documents"])
    search.add_argument("-k", type=int, default=10)
    verify = sub.add_parser("verify", help="check the store against itself; PASS or FAIL")
    verify.add_argument("--full", action="store_true", help="hash every blob, not a sample")
    verify.add_argument("--sample", type=int, default=100, help="blobs hashed without --full")
    verify.add_argument("--pending-older-than", type=parse_duration, default=timedelta(hours=1),
                        metavar="DURATION", help="pending rows older than this fail (default 1h)")
    verify.add_argument("--out", help="folder for status.json and inventory.csv (default: data_dir)")
    snapshot = sub.add_parser("snapshot", help="consistent copy of the state DB and a dump of the index DB")
    snapshot.add_argument("dest", metavar="DEST", help="a new or empty folder")
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    try:
        return COMMANDS[args.command](args)
    except DocketeerError as exc:
        print(f"docketeer: {exc}", file=sys.stderr)
        return 2
    except json.JSONDecodeError as exc:  # a corrupt JSON column: say which, no traceback wall
        print(f"docketeer: unreadable stored JSON: {exc}", file=sys.stderr)
        return 2
    except BrokenPipeError:  # `docketeer stats | head`: the reader left, nothing is wrong
        sys.stderr.close()
        return 0
    finally:
        _close_runtime()


def _close_runtime() -> None:
    # Stops the embedded index server if this command started it (and nobody else uses it).
    while _opened:
        _opened.pop().close()


if __name__ == "__main__":
    sys.exit(main())
