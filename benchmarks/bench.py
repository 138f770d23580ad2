"""Benchmarks: named scenarios, the I/O each one did (the package's own counters), wall time.

    .venv/bin/python -m benchmarks bench [SCENARIO ...] [--scale small|full] [--only a,b] [--json OUT]
        [--work DIR] [--keep] [--strict] [--per-comment-sizes N,M] [--ocr]

Run it from the root of a clean checkout: ``-m`` puts that folder first on sys.path, so
the package is imported from it (and the extract pool's workers inherit that), never from
a tree being edited (``benchmarks/__main__.py`` says why ``-m benchmarks bench``).

Scenarios (sizes for small / full):

* ``cold-small``        the whole chain on 3 dockets / 102 comments, API from the stand-in server
* ``noop-sealed``       IndexAll over 12 sealed dockets (12,000 / 200,000 comments), state built
                        directly (benchmarks/sealed_state.py), fresh runtime as cron would have;
                        then the same as a new ``luigi --module pipeline IndexAll`` process
* ``noop-open``         one open docket (1,000 / 20,000 comments) after a real cold run:
                        IndexAll inside the freshness window, then in the next window (the
                        corpus's modification times are first moved into the past: upstream
                        never stamps ahead, and changes are stamped "now")
* ``incremental``       +40 new and 3 changed comments (devtools/corpus_changes.py) on that docket
* ``extract-throughput`` the extract stage (forced) vs a plain PyMuPDF loop over the same files;
                        then the format mix regulations.gov carries (400 attachments, benchmarks/formats.py):
                        the stages' time and, per format, its ``ok`` share and reading speed
* ``index-noop``        IndexDocket.run() over the open docket's unchanged items (target bypassed)
* ``langchain``         LangChain's index() + SQLRecordManager vs IndexDocket: full, no-op, one changed
* ``per-comment``       the obvious Luigi design (one task per comment and stage, LocalTargets)
                        vs ours, cold and no-op, at 200 and 800 / 2,000 and 8,000 comments

Every run is in-process (``luigi.build`` with one worker and the project's Runtime), so the
counters of every stage are seen. The exit status is 1 when a no-op scenario did work it
must not (API calls, PDF opens, combined.md reads, embed calls, state writes); missed time
targets are reported in the ``note`` column as MISS (``--strict``: they fail too). The OCR
stage is off unless ``--ocr``. ``idxq`` counts the index-DB statements of the run itself,
``+open`` those of opening the index DB (connect and migration checks).
"""

from __future__ import annotations

import argparse
import json
import shutil
import sys
import tempfile
import time
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.common import (
    ROOT,
    Record,
    Store,
    age_last_pull,
    build,
    measured,
    now_iso,
    record,
    run_rows_since,
)

SCALES = {
    "small": {"sealed": 12_000, "open": 1_000, "per_comment": (200, 800)},
    "full": {"sealed": 200_000, "open": 20_000, "per_comment": (2_000, 8_000)},
}
FRESHNESS = 3600
# The stand-in enforces regulations.gov's 1,000 requests/hour per key; a benchmark is not a
# politeness test, and a spent quota would stop stages short (budget spent, no marker).
UNLIMITED = 10**9
NOOP_WORK = ("api_calls", "pdf_opens", "combined_reads", "embed_calls", "rows_written")


@dataclass
class Bench:
    work: Path
    scale: dict
    only: set[str]
    records: list[Record] = field(default_factory=list)
    pg = None  # the shared embedded PostgreSQL for every store's index DB

    def wants(self, name: str) -> bool:
        return not self.only or name in self.only

    def add(self, rec: Record) -> Record:
        self.records.append(rec)
        print(_row(rec), flush=True)
        return rec

    def index_url(self, name: str, keep: bool = False) -> str:
        """A database of its own on the shared server: one initdb for the whole benchmark
        (``keep``: the one an earlier run in this work folder built, as it is)."""
        from pipeline.index import embedded_server

        if self.pg is None:
            self.pg = embedded_server.acquire(self.work / "pg")
        if keep:
            return self.pg.get_uri(database=name)
        import psycopg2

        conn = psycopg2.connect(self.pg.get_uri())
        conn.autocommit = True
        with conn.cursor() as cur:
            cur.execute("DROP DATABASE IF EXISTS " + name)
            cur.execute("CREATE DATABASE " + name)
        conn.close()
        return self.pg.get_uri(database=name)


# --- checks ---------------------------------------------------------------------------------

def must_be_zero(rec: Record, names=NOOP_WORK) -> None:
    """A no-op that did work is a failure (exit status 1)."""
    did = [f"{n}={getattr(rec, n)}" for n in names if getattr(rec, n)]
    if did:
        rec.ok = False
        rec.note = _join(rec.note, "VIOLATION " + " ".join(did))


def target(rec: Record, met: bool, text: str) -> None:
    """A measured target: a miss is reported, not fatal (wall time is noisy on shared cores)."""
    rec.extra.setdefault("targets", {})[text] = met
    if not met:
        rec.note = _join(rec.note, "MISS " + text)


def _join(a: str, b: str) -> str:
    return f"{a}; {b}" if a else b


# --- corpora and stores ---------------------------------------------------------------------

def corpus(bench: Bench, name: str, **options):
    from devtools.make_corpus import Manifest, make_corpus

    root = bench.work / "corpora" / name
    if (root / "manifest.json").exists():
        return root, Manifest.load(root)
    started = time.perf_counter()
    manifest = make_corpus(root, reuse_attachments=True, **options)
    print(f"  corpus {name}: {len(manifest.comments)} comments in {time.perf_counter() - started:.0f} s",
          flush=True)
    return root, manifest


def fresh(path: Path) -> Path:
    shutil.rmtree(path, ignore_errors=True)
    return path


def index_all(**kwargs):
    from pipeline.tasks import IndexAll

    return IndexAll(**kwargs)


# --- scenarios ------------------------------------------------------------------------------

def cold_small(bench: Bench) -> None:
    from devtools.standin_server import StandinServer

    root, manifest = corpus(bench, "small", dockets=3, comments_per_docket=34)
    with StandinServer(root, hourly_limit=UNLIMITED) as server:
        store = Store(fresh(bench.work / "stores" / "cold-small"), api_base=server.api_base,
                      dockets=[d.id for d in manifest.dockets], index_url=bench.index_url("cold_small"))
        with store, measured() as io:
            ok = build(index_all())
        bench.add(_noop_record("cold-small", len(manifest.comments), io, ok))


def noop_sealed(bench: Bench) -> None:
    from benchmarks.sealed_state import build_sealed, docket_ids

    comments = bench.scale["sealed"]
    dockets = docket_ids(12)
    store = Store(fresh(bench.work / "stores" / "sealed"), dockets=dockets,
                  index_url=bench.index_url("sealed"), api_base="http://127.0.0.1:9/v4")
    with store, measured() as setup:
        build_sealed(store.rt.index_db(), dockets, comments)
    print(f"  sealed state: {len(dockets)} dockets, {comments} comments built in {setup['wall_s']:.0f} s",
          flush=True)
    with store:  # a fresh runtime: nothing opened yet, as in a new cron process
        with measured() as io:
            ok = build(index_all())
        rec = bench.add(_noop_record("noop-sealed", comments, io, ok))
        rec.extra["index_db_open_s"] = round(store.rt.opened_index_s or 0, 3)
    must_be_zero(rec, NOOP_WORK + ("blob_reads", "blob_writes"))
    target(rec, rec.wall_s < 2.0, "under 2 s")
    # The index markers live with the index data (a wiped index DB must be noticed), so the
    # index DB is opened once and read once per invocation: every docket's marker in one query.
    reads = rec.index_queries - rec.index_open_queries
    rec.extra["index_db_reads"] = reads
    target(rec, reads <= 1, f"index DB read at most once, not per docket (read {reads} times)")
    bench.add(_command_run("noop-sealed (luigi command)", comments, store))


def _command_run(name: str, items: int, store: Store) -> Record:
    """What cron sees: `luigi --module pipeline IndexAll` as a new process (imports included).

    Its counters stay in that process, so only wall time and the exit status are recorded.
    """
    import os
    import subprocess

    command = [str(Path(sys.executable).with_name("luigi")), "--module", "pipeline", "IndexAll",
               "--local-scheduler"]
    # This checkout's package, not whatever the venv's editable install points at.
    env = {**os.environ, **store.env, "PYTHONPATH": str(ROOT)}
    started = time.perf_counter()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    rec = record(name, items, time.perf_counter() - started, {})
    rec.ok = done.returncode == 0
    rec.note = "new process, imports included; counters not visible"
    if not rec.ok:
        rec.note = _join(rec.note, f"exit {done.returncode}: {done.stderr[-300:]}")
    return rec


def _noop_record(name: str, items: int, io: dict, ok: bool) -> Record:
    rec = record(name, items, io["wall_s"], io)
    rec.index_queries = io.get("index_queries", 0)
    rec.index_open_queries = io.get("index_open_queries", 0)
    rec.ok = ok
    return rec


class OpenDocket:
    """One open docket served by the stand-in server, its store, and the facts scenarios share."""

    def __init__(self, bench: Bench) -> None:
        from devtools.standin_server import StandinServer

        self.bench = bench
        count = bench.scale["open"]
        # Comment period started 10 days ago: the docket is open and never seals.
        start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=10)
        self.root, manifest = corpus(bench, f"open-{count}", dockets=1, comments_per_docket=count,
                                     start=start, tombstone=False)
        self.docket = manifest.dockets[0].id
        self.ids = [c.id for c in manifest.comments]
        # The generator spreads modification times over the whole comment period, which for
        # an open docket reaches weeks into the future: the watermark would be in the future
        # and every change would have to be stamped after it. Upstream never stamps ahead.
        latest = present_day(self.root, datetime.now(UTC) - timedelta(hours=1))
        self.clock = max(latest, datetime.now(UTC))
        self.server = StandinServer(self.root, hourly_limit=UNLIMITED).start()
        self.store_dir = fresh(bench.work / "stores" / "open")
        self.index_url = bench.index_url("open_docket")

    def store(self, **overrides) -> Store:
        return Store(self.store_dir, api_base=self.server.api_base, dockets=[self.docket],
                     index_url=self.index_url, **overrides)

    def change_time(self) -> datetime:
        """Now, as upstream would stamp it, and later than any stamp before it."""
        now = datetime.now(UTC).replace(microsecond=0)
        self.clock = max(self.clock + timedelta(seconds=1), now)
        return self.clock

    def next_window(self) -> None:
        age_last_pull([self.docket], FRESHNESS)

    def close(self) -> None:
        self.server.stop()


def present_day(root: Path, ceiling: datetime) -> datetime:
    """Rescale the corpus's comment modification times into [earliest, ceiling], order kept.

    Returns the latest modification time afterwards. Idempotent: a corpus already in the
    past is left as it is.
    """
    from devtools.corpus_changes import api_time
    from devtools.mirror_layout import comment_files, replace_json

    def when(text: str) -> datetime:
        return datetime.fromisoformat(text.replace("Z", "+00:00"))

    bodies = {}
    for path in comment_files(root).values():
        body = json.loads(path.read_text(encoding="utf-8"))
        attrs = body["data"]["attributes"]
        bodies[path] = (body, when(attrs.get("lastModifiedDate") or attrs["modifyDate"]))
    low, high = min(t for _, t in bodies.values()), max(t for _, t in bodies.values())
    if high <= ceiling:
        return high
    scale = (ceiling - low) / (high - low)
    for path, (body, stamp) in bodies.items():
        moved = low + (stamp - low) * scale
        attrs = body["data"]["attributes"]
        attrs["modifyDate"] = api_time(moved)
        if "lastModifiedDate" in attrs:
            attrs["lastModifiedDate"] = api_time(moved)
        for name in ("postedDate", "receiveDate"):
            if attrs.get(name) and when(attrs[name]) > moved:
                attrs[name] = api_time(moved)
        replace_json(path, body)
    return ceiling


def cold_open(bench: Bench, docket: OpenDocket) -> None:
    with docket.store() as store, measured() as io:
        ok = build(index_all())
    rec = bench.add(record("cold-open (setup)", len(docket.ids), io["wall_s"], io))
    rec.ok = ok and store is not None


def noop_open(bench: Bench, docket: OpenDocket) -> None:
    with docket.store():
        with measured() as io:
            ok = build(index_all())
        inside = bench.add(_noop_record("noop-open (same window)", len(docket.ids), io, ok))
        must_be_zero(inside)
        target(inside, inside.wall_s < 3.0, "under 3 s")
        docket.next_window()
        with measured() as io:
            ok = build(index_all())
        after = bench.add(_noop_record("noop-open (next window)", len(docket.ids), io, ok))
    must_be_zero(after, ("pdf_opens", "combined_reads", "embed_calls"))
    if after.api_calls > 1:
        must_be_zero(after, ("api_calls",))
    target(after, after.wall_s < 3.0, "under 3 s")


def incremental(bench: Bench, docket: OpenDocket) -> None:
    from devtools.corpus_changes import add_comments, modify_comments

    when = docket.change_time()
    added = add_comments(docket.root, docket.docket, 40, when)
    changed = docket.ids[100:103]
    modify_comments(docket.root, changed, when)
    docket.server.reload()
    with docket.store():
        docket.next_window()
        started = now_iso()
        with measured() as io:
            ok = build(index_all())
        stages = {row["stage"]: row["counters"] for row in run_rows_since(started)}
    rec = bench.add(record("incremental", len(added) + len(changed), io["wall_s"], io))
    rec.ok, rec.extra["stages"] = ok, stages
    docket.ids.extend(added)
    _check_incremental(rec, stages, len(added) + len(changed))


def _check_incremental(rec: Record, stages: dict, expected: int) -> None:
    """Exactly the changed items did work in every stage after fetch."""
    fetch = stages.get("fetch", {})
    seen = {
        "fetch created+updated": fetch.get("created", 0) + fetch.get("updated", 0),
        "backfill detail calls": stages.get("backfill", {}).get("api.comments.detail", 0),
        "extract items": _done(stages.get("extract", {}), ("ok", "ocr_needed", "failed", "unsupported")),
        "index items loaded": stages.get("index", {}).get("combined_reads", 0),
    }
    rec.extra["work_per_stage"] = seen
    wrong = {k: v for k, v in seen.items() if v != expected}
    if wrong:
        rec.ok = False
        rec.note = _join(rec.note, f"VIOLATION expected {expected}: {wrong}")


def _done(counts: dict, states: tuple[str, ...]) -> int:
    return sum(counts.get(s, 0) for s in states)


def index_noop(bench: Bench, docket: OpenDocket) -> None:
    from pipeline.tasks import IndexDocket

    with docket.store() as store:
        store.rt.index_db()  # opened before the clock: the comparison is the stage's own work
        with measured() as io:
            IndexDocket(docket=docket.docket).run()
    rec = bench.add(_noop_record("index-noop", len(docket.ids), io, True))
    must_be_zero(rec, ("api_calls", "pdf_opens", "combined_reads", "embed_calls"))
    bench.index_noop_s = rec.wall_s


def extract_throughput(bench: Bench, docket: OpenDocket) -> None:
    from benchmarks.extract_floor import docket_files, plain_loop

    for workers in (1, 2):
        with docket.store(extract_workers=workers) as store:
            files = docket_files(store.rt.blobs, docket.docket)
            with measured() as floor:
                plain_loop(files, workers)
            stage = _forced_extract(store, docket.docket)
        bench.add(record(f"plain PyMuPDF loop ({workers} proc)", len(files), floor["wall_s"], floor))
        rec = bench.add(record(f"extract-throughput ({workers} proc)", len(files), stage["wall_s"], stage))
        overhead = stage["wall_s"] / floor["wall_s"] - 1
        rec.extra["overhead_vs_plain"] = round(overhead, 3)
        rec.note = f"overhead {overhead:+.0%} vs plain loop"
        target(rec, overhead <= 0.10, "overhead at most 10 %")
    format_mix(bench)


MIX_FILES = 400


def format_mix(bench: Bench) -> None:
    """The format mix (benchmarks/formats.py): extract + OCR over 400 attachments in the
    formats regulations.gov carries; per format its ``ok`` share after the stages and its
    one-process reading speed (pdf: PDF text pages, images: OCR)."""
    from benchmarks.formats import measure_mix

    mix = measure_mix(fresh(bench.work / "formats"), MIX_FILES, 2, ROOT.parent / "shared" / "realdata",
                      log=lambda line: print(f"  {line}", flush=True))
    stages = bench.add(record("extract-throughput mix: stages (2 proc)", mix.files, mix.extract_s + mix.ocr_s, {}))
    stages.note = (f"extract {mix.extract_s:.1f} s + OCR {mix.ocr_s:.1f} s, {mix.pages} pages, "
                   f"{mix.pages / (mix.extract_s + mix.ocr_s):.1f} pages/s; ok {mix.ok}/{mix.files}")
    stages.extra.update(pages=mix.pages, ok=mix.ok, extract_s=round(mix.extract_s, 3), ocr_s=round(mix.ocr_s, 3))
    for row in mix.rows:
        rec = bench.add(record(f"extract-throughput mix: {row.fmt} (1 proc)", row.files, row.seconds, {}))
        rec.note = f"ok {row.ok_share:.0%}" + ("" if row.others == "-" else f" ({row.others})") + (
            f"; {row.pages} pages, {row.pages / row.seconds:.1f} pages/s")
        rec.extra.update(format=row.fmt, ok_share=round(row.ok_share, 4), states=dict(row.states), pages=row.pages)
        # Every generated file is sound: one not ok is a reader (or its package) missing or broken.
        target(rec, row.ok_share == 1.0, "every sound file ok")


def _forced_extract(store: Store, docket_id: str) -> dict:
    from pipeline.engine.stage import StageContext
    from pipeline.extract.stage import extract_docket
    from pipeline.store.dockets import require_docket

    ctx = StageContext(runtime=store.rt, run_id="bench-extract", force=True)
    with measured() as io:
        extract_docket(ctx, require_docket(docket_id))
    return io


def langchain(bench: Bench, docket: OpenDocket) -> None:
    from benchmarks.langchain_index import LangChainIndex
    from pipeline.tasks import IndexDocket

    lc = LangChainIndex(fresh(bench.work / "langchain"))
    n = len(docket.ids)
    with docket.store() as store:
        store.rt.index_db()
        keys = _extracted_keys(docket.docket)
        with measured() as io:
            IndexDocket(docket=docket.docket, force=True).run()
        bench.add(record("ours: IndexDocket full (--force)", n, io["wall_s"], io))
        for label in ("full build", "no-op rerun"):
            _langchain_run(bench, lc, store, docket.docket, keys, label)
    one_changed(bench, docket, lc)


def _extracted_keys(docket_id: str) -> list[str]:
    from pipeline.store import item_states

    return sorted(k for k, r in item_states.states_for_docket("extract", docket_id).items()
                  if r.state != "pending")


def _langchain_run(bench: Bench, lc, store: Store, docket_id: str, keys: list[str], label: str):
    with measured() as io:
        counts = lc.run(store.rt.blobs, docket_id, keys, store.rt.settings.chunk_chars)
    rec = bench.add(record(f"langchain: {label}", len(keys), io["wall_s"], io))
    rec.extra["langchain"] = counts
    rec.note = (f"added={counts['num_added']} skipped={counts['num_skipped']} "
                f"deleted={counts['num_deleted']} load {counts['load_s']}s index {counts['index_s']}s")
    return rec


def one_changed(bench: Bench, docket: OpenDocket, lc) -> None:
    from devtools.corpus_changes import modify_comments

    modify_comments(docket.root, [docket.ids[7]], docket.change_time())
    docket.server.reload()
    with docket.store() as store:
        docket.next_window()
        started = now_iso()
        with measured() as io:
            build(index_all())
        index_row = [r for r in run_rows_since(started) if r["stage"] == "index"]
        rec = bench.add(record("ours: one changed (IndexAll)", 1, io["wall_s"], io))
        rec.extra["index_run"] = index_row
        if index_row:
            rec.note = f"IndexDocket run {index_row[0]['seconds']} s"
        keys = _extracted_keys(docket.docket)
        _langchain_run(bench, lc, store, docket.docket, keys, "one-changed rerun")
    noop = next(r for r in bench.records if r.scenario == "langchain: no-op rerun")
    ratio = noop.wall_s / max(getattr(bench, "index_noop_s", noop.wall_s), 1e-6)
    noop.extra["ours_index_noop_speedup"] = round(ratio, 1)
    target(noop, ratio >= 10, f"ours >= 10x faster on no-op (measured {ratio:.0f}x)")


def per_comment(bench: Bench) -> None:
    for count in bench.scale["per_comment"]:
        root, manifest = corpus(bench, f"pc-{count}", dockets=1, comments_per_docket=count,
                                tombstone=False)
        _per_comment_pair(bench, root, manifest.dockets[0].id, count)


def _per_comment_pair(bench: Bench, root: Path, docket_id: str, count: int) -> None:
    from benchmarks import percomment_luigi as pc
    from devtools.standin_server import StandinServer

    with StandinServer(root, hourly_limit=UNLIMITED) as server:
        store = Store(fresh(bench.work / "stores" / f"pc-ours-{count}"), api_base=server.api_base,
                      dockets=[docket_id], index_url=bench.index_url(f"pc_ours_{count}"),
                      extract_workers=1)  # one process each: the per-comment design has one too
        with store:
            for label in ("cold", "no-op"):
                with measured() as io:
                    ok = build(index_all())
                rec = bench.add(_noop_record(f"ours {label} ({count})", count, io, ok))
                if label == "no-op":
                    must_be_zero(rec)
        pc.CONFIG.update(work=fresh(bench.work / "pc" / str(count)), api_base=server.api_base)
        pc.CONFIG.pop("client", None)
        for label in ("cold", "no-op"):
            with measured() as io:
                ok = build(pc.PcAll(dockets=docket_id, window="w1"))
            rec = bench.add(_noop_record(f"per-comment Luigi {label} ({count})", count, io, ok))
            rec.extra["files"] = pc.task_count(pc.CONFIG["work"])


# --- driver ---------------------------------------------------------------------------------

OPEN_SCENARIOS = ("noop-open", "incremental", "extract-throughput", "index-noop", "langchain")
SCENARIOS = ("cold-small", "noop-sealed", *OPEN_SCENARIOS, "per-comment")


def run(bench: Bench) -> None:
    if bench.wants("cold-small"):
        cold_small(bench)
    if bench.wants("noop-sealed"):
        noop_sealed(bench)
    if any(bench.wants(s) for s in OPEN_SCENARIOS):
        _open_scenarios(bench)
    if bench.wants("per-comment"):
        per_comment(bench)


def _open_scenarios(bench: Bench) -> None:
    docket = OpenDocket(bench)
    try:
        cold_open(bench, docket)
        steps = {"noop-open": noop_open, "incremental": incremental,
                 "extract-throughput": extract_throughput, "index-noop": index_noop,
                 "langchain": langchain}
        for name, step in steps.items():
            if bench.wants(name) or (name == "index-noop" and bench.wants("langchain")):
                step(bench, docket)
    finally:
        docket.close()


HEADER = (f"{'scenario':<38} {'items':>7} {'wall_s':>8} {'api':>6} {'pdf':>6} {'comb':>6} "
          f"{'embed':>6} {'rows':>7} {'idxq':>6} {'+open':>5}  ok  note")


def _row(r: Record) -> str:
    return (f"{r.scenario:<38} {r.items:>7} {r.wall_s:>8.2f} {r.api_calls:>6} {r.pdf_opens:>6} "
            f"{r.combined_reads:>6} {r.embed_calls:>6} {r.rows_written:>7} {r.index_queries - r.index_open_queries:>6} {r.index_open_queries:>5}  "
            f"{'yes' if r.ok else 'NO ':<3} {r.note}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--scale", choices=sorted(SCALES), default="small")
    parser.add_argument("scenarios", nargs="*", metavar="SCENARIO",
                        help="scenario names to run (as --only): e.g. extract-throughput")
    parser.add_argument("--only", default="", help="comma-separated scenario names")
    parser.add_argument("--json", type=Path, help="write one JSON record per scenario here")
    parser.add_argument("--work", type=Path, help="working folder (default: a temporary one)")
    parser.add_argument("--keep", action="store_true", help="keep the working folder")
    parser.add_argument("--strict", action="store_true", help="missed targets fail too")
    parser.add_argument("--per-comment-sizes", default="",
                        help="comment counts for per-comment, e.g. 3000 (default: the scale's)")
    parser.add_argument("--ocr", action="store_true",
                        help="run the OCR stage (Tesseract) in the chain; off by default")
    args = parser.parse_args(argv)
    from benchmarks.common import OCR

    OCR["on"] = args.ocr
    work = args.work or Path(tempfile.mkdtemp(prefix="docketeer-bench-"))
    scale = dict(SCALES[args.scale])
    if args.per_comment_sizes:
        scale["per_comment"] = tuple(int(n) for n in args.per_comment_sizes.split(","))
    only = {s for s in args.only.split(",") if s} | set(args.scenarios)
    unknown = only - set(SCENARIOS)
    if unknown:
        parser.error(f"unknown scenario {', '.join(sorted(unknown))}; scenarios: {', '.join(SCENARIOS)}")
    bench = Bench(work, scale, only)
    print(f"scale {args.scale}, ocr {'on' if args.ocr else 'off'}, work folder {work}\n{HEADER}",
          flush=True)
    from pipeline.counters import counters

    try:
        with counters.counting_queries():  # idxq: the index DB's statements
            run(bench)
    finally:
        _finish(bench, args, work)
    print("\n" + HEADER + "\n" + "\n".join(_row(r) for r in bench.records))
    failed = [r for r in bench.records if not r.ok or (args.strict and "MISS" in r.note)]
    return 1 if failed else 0


def _finish(bench: Bench, args, work: Path) -> None:
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in bench.records], indent=1))
    if bench.pg is not None:
        from pipeline.index import embedded_server

        embedded_server.release(bench.pg)
    if not args.keep and not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
