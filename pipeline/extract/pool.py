"""Extraction across worker processes, with a hard per-file time limit.

Why this shape:

* PyMuPDF holds the GIL, so threads do not scale: every reader runs in its own process.
* Workers are never forked from the stage's own process: it runs inside a Luigi worker
  that may have threads, and forking a threaded process can deadlock on a lock another
  thread held. They come from multiprocessing's *forkserver*: a fresh, single-threaded
  process (exec'd, like spawn) that imports the readers and PyMuPDF once and then forks
  each worker from that clean state. Measured on 2 cores: a spawned worker takes 2-4 s to
  import luigi, PyMuPDF and python-docx, every stage run; a forkserver worker takes 7-10 ms
  after the server's own first start, which is paid once per process (the server also
  imports the parent's main script and warms MuPDF up for them: ``server_preload``). One catch:
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
  limit. The start method and this handshake are why the pool has its own ``Worker``.
* One request per item, not per file: the worker reads every file of the item and renders
  its combined.md when asked (the stage asks when the workers take every core, see
  ``pipeline.extract.stage``), and an item costs one round trip however many files it
  has. The worker reports each file as it finishes it, and that report restarts the
  parent's clock for the next file, so the limit stays per file; the last file's report
  travels with the item's, so a one-file item is one message.
* Each worker process is driven by one thread of the parent, which keeps ``QUEUED_ITEMS``
  items sent ahead (``FAST_QUEUED_ITEMS`` while they come back several to a message): a
  worker goes from one item to the next without waiting for that thread to be scheduled
  (it competes for the GIL with the main thread writing results). When a worker is
  killed, the items it had not finished go to its replacement, the stuck item with the
  texts it already had.
* Many small items: every message wakes the parent's thread and costs it a poll, two reads
  and an unpickling, which on 2-page PDFs came to a twentieth of the read itself. So a
  worker holds the reports of items it finished while more requests wait for it, and sends
  them together (as the parent sends it requests several to a message): at ``FLUSH_ITEMS`` of them, when it has nothing left to read, or once
  ``FLUSH_SECONDS`` passed since it last sent (a slow item's report goes at once). The
  limit stays per file: a file's clock starts at most ``FLUSH_SECONDS`` early, well
  within ``KILL_GRACE_SECONDS``, and a report of a file but the last still goes at once.
  What a killed worker held back is known from a counter in shared memory (items it
  finished): those items are read again by its replacement, and the blame falls on the
  item after them, as if they had been reported.
* Counters the workers increment (PDF_OPENS) come back with each file and are merged
  into this process's counters.

Workers start on their first file, so a run with nothing to read starts none, and live
until the pool closes (the stage run's end).
"""

from __future__ import annotations

import importlib
import multiprocessing
import os
import queue
import threading
import time
from collections import deque
from collections.abc import Iterable, Iterator
from concurrent.futures import Future, wait
from dataclasses import dataclass, field
from itertools import islice
from pathlib import Path

from pipeline.counters import counters
from pipeline.extract import main_script
from pipeline.extract.combined import render_combined
from pipeline.extract.readers import (
    STATUS_FAILED,
    AttachmentText,
    ExtractLimits,
    Reader,
    read_attachment,
)

# The fork server's preload (imported there only: it imports and warms PyMuPDF).
SERVER_PRELOAD = "pipeline.extract.server_preload"
# Items in flight per worker: enough to keep every child busy while the parent writes,
# few enough that a large docket's texts are never all held in memory at once.
ITEMS_AHEAD_PER_WORKER = 4
# Items sent to a worker before it finished the previous ones: the one it reads and the
# next, so it never waits for the parent between items ...
QUEUED_ITEMS = 2
# ... and while its reports come several to a message (short items), enough for a full
# message of them (see FLUSH_ITEMS) and the next ones.
FAST_QUEUED_ITEMS = 12
# Finished items a worker reports in one message at most, and the longest it holds a
# report back (see the module docstring).
FLUSH_ITEMS = 8
FLUSH_SECONDS = 0.05
# Seconds a worker gets beyond the file limit before it is killed: the readers' own
# page-by-page check should answer first, with the same reason and without a restart.
KILL_GRACE_SECONDS = 2.0
# A worker that cannot import its libraries in this long is a broken install, not a bad file.
START_SECONDS = 120.0
# Imported once by the fork server (and again, for free, by each worker before it is ready).
PRELOAD = ("pipeline.extract.readers", "pipeline.ocr.tesseract", "pymupdf", "docx")
# CPU the workers spent on calls (their counters are merged into the parent's): with the
# parent's own CPU time it gives the pipeline's cost independent of other load on the box.
WORKER_CPU_US = "extract_worker_cpu_us"

# Worker -> parent reports: one per file read, then one per item; a message is a list of them.
_FILE, _DONE = "file", "done"


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


# The process that started (or is about to start) the fork server, see the module docstring.
_server_owner: int | None = None


def _context():
    global _server_owner
    if _server_owner not in (None, os.getpid()):
        return multiprocessing.get_context("spawn")
    _server_owner = os.getpid()
    context = multiprocessing.get_context("forkserver")
    context.set_forkserver_preload([SERVER_PRELOAD, *PRELOAD])
    _start_server()
    return context


_server_lock = threading.Lock()


def _start_server() -> None:
    """Start the fork server (if it is not running) with the main script's path in its
    environment, so it imports that script once instead of every worker doing it (see
    server_preload; measured: 90 ms per worker start without, 7 ms with)."""
    from multiprocessing import forkserver

    with _server_lock:
        path = main_script.main_path()
        if path:
            os.environ[main_script.MAIN_PATH_VARIABLE] = path
        try:
            forkserver.ensure_running()
        finally:
            os.environ.pop(main_script.MAIN_PATH_VARIABLE, None)


class WorkerStartError(RuntimeError):
    """A worker process did not come up: the run stops (no file is to blame)."""


def _failure(exc: Exception) -> str:
    return f"{type(exc).__name__}: {exc}"[:300]


def _worker_main(conn, finished) -> None:
    """Child loop: preload, say ready, then run each item request until told to stop.

    A message from the parent is a list of requests, or None (stop). A request is
    ``(reader, limits, texts, files, render)``: ``texts`` are the item's files already read
    (by a worker that was killed on the next one), ``files`` the ``(path, filename)`` pairs
    still to read, ``render`` render_combined's other arguments or None. Each file read but
    the last is reported as ``(_FILE, text, counters)``, and sent at once (with any reports
    held back): the parent's clock for the next file starts there. The last one comes with
    the item, as ``(_DONE, (text or None, combined bytes or None), counters)``, and may be
    held back (see the module docstring), after ``finished`` (shared memory) counted it."""
    for module in PRELOAD:
        importlib.import_module(module)
    conn.send("ready")
    requests: deque = deque()
    held: list = []
    last_sent = time.monotonic()

    def flush() -> None:
        nonlocal last_sent
        conn.send(held)
        held.clear()
        last_sent = time.monotonic()

    while True:
        if not requests and held and not conn.poll():
            flush()  # nothing left to read: what is done goes now
        if not requests:
            try:
                message = conn.recv()
            except EOFError:
                return
            if message is None:
                if held:
                    flush()
                return
            requests.extend(message)
            continue
        reader, limits, texts, files, render = requests.popleft()
        last, last_delta = None, {}
        for n, (path, filename) in enumerate(files, 1):
            text, delta = _read_one(reader, Path(path), filename, limits)
            texts.append(text)
            if n < len(files):
                held.append((_FILE, text, delta))
                flush()
            else:
                last, last_delta = text, delta
        combined, delta = _render_one(texts, render)
        finished.value += 1
        held.append((_DONE, (last, combined), _sum(last_delta, delta)))
        if len(held) >= FLUSH_ITEMS or time.monotonic() - last_sent >= FLUSH_SECONDS:
            flush()


def _read_one(reader: Reader, path: Path, filename: str, limits: ExtractLimits):
    with counters.measure() as delta:
        started = time.process_time()
        try:
            text = reader(path, filename, limits)
        except Exception as exc:  # the readers never raise; anything else must not kill us
            text = AttachmentText(filename, STATUS_FAILED, _failure(exc))
        counters.incr(WORKER_CPU_US, int((time.process_time() - started) * 1e6))
    return text, delta


def _render_one(texts: list[AttachmentText], render: dict | None):
    combined = None
    with counters.measure() as delta:
        if render is not None:
            started = time.process_time()
            try:
                combined = render_combined(attachments=texts, **render)
            except Exception:  # the parent renders it again and sees the error itself
                combined = None
            counters.incr(WORKER_CPU_US, int((time.process_time() - started) * 1e6))
    return combined, delta


def _sum(a: dict[str, int], b: dict[str, int]) -> dict[str, int]:
    return {name: a.get(name, 0) + b.get(name, 0) for name in a.keys() | b.keys()}


class WorkerLost(Exception):
    """The worker overran the time limit (and was killed) or died; ``str()`` is the reason,
    ``unreported`` the items it finished but had not reported yet (lost with it)."""

    def __init__(self, reason: str, unreported: int = 0) -> None:
        super().__init__(reason)
        self.unreported = unreported


class Worker:
    """One worker process, killed and replaced when a file overruns ``seconds``."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self._process = None
        self._conn = None
        self._finished = None  # shared memory: items this worker process finished
        self.reported = 0  # ... and of them, those whose report came

    @property
    def started(self) -> bool:
        return self._process is not None

    def send(self, request) -> None:
        """Queue a request; a worker that died is found out by the next ``receive``."""
        if self._process is None:
            self._start()
        try:
            self._conn.send(request)
        except OSError:
            pass

    def receive(self):
        """The next message, waiting at most the file limit (plus grace) for it; on an
        overrun or a crash the worker is killed and ``WorkerLost`` raised."""
        try:
            if self._conn.poll(self.seconds + KILL_GRACE_SECONDS):
                return self._conn.recv()
            reason = f"time limit exceeded ({self.seconds:g} s)"
        except (EOFError, OSError) as exc:
            reason = f"reader process died ({type(exc).__name__})"
        self._kill()  # first: the count below cannot change any more
        raise WorkerLost(reason, self._finished.value - self.reported)

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
        conn, child_conn = context.Pipe()
        finished = context.RawValue("q", 0)
        process = context.Process(target=_worker_main, args=(child_conn, finished), daemon=True,
                                  name="docketeer-extract")
        try:
            process.start()
        except BaseException:
            conn.close()
            raise
        finally:
            child_conn.close()
        self._process, self._conn = process, conn
        self._finished, self.reported = finished, 0
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
        self._conn = None  # _finished is kept: receive reads it after the kill


def worker_count(configured: int) -> int:
    """``extract_workers``: 0 means one worker per core."""
    return configured or os.cpu_count() or 1


@dataclass
class _Task:
    """One item on its way through a worker: the texts of its files read so far."""

    job: ItemJob
    future: Future
    texts: list[AttachmentText] = field(default_factory=list)

    def request(self, reader: Reader, limits: ExtractLimits) -> tuple:
        files = [(f.path, f.filename) for f in self.job.files[len(self.texts):]]
        return reader, limits, list(self.texts), files, self.job.render


class ExtractPool:
    """``workers`` worker processes reading items; results come back in job order.

    ``reader`` must be a module-level function (it is pickled into the workers); it
    defaults to ``read_attachment`` (the OCR stage passes ``ocr_attachment``).
    """

    def __init__(self, limits: ExtractLimits, workers: int, *, reader: Reader | None = None) -> None:
        self.limits = limits
        self.reader = reader or read_attachment
        self.workers = max(1, workers)
        self._jobs: queue.SimpleQueue[tuple[ItemJob, Future] | None] = queue.SimpleQueue()
        self._all = [Worker(limits.file_seconds) for _ in range(self.workers)]
        self._drivers = [
            threading.Thread(target=self._drive, args=(worker,), daemon=True, name=f"extract-{n}")
            for n, worker in enumerate(self._all)
        ]
        for driver in self._drivers:
            driver.start()

    def __enter__(self) -> ExtractPool:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def close(self) -> None:
        while True:  # what nobody waits for any more is not read
            try:
                entry = self._jobs.get_nowait()
            except queue.Empty:
                break
            if entry is not None:
                entry[1].cancel()
        for _ in self._drivers:
            self._jobs.put(None)
        for driver in self._drivers:
            driver.join()
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
            self._submit(job) for job in islice(jobs, 2 * size + self.workers * ITEMS_AHEAD_PER_WORKER)
        )
        try:
            while ahead:
                done = [ahead.popleft() for _ in range(min(size, len(ahead)))]
                wait(done)  # one wake-up of this thread per batch, not one per item
                batch = [future.result() for future in done]
                for job in islice(jobs, len(batch)):
                    ahead.append(self._submit(job))
                yield batch
        finally:
            for future in ahead:  # the consumer stopped early (a budget, an error)
                future.cancel()

    def _submit(self, job: ItemJob) -> Future:
        future: Future = Future()
        self._jobs.put((job, future))
        return future

    # --- one thread per worker ------------------------------------------------------------

    def _drive(self, worker: Worker) -> None:
        """Feed ``worker`` items (several to a message) and collect its reports, in order."""
        sent: deque[_Task] = deque()
        depth = QUEUED_ITEMS
        closing = False
        while sent or not closing:
            new: list[_Task] = []
            try:
                while not closing and len(sent) + len(new) < depth:
                    entry = self._jobs.get() if not (sent or new) else self._jobs.get_nowait()
                    if entry is None:
                        closing = True
                    elif entry[1].set_running_or_notify_cancel():
                        new.append(_Task(*entry))
            except queue.Empty:
                pass
            if new:
                self._send(worker, sent, new)
            if sent:
                try:
                    reported = self._receive(worker, sent)
                except Exception as exc:  # a bug here must not leave the caller waiting
                    worker._kill()
                    self._fail(sent, exc)
                    continue
                # Short items come back several to a message: then send more ahead.
                depth = FAST_QUEUED_ITEMS if reported > 1 else QUEUED_ITEMS

    def _send(self, worker: Worker, sent: deque[_Task], tasks: list[_Task]) -> None:
        try:
            worker.send([task.request(self.reader, self.limits) for task in tasks])
        except Exception as exc:  # WorkerStartError, or a request that cannot be pickled
            if len(tasks) > 1:  # each alone: only the one at fault fails
                for task in tasks:
                    self._send(worker, sent, [task])
                return
            tasks[0].future.set_exception(exc)  # nothing was sent: the tasks before it go on
            return
        sent.extend(tasks)

    def _receive(self, worker: Worker, sent: deque[_Task]) -> int:
        """Handle the worker's next message; returns how many items it finished."""
        try:
            reports = worker.receive()
        except WorkerLost as lost:
            self._replace(worker, sent, lost)
            return 0
        finished = 0
        for kind, value, delta in reports:
            counters.merge(delta)
            task = sent[0]
            if kind == _FILE:
                task.texts.append(value)
                continue
            last, combined = value
            if last is not None:
                task.texts.append(last)
            sent.popleft()
            worker.reported += 1
            finished += 1
            task.future.set_result(ItemResult(task.job.key, task.texts, combined))
        return finished

    def _replace(self, worker: Worker, sent: deque[_Task], lost: WorkerLost) -> None:
        """The worker is gone: the file it was on fails, and its replacement gets the rest
        of that item and every item sent behind it, and reads again the items it had
        finished but not reported (their reports died with it)."""
        on = min(lost.unreported, len(sent))  # the item it was on, if any
        if on < len(sent):
            task = sent[on]
            if len(task.texts) < len(task.job.files):
                task.texts.append(AttachmentText(task.job.files[len(task.texts)].filename, STATUS_FAILED,
                                                 str(lost)))
            if len(task.texts) == len(task.job.files):
                # Nothing left to read: the caller renders combined.md. (A render that overran
                # lost the last file's text with it, so that file carries the reason.)
                del sent[on]
                task.future.set_result(ItemResult(task.job.key, task.texts, None))
        if sent:
            worker.send([waiting.request(self.reader, self.limits) for waiting in sent])

    @staticmethod
    def _fail(sent: deque[_Task], exc: Exception) -> None:
        while sent:
            sent.popleft().future.set_exception(exc)
