"""``docketeer``: the admin command. Questions about the store, seals, search and settings.

Every subcommand prints plain text; unknown ids and bad arguments give one clear line on
stderr and a non-zero exit (2; ``verify`` exits 1 when a check fails); an unexpected error is
one line and exit 1 (``--debug`` shows its traceback).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from collections.abc import Callable
from datetime import timedelta
from pathlib import Path

from pipeline import installed_version, text_validity
from pipeline.clock import eastern_date, eastern_instant
from pipeline.errors import DocketeerError

COMMANDS: dict[str, Callable] = {}


def command(func: Callable) -> Callable:
    COMMANDS[func.__name__.removeprefix("cmd_").replace("_", "-")] = func
    return func


class UnknownItem(DocketeerError):
    pass


_opened: list = []  # runtimes this command used; main() closes them on the way out


def _runtime():
    from pipeline.runtime import existing_runtime

    # Every subcommand reads (or changes) a store that a run made: none creates one.
    runtime = existing_runtime()
    _opened.append(runtime)
    return runtime


def _table(rows: list[list], header: list[str]) -> str:
    widths = [max(len(str(r[i])) for r in [header, *rows]) for i in range(len(header))]
    lines = ["  ".join(str(c).ljust(w) for c, w in zip(header, widths, strict=True)).rstrip()]
    lines += ["  ".join(str(c).ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows]
    return "\n".join(lines)


MAX_DURATION = timedelta(days=36500)  # a hundred years: anything longer is a typo
MAX_K = 1000


def parse_duration(text: str) -> timedelta:
    """'90s', '30m', '1h', '2d' -> timedelta (argparse type: a bad value exits 2 with one line)."""
    match = re.fullmatch(r"(\d+)([smhd])", text.strip())
    if not match:
        raise argparse.ArgumentTypeError(f"not a duration like 30m, 1h or 2d: {text!r}")
    unit = {"s": "seconds", "m": "minutes", "h": "hours", "d": "days"}[match.group(2)]
    seconds = int(match.group(1)) * int(timedelta(**{unit: 1}).total_seconds())
    if seconds > MAX_DURATION.total_seconds():
        raise argparse.ArgumentTypeError(f"{text!r} is longer than {MAX_DURATION.days} days")
    return timedelta(seconds=seconds)


def parse_day(text: str) -> str:
    """--from / --to: a calendar day, YYYY-MM-DD, 1000-01-01 to 9999-12-31 (argparse type)."""
    from pipeline.reading import search_arguments

    try:
        given = search_arguments.day(text, "day")
    except search_arguments.BadSearch as exc:
        raise argparse.ArgumentTypeError(str(exc).removeprefix("day: ")) from None
    if not given:
        raise argparse.ArgumentTypeError(f"not a date (YYYY-MM-DD): {text!r}")
    return given


def parse_k(text: str) -> int:
    """-k: how many hits, 1 to MAX_K (argparse type)."""
    try:
        k = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a whole number: {text!r}") from None
    if not 1 <= k <= MAX_K:
        raise argparse.ArgumentTypeError(f"give a number from 1 to {MAX_K}, not {k}")
    return k


# --- settings -----------------------------------------------------------------------------------


@command
def cmd_config(args) -> int:
    from pipeline.config import load_settings

    rows = [[name, value, origin] for name, value, origin in load_settings().masked()]
    print(_table(rows, ["setting", "value", "from"]))
    return 0


# --- dockets and seals --------------------------------------------------------------------------


@command
def cmd_dockets(args) -> int:
    from pipeline.reading import reports
    from pipeline.store import docket_failures

    rt = _runtime()
    progress, waiting = reports.comment_progress(), reports.retry_waiting()
    represented = reports.submissions()
    failures = docket_failures.by_docket()
    index_db = rt.existing_index_db()
    rows = [[*_docket_row(d, progress.get(d.id, {}), waiting.get(d.id, 0), index_db,
                          represented.get(d.id, (0, 0))[1]), _failed_cell(failures.get(d.id, []))]
            for d in reports.all_dockets()]
    header = ["docket", "agency", "closes", "comments", "submissions", "detailed", "extracted", "indexed", "retry",
              "watermark", "last pull", "sealed", "failed"]
    print(_table(rows, header) if rows else "no dockets known yet")
    return 0


def _failed_cell(failures: list) -> str:
    """'topics: ValueError: ... (3 runs since 2026-12-01 01:00 EST)': the stages that failed for
    the docket at their last run, and why ('-' when none)."""
    if not failures:
        return "-"
    return "; ".join(f"{f.stage}: {f.reason}" + (f" ({f.attempts} runs since {_minute(f.first_failed_at)})"
                                                 if f.attempts > 1 else f" ({_minute(f.failed_at)})")
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
        _retry_cell(waiting, d.retry_due_at), d.pull_watermark or "", eastern_instant(d.last_pull_at),
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
    return f"{waiting} @{_minute(due_at) if due_at else '?'}"


def _minute(stamp: str) -> str:
    """'2026-12-01T06:00:00.000000Z' -> '2026-12-01 01:00 EST' (as people read instants)."""
    return eastern_instant(stamp)


@command
def cmd_seal(args) -> int:
    from pipeline.store import dockets

    _runtime()
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

    _runtime()
    was = dockets.unseal(args.docket)
    print(f"{args.docket}: " + ("unsealed; its stages run again on the next run" if was else "was not sealed"))
    return 0


@command
def cmd_forget(args) -> int:
    from pipeline.ops.forget import forget

    report = forget(_runtime(), args.docket, purge_data=args.purge, dry_run=args.dry_run)
    print("\n".join(report.lines()))
    return 0


# --- item states --------------------------------------------------------------------------------


@command
def cmd_stats(args) -> int:
    from pipeline.reading import reports
    from pipeline.store import dockets

    _runtime()
    if args.docket:
        dockets.require_docket(args.docket)
    rows = [[c.docket, c.stage, c.state, c.count, _minute(c.next_attempt_at) if c.next_attempt_at else ""]
            for c in reports.state_counts(args.docket)]
    # "next attempt": for retry rows, the earliest of the (docket, stage)'s waiting items.
    print(_table(rows, ["docket", "stage", "state", "count", "next attempt"]) if rows else "no items yet")
    _print_stage_failures(args.docket)
    return 0


def _print_stage_failures(docket: str | None) -> None:
    """The docket stages that failed as a whole at their last run (no item to blame), why,
    and since when: the next run tries them again."""
    from pipeline.store import docket_failures

    failures = docket_failures.current([docket] if docket else None)
    if not failures:
        return
    rows = [[f.docket, f.stage, f.attempts, _minute(f.first_failed_at), _minute(f.failed_at), f.reason]
            for f in failures]
    print("\ndocket stages that failed (no marker; the next run tries again):")
    print(_table(rows, ["docket", "stage", "failed runs", "since", "last", "reason"]))


def _index_row(rt, item) -> list[str]:
    from pipeline.reading.search import COLLECTIONS

    index_db = rt.existing_index_db()
    if index_db is None:
        return _no_failure_row("index", "-", "", "no index DB yet")
    state = index_db.state_for_docket(COLLECTIONS.get(item.kind, "comments"), item.docket).get(item.key)
    if state is None:
        return _no_failure_row("index", "-", "", "not indexed")
    label = "indexed" if state.fingerprint else "stale"
    return _no_failure_row("index", label, eastern_instant(state.indexed_at),
                           f"{state.chunk_count} chunk(s), {state.embedder_id}")


EXPLAIN_HEADER = ["stage", "state", "failure", "attempts", "first failed", "next attempt", "at", "reason"]


def _no_failure_row(stage: str, state: str, at: str, reason: str) -> list[str]:
    """An explain row whose failure kind and retry columns are empty."""
    return [stage, state, "", "", "", "", at, reason]


def _stage_row(row) -> list:
    from pipeline.failures import PERMANENT, RETRY, TRANSIENT

    # detail holds other facts on success rows (chars=... pages=...): show it only as a kind.
    kind = row.detail if row.detail in (PERMANENT, TRANSIENT) else ""
    retrying = row.state == RETRY  # the retry columns are cleared on leaving retry anyway
    return [row.stage, row.state, kind, row.attempts if retrying and row.attempts else "",
            eastern_instant(row.first_failed_at) if retrying else "",
            eastern_instant(row.next_attempt_at) if retrying else "",
            eastern_instant(row.written_at), row.reason or ""]


@command
def cmd_explain(args) -> int:
    from pipeline.engine import registry
    from pipeline.reading import reports

    rt = _runtime()
    item = reports.find_item(args.comment)
    rows = reports.stage_rows(args.comment, registry.names())
    if item is None and not rows:
        raise UnknownItem(f"unknown comment {args.comment!r}")
    files = reports.file_rows_of(args.comment)
    stages = [_stage_row(r) for r in rows] + _ocr_rows(files)
    if item is None:  # listed, but its record never arrived: only its state rows know it
        print(f"{args.comment}  docket {rows[0].docket}  not stored: its fetch did not succeed")
        print(_table(stages, EXPLAIN_HEADER))
        return 0
    print(f"{item.kind} {item.key}  docket {item.docket}  posted {eastern_instant(item.posted_date) or '-'}  "
          f"modified {eastern_instant(item.last_modified) or '-'}" + ("  WITHDRAWN" if item.withdrawn else ""))
    if item.title:
        print(f"title: {item.title}")
    for line in _who(item):
        print(line)
    if kept := _kept_attributes(item):
        print(f"record: {kept}")
    print(_table(_in_pipeline_order([*stages, _index_row(rt, item)]), EXPLAIN_HEADER))
    _print_attachments(item, files, next((r for r in rows if r.stage == "extract"), None))
    return 0


def _who(item) -> list[str]:
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


def _kept_attributes(item) -> str:
    """'duplicates 15851  subtype Mass Mail Campaign  ...': the record's kept attributes it gives."""
    from pipeline.reading import reports

    return "  ".join(f"{label} {value}" for label, value in reports.kept_attributes(item))


def _in_pipeline_order(stages: list[list]) -> list[list]:
    from pipeline.engine import registry

    order = registry.names()
    return sorted(stages, key=lambda r: order.index(r[0]) if r[0] in order else len(order))


def _ocr_rows(files: dict) -> list[list]:
    """One 'ocr' line for the item from its files' OCR rows (OCR keeps no item row), or
    why there is none while scans wait."""
    ocr = [r for (stage, _), r in files.items() if stage == "ocr"]
    waiting = [r for (stage, _), r in files.items() if stage == "extract.file" and r.state == "ocr_needed"]
    if not ocr:
        return [_no_failure_row("ocr", "-", "", f"{len(waiting)} scan(s) not OCRed yet")] if waiting else []
    states = sorted({r.state for r in ocr}, key=lambda st: _SEVERITY.get(st, 0), reverse=True)
    counts = ", ".join(f"{sum(r.state == st for r in ocr)} {st}" for st in states)
    worst = max(ocr, key=lambda r: (_SEVERITY.get(r.state, 0), r.written_at))
    row = _stage_row(worst)
    row[0], row[6] = "ocr", eastern_instant(max(r.written_at for r in ocr))
    row[7] = f"{len(ocr)} scan(s): {counts}" + (f"; {worst.reason}" if worst.reason else "")
    return [row]


_SEVERITY = {"failed": 3, "retry": 2, "pending": 1}


def _print_attachments(item, states: dict, extracted) -> None:
    """The summary line ('9 attachments: 2 read, 7 waiting for the mirror'), then one row per
    declared file, from the record (ordinal, title, format, declared size, URL) and its states
    (a scan OCR read stands as OCR says, while its text is the one stored)."""
    from pipeline.reading import reports

    key = item.key
    files = reports.attachments_of(key)
    by_name = {f.filename: f for f in files}
    standings = [reports.file_standing(f, states.get(("backfill.file", f"{key}/{f.filename}")),
                                       states.get(("extract.file", f"{key}/{f.filename}")),
                                       reports.ocr_in_force(states.get(("ocr", f"{key}/{f.filename}")), extracted))
                 for f in files]
    print(reports.attachments_summary(reports.attachment_count(item, files), standings))
    names = [f.filename for f in files] + sorted({name.split("/", 1)[1] for _, name in states} - set(by_name))
    if not names:
        return
    rows = [_attachment_row(name, by_name.get(name), {stage: states.get((stage, f"{key}/{name}"))
                                                      for stage in ("backfill.file", "extract.file", "ocr")})
            for name in names]
    print(_table(rows, ["file", "#", "title", "format", "declared", "bytes", "sha256", "download", "extract",
                        "ocr", "attempts", "next attempt", "reason", "url"]))


def _attachment_row(name: str, row, by_stage: dict) -> list:
    """A file's row: what the record declares of it, what is stored of it, its state in each
    stage, its retry, the reason of the last stage that gave one, where it comes from."""
    def state(stage: str) -> str:
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
    from pipeline.clock import iso, parse_iso, utcnow
    from pipeline.engine import runs
    from pipeline.reading import reports
    from pipeline.store import item_states

    _runtime()
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
    print(_table(rows, ["stage", "item", "docket", "reason", "since", "age", "run"]))
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


# --- search, verify, snapshot ------------------------------------------------------------------


@command
def cmd_search(args) -> int:
    from pipeline.config import ensure_data_dir
    from pipeline.reading import search_arguments
    from pipeline.runtime import current_settings, index_exists, require_existing_store

    # Settings only: the warm path opens no database here (the service has the index DB).
    settings = current_settings()
    if args.stop:
        from pipeline.index import search_service

        print(search_service.stop(settings.data_path))
        return 0
    if args.query is None:
        raise DocketeerError("search needs a query (or --stop)")
    require_existing_store(settings)
    args.query = search_arguments.query_text(args.query)  # the arguments checked as the page checks them
    search_arguments.day_range(args.date_from or "", args.date_to or "")
    if args.org:
        _runtime()
        args.org = search_arguments.organisation(args.org)
        from pipeline.reading.organisation_filter import member_keys

        args.org_items = member_keys(args.org, args.docket)  # the index DB knows no organisations
    if args.docket:
        from pipeline.store import dockets

        _runtime()
        dockets.require_docket(args.docket)
    args.items, args.excluded = _narrowed_to(args)
    answer = None
    if not index_exists(settings):  # no service, no embedded server started to say so
        answer = {"text": f"no results: nothing is indexed yet in {settings.data_path}", "records": []}
    elif settings.embedder == "minilm" and not args.cold:
        answer = _warm_search(settings, ensure_data_dir(settings), args)
    if answer is None:
        answer = _search_here(args)
    if args.json:
        from pipeline.index.search_results import search_document

        document = search_document(args.query, args.k, args.docket, args.collection, answer["records"],
                                   _search_filters(args))
        print(json.dumps(document, indent=2, ensure_ascii=False))
    else:
        print(answer["text"])
    return 0


def _search_here(args) -> dict:
    """The search done in this process: the answer the warm service would give."""
    # Imported only here: the warm path must not pay for psycopg2, pgvector and the stages.
    from pipeline.reading.search import embedder_from, filters_of, format_hits, hit_records, search

    runtime = _runtime()
    hits = search(runtime.index_db(), embedder_from(runtime.settings), args.query,
                  collection=args.collection, docket=args.docket, k=args.k,
                  filters=filters_of(_search_filters(args)), per_item=not args.passages)
    return {"text": format_hits(hits).rstrip() if hits else "no results", "records": hit_records(hits)}


def _search_filters(args) -> dict:
    """The filters of ``docketeer search``, as its request to the warm service carries them
    (``pipeline.index.search.filters_of`` reads them, here and there)."""
    from pipeline.reading.search_arguments import ATTRIBUTES

    return {"from": args.date_from, "to": args.date_to, "org": args.org, "org_items": getattr(args, "org_items", None),
            **{name: getattr(args, name, None) for name in ATTRIBUTES}, "topic": getattr(args, "topic", None), "items": getattr(args, "items", None),
            "excluded": getattr(args, "excluded", None)}


def _narrowed_to(args) -> tuple[list[str] | None, list[str] | None]:
    """(the comments an attribute filter allows, or those it does not: the shorter list) when
    ``--subtype``, ``--category``, ``--state``, ``--country`` or ``--topic`` is given, read
    from the state DB (the index DB holds neither those attributes nor the topic maps); (None,
    None) when none is. Each value is checked as the search page checks it (a value no comment
    has, a topic no map holds: exit 2). Only comments have these: such a search is of comments."""
    from pipeline.reading.search_arguments import ATTRIBUTES, BadSearch, attribute, topic

    given = {name: getattr(args, name) for name in ATTRIBUTES if getattr(args, name, None)}
    wanted_topic = getattr(args, "topic", None)
    if not given and not wanted_topic:
        return None, None
    if args.collection == "documents":
        raise BadSearch(f"--{next(iter(given), 'topic')} narrows comments: documents have no such attribute")
    args.collection = "comments"
    from pipeline.reading import browsing

    _runtime()
    checked = {name: attribute(name, value) for name, value in given.items()}
    for name, value in checked.items():
        setattr(args, name, value)
    return browsing.narrowing(browsing.BrowseFilters(docket=args.docket, topic=topic(wanted_topic or "") or None,
                                                     **checked))


def _warm_search(settings, data_dir, args) -> dict | None:
    """The answer of the warm search service (started on first use), or None: search here."""
    from pipeline.index import search_service
    from pipeline.index.embedders import MiniLMEmbedder

    request = {"query": args.query, "collection": args.collection, "docket": args.docket, "k": args.k,
               "passages": args.passages, **_search_filters(args),
               "embedder": MiniLMEmbedder.model_id(), "index": search_service.index_key(settings, data_dir)}
    answer = search_service.ask(data_dir, request)
    # A service started by an older docketeer answers text only, or ignores the filters (or
    # the list of comments an attribute narrows to, or the resolved organisations' comments):
    # search here instead.
    current = answer and "records" in answer and "filtered" in answer and "folded" in answer
    narrowed = getattr(args, "items", None) is not None or getattr(args, "excluded", None) is not None
    resolved = bool(getattr(args, "org_items", None))
    return answer if (current and (not narrowed or "narrowed" in answer)
                      and (not resolved or "org_items" in answer)) else None


@command
def cmd_verify(args) -> int:
    from pipeline.ops import verify

    rt = _runtime()
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

    snap = take_snapshot(_runtime(), Path(args.dest))
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
    rt = _runtime()  # the restored store, checked as `docketeer verify` checks it
    report = verify.run_checks(rt, index_db=rt.existing_index_db())
    print("\n".join(report.lines()))
    blobs = rt.settings.blob_url or rt.settings.derived_places()["blob_url"]
    print(f"restored; blobs are not in a snapshot: put the blob folder back at {blobs} before the next run")
    print("PASS" if report.passed else "FAIL")
    return 0 if report.passed else 1


@command
def cmd_serve(args) -> int:
    from pipeline.web.server import serve

    serve(_runtime(), host=args.host, port=args.port)
    return 0


def parse_port(text: str) -> int:
    """--port: 1 to 65535 (argparse type)."""
    if not text.isdigit() or not 1 <= int(text) <= 65535:
        raise argparse.ArgumentTypeError(f"not a port number (1 to 65535): {text!r}")
    return int(text)


@command
def cmd_export(args) -> int:
    from pipeline.ops.export import FORMATS, export

    dockets = [d.strip() for d in (args.docket or "").split(",") if d.strip()] or None
    formats = (args.format,) if args.format else FORMATS
    report = export(_runtime(), Path(args.dest), dockets, formats)
    print(f"exported {len(report.written)} docket(s) to {args.dest}"
          + (f": {', '.join(report.written)}" if report.written else "")
          + f"; {len(report.unchanged)} unchanged since their last export")
    return 0


ORGS_VARIANTS_SHOWN = 3  # spellings in the table's cell; --json lists every one
ORGS_EVIDENCE_SHOWN = 60  # characters of the line a guessed name was read from; --json has it whole
ORGS_SOURCES = {"organization": "field", "title": "title", "signature": "signature"}


def _org_origin(origins) -> str:
    """Where an organisation's name came from, for the table: "field" (the record's), and
    each kind of guess with the first line it was read from ("signature: Ohio Farm Bureau
    Federation"), "(+N)" for the other lines guessed from."""
    shown, guesses = [], [o for o in origins if o[0] != "organization"]
    if len(guesses) < len(origins):
        shown.append("field")
    for source in dict.fromkeys(o[0] for o in guesses):
        line = " ".join((next(e for s, e, _ in guesses if s == source) or "").split())
        cut = line if len(line) <= ORGS_EVIDENCE_SHOWN else line[:ORGS_EVIDENCE_SHOWN - 1] + "…"
        shown.append(f"{ORGS_SOURCES.get(source, source)}: {cut}")
    more = len(guesses) - (len(shown) - (len(guesses) < len(origins)))
    return "; ".join(shown) + (f" (+{more})" if more > 0 else "")


@command
def cmd_orgs(args) -> int:
    from pipeline.reading import organisations as queries
    from pipeline.reading import reports

    _runtime()
    if args.docket and reports.find_docket(args.docket) is None:
        print(f"docketeer orgs: unknown docket: {args.docket}", file=sys.stderr)
        return 2
    if args.rule:
        return _orgs_of_rule(args)
    found = queries.organisations_summary(args.docket)
    joined = queries.campaigns_joined([o.id for o in found])
    if args.json:
        print(json.dumps({"docket": args.docket, "organisations": [
            {"id": o.id, "organisation": o.name, "comments": o.comments, "dockets": o.dockets,
             "campaigns_joined": joined.get(o.id, 0),
             "variants": [{"written": w, "comments": n} for w, n in o.variants],
             "origins": [{"source": ORGS_SOURCES.get(source, source), "evidence": evidence, "comments": n}
                         for source, evidence, n in o.origins]} for o in found]}, indent=1))
        return 0
    if not found:
        print("no organisations resolved yet (luigi --module pipeline OrganisationsAll resolves them)")
        return 0
    rows = [[o.name, o.comments, len(o.dockets), joined.get(o.id, 0),
             "; ".join(w for w, _ in o.variants[:ORGS_VARIANTS_SHOWN])
             + (f" (+{len(o.variants) - ORGS_VARIANTS_SHOWN})" if len(o.variants) > ORGS_VARIANTS_SHOWN else ""),
             _org_origin(o.origins)]
            for o in found]
    print(_table(rows, ["organisation", "comments", "dockets", "campaigns", "variants seen", "from"]))
    return 0


def _orgs_of_rule(args) -> int:
    """``orgs --rule X --phases proposed,final``: the organisations that commented in every
    named phase of the rule."""
    from pipeline.reading import lineage
    from pipeline.reading.lineage import BadPhases, parse_phases

    try:
        phases = parse_phases(args.phases)
    except BadPhases as exc:
        print(f"docketeer orgs: {exc}", file=sys.stderr)
        return 2
    rin, dockets = lineage.rule_dockets(args.rule)
    if not dockets:
        print(f"docketeer orgs: unknown rule (no docket or RIN known): {args.rule}", file=sys.stderr)
        return 2
    found = lineage.organisations_in_every_phase(dockets, phases)
    if args.json:
        print(json.dumps({"rule": args.rule, "rin": rin, "dockets": dockets, "phases": phases, "organisations": [
            {"id": org, "organisation": name, "comments": counts} for org, name, counts in found]}, indent=1))
        return 0
    if not found:
        print(f"no organisation commented in every phase of {args.rule}: {', '.join(phases)}")
        return 0
    print(_table([[name, *(counts[p] for p in phases)] for _org, name, counts in found], ["organisation", *phases]))
    return 0


@command
def cmd_rule(args) -> int:
    from pipeline.reading import lineage as timeline

    _runtime()
    found = timeline.timeline(args.rule)
    if found is None:
        print(f"docketeer rule: unknown rule (no docket or RIN known): {args.rule}", file=sys.stderr)
        return 2
    if args.json:
        print(json.dumps(found.as_json(), indent=1))
    else:
        print("\n".join(timeline.lines(found)))
    return 0


@command
def cmd_topics(args) -> int:
    from pipeline.reading import reports
    from pipeline.reading import topics as queries

    _runtime()
    if reports.find_docket(args.docket) is None:
        print(f"docketeer topics: unknown docket: {args.docket}", file=sys.stderr)
        return 2
    found = queries.topics_of(args.docket)
    mapped = queries.map_of(args.docket)
    message = mapped.message if mapped else "no topic map yet (luigi --module pipeline TopicsAll maps it)"
    if args.json:
        print(json.dumps({"docket": args.docket, "message": message if not found else "", "topics": [
            {"id": t.id, "label": t.label, "terms": [term for term, _ in t.terms], "comments": t.comments,
             "submissions": t.submissions, "organisations": t.organisations, "share": t.share,
             "first_seen": t.first_seen and eastern_date(t.first_seen),
             "last_seen": t.last_seen and eastern_date(t.last_seen),
             "representatives": t.representatives} for t in found]}, indent=1))
        return 0
    if not found:
        print(message or "no topics found")
        return 0
    rows = [[t.id.rsplit(":", 1)[-1], t.label, t.comments, t.submissions, f"{t.share:.0%}", t.organisations,
             eastern_date(t.first_seen) if t.first_seen else "", eastern_date(t.last_seen) if t.last_seen else ""]
            for t in found]
    print(_table(rows, ["topic", "terms", "comments", "submissions", "share", "orgs", "first", "last"]))
    for t in found:
        print(f"\n{t.id.rsplit(':', 1)[-1]} ({t.label}) representative passages:")
        for r in t.representatives:
            # the sentence that says most of the topic's terms; a map of an older version kept none
            print(f"  {r['item']}: {' '.join((r.get('sentence') or r['text']).split())[:160]}")
    return 0


@command
def cmd_digest(args) -> int:
    from pipeline.reading import reports
    from pipeline.web import feeds

    _runtime()
    dockets = [d.strip() for d in (args.docket or "").split(",") if d.strip()] or None
    unknown = [d for d in dockets or [] if reports.find_docket(d) is None]
    if unknown:
        print(f"docketeer digest: unknown docket(s): {', '.join(unknown)}", file=sys.stderr)
        return 2
    print(feeds.digest_text(args.since, feeds.digest(args.since, dockets, args.limit), args.link_base), end="")
    return 0


def parse_since(text: str) -> str:
    """--since: a span back from now or an Eastern day (argparse type), as a UTC instant."""
    from pipeline.web.feeds import since_instant

    try:
        return since_instant(text)
    except ValueError as exc:
        raise argparse.ArgumentTypeError(str(exc)) from None


def parse_limit(text: str) -> int:
    if not text.isdigit() or not 1 <= int(text) <= 10_000:
        raise argparse.ArgumentTypeError(f"not a count from 1 to 10000: {text!r}")
    return int(text)


class OneLineParser(argparse.ArgumentParser):
    """A bad argument is one line on stderr (argparse's usage block is what --help is for)."""

    def error(self, message: str):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


class _Commands:
    """The subcommands, each with its one-line summary as both the list's help and its own
    ``--help`` description."""

    def __init__(self, subparsers) -> None:
        self._subparsers = subparsers

    def add_parser(self, name: str, *, help: str) -> argparse.ArgumentParser:  # noqa: A002 - argparse's name
        return self._subparsers.add_parser(name, help=help, description=help[:1].upper() + help[1:] + ".")


def build_parser() -> argparse.ArgumentParser:
    parser = OneLineParser(prog="docketeer", description=__doc__.splitlines()[0])
    parser.add_argument("--debug", action="store_true", help="show the traceback of an unexpected error")
    parser.add_argument("--version", action="version", version=f"docketeer {installed_version()}")
    parser.add_argument("--reinitialise", action="store_true",
                        help="move an unusable state DB aside (never deleted) and start a new, empty store")
    sub = _Commands(parser.add_subparsers(dest="command", required=True))
    sub.add_parser("config", help="effective settings and where each came from (secrets masked)")
    sub.add_parser("dockets", help="known dockets: counts, items waiting to retry, watermark, last pull, seal")
    seal = sub.add_parser("seal", help="seal a docket by hand (every stage skips it)")
    seal.add_argument("docket")
    seal.add_argument("--reason", default="", help="why; kept with the seal")
    unseal = sub.add_parser("unseal", help="unseal a docket (its stages run again)")
    unseal.add_argument("docket")
    forget = sub.add_parser("forget", help="take a docket out of the known set (--purge: delete its data too)")
    forget.add_argument("docket")
    forget.add_argument("--purge", action="store_true",
                        help="delete its rows, index chunks and blobs (attachments shared with other dockets stay)")
    forget.add_argument("--dry-run", action="store_true", help="say what would be done, change nothing")
    stats = sub.add_parser("stats", help="items per docket, stage and state (from state rows alone), with the next retry")
    stats.add_argument("--docket")
    explain = sub.add_parser("explain", help="one comment's journey through every stage, with retries and failure kinds")
    explain.add_argument("comment", metavar="COMMENT_ID")
    pending = sub.add_parser("pending", help="rows left pending by a dead process, oldest first")
    pending.add_argument("--older-than", type=parse_duration, metavar="DURATION",
                         help="only rows pending longer than this (30m, 1h, 2d)")
    search = sub.add_parser("search", help="semantic search over the index")
    search.add_argument("query", nargs="?")
    search.add_argument("--docket")
    search.add_argument("--collection", choices=["comments", "documents"])
    search.add_argument("-k", type=parse_k, default=10, help=f"hits to show, 1 to {MAX_K}")
    search.add_argument("--from", dest="date_from", type=parse_day, metavar="YYYY-MM-DD",
                        help="only items posted on or after this day (Washington's calendar)")
    search.add_argument("--to", dest="date_to", type=parse_day, metavar="YYYY-MM-DD",
                        help="only items posted on or before this day (Washington's calendar)")
    search.add_argument("--org", help="only items whose submitter's name or organisation contains this (any case)")
    for name, label in (("subtype", "subtype (Public Comment, Mass Mail Campaign, ...)"), ("category", "category"),
                        ("state", "state or province"), ("country", "country")):
        search.add_argument(f"--{name}", help=f"only comments whose record gives exactly this {label}")
    search.add_argument("--topic", metavar="TOPIC_ID",
                        help="only comments on this topic of their docket's topic map (`docketeer topics D` lists them)")
    search.add_argument("--passages", action="store_true",
                        help="every matching passage as a result of its own (by default one result per comment, "
                             "its other matching passages under it)")
    search.add_argument("--cold", action="store_true",
                        help="load the model in this process instead of asking the warm search service")
    search.add_argument("--stop", action="store_true",
                        help="stop the warm search service of this data folder (and the index server it started)")
    search.add_argument("--json", action="store_true",
                        help="one JSON document (query, k, results with docket, item id, score, passage, page, attachment, link)")
    verify = sub.add_parser("verify", help="check the store against itself; PASS or FAIL")
    verify.add_argument("--full", action="store_true", help="hash every blob, not a sample")
    verify.add_argument("--sample", type=int, default=100, help="blobs hashed without --full")
    verify.add_argument("--pending-older-than", type=parse_duration, default=timedelta(hours=1),
                        metavar="DURATION", help="pending rows older than this fail (default 1h)")
    verify.add_argument("--out", help="folder for status.json and inventory.csv (default: data_dir)")
    snapshot = sub.add_parser("snapshot", help="consistent copy of the state DB and a dump of the index DB")
    snapshot.add_argument("dest", metavar="DEST", help="a new or empty folder")
    restore = sub.add_parser("restore", help="load a snapshot into a data folder without a store, then verify it")
    restore.add_argument("snapshot", metavar="SNAPSHOT", help="the folder `docketeer snapshot` wrote")
    serve = sub.add_parser("serve", help="a read-only web page to search and read the comments (loopback by default)")
    serve.add_argument("--host", default="127.0.0.1", help="address to listen on (default 127.0.0.1: this machine only)")
    serve.add_argument("--port", type=parse_port, default=8080, help="port (default 8080)")
    export = sub.add_parser("export", help="comments, attachments and campaigns per docket as Parquet and CSV")
    export.add_argument("dest", metavar="DEST", help="folder; one subfolder per docket")
    export.add_argument("--docket", help="comma-separated docket ids (default: every known docket)")
    export.add_argument("--format", choices=["parquet", "csv"], help="only this format (default: both)")
    orgs = sub.add_parser("orgs", help="organisations resolved across spellings: comments, dockets, campaigns "
                                       "joined, the variants seen, where each came from (the record's field, "
                                       "or the title or signature line it was guessed from)")
    orgs.add_argument("--docket", help="only this docket's comments")
    orgs.add_argument("--json", action="store_true",
                      help="one JSON document (id, organisation, comments, dockets, campaigns joined, every variant, "
                           "every origin with its evidence line)")
    orgs.add_argument("--rule", help="a RIN or a docket: the organisations that commented in every phase --phases names")
    orgs.add_argument("--phases", default="proposed,final",
                      help="with --rule: comma-separated phases (notice, proposed, final, supporting, other, unknown; "
                           "default proposed,final)")
    rule = sub.add_parser("rule", help="a rule's timeline by RIN or docket: its documents, phases, comment windows "
                                       "(Eastern dates) and the comments each phase drew")
    rule.add_argument("rule", help="a RIN (1400-AE27) or a docket id")
    rule.add_argument("--json", action="store_true", help="one JSON document")
    topics = sub.add_parser("topics", help="a docket's topic map: the issues raised, how many raised each, "
                                           "who, representative passages")
    topics.add_argument("docket", help="the docket id")
    topics.add_argument("--json", action="store_true",
                        help="one JSON document (each topic's terms, counts, share, dates, representatives)")
    digest = sub.add_parser("digest", help="comments added or changed since a time, per docket (the feeds' news, for cron mail)")
    digest.add_argument("--since", type=parse_since, default="1d",
                        help="30m, 12h, 1d, 2w back from now, an Eastern day YYYY-MM-DD, or a UTC instant (default 1d)")
    digest.add_argument("--docket", help="comma-separated docket ids (default: every known docket)")
    digest.add_argument("--limit", type=parse_limit, default=20, help="comments listed per docket (default 20; all are counted)")
    digest.add_argument("--link-base", default=None,
                        help="the address `docketeer serve` is read at (e.g. http://127.0.0.1:8080): links to its "
                             "pages instead of regulations.gov")
    return parser


class TerminalOutput:
    """A text stream that writes through ``text_validity.for_terminal``: what a stored record
    still holds that a terminal acts on (an OSC sequence setting its title, a screen clear,
    BEL) reaches terminals and cron mail as visible escapes (``\\x1b``), and a lone surrogate
    as ``\\ud800`` (inside JSON output, the same escape). Every line a command prints goes
    through it (``main``)."""

    def __init__(self, stream) -> None:
        self._stream = stream

    def write(self, text: str) -> int:
        self._stream.write(text_validity.for_terminal(text))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def main(argv: list[str] | None = None) -> int:
    """Run one command with its stdout and stderr escaped for terminals (``TerminalOutput``)."""
    streams = sys.stdout, sys.stderr
    sys.stdout, sys.stderr = (TerminalOutput(stream) for stream in streams)
    try:
        return _run(argv)
    finally:
        sys.stdout, sys.stderr = streams


def _run(argv: list[str] | None) -> int:
    args = build_parser().parse_args(argv)
    try:
        if args.reinitialise:
            _reinitialise()
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
    except KeyboardInterrupt:  # Ctrl-C: one line; the finally below still closes the stores
        print("docketeer: interrupted", file=sys.stderr)
        return 130
    except Exception as exc:  # unexpected (a disk full, a dead DB): one line unless --debug
        if args.debug:
            raise
        print(f"docketeer: {type(exc).__name__}: {exc} (--debug shows the traceback)", file=sys.stderr)
        return 1
    finally:
        _close_runtime()


def _reinitialise() -> None:
    from pipeline.config import ensure_data_dir, load_settings
    from pipeline.store.db import set_aside_unusable

    settings = load_settings()
    aside = set_aside_unusable(settings.state_url, ensure_data_dir(settings))
    if aside:  # asked for on purpose: the new, empty store is made now (commands never make one)
        from pipeline.runtime import get_runtime

        get_runtime().state  # noqa: B018 - opening it makes it
    print(f"docketeer: the unusable state DB was moved aside to {aside}; a new, empty store starts now"
          if aside else "docketeer: the state DB is usable: nothing was moved aside", file=sys.stderr)


def _close_runtime() -> None:
    # Stops the embedded index server if this command started it (and nobody else uses it).
    while _opened:
        _opened.pop().close()


if __name__ == "__main__":
    sys.exit(main())
