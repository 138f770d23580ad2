"""Queries of ``mirror_object``: each docket's mirror objects as its last listing showed them.

Read once per docket walk (one indexed query) and written in multi-row statements, so
diffing a listing of 200,000 objects costs a few statements, not 200,000.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from pipeline.store.models import MirrorObject, database

LISTED = "listed"
GONE = "gone"
# Rows per multi-row statement: under SQLite's 32,766 bound parameters at 8 columns a row.
WRITE_BATCH = 2000


@dataclass(frozen=True)
class StoredObject:
    size: int
    version: str  # compared with ``ListedObject.version``
    state: str


def stored_objects(docket_id: str) -> dict[str, StoredObject]:
    """Every recorded object of the docket, listed or gone."""
    query = (MirrorObject.select(MirrorObject.key, MirrorObject.size, MirrorObject.etag,
                                 MirrorObject.modified, MirrorObject.state)
             .where(MirrorObject.docket == docket_id).tuples())
    return {key: StoredObject(size, f"etag:{etag}" if etag else f"mtime:{modified}", state)
            for key, size, etag, modified, state in query.iterator()}


def record_listed(docket_id: str, entries: Iterable, now: str) -> int:
    """Upsert the objects (``ListedObject``s) as listed now; returns how many rows."""
    rows = [{"key": e.key, "docket": docket_id, "size": e.size, "etag": e.etag, "modified": e.modified,
             "state": LISTED, "reason": None, "seen_at": now} for e in entries]
    for start in range(0, len(rows), WRITE_BATCH):
        (MirrorObject.insert_many(rows[start:start + WRITE_BATCH])
         .on_conflict(conflict_target=[MirrorObject.key],
                      preserve=[MirrorObject.docket, MirrorObject.size, MirrorObject.etag, MirrorObject.modified,
                                MirrorObject.state, MirrorObject.reason, MirrorObject.seen_at])
         .execute())
    return len(rows)


def record_gone(keys: list[str], now: str, reason: str) -> int:
    """Objects no longer in the listing: kept, with the state and the reason."""
    with database.atomic():
        for start in range(0, len(keys), WRITE_BATCH):
            (MirrorObject.update(state=GONE, reason=reason, seen_at=now)
             .where(MirrorObject.key.in_(keys[start:start + WRITE_BATCH])).execute())
    return len(keys)
