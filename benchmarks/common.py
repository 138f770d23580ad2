"""Shared benchmark plumbing: a store under a folder, in-process Luigi runs, measured records.

Benchmarks only: nothing here is imported by the package. Every count in a record comes
from the project's own instrumentation (``pipeline.counters``); the only thing measured
here is wall time, plus how long opening the index DB took (its statements are counted by
the package inside ``counters.counting_queries()``; those of opening it are told apart).
"""

from __future__ import annotations

import json
import os
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# Luigi reads its configuration once, on first use: point it at the project's file first.
os.environ.setdefault("LUIGI_CONFIG_PATH", str(ROOT / "luigi.cfg"))

import luigi  # noqa: E402

from pipeline.clock import iso, parse_iso, utcnow  # noqa: E402
from pipeline.config import load_settings  # noqa: E402
from pipeline.counters import counters  # noqa: E402
from pipeline.engine.invocation import Invocation  # noqa: E402
from pipeline.runtime import Runtime, set_runtime  # noqa: E402
from pipeline.store.models import Docket, Run  # noqa: E402

OCR = {"on": False}  # set by `python -m benchmarks bench --ocr`

KEYS = ("api_calls", "pdf_opens", "combined_reads", "embed_calls", "rows_written",
        "blob_reads", "blob_writes")


@dataclass
class Record:
    """One row of the results table (and one JSON record)."""

    scenario: str
    items: int
    wall_s: float
    api_calls: int = 0
    pdf_opens: int = 0
    combined_reads: int = 0
    embed_calls: int = 0
    rows_written: int = 0
    blob_reads: int = 0
    blob_writes: int = 0
    index_queries: int = 0  # every statement sent to the index DB, opening included
    index_open_queries: int = 0  # of which: connecting and migrating (IndexDB.open)
    ok: bool = True
    note: str = ""
    extra: dict = field(default_factory=dict)

    def to_json(self) -> dict:
        return asdict(self)


def record(scenario: str, items: int, wall_s: float, io: dict, **extra) -> Record:
    counts = {k: io.get(k, 0) for k in KEYS}
    return Record(scenario, items, round(wall_s, 3), **counts, **extra)


# --- the index DB: how long opening it took, and its statements told apart ------------------

class BenchRuntime(Runtime):
    """The project's Runtime; it records the time its index DB took to open, and the
    statements of opening it apart from the run's."""

    opened_index_s: float | None = None

    def index_db(self):
        if self._index is None:
            from pipeline.index.database import IndexDB

            started = time.perf_counter()
            with counters.measure() as opening:
                self._index = IndexDB.open(self.settings.index_url or None, self.data_dir)
            self.opened_index_s = time.perf_counter() - started
            # Told apart from the stage's own reads: opening runs the migration checks.
            counters.incr("index_open_queries", opening.get("index_queries", 0))
        return self._index


# --- a store: one data folder with its settings --------------------------------------------

def open_runtime(env: dict[str, str], runtime_class: type[Runtime] = Runtime) -> Runtime:
    """The process's runtime on these settings, its state DB open (schema created)."""
    runtime = runtime_class(load_settings(env))
    runtime.state  # noqa: B018 - open (and create) the state DB and bind the models
    set_runtime(runtime)
    return runtime


class Store:
    """A docketeer data folder and its settings; ``runtime()`` opens it fresh, like cron would."""

    def __init__(self, data_dir: Path, *, api_base: str = "", dockets: list[str] = (), **overrides):
        self.data_dir = Path(data_dir)
        self.env = {
            "DOCKETEER_DATA_DIR": str(self.data_dir),
            "DOCKETEER_DISCOVER": "list",
            "DOCKETEER_DOCKETS": ",".join(dockets),
            "DOCKETEER_EMBEDDER": "hashing",
            "DOCKETEER_PACE_SECONDS": "0",
            "DOCKETEER_REQUEST_BUDGET": "0",  # the benchmarks walk whole dockets in one run
            "DOCKETEER_LOG_EVERY_SECONDS": "60",
            "REGULATIONS_GOV_API_KEY": "DEMO_KEY",
            # OCR (Tesseract, seconds per page) is off unless the benchmark asks for it:
            # the scenarios measure skipping known work, not OCR throughput.
            "DOCKETEER_OCR": "true" if OCR["on"] else "false",
        }
        if api_base:
            self.env["DOCKETEER_API_BASE"] = api_base
        self.env.update({f"DOCKETEER_{k.upper()}": str(v) for k, v in overrides.items()})
        self.rt: BenchRuntime | None = None

    def open(self) -> BenchRuntime:
        self.close()
        self.rt = open_runtime(self.env, BenchRuntime)
        return self.rt

    def close(self) -> None:
        if self.rt is not None:
            self.rt.close()
            set_runtime(None)
            self.rt = None

    def __enter__(self) -> Store:
        self.open()
        return self

    def __exit__(self, *exc) -> None:
        self.close()


@contextmanager
def measured():
    """Yield a dict that holds, on exit, the counter deltas and ``wall_s`` of the block."""
    with counters.measure() as io:
        started = time.perf_counter()
        box: dict = {}
        try:
            yield box
        finally:
            box["wall_s"] = time.perf_counter() - started
    box.update(io)


def loaded_embedder(name: str):
    """(the embedder, seconds to load it), or None after one "skipped" line when it cannot be
    had here (no model package, no endpoint): the model loads on its first embed."""
    from pipeline.errors import ConfigError
    from pipeline.index.embedders import make_embedder

    try:
        started = time.perf_counter()
        embedder = make_embedder(name)
        embedder.embed(["warm up"])
        return embedder, time.perf_counter() - started
    except (ConfigError, ImportError) as exc:
        print(f"{name:<8} skipped: {exc}")
        return None


def build(*tasks, workers: int = 1) -> bool:
    """An in-process local-scheduler run, as `luigi --module pipeline ...` would do it.

    One worker: Luigi's forked workers would keep their counters to themselves.
    """
    # One `luigi` command is one process; several builds in this process must each be a new
    # invocation, or stages that ran in an earlier build count as done "in this run".
    Invocation.start_in_process()
    result = luigi.build(list(tasks), local_scheduler=True, workers=workers,
                         log_level="WARNING", detailed_summary=True)
    return result.status.name in ("SUCCESS", "SUCCESS_WITH_RETRY")


def run_rows_since(started_at: str) -> list[dict]:
    """The run table's rows written by runs started after ``started_at``: per-stage counters."""
    rows = Run.select().where(Run.started_at >= started_at).order_by(Run.id)
    return [{"task": r.task, "stage": r.stage, "docket": r.docket, "clean": r.clean,
             "seconds": _seconds(r.started_at, r.finished_at),
             "counters": json.loads(r.counters or "{}")} for r in rows]


def _seconds(start: str, end: str | None) -> float | None:
    if not end:
        return None
    return round((parse_iso(end) - parse_iso(start)).total_seconds(), 3)


def age_last_pull(docket_ids: list[str], seconds: int) -> None:
    """Move the dockets' last pull back by one freshness window: "the next cron run, an hour
    later", without waiting an hour. ``last_pull_at`` is the only fact the targets read."""
    for docket in Docket.select().where(Docket.id.in_(docket_ids)):
        if docket.last_pull_at:
            moved = iso(parse_iso(docket.last_pull_at) - timedelta(seconds=seconds))
            Docket.update(last_pull_at=moved).where(Docket.id == docket.id).execute()


def now_iso() -> str:
    return iso(utcnow())


def generated_mirror_docket(root: Path, comments: int, attachment_share: float) -> Path:
    """A one-docket generated mirror folder (``devtools/make_corpus.py``) at ``root``, made
    only when ``root`` holds none yet: a benchmark given ``--corpus`` reuses it."""
    import sys

    from devtools.make_corpus import make_corpus

    if not (root / "manifest.json").exists():
        started = time.perf_counter()
        manifest = make_corpus(root, dockets=1, comments_per_docket=comments, attachment_share=attachment_share,
                               tombstone=False, overwrite=root.exists())
        print(f"corpus: {comments} comments, {len(manifest.attachments())} attachments "
              f"({time.perf_counter() - started:.0f} s)", file=sys.stderr, flush=True)
    return root
