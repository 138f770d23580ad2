"""The dockets and their seals: ``docketeer dockets``, ``seal``, ``unseal`` and ``forget``.

The store's modules are imported inside the commands: they bring peewee and psycopg2 (and
``forget`` the stages), which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

from pipeline.clock import eastern_date, eastern_instant
from pipeline.ops.commands.command_line import command, minute, open_runtime, table


def register(commands) -> None:
    commands.add_parser("dockets", help="known dockets: counts, items waiting to retry, watermark, last pull, seal, "
                                         "stages left partial or failed")
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
    from pipeline.store import docket_failures

    rt = open_runtime()
    progress, waiting = reports.comment_progress(), reports.retry_waiting()
    represented = reports.submissions()
    failures = docket_failures.by_docket()
    partial = reports.partial_stages()
    index_db = rt.existing_index_db()
    rows = [[*_docket_row(d, progress.get(d.id, {}), waiting.get(d.id, 0), index_db,
                          represented.get(d.id, (0, 0))[1]),
             _partial_cell(partial.get(d.id, [])), _failed_cell(failures.get(d.id, []))]
            for d in reports.all_dockets()]
    header = ["docket", "agency", "closes", "comments", "submissions", "detailed", "extracted", "indexed", "retry",
              "watermark", "last pull", "sealed", "partial", "failed"]
    print(table(rows, header) if rows else "no dockets known yet")
    return 0


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


def _docket_row(d, counts: dict[str, int], waiting: int, index_db, submissions: int) -> list:
    """``submissions``: what the docket's comment records represent (a mass-mail campaign's
    record stands for its ``duplicateComments`` too): regulations.gov's "comments received"."""
    from pipeline.reading.reports import progress_cell

    # One query per docket: the comments collection's index rows.
    indexed = len(index_db.state_for_docket("comments", d.id)) if index_db else "-"
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
