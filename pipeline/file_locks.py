"""An exclusive lock across processes on an open file (``flock``): released when the block
ends, and by the kernel when its holder dies, however it dies."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterator
from typing import IO


@contextlib.contextmanager
def held_exclusively(handle: IO) -> Iterator[None]:
    fcntl.flock(handle, fcntl.LOCK_EX)
    try:
        yield
    finally:
        fcntl.flock(handle, fcntl.LOCK_UN)
