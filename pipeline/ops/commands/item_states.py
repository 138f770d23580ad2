"""The items' states: ``docketeer stats``, ``explain`` and ``pending``.

The store's and the engine's modules are imported inside the functions: they bring peewee,
psycopg2 and the stages, which ``docketeer --help`` and a bad argument do without."""

from __future__ import annotations

from datetime import timedelta

from pipeline.clock import eastern_instant, iso, parse_iso, utcnow
from pipeline.ops.commands.command_line import (
    UnknownItem,
    command,
    minute,
    open_runtime,
    parse_duration,
    table,
)


def register(commands) -> None:
    stats = commands.add_parser("stats", help="items per docket, stage and state (from state rows alone), with the next retry")
    stats.add_argument("--docket")
    explain = commands.add_parser("explain", help="one comment's journey through every stage, with retries and failure kinds")
    explain.add_argument("comment", metavar="COMMENT_ID")
    pending = commands.add_parser("pending", help="rows left pending by a dead process, oldest first")
    pending.add_argument("--older-than", type=parse_duration, metavar="DURATION",
                         help="only rows pending longer than this (30m, 1h, 2d)")


@command
def cmd_stats(args) -> int:
    from pipeline.reading import reports
    from pipeline.store import dockets

    open_runtime()
    if args.docket:
        dockets.require_docket(args.docket)
    rows = [[c.docket, c.stage, c.state, c.count, minute(c.next_attempt_at) if c.next_attempt_at else ""]
            for c in reports.state_counts(args.docket)]
    # "next attempt": for retry rows, the earliest of the (docket, stage)'s waiting items.
    print(table(rows, ["docket", "stage", "state", "count", "next attempt"]) if rows else "no items yet")
    _print_stage_failures(args.docket)
    return 0


def _print_stage_failures(docket: str | None) -> None:
    """The docket stages that failed as a whole at their last run (no item to blame), why,
    and since when: the next run tries them again."""
    from pipeline.store import docket_failures

    failures = docket_failures.current([docket] if docket else None)
    if not failures:
        return
    rows = [[f.docket, f.stage, f.attempts, minute(f.first_failed_at), minute(f.failed_at), f.reason]
            for f in failures]
    print("\ndocket stages that failed (no marker; the next run tries again):")
    print(table(rows, ["docket", "stage", "failed runs", "since", "last", "reason"]))


def _index_row(rt, item, when) -> list[str]:
    from pipeline.reading.search import COLLECTIONS

    index_db = rt.existing_index_db()
    if index_db is None:
        return _no_failure_row("index", "-", "", "no index DB yet")
    state = index_db.state_for_docket(COLLECTIONS.get(item.kind, "comments"), item.docket).get(item.key)
    if state is None:
        return _no_failure_row("index", "-", "", "not indexed")
    label = "indexed" if state.fingerprint else "stale"
    return _no_failure_row("index", label, when(state.indexed_at),
                           f"{state.chunk_count} chunk(s), {state.embedder_id}")


EXPLAIN_HEADER = ["stage", "state", "failure", "attempts", "first failed", "next attempt", "at", "reason"]


def _no_failure_row(stage: str, state: str, at: str, reason: str) -> list[str]:
    """An explain row whose failure kind and retry columns are empty."""
    return [stage, state, "", "", "", "", at, reason]


def _stage_row(row, when=eastern_instant, read_by_ocr=frozenset()) -> list:
    """A state row as explain shows it; one ``read_by_ocr`` names (an extract row left
    ocr_needed whose scans OCR has read) shows as ``ocr_done``, as ``docketeer stats`` counts it."""
    from pipeline.failures import PERMANENT, RETRY, TRANSIENT
    from pipeline.reading.reports import OCR_DONE

    # detail holds other facts on success rows (chars=... pages=...): show it only as a kind.
    kind = row.detail if row.detail in (PERMANENT, TRANSIENT) else ""
    retrying = row.state == RETRY  # the retry columns are cleared on leaving retry anyway
    return [row.stage, OCR_DONE if (row.stage, row.item) in read_by_ocr else row.state, kind, row.attempts if retrying and row.attempts else "",
            when(row.first_failed_at) if retrying else "",
            when(row.next_attempt_at) if retrying else "",
            when(row.written_at), row.reason or ""]


def comment_and_states(key: str):
    """(runtime, the stored item or None, its state rows in every stage) of a comment
    ``explain`` and ``show`` are asked about; UnknownItem when neither knows it."""
    from pipeline.engine import registry
    from pipeline.reading import reports

    rt = open_runtime()
    item = reports.find_item(key)
    rows = reports.stage_rows(key, registry.names())
    if item is None and not rows:
        raise UnknownItem(f"unknown comment {key!r}")
    return rt, item, rows


@command
def cmd_explain(args) -> int:
    from pipeline.reading import reports

    rt, item, rows = comment_and_states(args.comment)
    files = reports.file_rows_of(args.comment)
    if item is None:  # listed, but its record never arrived: only its state rows know it
        print(f"{args.comment}  docket {rows[0].docket}  not stored: its fetch did not succeed")
        read = reports.read_by_ocr(comment=args.comment)
        print(table([_stage_row(r, read_by_ocr=read) for r in rows] + _ocr_rows(files), EXPLAIN_HEADER))
        return 0
    print(f"{item.kind} {item.key}  docket {item.docket}  posted {eastern_instant(item.posted_date) or '-'}  "
          f"modified {eastern_instant(item.last_modified) or '-'}" + ("  WITHDRAWN" if item.withdrawn else ""))
    if item.title:
        print(f"title: {item.title}")
    for line in who(item):
        print(line)
    if kept := kept_attributes(item):
        print(f"record: {kept}")
    print(table(stage_table(rt, item, rows, files), EXPLAIN_HEADER))
    _print_attachments(item, files, next((r for r in rows if r.stage == "extract"), None),
                       reports.read_by_ocr(comment=item.key))
    return 0


def stage_table(rt, item, rows: list, files: dict, when=eastern_instant) -> list[list]:
    """The rows of explain's stage table (``EXPLAIN_HEADER``): the item's own state rows, one
    'ocr' row from its files' OCR rows, its index row, in pipeline order; ``when`` writes the
    instants (Eastern, as people read them)."""
    from pipeline.reading import reports

    read = reports.read_by_ocr(comment=item.key)
    stages = [_stage_row(r, when, read) for r in rows] + _ocr_rows(files, when)
    return _in_pipeline_order([*stages, _index_row(rt, item, when)])


def who(item) -> list[str]:
    """Who sent it, as the comment page and the export show it: the record's submitter and
    organisation fields, then each organisation the organisations stage resolved it to (its
    canonical name; as written, and where from, when they differ)."""
    from pipeline.reading import reports

    lines = [f"submitter: {item.submitter}"] if item.submitter else []
    if item.organization:
        lines.append(f"organisation: {item.organization}")
    for _id, name, written, source in reports.resolved_organisations(item.key):
        lines.append(f"organisation resolved: {name}" + (f" (written \u201c{written}\u201d)" if written != name else "")
                     + (f", from its {source}" if source != "organization" else ""))
    return lines


def kept_attributes(item) -> str:
    """'duplicates 15851  subtype Mass Mail Campaign  ...': the record's kept attributes it gives."""
    from pipeline.reading import reports

    return "  ".join(f"{label} {value}" for label, value in reports.kept_attributes(item))


def _in_pipeline_order(stages: list[list]) -> list[list]:
    from pipeline.engine import registry

    order = registry.names()
    return sorted(stages, key=lambda r: order.index(r[0]) if r[0] in order else len(order))


def _ocr_rows(files: dict, when=eastern_instant) -> list[list]:
    """One 'ocr' line for the item from its files' OCR rows (OCR keeps no item row), or
    why there is none while scans wait."""
    ocr = [r for (stage, _), r in files.items() if stage == "ocr"]
    waiting = [r for (stage, _), r in files.items() if stage == "extract.file" and r.state == "ocr_needed"]
    if not ocr:
        return [_no_failure_row("ocr", "-", "", f"{len(waiting)} scan(s) not OCRed yet")] if waiting else []
    states = sorted({r.state for r in ocr}, key=lambda st: _SEVERITY.get(st, 0), reverse=True)
    counts = ", ".join(f"{sum(r.state == st for r in ocr)} {st}" for st in states)
    worst = max(ocr, key=lambda r: (_SEVERITY.get(r.state, 0), r.written_at))
    row = _stage_row(worst, when)
    row[0], row[6] = "ocr", when(max(r.written_at for r in ocr))
    row[7] = f"{len(ocr)} scan(s): {counts}" + (f"; {worst.reason}" if worst.reason else "")
    return [row]


_SEVERITY = {"failed": 3, "retry": 2, "pending": 1}


def _print_attachments(item, states: dict, extracted, read_by_ocr) -> None:
    """The summary line ('9 attachments: 2 read, 7 waiting for the mirror'), then one row per
    declared file, from the record (ordinal, title, format, declared size, URL) and its states
    (a scan OCR read stands as OCR says, while its text is the one stored)."""
    from pipeline.reading import reports

    key = item.key
    files = reports.attachments_of(key)
    by_name = {f.filename: f for f in files}
    print(attachments_line(item, files, states, extracted))
    names = [f.filename for f in files] + sorted({name.split("/", 1)[1] for _, name in states} - set(by_name))
    if not names:
        return
    rows = [_attachment_row(name, by_name.get(name), {stage: states.get((stage, f"{key}/{name}"))
                                                      for stage in ("backfill.file", "extract.file", "ocr")},
                            ("extract.file", f"{key}/{name}") in read_by_ocr)
            for name in names]
    print(table(rows, ["file", "#", "title", "format", "declared", "bytes", "sha256", "download", "extract",
                       "ocr", "attempts", "next attempt", "reason", "url"]))


def attachments_line(item, files: list, states: dict, extracted) -> str:
    """'9 attachments: 2 read, 7 waiting for the mirror' (the comment page's line too)."""
    from pipeline.reading import reports

    key = item.key
    standings = [reports.file_standing(f, states.get(("backfill.file", f"{key}/{f.filename}")),
                                       states.get(("extract.file", f"{key}/{f.filename}")),
                                       reports.ocr_in_force(states.get(("ocr", f"{key}/{f.filename}")), extracted))
                 for f in files]
    return reports.attachments_summary(reports.attachment_count(item, files), standings)


def _attachment_row(name: str, row, by_stage: dict, read_by_ocr: bool) -> list:
    """A file's row: what the record declares of it, what is stored of it, its state in each
    stage (a scan OCR has read: ``ocr_done`` in extract's column), its retry, the reason of the
    last stage that gave one, where it comes from."""
    from pipeline.reading.reports import OCR_DONE

    def state(stage: str) -> str:
        if stage == "extract.file" and read_by_ocr:
            return OCR_DONE
        return by_stage[stage].state if by_stage[stage] else "-"

    def value(name: str):
        got = getattr(row, name) if row is not None else None
        return "" if got is None else got

    retrying = next((r for r in by_stage.values() if r and r.state == "retry"), None)
    reasons = [r.reason for r in by_stage.values() if r and r.reason]
    return [name, value("ordinal"), value("title"), value("format"), value("declared_size"), value("size"),
            str(value("sha256"))[:12], state("backfill.file"), state("extract.file"),
            state("ocr"), retrying.attempts or "" if retrying else "",
            eastern_instant(retrying.next_attempt_at) if retrying else "", reasons[-1] if reasons else "",
            value("source_url")]


@command
def cmd_pending(args) -> int:
    from pipeline.engine import runs
    from pipeline.reading import reports
    from pipeline.store import item_states

    open_runtime()
    now = utcnow()
    cutoff = iso(now - args.older_than) if args.older_than else None
    pending = item_states.all_pending(cutoff)
    if not pending:
        print("no pending rows" + (f" older than {_age(args.older_than)}" if args.older_than else ""))
        return 0
    run_rows, leased = runs.by_run_id([r.run_id for r in pending if r.run_id]), reports.leased_dockets(iso(now))
    causes = [_pending_cause(run_rows.get(r.run_id), r.docket in leased) for r in pending]
    rows = [[r.stage, r.item, r.docket, r.reason or "", eastern_instant(r.written_at),
             _age(now - parse_iso(r.written_at)), cause] for r, cause in zip(pending, causes, strict=True)]
    print(table(rows, ["stage", "item", "docket", "reason", "since", "age", "run"]))
    counts = ", ".join(f"{causes.count(c)} {c}" for c in dict.fromkeys(causes))
    print(f"{len(rows)} pending row(s) ({counts}): {_PENDING_ADVICE}")
    return 0


_PENDING_ADVICE = "the next run of the stage repairs those not running"


def _pending_cause(run, leased: bool) -> str:
    """Why a row is still pending, from the run that wrote it (the run table knows how it
    ended) and whether a run holds the docket now."""
    if run is None or run.finished_at is None:
        return "running" if leased else "process died"
    if run.budget_spent:
        return "budget stop"
    return "run ended unclean" if not run.clean else "run ended"


def _age(delta: timedelta) -> str:
    seconds = int(delta.total_seconds())
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if seconds >= size:
            return f"{seconds // size}{unit}"
    return f"{seconds}s"

