"""A real luigid on loopback for the tests that schedule through one (test_luigid, test_multihost,
the reliability suite): started from the venv beside this Python, up once its API answers."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time
import urllib.parse
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import IO

import pytest

LUIGID = Path(sys.executable).with_name("luigid")


def free_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return sock.getsockname()[1]


def api(port: int, method: str, **data) -> dict:
    query = urllib.parse.urlencode({"data": json.dumps(data)})
    with urllib.request.urlopen(f"http://127.0.0.1:{port}/api/{method}?{query}", timeout=10) as reply:
        return json.loads(reply.read())["response"]


@contextmanager
def running_luigid(state_path: Path, *, logdir: Path | None = None, env: dict | None = None,
                   output: IO[bytes] | None = None, stop_seconds: float = 10) -> Iterator[tuple[int, subprocess.Popen]]:
    """luigid on a free loopback port, its state in ``state_path``; yields (port, process) once
    its API answers and terminates it on the way out (SIGTERM: luigid saves its state then).
    ``output`` takes its log (else discarded); ``logdir`` must exist (luigid does not make it)."""
    if not LUIGID.is_file():
        pytest.skip("luigid is not installed beside this python")
    port = free_port()
    args = [str(LUIGID), "--port", str(port), "--address", "127.0.0.1", "--state-path", str(state_path)]
    if logdir is not None:
        args += ["--logdir", str(logdir)]
    sink = output if output is not None else subprocess.DEVNULL
    daemon = subprocess.Popen(args, env=env, stdout=sink, stderr=subprocess.STDOUT if output else sink)
    try:
        _wait_until_up(port, daemon)
        yield port, daemon
    finally:
        if daemon.poll() is None:
            daemon.terminate()
            daemon.wait(timeout=stop_seconds)


def _wait_until_up(port: int, daemon: subprocess.Popen, seconds: float = 30) -> None:
    deadline = time.monotonic() + seconds
    while True:
        try:
            api(port, "task_list", status="DONE")
            return
        except OSError:
            if time.monotonic() > deadline or daemon.poll() is not None:
                raise RuntimeError("luigid did not start") from None
            time.sleep(0.2)
