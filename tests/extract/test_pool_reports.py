"""The pool's workers report short items several to a message; a crash or an overrun still
fails only the file it happened on, and the items whose reports the lost worker held back
are read again, not failed."""

from __future__ import annotations

import os
import time
from pathlib import Path

import pytest

from pipeline.counters import counters
from pipeline.extract import pool as pool_module
from pipeline.extract.pool import ExtractPool, FileJob, ItemJob
from pipeline.extract.readers import AttachmentText, ExtractLimits

READS = "test.pool_reads"


def scripted_reader(path: Path, filename: str, limits: ExtractLimits) -> AttachmentText:
    """Fast, except a file named for a crash (the process dies) or a hang (sleeps far past
    the limit: the pool must kill it)."""
    if "crash" in filename:
        os._exit(3)
    if "hang" in filename:
        time.sleep(60)
    counters.incr(READS)
    return AttachmentText(filename, "ok", "", len(filename), 1, f"text of {filename}")


def jobs_of(names: list[list[str]]) -> list[ItemJob]:
    return [ItemJob(f"item-{n:03d}", tuple(FileJob(f"/nowhere/{name}", name) for name in files))
            for n, files in enumerate(names)]


def statuses(results) -> dict[str, list[tuple[str, str]]]:
    return {r.key: [(t.file, t.status) for t in r.texts] for r in results}


def run(names: list[list[str]], seconds: float = 30, batch: int = 32):
    with ExtractPool(ExtractLimits(file_seconds=seconds), 1, reader=scripted_reader) as pool, \
            counters.measure() as done:
        results = [result for chunk in pool.batches(jobs_of(names), batch) for result in chunk]
    return results, done


def test_short_items_come_back_several_to_a_message(monkeypatch):
    messages = []
    receive = pool_module.Worker.receive

    def counted(worker):
        message = receive(worker)
        messages.append(len(message))
        return message

    monkeypatch.setattr(pool_module.Worker, "receive", counted)
    names = [[f"file-{n}.pdf"] for n in range(200)]
    results, done = run(names)
    assert [r.key for r in results] == [f"item-{n:03d}" for n in range(200)]
    assert all(status == [(f"file-{n}.pdf", "ok")] for n, status in enumerate(statuses(results).values()))
    assert done[READS] == 200
    assert sum(messages) == 200 and len(messages) < 150  # several reports to many messages


@pytest.mark.parametrize("culprit,reason", [("crash.pdf", "reader process died"),
                                            ("hang.pdf", "time limit exceeded (1 s)")])
def test_a_lost_worker_fails_only_the_file_it_was_on(culprit, reason):
    """Fast items before it (whose reports the worker may have held back), the culprit
    among a three-file item, fast items after it: only the culprit fails."""
    names = ([[f"before-{n}.pdf"] for n in range(30)] + [["first.pdf", culprit, "third.pdf"]]
             + [[f"after-{n}.pdf"] for n in range(10)])
    results, done = run(names, seconds=1)
    got = statuses(results)
    assert list(got) == [f"item-{n:03d}" for n in range(41)]
    assert got["item-030"] == [("first.pdf", "ok"), (culprit, "failed"), ("third.pdf", "ok")]
    assert [r for r in results if r.key == "item-030"][0].texts[1].reason.startswith(reason)
    assert all(files == [(name, "ok") for name in names[n]]
               for n, files in enumerate(got.values()) if n != 30)
    # Every good file read and reported once (a held-back report lost with the worker is
    # read again, and counted then).
    assert done[READS] == 40 + 2


def test_a_lost_worker_fails_only_a_single_file_item():
    names = [[f"before-{n}.pdf"] for n in range(20)] + [["crash.pdf"]] + [[f"after-{n}.pdf"] for n in range(20)]
    results, _ = run(names, batch=8)
    got = statuses(results)
    assert got.pop("item-020") == [("crash.pdf", "failed")]
    assert all(files == [(names[int(key[5:])][0], "ok")] for key, files in got.items()) and len(got) == 40
