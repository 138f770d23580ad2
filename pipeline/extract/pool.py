"""Extraction across worker processes, with a hard per-file time limit.

Why this shape:

* PyMuPDF holds the GIL, so threads do not scale: every reader runs in its own process.
* Workers are never forked from the stage's own process: it runs inside a Luigi worker
  that may have threads, and forking a threaded process can deadlock on a lock another
  thread held. They come from multiprocessing's *forkserver*: a fresh, single-threaded
  process (exec'd, like spawn) that imports the readers and PyMuPDF once and then forks
  each worker from that clean state. Measured on 2 cores: a spawned worker takes 2-4 s to
  import luigi, PyMuPDF and python-docx, every stage run; a forkserver worker takes under
  0.1 s after the server's own first start, which is paid once per process. One catch:
  in a plain fork of a process that started the server (Luigi runs each task in a forked
  process when ``--workers`` > 1) multiprocessing cannot check on the parent's server and
  fails, so there the pool spawns its workers instead.
* A runaway file can be stuck inside MuPDF's C code, where neither a SIGALRM handler nor the
  reader's page-by-page check gets control back. So the parent owns the clock: it waits at
  most ``file_seconds`` (plus a short grace) for each file, then kills that one worker and
  starts a fresh one for the next file. The file ends ``failed`` with the reason and the
  other workers never notice. (A ``ProcessPoolExecutor`` cannot do this: killing, or
  crashing, one of its workers breaks the whole pool.)
* A worker has its libraries imported and says it is ready before the clock starts, so
  start-up (seconds when the fork server itself starts) is never charged to a file's time
  limit. The start method and this handshake are why the pool has its own ``Worker``
  rather than ``readers.ReaderProcess``, which it otherwise follows.
* Each worker process is driven by one thread of the parent. Those threads only wait on a
  pipe, so they do not contend for the GIL, while the parent's main thread writes the
  results of earlier items.
* Counters the workers increment (PDF_OPENS) come back with each result and are merged
  into this process's counters.

Workers start on their first file, so a run with nothing to read starts none, and live
until the pool closes (the stage run's end).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass
from itertools import islice
from pathlib import Path

from pipeline.counters import counters
from pipeline.extract.combined import render_combined
from pipeline.extract.readers import (
    STATUS_FAILED,
    AttachmentText,
    ExtractLimits,
    Reader,
    read_attachment,
)

# Items in flight per worker: enough to keep every child busy while the parent writes,
# few enough that a large docket's texts are never all held in memory at once.
ITEMS_AHEAD_PER_WORKER = 4
# Seconds a worker gets beyond the file limit before it is killed: the readers' own
# page-by-page check should answer first, with the same reason and without a restart.
KILL_GRACE_SECONDS = 2.0
# A worker that cannot import its libraries in this long is a broken install, not a bad file.
START_SECONDS = 120.0
# Imported once by the fork server (and again, for free, by each worker before it is ready).
PRELOAD = ("pipeline.extract.readers", "pipeline.extract.ocr", "pymupdf", "docx")
# CPU the workers spent on calls (their counters are merged into the parent's): with the
# parent's own CPU time it gives the pipeline's cost independent of other load on the box.
WORKER_CPU_US = "extract_worker_cpu_us"


@dataclass(frozen=True)
class FileJob:
    path: str
    filename: str


@dataclass(frozen=True)
class ItemJob:
    key: str
    files: tuple[FileJob, ...]
    # render_combined's arguments but the attachments: the worker renders combined.md too,
    # so the YAML and markdown work is spread over the workers, not left to the parent.
    render: dict | None = None


@dataclass(frozen=True)
class ItemResult:
    key: str
    texts: list[AttachmentText]
    combined: bytes | None = None  # None: not asked for, or the worker could not render it


def render_item(render: dict, texts: list[AttachmentText]) -> bytes:
    return render_combined(attachments=texts, **render)


# The process that started (or is about to start) the fork server, see the module docstring.
_server_owner: int | None = None


def _context():
    global _server_owner
    if _server_owner not in (None, os.getpid()):
        return multiprocessing.get_context("spawn")
    _server_owner = os.getpid()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload(list(PRELOAD))  # only read when the server starts
    return context


class WorkerStartError(RuntimeError):
    """A worker process did not come up: the run stops (no file is to blame)."""


def _worker_main(conn) -> None:
    """Child loop: preload, say ready, then run each (function, args) until told to stop."""
    for module in PRELOAD:
        importlib.import_module(module)
    conn.send("ready")
    while True:
        try:
            request = conn.recv()
        except EOFError:
            return
        if request is None:
            return
        function, args = request
        with counters.measure() as delta:
            started = time.process_time()
            try:
                outcome = (True, function(*args))
            except Exception as exc:  # the readers never raise; anything else must not kill us
                outcome = (False, f"{type(exc).__name__}: {exc}"[:300])
            counters.incr(WORKER_CPU_US, int((time.process_time() - started) * 1e6))
        conn.send((outcome, delta))


class Worker:
    """One worker process, killed and replaced when a call overruns ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._process = None
        self._conn = None

    def call(self, function, *args) -> tuple[bool, object]:
        """``(True, result)``, or ``(False, reason)`` when it raised, overran or crashed.
        ``function`` must be module-level: it is pickled by name."""
        if self._process is None:
            self._start()
        try:
            self._conn.send((function, args))
            if self._conn.poll(self.seconds + KILL_GRACE_SECONDS):
                outcome, delta = self._conn.recv()
                counters.merge(delta)
                return outcome
            reason = f"time limit exceeded ({self.seconds:g} s)"
        except (EOFError, OSError) as exc:
            reason = f"reader process died ({type(exc).__name__})"
        self._kill()
        return False, reason

    def close(self) -> None:
        if self._process is None:
            return
        try:
            self._conn.send(None)
            self._process.join(timeout=5)
        except OSError:
            pass
        self._kill()

    def _start(self) -> None:
        context = _context()
        self._conn, child_conn = context.Pipe()
        self._process = context.Process(target=_worker_main, args=(child_conn,), daemon=True,
                                        name="docketeer-extract")
        self._process.start()
        child_conn.close()
        try:
            ready = self._conn.poll(START_SECONDS) and self._conn.recv() == "ready"
        except (EOFError, OSError):
            ready = False
        if not ready:
            self._kill()
            raise WorkerStartError("an extract worker process did not start")

    def _kill(self) -> None:
        if self._process is not None:
            if self._process.is_alive():
                self._process.kill()
            self._process.join()
            self._conn.close()
        self._process = None
        self._conn = None


def worker_count(configured: int) -> int:
    """``extract_workers``: 0 means one worker per core."""
    return configured or os.cpu_count() or 1


class ExtractPool:
    """``workers`` worker processes reading items; results come back in job order.

    ``reader`` must be a module-level function (it is pickled into the workers); it
    defaults to ``read_attachment`` (the OCR stage passes ``ocr_attachment``).
    """

    def __init__(self, limits: ExtractLimits, workers: int, *, reader: Reader | None = None) -> None:
        self.limits = limits
        self.reader = reader or read_attachment
        self.workers = max(1, workers)
        self._idle: queue.SimpleQueue[Worker] = queue.SimpleQueue()
        self._all = [Worker(limits.file_seconds) for _ in range(self.workers)]
        for worker in self._all:
            self._idle.put(worker)
        self._threads = ThreadPoolExecutor(max_workers=self.workers, thread_name_prefix="extract")

    def __enter__(self) -> ExtractPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        self._threads.shutdown(wait=True, cancel_futures=True)
        for worker in self._all:
            worker.close()

    def map(self, jobs: Iterable[ItemJob]) -> Iterator[ItemResult]:
        for batch in self.batches(jobs, 1):
            yield from batch

    def batches(self, jobs: Iterable[ItemJob], size: int) -> Iterator[list[ItemResult]]:
        """Results in job order, ``size`` at a time (the last batch may be shorter).

        Two batches' worth of jobs stay submitted, so the workers go on reading the next
        batch while the caller writes this one."""
        jobs = iter(jobs)
        ahead: deque[Future] = deque(
            self._threads.submit(self._read_item, job)
            for job in islice(jobs, 2 * size + self.workers * ITEMS_AHEAD_PER_WORKER)
        )
        try:
            while ahead:
                batch = [ahead.popleft().result() for _ in range(min(size, len(ahead)))]
                for job in islice(jobs, len(batch)):
                    ahead.append(self._threads.submit(self._read_item, job))
                yield batch
        finally:
            for future in ahead:  # the consumer stopped early (a budget, an error)
                future.cancel()

    def _read_item(self, job: ItemJob) -> ItemResult:
        worker = self._idle.get()
        try:
            texts = [self._read_file(worker, f) for f in job.files]
            combined = None
            if job.render is not None:
                rendered, value = worker.call(render_item, job.render, texts)
                combined = value if rendered else None  # the caller renders it itself
            return ItemResult(job.key, texts, combined)
        finally:
            self._idle.put(worker)

    def _read_file(self, worker: Worker, job: FileJob) -> AttachmentText:
        read, value = worker.call(self.reader, Path(job.path), job.filename, self.limits)
        return value if read else AttachmentText(job.filename, STATUS_FAILED, value)
