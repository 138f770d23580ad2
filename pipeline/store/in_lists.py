"""Long key lists cut into ``IN (...)`` lists a statement can hold: the one rule for every
query module that looks up many keys at once."""

from __future__ import annotations

from collections.abc import Iterable, Iterator

IN_CHUNK = 500  # keys per IN (...) list: SQLite allows 999 parameters per statement


def in_chunks(values: Iterable, size: int = IN_CHUNK) -> Iterator[list]:
    """``values`` in lists of at most ``size``, in their order."""
    values = list(values)
    for start in range(0, len(values), size):
        yield values[start:start + size]
