"""Extraction across processes, with a per-file time limit.

PyMuPDF holds the GIL, so threads do not scale: each worker is a process. A worker reads
one comment's files and returns their texts plus its I/O counters, which the parent merges.
The time limit is an alarm inside the worker: the alarm handler raises between library calls,
so a runaway file ends as ``failed`` and the worker lives on.
"""

from __future__ import annotations

import multiprocessing
import os
import signal
from collections.abc import Iterable, Iterator
from concurrent.futures import ProcessPoolExecutor
from dataclasses import dataclass
from pathlib import Path

from pipeline.counters import counters
from pipeline.extract.readers import STATUS_FAILED, AttachmentText, ExtractLimits, read_attachment


@dataclass(frozen=True)
class FileJob:
    path: str
    filename: str


@dataclass(frozen=True)
class ItemJob:
    key: str
    files: tuple[FileJob, ...]


class _TimeLimit(Exception):
    pass


def _on_alarm(signum, frame):
    raise _TimeLimit


def read_with_time_limit(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    seconds = max(1, int(limits.file_seconds))
    previous = signal.signal(signal.SIGALRM, _on_alarm)
    signal.alarm(seconds)
    try:
        return read_attachment(path, filename, limits)
    except _TimeLimit:
        return AttachmentText(filename, STATUS_FAILED, f"over the time limit of {seconds} s")
    finally:
        signal.alarm(0)
        signal.signal(signal.SIGALRM, previous)


def extract_item(job: ItemJob, limits: ExtractLimits) -> tuple[str, list[AttachmentText], dict]:
    """Runs in a worker: returns (item key, texts in file order, counters added)."""
    with counters.measure() as io:
        texts = [read_with_time_limit(Path(f.path), f.filename, limits) for f in job.files]
    return job.key, texts, io


def worker_count(configured: int) -> int:
    return configured or os.cpu_count() or 1


def extract_items(
    jobs: Iterable[ItemJob], limits: ExtractLimits, workers: int
) -> Iterator[tuple[str, list[AttachmentText]]]:
    """Extract every job; results come back in job order. One worker runs in-process."""
    jobs = list(jobs)
    if workers <= 1 or len(jobs) <= 1:
        for job in jobs:
            key, texts, _io = extract_item(job, limits)
            yield key, texts
        return
    context = multiprocessing.get_context("fork")
    with ProcessPoolExecutor(max_workers=workers, mp_context=context) as pool:
        chunk = max(1, min(16, len(jobs) // (workers * 4)))
        for key, texts, io in pool.map(extract_item, jobs, [limits] * len(jobs), chunksize=chunk):
            counters.merge(io)
            yield key, texts
