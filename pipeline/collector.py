"""Python's cyclic garbage collector paused around bulk work that makes many small objects
without cycles (a wrapper's bulk read of every known docket, placing a docket's comments in
campaigns): its passes over them would cost a large share of that work (measured)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """The collector off while the block runs; back on after, unless it was already off."""
    was_on = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was_on:
            gc.enable()
