"""``docketeer``: the admin command. Questions about the store, seals, search and settings.

Every subcommand prints plain text; unknown ids and bad arguments give one clear line on
stderr and a non-zero exit.
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable

from pipeline.errors import DocketeerError

COMMANDS: dict[str, Callable] = {}


def command(func: Callable) -> Callable:
    COMMANDS[func.__name__.removeprefix("cmd_").replace("_", "-")] = func
    return func


def _runtime():
    from pipeline.runtime import get_runtime

    return get_runtime()


def _table(rows: list[list[str]], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


@command
def cmd_config(args) -> int:
    from pipeline.config import load_settings

    rows = [[name, value, origin] for name, value, origin in load_settings().masked()]
    print(_table(rows, ["setting", "value", "from"]))
    return 0


@command
def cmd_dockets(args) -> int:
    from pipeline.store import dockets
    from pipeline.store.models import Docket

    _runtime()
    rows = []
    for d in Docket.select().order_by(Docket.id):
        counts = dockets.state_counts(d.id)
        total = lambda stage: sum(counts.get(stage, {}).values())  # noqa: E731
        rows.append([
            d.id, d.agency or "", d.comment_end_date or "", total("fetch"), total("backfill"),
            total("extract"), d.pull_watermark or "", (d.last_pull_at or "")[:19],
            f"{d.sealed_at[:19]} ({d.seal_reason})" if d.sealed_at else "open",
        ])
    header = ["docket", "agency", "closes", "comments", "detailed", "extracted", "watermark",
              "last pull", "sealed"]
    print(_table(rows, header) if rows else "no dockets known yet")
    return 0


@command
def cmd_seal(args) -> int:
    from pipeline.store import dockets

    _runtime()
    sealed_at = dockets.seal(args.docket, "manual")
    print(f"{args.docket}: sealed at {sealed_at}" + (f" ({args.reason})" if args.reason else ""))
    return 0


@command
def cmd_unseal(args) -> int:
    from pipeline.store import dockets

    _runtime()
    was = dockets.unseal(args.docket)
    print(f"{args.docket}: " + ("unsealed" if was else "was not sealed"))
    return 0


@command
def cmd_stats(args) -> int:
    from pipeline.store import dockets

    _runtime()
    ids = [args.docket] if args.docket else dockets.all_docket_ids()
    if args.docket:
        dockets.require_docket(args.docket)
    rows = []
    for docket_id in ids:
        for stage, states in sorted(dockets.state_counts(docket_id).items()):
            for state, n in sorted(states.items()):
                rows.append([docket_id, stage, state, n])
    print(_table(rows, ["docket", "stage", "state", "count"]) if rows else "no items yet")
    return 0


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
    print(format_hits(hits) if hits else "no results")
    runtime.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="docketeer", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    sub.add_parser("config", help="effective settings and where each came from (secrets masked)")
    sub.add_parser("dockets", help="known dockets: counts, watermark, last pull, seal")
    seal = sub.add_parser("seal", help="seal a docket by hand")
    seal.add_argument("docket")
    seal.add_argument("--reason", default="", help="a note printed with the seal")
    unseal = sub.add_parser("unseal", help="unseal a docket (its stages run again)")
    unseal.add_argument("docket")
    stats = sub.add_parser("stats", help="items per docket, stage and state")
    stats.add_argument("--docket")
    search = sub.add_parser("search", help="semantic search over the index")
    search.add_argument("query")
    search.add_argument("--docket")
    search.add_argument("--collection", choices=["comments", "documents"])
    search.add_argument("-k", type=int, default=10)
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


if __name__ == "__main__":
    sys.exit(main())
