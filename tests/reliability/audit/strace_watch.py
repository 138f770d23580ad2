"""The write watch for programs that are not Python (initdb, postgres, tesseract, antiword,
wpd2text): a job run under ``strace -f`` and the file system calls that changed something
read back, as paths outside the data folder.

Why beside the audit hook: the hook lives inside Python processes only; a program Python
starts is seen by strace whatever it is written in. ``-y`` makes strace print the path
behind every file descriptor (``AT_FDCWD</cwd>``, ``= 3</file>``), so most paths come out
absolute; the calls that take a bare relative path (``mkdir("pg_wal")`` after postgres'
``chdir`` into its pgdata) are resolved against the calling process's working folder,
followed through ``chdir`` and inherited through ``clone``/``fork``. Only successful calls
count: a refused write wrote nothing.
"""

from __future__ import annotations

import os
import re
import shutil

# What strace stops on (seccomp-bpf: no other call is slowed down): the calls that take a
# path and change the file system, plus those that move or hand on a working folder.
WRITE_CALLS = ("open", "openat", "openat2", "creat", "mkdir", "mkdirat", "rmdir", "unlink", "unlinkat",
               "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "chmod",
               "fchmodat", "chown", "lchown", "fchownat", "truncate", "utime", "utimes", "utimensat",
               "mknod", "mknodat")
CWD_CALLS = ("chdir", "fchdir", "clone", "clone3", "fork", "vfork")
_OPEN_CALLS = {"open", "openat", "openat2", "creat"}
_OPEN_WRITES = ("O_WRONLY", "O_RDWR", "O_CREAT", "O_TRUNC", "O_APPEND")
_LINE = re.compile(r"^(\d+) +(\w+)\((.*)\) += (-?\d+)(?:<([^>]*)>)?")
_UNFINISHED = re.compile(r"^(\d+) +(.*) <unfinished \.\.\.>$")
_RESUMED = re.compile(r"^(\d+) +<\.\.\. \w+ resumed>(.*)$")
_CWD = re.compile(r"AT_FDCWD<([^>]*)>")
_AT_PATH = re.compile(r'(?:AT_FDCWD|\d+)<([^>]*)>, "((?:[^"\\]|\\.)*)"')
_FD_PATH = re.compile(r"^(\d+)<([^>]*)>")
_BARE_PATH = re.compile(r'"((?:[^"\\]|\\.)*)"')
_LINK_TARGET_FIRST = {"symlink", "link", "symlinkat", "linkat"}  # only the new name is written


def available() -> str | None:
    return shutil.which("strace")


def command(log_path, argv: list[str]) -> list[str]:
    """``argv`` run under strace, its calls logged to ``log_path``."""
    calls = ",".join(WRITE_CALLS + CWD_CALLS)
    return [available() or "strace", "-f", "-qq", "-y", "-s", "4096", "--seccomp-bpf",
            "-e", f"trace={calls}", "-e", "signal=none", "-o", str(log_path), *argv]


def writes(log_text: str, start_cwd: str) -> list[tuple[str, str]]:
    """(call, absolute path) of every successful call in a strace log that changed a path."""
    cwd: dict[str, str] = {}
    found = []
    for line in _whole_calls(log_text):
        match = _LINE.match(line)
        if not match:
            continue
        pid, call, args, result, result_path = match.groups()
        here = cwd.get(pid, start_cwd)
        if call in ("clone", "clone3", "fork", "vfork"):
            if int(result) > 0:
                cwd[result] = here
            continue
        if int(result) < 0:
            continue
        if call in ("chdir", "fchdir"):
            fd = _FD_PATH.match(args)
            bare = _BARE_PATH.match(args)
            cwd[pid] = fd.group(2) if fd else os.path.join(here, _unescape(bare.group(1))) if bare else here
            continue
        known = _CWD.search(args)
        if known:
            cwd[pid] = here = known.group(1)
        found += [(call, path) for path in _changed_paths(call, args, result_path, here)]
    return found


def _whole_calls(log_text: str):
    """The log's lines with each call interrupted by another process's joined back."""
    started: dict[str, str] = {}
    for line in log_text.splitlines():
        unfinished = _UNFINISHED.match(line)
        if unfinished:
            started[unfinished.group(1)] = f"{unfinished.group(1)} {unfinished.group(2)}"
            continue
        resumed = _RESUMED.match(line)
        if resumed:
            line = started.pop(resumed.group(1), "") + resumed.group(2)
        yield line


def _changed_paths(call: str, args: str, result_path: str | None, here: str) -> list[str]:
    if call in _OPEN_CALLS:
        return [result_path] if result_path and (call == "creat" or any(f in args for f in _OPEN_WRITES)) else []
    at = [os.path.join(folder, _unescape(rel)) for folder, rel in _AT_PATH.findall(args)]
    if at:
        return at[-1:] if call in _LINK_TARGET_FIRST else at
    fd = _FD_PATH.match(args)
    if fd:  # utimensat(fd, NULL, ...): the file behind the descriptor
        return [fd.group(2)]
    bare = [os.path.join(here, _unescape(p)) for p in _BARE_PATH.findall(args)]
    return bare[-1:] if call in _LINK_TARGET_FIRST else bare[:2]


def _unescape(text: str) -> str:
    return text.encode("latin-1", "backslashreplace").decode("unicode_escape", "replace")
