"""Scale benchmarks: no-ops that must not grow with the dockets or the comments, and memory.

    .venv/bin/python -m benchmarks bench_scale [--only a,b] [--many N] [--few N]
        [--open-every N] [--ratio X] [--open-large N] [--open-small N] [--memory N,M]
        [--repeat R] [--work DIR] [--json OUT]

Scenarios:

* ``noop-many``        IndexAll over ``--few`` (10) and ``--many`` (100,000) sealed dockets,
                       state built in bulk (``sealed_state.build_many_sealed``), every
                       ``--open-every``-th of them open and pulled in this window
                       (``sealed_state.reopen_every``): in process (counted: statements per
                       store, completion reads), then side by side as new ``luigi --module
                       pipeline IndexAll`` processes (median of ``--repeat``). Targets: many <=
                       ``--ratio`` (1.5) x few; one completion read per store (the index and
                       every follow-on stage judged together).
* ``noop-open-large``  one open docket, built by a real cold run and grown directly to
                       ``--open-small`` (1,000) and ``--open-large`` (1,000,000) comments
                       (``open_state.grow_open_docket``), next freshness window, nothing new:
                       IndexAll in process, counted per stage. Targets: at most one list
                       request, no item-row read after fetch, large <= 1.5 x small.
* ``memory``           peak Python memory (tracemalloc) of the fetch, backfill and extract
                       functions over the open docket grown to each of ``--memory`` sizes
                       (50,000 and 200,000), nothing to do but to plan, and of a forced
                       run's reads. Target: the largest within 20 % of the smallest.
* ``memory-work``      the same with work on every item: a docket of ``--memory`` comments
                       (a mirror folder, no attachments) walked cold by ``FetchComments``
                       from the stand-in (in its own process: its memory is not ours), every
                       comment's detail taken by ``BackfillComments`` (source = mirror) and
                       every ``combined.md`` written by ``ExtractText``: each task's whole
                       ``run()`` (lease, marker, the stage's own counts) under tracemalloc.
                       ``--work-mirror s3``: the same corpus folder's files served as a bucket
                       by a moto server in its own process (``mirror_rig --tree``), read over
                       HTTP (``mirror_url = s3://BUCKET``, signed with dummy keys).
                       What a task loads once a process (PyMuPDF, an S3 client's service
                       model) is loaded before the first task is measured (``first_use_bytes``).
                       Target: the largest within 20 % of the smallest.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import sys
import tempfile
import time
import tracemalloc
from datetime import UTC, datetime, timedelta
from pathlib import Path

from benchmarks.bench import (
    FRESHNESS,
    UNLIMITED,
    Bench,
    _command_run,
    _noop_record,
    _row,
    corpus,
    fresh,
    index_all,
    must_be_zero,
    present_day,
    target,
)
from benchmarks.common import ROOT, Record, Store, age_last_pull, build, measured, record
from pipeline.counters import (
    COMPLETION_READS_INDEX,
    COMPLETION_READS_STATE,
    INDEX_QUERIES,
    ITEM_READS,
    STATE_QUERIES,
    counters,
)
from pipeline.sources.mirror import MIRROR_READS, MIRROR_WALKS
from pipeline.sources.s3 import S3_GET, S3_HEAD, S3_LIST

SCENARIOS = ("noop-many", "noop-open-large", "memory", "memory-work")


# --- noop-many ------------------------------------------------------------------------------

def noop_many(bench: Bench, sizes: tuple[int, int], repeat: int, open_every: int = 0,
              ratio: float = 1.5) -> None:
    stores = {}
    for n in sizes:
        store = stores[n] = _many_store(bench, n, open_every)
        with store:  # a fresh runtime, as in a new cron process
            pull_open_now()
            with measured() as io:
                ok = build(index_all())
        rec = bench.add(_noop_record(f"noop-many in process ({n:,})", n, io, ok))
        _counted(rec, io)
        must_be_zero(rec, ("api_calls", "pdf_opens", "combined_reads", "embed_calls",
                           "rows_written", "blob_reads", "blob_writes"))
        target(rec, io.get(COMPLETION_READS_STATE) == 1 and io.get(COMPLETION_READS_INDEX) == 1,
               "one completion read per store")
        _counted_process(bench, n, store)
    _side_by_side(bench, stores, sizes, repeat, ratio)


def _many_store(bench: Bench, n: int, open_every: int) -> Store:
    """``n`` dockets, every stage done, built in bulk (``sealed_state``), every
    ``open_every``-th of them open (0: none); a --work folder of an earlier run is reused."""
    from benchmarks.sealed_state import build_many_sealed, docket_ids, reopen_every

    folder = bench.work / "stores" / f"many-{n}"
    built = (folder / "built").exists()
    store = Store(folder if built else fresh(folder), discover="none",
                  index_url=bench.index_url(f"many_{n}", keep=built), api_base="http://127.0.0.1:9/v4")
    if not built:
        with store, measured() as setup:
            build_many_sealed(store.rt, docket_ids(n))
        (folder / "built").write_text("")
        print(f"  {n:,} sealed dockets built in {setup['wall_s']:.0f} s", flush=True)
    opened = folder / f"open-every-{open_every}"
    if open_every and not opened.exists():
        with store:
            count = len(reopen_every(store.rt, docket_ids(n), open_every))
        opened.write_text(str(count))
        print(f"  {count:,} of them open", flush=True)
    return store


def pull_open_now() -> None:
    """The open dockets pulled in this freshness window (a no-op run's premise); cron's
    hourly run would have."""
    from benchmarks.sealed_state import pull_open_now as pulled

    pulled()


def _counted_process(bench: Bench, n: int, store: Store) -> None:
    """The same no-op as a new process (``benchmarks.counted_luigi``: Luigi's command line with
    statements counted), so the one read per store is shown of what cron starts, too."""
    import os
    import subprocess

    out = bench.work / f"counted-{n}.json"
    command = [sys.executable, "-m", "benchmarks.counted_luigi", str(out), "--module", "pipeline",
               "IndexAll", "--local-scheduler"]
    env = {**os.environ, **store.env, "PYTHONPATH": str(ROOT)}
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    io = json.loads(out.read_text()) if out.exists() else {}
    rec = bench.add(record(f"noop-many luigi process, counted ({n:,})", n, 0.0, io))
    rec.ok = done.returncode == 0
    _counted(rec, io)
    # What the scheduler was handed: Luigi's summary line and ours.
    rec.extra["luigi_said"] = [line.strip() for line in done.stderr.splitlines()
                               if "complete, skipped" in line or line.strip().startswith("Scheduled ")]
    rec.note = "; ".join([rec.note, *rec.extra["luigi_said"]])
    target(rec, io.get(COMPLETION_READS_STATE) == 1 and io.get(COMPLETION_READS_INDEX) == 1,
           "one completion read per store")


def _counted(rec: Record, io: dict) -> None:
    for name in (STATE_QUERIES, INDEX_QUERIES, ITEM_READS, COMPLETION_READS_STATE,
                 COMPLETION_READS_INDEX, "stage_calls"):
        rec.extra[name] = io.get(name, 0)
    rec.note = (f"state q {io.get(STATE_QUERIES, 0)}, index q {io.get(INDEX_QUERIES, 0)}, "
                f"completion reads {io.get(COMPLETION_READS_STATE, 0)}+"
                f"{io.get(COMPLETION_READS_INDEX, 0)}, item reads {io.get(ITEM_READS, 0)}")


def _side_by_side(bench: Bench, stores: dict, sizes: tuple[int, int], repeat: int,
                  ratio: float = 1.5) -> None:
    """New `luigi` processes, the two sizes alternating, so both see the same machine load."""
    import resource

    times: dict[int, list[float]] = {n: [] for n in sizes}
    cpu: dict[int, list[float]] = {n: [] for n in sizes}  # the process's own CPU: steadier under load
    for _ in range(repeat):
        for n in sizes:
            with stores[n]:
                pull_open_now()
            before = resource.getrusage(resource.RUSAGE_CHILDREN)
            run = _command_run(f"noop-many luigi ({n:,})", n, stores[n])
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            if not run.ok:
                bench.add(run)
                return
            times[n].append(run.wall_s)
            cpu[n].append(after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime)
    few, many = (statistics.median(times[n]) for n in sizes)
    for n in sizes:
        rec = bench.add(record(f"noop-many luigi command ({n:,})", n, statistics.median(times[n]), {}))
        rec.extra["runs_s"] = times[n]
        rec.extra["cpu_s"] = cpu[n]
        rec.note = (f"median of {repeat}: " + ", ".join(f"{t:.2f}" for t in times[n])
                    + f"; CPU s median {statistics.median(cpu[n]):.2f}: "
                    + ", ".join(f"{t:.2f}" for t in cpu[n]))
    _opening_checks(bench, stores, sizes)
    target(rec, many <= ratio * few, f"{sizes[1]:,} <= {ratio} x {sizes[0]:,} ({many / few:.2f} x)")


def _opening_checks(bench: Bench, stores: dict, sizes: tuple[int, int]) -> None:
    """What every new process pays before any judgement: opening a SQLite state DB checks the
    whole file (``db.unusable_sqlite``, ``PRAGMA quick_check``), which grows with the store."""
    from pipeline.store.db import sqlite_path, unusable_sqlite

    for n in sizes:
        path = sqlite_path("", stores[n].data_dir)
        started, cpu = time.perf_counter(), time.process_time()
        unusable_sqlite(path)
        rec = bench.add(record(f"noop-many opening check ({n:,})", n, time.perf_counter() - started, {}))
        rec.extra["file_bytes"] = path.stat().st_size
        rec.extra["cpu_s"] = time.process_time() - cpu
        rec.note = f"quick_check of {path.stat().st_size / 1e6:,.1f} MB; CPU {rec.extra['cpu_s']:.2f} s"


# --- noop-open-large and memory: one open docket, grown directly -------------------------------

class GrownDocket:
    """A small open docket served by the stand-in, a cold run per store, then grown."""

    def __init__(self, bench: Bench) -> None:
        from devtools.standin_server import StandinServer

        self.bench = bench
        start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=10)  # open: never seals
        self.root, manifest = corpus(bench, "open-grown", dockets=1, comments_per_docket=20,
                                     start=start, tombstone=False)
        present_day(self.root, datetime.now(UTC) - timedelta(hours=1))  # upstream never stamps ahead
        self.docket = manifest.dockets[0].id
        self.server = StandinServer(self.root, hourly_limit=UNLIMITED).start()

    def store(self, comments: int) -> Store:
        """A store of the docket grown to ``comments`` (built on first use)."""
        folder = self.bench.work / "stores" / f"open-{comments}"
        built = (folder / "built").exists()
        store = Store(folder, api_base=self.server.api_base, dockets=[self.docket],
                      index_url=self.bench.index_url(f"open_{comments}", keep=built))
        if not built:
            fresh(folder)
            with store, measured() as setup:
                assert build(index_all()), "the cold run of the open docket failed"
                from benchmarks.open_state import grow_open_docket

                grow_open_docket(store.rt, self.docket, comments)
            (folder / "built").write_text("")
            print(f"  open docket grown to {comments:,} comments in {setup['wall_s']:.0f} s", flush=True)
        return store

    def close(self) -> None:
        self.server.stop()


def noop_open_large(bench: Bench, grown: GrownDocket, sizes: tuple[int, int]) -> None:
    walls = {}
    for n in sizes:
        with grown.store(n):
            age_last_pull([grown.docket], FRESHNESS)  # the next cron run, an hour later
            per_stage: dict[str, dict] = {}
            with _stages_measured(per_stage), measured() as io:
                ok = build(index_all())
        rec = bench.add(_noop_record(f"noop-open-large ({n:,} comments)", n, io, ok))
        walls[n] = rec.wall_s
        after_fetch = {s: c.get(ITEM_READS, 0) for s, c in per_stage.items() if s != "fetch"}
        rec.extra.update(stages=per_stage, item_reads_after_fetch=after_fetch,
                         list_requests=io.get("api.comments.list", 0))
        rec.note = (f"list requests {io.get('api.comments.list', 0)}, item reads: fetch "
                    f"{per_stage.get('fetch', {}).get(ITEM_READS, 0)}, after fetch {after_fetch}")
        must_be_zero(rec, ("pdf_opens", "combined_reads", "embed_calls"))
        target(rec, io.get("api.comments.list", 0) <= 1 and io.get("api_calls", 0) <= 1,
               "at most one list request")
        target(rec, not any(after_fetch.values()) and len(after_fetch) >= 3,
               "no item-row read after fetch")
    small, large = (walls[n] for n in sizes)
    target(rec, large <= 1.5 * small, f"{sizes[1]:,} <= 1.5 x {sizes[0]:,} ({large / small:.2f} x)")


class _stages_measured:
    """Each stage task's whole run() counted on its own (its skip check included)."""

    def __init__(self, per_stage: dict) -> None:
        self.per_stage = per_stage

    def __enter__(self):
        from pipeline.engine.docket_task import DocketStageTask

        self.real_run = real_run = DocketStageTask.run
        per_stage = self.per_stage

        def measured_run(task):
            with counters.measure() as io:
                real_run(task)
            per_stage[task.stage.name] = io

        DocketStageTask.run = measured_run
        return self

    def __exit__(self, *exc) -> None:
        from pipeline.engine.docket_task import DocketStageTask

        DocketStageTask.run = self.real_run


def memory(bench: Bench, grown: GrownDocket, sizes: list[int]) -> None:
    """Peak Python memory of each stage's function over the grown docket (targets bypassed:
    the stage plans over every row and finds nothing to do), and of backfill's and extract's
    reads for a forced run over every item (``--force``: the todo is the whole docket)."""
    peaks: dict[str, dict[int, int]] = {}
    for n in sizes:
        with grown.store(n) as store:
            for stage in ("fetch", "backfill", "extract", "backfill --force", "extract --force"):
                peak, seconds = (_forced_reads_peak(stage.split()[0], grown.docket) if "force" in stage
                                 else _stage_peak(store.rt, stage, grown.docket))
                peaks.setdefault(stage, {})[n] = peak
                rec = bench.add(record(f"memory {stage} ({n:,} comments)", n, seconds, {}))
                rec.extra["peak_bytes"] = peak
                rec.note = f"peak {peak / 2**20:.1f} MiB"
    for stage, by_size in peaks.items():
        low, high = by_size[min(sizes)], by_size[max(sizes)]
        rec = next(r for r in bench.records if r.scenario == f"memory {stage} ({max(sizes):,} comments)")
        target(rec, high <= 1.2 * low, f"within 20 % of {min(sizes):,} ({high / low:.2f} x)")


def _forced_reads_peak(stage_name: str, docket_id: str) -> tuple[int, float]:
    """What a forced run of the stage reads for its work, page by page, without the work
    itself (the API calls of backfill, the PDF reads of extract): the pages it holds."""
    import time

    from pipeline.backfill import stage as backfill
    from pipeline.clock import iso, utcnow
    from pipeline.extract import stage as extract
    from pipeline.extract.readers import EXTRACTOR_VERSION
    from pipeline.store import items

    tracemalloc.start()
    started = time.perf_counter()
    try:
        if stage_name == "backfill":
            for page in backfill._todo_pages(docket_id, True, iso(utcnow())):  # noqa: SLF001
                items.attachments_of([item.key for item in page], docket_id)
        else:
            for todo in extract.work_pages(docket_id, True, EXTRACTOR_VERSION):
                items.bodies_of(docket_id, todo), items.kinds_of(docket_id, todo)
                items.attachments_of(todo, docket_id)
                extract._file_rows_by_item(docket_id, todo.keys())  # noqa: SLF001
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


def _stage_peak(runtime, stage_name: str, docket_id: str) -> tuple[int, float]:
    import time

    from pipeline.engine import registry, runs
    from pipeline.engine.stage import StageContext
    from pipeline.store import dockets as docket_rows

    age_last_pull([docket_id], FRESHNESS)
    docket = docket_rows.require_docket(docket_id)
    ctx = StageContext(runtime=runtime, run_id=runs.start_run("bench", stage_name, docket_id))
    tracemalloc.start()
    started = time.perf_counter()
    try:
        registry.get(stage_name).run(ctx, docket)
        return tracemalloc.get_traced_memory()[1], time.perf_counter() - started
    finally:
        tracemalloc.stop()


# --- memory-work: every item has work ------------------------------------------------------

WORK_TASKS = ("FetchComments", "BackfillComments", "ExtractText")
WORK_MIRRORS = ("folder", "s3")
S3_COUNTS = (S3_LIST, S3_GET, S3_HEAD)


def memory_work(bench: Bench, sizes: list[int], source: str, names: tuple[str, ...] = WORK_TASKS,
                list_source: str = "api", mirror: str = "folder") -> None:
    """Peak Python memory of each stage task's run() when every item of the docket has work
    (backfill's details from ``source``, fetch's list from ``list_source``: the API, i.e.
    the stand-in, or the mirror; the mirror is the corpus folder, or with ``mirror = s3``
    its files as a bucket of a moto server in its own process)."""
    peaks: dict[str, dict[int, int]] = {}
    for n in sizes:
        root, docket = _work_corpus(bench, n)
        served = _work_mirror(root, mirror)
        with _standin_process(root) as api_base, served as where:
            first_uses = _first_uses(names, where.get("s3_endpoint_url"))
            folder = f"work-{list_source}-{source}-{mirror}-{n}"  # list, details, mirror: never mixed
            store = Store(fresh(bench.work / "stores" / folder), api_base=api_base,
                          dockets=[docket], source=source, list_source=list_source, **where)
            with store:
                from pipeline.store.dockets import ensure_dockets

                ensure_dockets([docket], discovered_by="list")  # as discovery leaves it
                for name in names:
                    cpu, server_cpu = time.process_time(), served.cpu_s()
                    peak, io = _task_peak(name, docket)
                    cpu, server_cpu = time.process_time() - cpu, served.cpu_s() - server_cpu
                    peaks.setdefault(name, {})[n] = peak
                    rec = bench.add(record(f"memory-work {name} ({n:,} comments)", n, io["wall_s"], io))
                    rec.extra.update(source=source, list_source=list_source, mirror=mirror,
                                     first_use_bytes=first_uses,  # before the tasks, not in their peaks
                                     cpu_s=round(cpu, 2))  # this process's, its threads' included
                    if mirror == "s3":  # the S3 server's own CPU for the task (it is not the task's)
                        rec.extra["s3_server_cpu_s"] = round(server_cpu, 2)
                    rec.extra.update(peak_bytes=peak, items_done=_items_done(io),
                                     item_state_writes=io.get("item_state_writes", 0),
                                     **{k: io.get(k, 0) for k in (*S3_COUNTS, MIRROR_READS, MIRROR_WALKS)})
                    rec.note = (f"peak {peak / 2**20:.1f} MiB, items with work "
                                f"{_items_done(io):,}, api calls {io.get('api_calls', 0):,}, "
                                + (f"s3 list/get/head {'/'.join(f'{io.get(k, 0):,}' for k in S3_COUNTS)}, "
                                   f"s3 server cpu {server_cpu:.1f} s" if mirror == "s3" else
                                   f"mirror walks/reads {io.get(MIRROR_WALKS, 0):,}/{io.get(MIRROR_READS, 0):,}"))
                    target(rec, _items_done(io) >= n, f"work on every item ({_items_done(io):,} of {n:,})")
    for name, by_size in peaks.items():
        low, high = by_size[min(sizes)], by_size[max(sizes)]
        rec = next(r for r in bench.records
                   if r.scenario == f"memory-work {name} ({max(sizes):,} comments)")
        target(rec, high <= 1.2 * low, f"within 20 % of {min(sizes):,} ({high / low:.2f} x)")


def _items_done(io: dict) -> int:
    """Items the stage did (created by fetch, ok in backfill and extract), from its run row."""
    return io.get("created", 0) or io.get("ok", 0)


def _work_corpus(bench: Bench, comments: int) -> tuple[Path, str]:
    """One open docket of ``comments`` comments, text only (no attachment to download or read)."""
    start = datetime.now(UTC).replace(microsecond=0) - timedelta(days=10)
    root, manifest = corpus(bench, f"work-{comments}", dockets=1, comments_per_docket=comments,
                            start=start, tombstone=False, attachment_share=0.0)
    return root, manifest.dockets[0].id


WORK_BUCKET = "docketeer-bench-mirror"


class _work_mirror:
    """The store's mirror settings: the corpus folder itself, or (``s3``) its ``raw-data``
    files as a bucket of ``benchmarks.mirror_rig`` in a process of its own (the bucket's
    objects and moto's paging are not the stages' memory), read signed with dummy keys."""

    CREDENTIALS = {"AWS_ACCESS_KEY_ID": "bench", "AWS_SECRET_ACCESS_KEY": "bench"}

    def __init__(self, root: Path, mirror: str) -> None:
        self.root, self.mirror = root, mirror
        self.process = None

    def cpu_s(self) -> float:
        """CPU seconds (user + system) the S3 server has used so far; 0 for a folder."""
        if self.process is None:
            return 0.0
        import psutil

        return sum(psutil.Process(self.process.pid).cpu_times()[:2])

    def __enter__(self) -> dict:
        import os
        import subprocess

        if self.mirror == "folder":
            return {"mirror_url": str(self.root)}
        started = time.perf_counter()
        self.process = subprocess.Popen(
            [sys.executable, "-m", "benchmarks.mirror_rig", "--bucket", WORK_BUCKET, "--tree", str(self.root)],
            stdout=subprocess.PIPE, text=True, cwd=ROOT)
        ready = self.process.stdout.readline().split()  # "ready URL", once the bucket is full
        if not ready or ready[0] != "ready":
            self.process.terminate()
            raise RuntimeError(f"the S3 rig did not start (exit {self.process.wait(timeout=30)})")
        print(f"  s3 rig: {self.root.name} as s3://{WORK_BUCKET} in {time.perf_counter() - started:.0f} s",
              flush=True)
        self.saved = {k: os.environ.get(k) for k in (*self.CREDENTIALS, "AWS_PROFILE")}
        os.environ.update(self.CREDENTIALS)
        os.environ.pop("AWS_PROFILE", None)
        return {"mirror_url": f"s3://{WORK_BUCKET}", "s3_endpoint_url": ready[-1], "mirror_unsigned": "false"}

    def __exit__(self, *exc) -> None:
        import os

        if self.process is None:
            return
        for key, value in getattr(self, "saved", {}).items():
            if value is None:
                os.environ.pop(key, None)
            else:
                os.environ[key] = value
        self.process.terminate()
        self.process.wait(timeout=30)
        self.process = None


def _first_uses(names: tuple[str, ...], endpoint_url: str | None) -> dict[str, int]:
    """What the tasks load once a process, done before any is measured; each one's peak
    (tracemalloc), 0 or nearly once done. Left to the first task measured, each would be
    in that task's peak at the first size only (or not, as it happened earlier in the
    process), and hide how the peaks grow with the docket:

    * ``extract_pool_import``: ExtractText imports ``pipeline.extract.pool``, not
      ``server_preload``: PyMuPDF, warmed up (~16 MiB), is the fork server's alone;
    * ``s3_client``: the process's first S3 client loads botocore's S3 service model
      (~20 MiB, once a process: ``pipeline.sources.s3._session``)."""
    import importlib

    loads = {}
    if "ExtractText" in names:
        loads["extract_pool_import"] = lambda: importlib.import_module("pipeline.extract.pool")
    if endpoint_url:
        from pipeline.sources.s3 import s3_client

        loads["s3_client"] = lambda: s3_client(endpoint_url=endpoint_url)
    peaks = {}
    for what, load in loads.items():
        tracemalloc.start()
        try:
            load()
            peaks[what] = tracemalloc.get_traced_memory()[1]
        finally:
            tracemalloc.stop()
    return peaks


class _standin_process:
    """The stand-in in a process of its own (``python -m devtools.standin_server``): its index
    of the docket's comments must not count as the stages' memory."""

    def __init__(self, root: Path) -> None:
        self.root = root

    def __enter__(self) -> str:
        import socket
        import subprocess

        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            port = probe.getsockname()[1]
        self.process = subprocess.Popen(
            [sys.executable, "-m", "devtools.standin_server", "--root", str(self.root),
             "--port", str(port), "--hourly-limit", str(UNLIMITED)],
            stdout=subprocess.PIPE, text=True)
        self.process.stdout.readline()  # "stand-in serving ...": it listens
        return f"http://127.0.0.1:{port}/v4"

    def __exit__(self, *exc) -> None:
        self.process.terminate()
        self.process.wait()


def _task_peak(name: str, docket_id: str) -> tuple[int, dict]:
    """The task's run() alone (its target bypassed), as a new `luigi` command would run it."""
    from pipeline import tasks
    from pipeline.engine.invocation import Invocation

    Invocation.start_in_process()
    task = getattr(tasks, name)(docket=docket_id)
    tracemalloc.start()
    try:
        with measured() as io:
            task.run()
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()
    from pipeline.store.models import Run

    last = Run.select().where(Run.stage == task.stage.name).order_by(Run.id.desc()).get()
    return peak, {**json.loads(last.counters or "{}"), **io}


# --- running ----------------------------------------------------------------------------------

def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--only", default="", help=f"comma-separated: {', '.join(SCENARIOS)}")
    parser.add_argument("--few", type=int, default=10)
    parser.add_argument("--many", type=int, default=100_000)
    parser.add_argument("--open-every", type=int, default=0,
                        help="noop-many: every Nth docket open, pulled in this window (0: all sealed)")
    parser.add_argument("--ratio", type=float, default=1.5,
                        help="noop-many: the target, many's median <= this x few's")
    parser.add_argument("--open-small", type=int, default=1_000)
    parser.add_argument("--open-large", type=int, default=1_000_000)
    parser.add_argument("--memory", default="50000,200000")
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--work-source", choices=("api", "mirror"), default="api",
                        help="memory-work: where backfill takes the details from")
    parser.add_argument("--work-list", choices=("api", "mirror"), default="api",
                        help="memory-work: where fetch takes the docket's list from")
    parser.add_argument("--work-mirror", choices=WORK_MIRRORS, default="folder",
                        help="memory-work: the mirror as the corpus folder, or its files as an S3 bucket "
                             "(a moto server in its own process)")
    parser.add_argument("--work-until", choices=WORK_TASKS, default=WORK_TASKS[-1],
                        help="memory-work: the last task run (each needs the ones before it)")
    parser.add_argument("--work", type=Path, help="working folder (kept; reused when built)")
    parser.add_argument("--json", type=Path, help="write one JSON record per scenario here")
    args = parser.parse_args(argv)
    wants_work = not args.only or "memory-work" in args.only.split(",")
    if wants_work and args.work_mirror != "folder" and "mirror" not in (args.work_source, args.work_list):
        parser.error("--work-mirror s3: nothing reads the mirror unless --work-source or --work-list is mirror")
    work = args.work or Path(tempfile.mkdtemp(prefix="docketeer-scale-"))
    bench = Bench(work, {}, {s for s in args.only.split(",") if s})
    try:
        with counters.counting_queries():
            _run(bench, args)
    finally:
        _finish(bench, args, work)
    print("\n" + "\n".join(_row(r) for r in bench.records))
    return 1 if any(not r.ok for r in bench.records) else 0


def _run(bench: Bench, args) -> None:
    if bench.wants("noop-many"):
        noop_many(bench, (args.few, args.many), args.repeat, args.open_every, args.ratio)
    if bench.wants("memory-work"):
        names = WORK_TASKS[:WORK_TASKS.index(args.work_until) + 1]
        memory_work(bench, [int(n) for n in args.memory.split(",")], args.work_source, names, args.work_list,
                    args.work_mirror)
    if not (bench.wants("noop-open-large") or bench.wants("memory")):
        return
    grown = GrownDocket(bench)
    try:
        if bench.wants("noop-open-large"):
            noop_open_large(bench, grown, (args.open_small, args.open_large))
        if bench.wants("memory"):
            memory(bench, grown, [int(n) for n in args.memory.split(",")])
    finally:
        grown.close()


def _finish(bench: Bench, args, work: Path) -> None:
    if args.json:
        args.json.write_text(json.dumps([r.to_json() for r in bench.records], indent=1))
    if bench.pg is not None:
        from pipeline.index import embedded_server

        embedded_server.release(bench.pg)
    if not args.work:
        shutil.rmtree(work, ignore_errors=True)


if __name__ == "__main__":
    sys.exit(main())
