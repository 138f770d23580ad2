"""Scratch files owned by a live process, and the removal of those a dead run left behind.

A process that writes scratch into a folder (blob part files in ``blobs/tmp``, extract and
OCR scratch folders in ``data_dir/tmp``) first takes an exclusive ``flock`` on an owner file
``<token>.owner`` in that folder, holds it for its whole life, and puts its token in the
name of everything it writes there (``<token>.<uuid>.part``, ``tmp<token>.<random>``).

Why a lock rather than a pid or an age: the kernel releases a ``flock`` when its holder dies,
however it dies (SIGKILL included), so "nobody holds the owner file" means exactly "the
owner is dead" - no pid reuse to fool it, and no guess at how long a live run may take
(a run that outlives a lease or an age limit would otherwise lose its scratch mid-write).
Scratch without an owner token (written before this scheme) is removed only past an age.
"""

from __future__ import annotations

import atexit
import fcntl
import os
import shutil
import tempfile
import time
import uuid
from contextlib import suppress
from dataclasses import dataclass, field
from pathlib import Path

OWNER_SUFFIX = ".owner"
UNOWNED_MAX_AGE = 24 * 3600  # seconds: legacy scratch with no owner token

UNIX_SOCKET_PATH_MAX = 107  # bytes of a unix socket's path (sun_path, less its NUL)
SOCKET_SUFFIX = len("/pymp-12345678/listener-12345678")  # what multiprocessing adds to it
_owners: dict[tuple[int, str], tuple[str, int]] = {}  # (pid, folder) -> (token, locked fd)


def owner_token(folder: Path) -> str:
    """This process's token in ``folder``, its owner file locked for the process's life."""
    folder = Path(folder)
    cache_key = (os.getpid(), str(folder))  # a forked child takes its own token
    if cache_key not in _owners:
        _owners[cache_key] = _take_owner_file(folder)
    return _owners[cache_key][0]


def _take_owner_file(folder: Path) -> tuple[str, int]:
    folder.mkdir(parents=True, exist_ok=True)
    while True:
        token = uuid.uuid4().hex[:16]
        path = folder / f"{token}{OWNER_SUFFIX}"
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        # A cleaner may have taken the file for a dead owner's and unlinked it between our
        # open and our lock: then our lock guards nothing, so start again.
        with suppress(FileNotFoundError):
            if os.stat(path).st_ino == os.fstat(fd).st_ino:
                return token, fd
        os.close(fd)


def part_path(folder: Path) -> str:
    """A new part file's path in ``folder``, named with this process's token."""
    return os.path.join(folder, f"{owner_token(folder)}.{uuid.uuid4().hex}.part")


def scratch_prefix(folder: Path) -> str:
    """The prefix for a scratch folder made in ``folder`` (``tempfile`` adds the rest)."""
    return f"tmp{owner_token(folder)}."


def _token_of(name: str) -> str | None:
    if name.endswith(OWNER_SUFFIX):
        return name[: -len(OWNER_SUFFIX)]
    stem = name[3:] if name.startswith("tmp") else name
    token, dot, _ = stem.partition(".")
    return token if dot and len(token) == 16 else None


@dataclass
class Leftovers:
    """What dead runs left in one folder: names of scratch entries (owner files excluded)."""

    folder: Path
    entries: list[str] = field(default_factory=list)


def _owner_alive(folder: Path, token: str) -> bool | None:
    """True when a live process holds the owner file, False when dead, None when none exists."""
    try:
        fd = os.open(folder / f"{token}{OWNER_SUFFIX}", os.O_RDWR | os.O_CLOEXEC)
    except FileNotFoundError:
        return None
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)  # releases our probe lock at once
    return False


def find(folder: Path, unowned_max_age: float = UNOWNED_MAX_AGE) -> Leftovers:
    """Scratch entries in ``folder`` whose owner is dead (or unowned ones past the age)."""
    found = Leftovers(Path(folder))
    if not found.folder.is_dir():
        return found
    alive: dict[str, bool | None] = {}
    cutoff = time.time() - unowned_max_age
    for entry in sorted(os.scandir(found.folder), key=lambda e: e.name):
        if entry.name.endswith(OWNER_SUFFIX):
            continue
        token = _token_of(entry.name)
        if token is not None and token not in alive:
            alive[token] = _owner_alive(found.folder, token)
        state = alive.get(token) if token is not None else None
        if state is False or (state is None and _mtime(entry) < cutoff):
            found.entries.append(entry.name)
    return found


def _mtime(entry: os.DirEntry) -> float:
    try:
        return entry.stat(follow_symlinks=False).st_mtime
    except FileNotFoundError:
        return time.time()


def remove(folder: Path, unowned_max_age: float = UNOWNED_MAX_AGE) -> list[str]:
    """Remove what dead runs left in ``folder``, and their owner files; the names removed."""
    found = find(folder, unowned_max_age)
    for name in found.entries:
        path = found.folder / name
        if path.is_dir() and not path.is_symlink():
            shutil.rmtree(path, ignore_errors=True)
        else:
            with suppress(FileNotFoundError):
                path.unlink()
    _remove_dead_owner_files(found.folder)
    return found.entries


def _remove_dead_owner_files(folder: Path) -> None:
    for path in folder.glob(f"*{OWNER_SUFFIX}"):
        fd = None
        try:
            fd = os.open(path, os.O_RDWR | os.O_CLOEXEC)
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            path.unlink()  # unlinked while we hold it: a taker re-checks the inode
        except (BlockingIOError, FileNotFoundError):
            pass
        finally:
            if fd is not None:
                os.close(fd)


def scratch_dir(data_dir: Path) -> Path:
    """The data folder's scratch: extract and OCR scratch folders, S3 blob part files."""
    return Path(data_dir) / "tmp"


def scratch_folders(data_dir: Path, blobs) -> list[Path]:
    """The folders scratch is written to: ``data_dir/tmp`` and a local blob store's ``tmp``
    (an S3 store spools in ``data_dir/tmp`` itself)."""
    folders = [scratch_dir(data_dir)]
    tmp_dir = getattr(blobs, "tmp_dir", None) or getattr(blobs, "spool_dir", None)
    if tmp_dir is not None and Path(tmp_dir) not in folders:
        folders.append(Path(tmp_dir))
    return folders


def remove_for_run(data_dir: Path, blobs) -> int:
    """At the start of a run: remove what dead runs left in every scratch folder; how many."""
    return sum(len(remove(folder)) for folder in scratch_folders(data_dir, blobs))


def temporary_files_in(data_dir: Path) -> Path | None:
    """Send this process's temporary files (``tempfile``, multiprocessing's socket folders,
    and, through ``TMPDIR``, those of its children and the programs they run) to a scratch
    folder of its own under ``data_dir/tmp``: nothing is written outside the data folder.
    The folder is removed at exit, or, after a kill, by the next run as a dead run's.

    None, and the system's temp folder kept, when the data folder is so deep that a unix
    socket in it (multiprocessing's forkserver listens on one) would pass the kernel's limit."""
    folder = scratch_dir(data_dir).resolve()
    own = folder / f"{scratch_prefix(folder)}p"  # one a process: the token is the process's
    if len(str(own)) + SOCKET_SUFFIX > UNIX_SOCKET_PATH_MAX:
        return None
    own.mkdir(exist_ok=True)
    tempfile.tempdir = str(own)
    os.environ["TMPDIR"] = str(own)
    pid = os.getpid()
    # A forked child (a Luigi worker) shares the folder and leaves it to its parent.
    atexit.register(lambda: os.getpid() == pid and shutil.rmtree(own, ignore_errors=True))
    return own
