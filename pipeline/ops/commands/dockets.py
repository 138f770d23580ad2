"""The dockets and their seals: ``docketeer dockets``, ``seal``, ``unseal`` and ``forget``.

The store's modules are imported inside the commands: they bring peewee and psycopg2 (and
``forget`` the stages), which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

from pipeline.clock import eastern_date, eastern_instant
from pipeline.errors import DocketeerError
from pipeline.ops.commands.command_line import command, minute, open_runtime, table, whole_number

HEADER = ["docket", "agency", "closes", "comments", "submissions", "detailed", "extracted", "indexed", "retry",
          "watermark", "last pull", "sealed", "partial", "failed"]
MAX_PER_PAGE = 10_000
ALL_CHUNK = 1_000  # --all reads and prints this many dockets at a time


def register(commands) -> None:
    dockets = commands.add_parser("dockets", help="known dockets, a page at a time: counts, items waiting to retry, "
                                                  "watermark, last pull, seal, stages left partial or failed")
    dockets.add_argument("--page", type=whole_number(), default=1, help="which page (default 1)")
    dockets.add_argument("--per-page", type=whole_number(MAX_PER_PAGE), default=50,
                         help="dockets a page (default 50)")
    dockets.add_argument("--all", action="store_true", help="every docket, printed as it is read")
    seal = commands.add_parser("seal", help="seal a docket by hand (every stage skips it)")
    seal.add_argument("docket")
    seal.add_argument("--reason", default="", help="why; kept with the seal")
    unseal = commands.add_parser("unseal", help="unseal a docket (its stages run again)")
    unseal.add_argument("docket")
    forget = commands.add_parser("forget", help="take a docket out of the known set (--purge: delete its data too)")
    forget.add_argument("docket")
    forget.add_argument("--purge", action="store_true",
                        help="delete its rows, index chunks and blobs (attachments shared with other dockets stay)")
    forget.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")


@command
def cmd_dockets(args) -> int:
    from pipeline.reading import reports

    index_db = open_runtime().existing_index_db()
    total = reports.docket_count()
    if args.all:
        _print_all(total, index_db)
        return 0
    last = reports.page_count(total, args.per_page)
    if args.page > last:
        raise DocketeerError(f"no page {args.page:,}: {total:,} dockets make {last:,} pages of {args.per_page:,}")
    rows = _page_rows(reports.docket_page((args.page - 1) * args.per_page, args.per_page), index_db)
    if not rows:
        print("no dockets known yet")
        return 0
    print(table(rows, HEADER))
    more = f": --page {args.page + 1} for more" if args.page < last else ""
    print(f"page {args.page:,} of {last:,} ({total:,} dockets){more}")
    return 0


def _print_all(total: int, index_db) -> None:
    """Every docket, a chunk read and printed at a time (never all of them in memory): each
    chunk's columns are as wide as its own cells."""
    from pipeline.reading import reports

    if not total:
        print("no dockets known yet")
        return
    page, first = reports.docket_page(0, ALL_CHUNK), True
    while page:
        lines = table(_page_rows(page, index_db), HEADER).split("\n")
        print("\n".join(lines if first else lines[1:]), flush=True)
        page, first = reports.docket_page(0, ALL_CHUNK, after=page[-1].id), False
    print(f"{total:,} dockets")


def _page_rows(page: list, index_db) -> list[list]:
    """The rows of a page of dockets, read for its dockets only: a grouped statement per
    column family, whatever the page's size or the store's."""
    from pipeline.reading import reports
    from pipeline.store import docket_failures

    ids = [d.id for d in page]
    if not ids:
        return []
    progress, waiting = reports.comment_progress(ids), reports.retry_waiting(ids)
    represented = reports.submissions(dockets=ids)
    failures = docket_failures.by_docket(ids)
    partial = reports.partial_stages(ids)
    indexed = index_db.indexed_counts("comments", ids) if index_db else None
    return [[*_docket_row(d, progress.get(d.id, {}), waiting.get(d.id, 0),
                          "-" if indexed is None else indexed.get(d.id, 0), represented.get(d.id, (0, 0))[1]),
             _partial_cell(partial.get(d.id, [])), _failed_cell(failures.get(d.id, []))]
            for d in page]


def _partial_cell(stages: list[str]) -> str:
    """'backfill, fetch': the stages whose last run over the docket a spent budget stopped
    (not done; the next run continues them), '-' when none."""
    return ", ".join(stages) if stages else "-"


def _failed_cell(failures: list) -> str:
    """'topics: ValueError: ... (3 runs since 2026-12-01 01:00 EST)': the stages that failed for
    the docket at their last run, and why ('-' when none)."""
    if not failures:
        return "-"
    return "; ".join(f"{f.stage}: {f.reason}" + (f" ({f.attempts} runs since {minute(f.first_failed_at)})"
                                                 if f.attempts > 1 else f" ({minute(f.failed_at)})")
                     for f in failures)


def _docket_row(d, counts: dict[str, int], waiting: int, indexed: int | str, submissions: int) -> list:
    """``submissions``: what the docket's comment records represent (a mass-mail campaign's
    record stands for its ``duplicateComments`` too): regulations.gov's "comments received";
    ``indexed``: its comments with an index row ('-' without an index DB)."""
    from pipeline.reading.reports import progress_cell

    return [
        d.id, d.agency or "", eastern_date(d.comment_end_date), counts.get("comments", 0), submissions,
        progress_cell(counts, "detailed"), progress_cell(counts, "extracted"), indexed,
        _retry_cell(waiting, d.retry_due_at), eastern_instant(d.pull_watermark, seconds=True),
        eastern_instant(d.last_pull_at),
        _seal_cell(d),
    ]


def _seal_cell(d) -> str:
    from pipeline.store.dockets import out_of_set

    seal = f"{eastern_instant(d.sealed_at)} ({d.seal_reason})" if d.sealed_at else "open"
    out = out_of_set(d)  # forgotten or not found: kept, but no run schedules it
    return f"{seal}, {out}" if out else seal


def _retry_cell(waiting: int, due_at: str | None) -> str:
    """'3 @2026-12-01 01:00 EST': items waiting to retry and when the pipeline next tries."""
    if not waiting and not due_at:
        return "-"
    # due_at is the docket row's copy, the one the targets act on: '?' means nothing will
    # wake the docket for its waiting items (the copy was not refreshed).
    return f"{waiting} @{minute(due_at) if due_at else '?'}"


@command
def cmd_seal(args) -> int:
    from pipeline.store import dockets

    open_runtime()
    before = dockets.require_docket(args.docket)
    if before.sealed_at:
        print(f"{args.docket}: already sealed at {eastern_instant(before.sealed_at)} ({before.seal_reason})")
        return 0
    # The operator's why is kept with the seal ("manual: <text>").
    sealed_at = dockets.seal(args.docket, "manual", why=args.reason)
    print(f"{args.docket}: sealed at {eastern_instant(sealed_at)}" + (f" ({args.reason})" if args.reason else ""))
    return 0


@command
def cmd_unseal(args) -> int:
    from pipeline.store import dockets

    open_runtime()
    was = dockets.unseal(args.docket)
    print(f"{args.docket}: " + ("unsealed; its stages run again on the next run" if was else "was not sealed"))
    return 0


@command
def cmd_forget(args) -> int:
    from pipeline.ops.forget import forget

    report = forget(open_runtime(), args.docket, purge_data=args.purge, dry_run=args.dry_run)
    print("\n".join(report.lines()))
    return 0
