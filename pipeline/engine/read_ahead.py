"""Reading ahead: a stage's I/O for the next items on a bounded thread pool, its decisions
in its own thread, in order.

``read_ahead(read, items, concurrency, before_each, prepare)`` runs ``read(job)`` for up
to ``2 x concurrency`` jobs ahead of the one the caller is handling, and hands them back in
the order of ``items`` as ``(job, result)`` where ``result()`` returns what ``read``
returned or raises what it raised. The caller takes every decision and writes every row
from those results, one job after the other, exactly as it would without the pool: the
rows, blobs and counters of a run are the same at any concurrency. Only the requests
overlap (S3 and folder reads are latency-bound: tens of milliseconds each, mostly waiting).

``prepare(item)`` makes each job in the caller's thread as it is submitted, so a job may
carry what the caller read from the state DB for it (which this run only changes when it
records that same job). ``before_reading(jobs)`` runs in the caller's thread with each
batch of jobs before any of them is read (a stage marks them ``pending`` there, in one
statement): jobs go out in batches of ``concurrency``, whenever no more than
``concurrency`` are left queued or running, so every reader stays busy. ``before_each()`` runs in the caller's thread before each job is submitted (a
time budget's check): once it raises, nothing more is submitted, the jobs in flight are
handed back, and then its exception is raised. When the caller stops early (a run-stopping
failure), jobs not started are cancelled and those running are waited for: a job's own
writes (a whole blob) are atomic, and its rows are never written.

With ``concurrency`` 1 there is no thread at all: each job is read when the caller asks
for it, after ``before_each()``, as a plain loop would.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable, Iterable, Iterator
from concurrent.futures import ThreadPoolExecutor
from typing import Any, TypeVar

J = TypeVar("J")
R = TypeVar("R")

AHEAD_PER_WORKER = 2  # jobs queued per worker: one running, one ready when it finishes


def read_ahead(
    read: Callable[[J], R], items: Iterable[Any], concurrency: int,
    before_each: Callable[[], Any] = lambda: None, prepare: Callable[[Any], J] = lambda item: item,
    before_reading: Callable[[list[J]], Any] = lambda jobs: None,
) -> Iterator[tuple[J, Callable[[], R]]]:
    """For each of ``items`` in order: ``before_each()``, ``job = prepare(item)``, and for
    each batch of jobs ``before_reading(jobs)`` (all in the caller's thread; they may
    write, e.g. pending rows), then ``read(job)`` on the pool; yields ``(job, result)``."""
    if concurrency <= 1:
        yield from _inline(read, items, before_each, prepare, before_reading)
        return
    yield from _pooled(read, items, concurrency, before_each, prepare, before_reading)


def _inline(read, items, before_each, prepare, before_reading):
    for item in items:
        before_each()
        job = prepare(item)
        before_reading([job])
        try:
            value = read(job)
        except Exception as exc:  # noqa: BLE001 - handed to the caller, as the pool does
            yield job, _raiser(exc)
        else:
            yield job, lambda value=value: value


def _raiser(exc: Exception):
    def result():
        raise exc
    return result


def _pooled(read, items, concurrency: int, before_each, prepare, before_reading):
    window = concurrency * AHEAD_PER_WORKER
    pending: deque = deque()
    source = iter(items)
    stopped: BaseException | None = None
    ended = False
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="read-ahead")
    try:
        while True:
            batch = []
            # Refilled a batch at a time: one ``before_reading`` per batch, not per job.
            while stopped is None and not ended and len(pending) <= window - concurrency \
                    and len(pending) + len(batch) < window:
                item = next(source, _END)
                if item is _END:
                    ended = True
                    break
                try:
                    before_each()
                except Exception as exc:  # noqa: BLE001 - raised after the jobs in flight
                    stopped = exc
                    break
                batch.append(prepare(item))
            if batch:
                before_reading(batch)
                pending.extend((job, pool.submit(read, job)) for job in batch)
            if not pending:
                break
            job, future = pending.popleft()
            yield job, future.result
    finally:
        pool.shutdown(wait=True, cancel_futures=True)
    if stopped is not None:
        raise stopped


_END = object()
