"""A cache folder of files made from a model (MiniLM's ONNX export): made once, by one
process at a time, and never used unless whole.

A file is made under a private name and renamed into place, then sealed by its digest written
beside it (``<name>.sha256``). A reader that finds the file and its matching digest uses it
without any lock. Otherwise it takes an exclusive ``flock`` on ``.<name>.lock`` in the same
folder, looks again (another process may have made the file while it waited), discards a file
that does not match its digest (a torn copy, a disk error) and makes it. Two stores starting
sharing one folder thus export once: the other waits, then reads.
"""

from __future__ import annotations

import contextlib
import hashlib
import logging
import os
from collections.abc import Callable, Iterator
from pathlib import Path

from pipeline.counters import MODEL_EXPORTS, counters
from pipeline.file_locks import held_exclusively

log = logging.getLogger("docketeer")
DIGEST_SUFFIX = ".sha256"


def cached_file(folder: Path, name: str, make: Callable[[Path], None]) -> Path:
    """``folder/name``, made by ``make(path)`` (which writes the file at ``path``) unless a
    whole copy is there; counts one ``MODEL_EXPORTS`` per file made."""
    folder = Path(folder)
    target = folder / name
    if is_whole(target):
        return target
    folder.mkdir(parents=True, exist_ok=True)
    with _exclusive(folder / f".{name}.lock"):
        if is_whole(target):  # made by another process while this one waited
            return target
        _discard(folder, name)
        temporary = folder / f".{name}.{os.getpid()}.part"
        try:
            make(temporary)
            digest = _digest_of(temporary)
            os.replace(temporary, target)
            _write_atomically(_digest_path(target), digest)
        finally:
            temporary.unlink(missing_ok=True)
        counters.incr(MODEL_EXPORTS)
    return target


def is_whole(target: Path) -> bool:
    """The file is there and equals the digest sealed beside it."""
    try:
        sealed = _digest_path(target).read_text().strip()
        return bool(sealed) and _digest_of(target) == sealed
    except OSError:
        return False


def _discard(folder: Path, name: str) -> None:
    """What a made file must not be mixed with: a copy that is not whole, its digest, and the
    private files of exporters that died (under the lock, no other exporter is running)."""
    target = folder / name
    if target.exists():
        log.warning("the cached %s does not match its digest: made again", target)
    _digest_path(target).unlink(missing_ok=True)
    target.unlink(missing_ok=True)
    for leftover in folder.glob(f".{name}.*.part"):
        leftover.unlink(missing_ok=True)


def _digest_path(target: Path) -> Path:
    return target.with_name(target.name + DIGEST_SUFFIX)


def _digest_of(path: Path) -> str:
    with path.open("rb") as handle:
        return hashlib.file_digest(handle, "sha256").hexdigest()


def _write_atomically(path: Path, text: str) -> None:
    temporary = path.with_name(f".{path.name}.{os.getpid()}.part")
    try:
        temporary.write_text(text + "\n")
        os.replace(temporary, path)
    finally:
        temporary.unlink(missing_ok=True)


@contextlib.contextmanager
def _exclusive(lock_path: Path) -> Iterator[None]:
    with open(lock_path, "a+b") as handle, held_exclusively(handle):
        yield
