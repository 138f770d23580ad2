"""Queries of ``mirror_object``: each docket's mirror objects as its last listing showed them.

Read a listing page at a time (one query for the page's keys) and written in multi-row
statements, so diffing a listing of 200,000 objects costs a statement per 2,000 objects,
never 200,000 statements nor the docket's rows held at once.

Also ``mirror_scan``: a run's listing, or the part of it that run must read, filed by item
(``new_scan``, ``record_scan``, ``scanned``, ``scan_pages``, ``drop_scan``), so that a
backfill page or a fetch reads its own items' objects and no run holds a docket's listing.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import timedelta

from peewee import Tuple, fn

from pipeline.clock import iso, parse_iso
from pipeline.store import prepared
from pipeline.store.models import MirrorObject, MirrorScan, database

LISTED = "listed"
GONE = "gone"
# Keys per ``IN (...)`` list.
WRITE_BATCH = 2000
READ_PAGE = 2000  # rows per keyset page
SCAN_EXPIRY = timedelta(days=1)  # a scan older than this was left by a killed run


@dataclass(frozen=True)
class StoredObject:
    size: int
    version: str  # compared with ``ListedObject.version``
    state: str


def stored_of(keys: list[str]) -> dict[str, StoredObject]:
    """The recorded objects of ``keys`` (a listing's page), one query per ``WRITE_BATCH``."""
    found: dict[str, StoredObject] = {}
    for start in range(0, len(keys), WRITE_BATCH):
        query = (MirrorObject.select(MirrorObject.key, MirrorObject.size, MirrorObject.etag,
                                     MirrorObject.modified, MirrorObject.state)
                 .where(MirrorObject.key.in_(keys[start:start + WRITE_BATCH])).tuples())
        found.update((key, StoredObject(size, f"etag:{etag}" if etag else f"mtime:{modified}", state))
                     for key, size, etag, modified, state in query.iterator())
    return found


def count_listed(docket_id: str) -> int:
    """How many objects the docket's last listing showed (one indexed count)."""
    return (MirrorObject.select()
            .where((MirrorObject.docket == docket_id) & (MirrorObject.state == LISTED)).count())


def unseen_listed(docket_id: str, scan: str, page: int | None = None) -> Iterator[list[str]]:
    """Pages of the keys the docket's last listing showed that the scan ``scan`` (a whole
    new walk) does not hold: what is gone from the mirror, in key order."""
    seen = MirrorScan.select(MirrorScan.key).where((MirrorScan.scan == scan) & (MirrorScan.key == MirrorObject.key))
    return _listed_keys(docket_id, ~fn.EXISTS(seen), page)


def unfiled(docket_id: str, page: int | None = None) -> Iterator[list[str]]:
    """Pages of the docket's listed keys not yet filed under an item (recorded before schema
    v11, or by a caller that did not say), in key order."""
    return _listed_keys(docket_id, MirrorObject.item.is_null(), page)


def _listed_keys(docket_id: str, condition, page: int | None) -> Iterator[list[str]]:
    """The docket's listed keys that meet ``condition``, in keyset pages of ``page`` keys
    (a page may be written to before the next is read: each starts after the last key)."""
    page = page or READ_PAGE
    after = None
    while True:
        where = (MirrorObject.docket == docket_id) & (MirrorObject.state == LISTED) & condition
        if after is not None:
            where &= MirrorObject.key > after
        keys = [key for (key,) in MirrorObject.select(MirrorObject.key).where(where)
                .order_by(MirrorObject.key).limit(page).tuples()]
        if keys:
            yield keys
        if len(keys) < page:
            return
        after = keys[-1]


def file(owners: list[tuple[str, str]]) -> int:
    """Record the item of each (item, key) pair ("" for none)."""
    return prepared.run_many("mirror_object.file", _file, owners)


def _file(row: tuple):
    return MirrorObject.update(item=row[0]).where(MirrorObject.key == row[1])


def objects_of(docket_id: str, item_ids: list[str]) -> list[tuple[str, int, str | None, str]]:
    """(key, size, etag, modified) of the listed objects that belong to ``item_ids`` (a todo
    page), in key order: one indexed query per ``WRITE_BATCH`` items."""
    found: list[tuple[str, int, str | None, str]] = []
    for start in range(0, len(item_ids), WRITE_BATCH):
        found.extend(MirrorObject.select(MirrorObject.key, MirrorObject.size, MirrorObject.etag,
                                         MirrorObject.modified)
                     .where((MirrorObject.docket == docket_id)
                            & MirrorObject.item.in_(item_ids[start:start + WRITE_BATCH])
                            & (MirrorObject.state == LISTED))
                     .order_by(MirrorObject.key).tuples())
    return found


def has_listing(docket_id: str) -> bool:
    return MirrorObject.select().where(MirrorObject.docket == docket_id).exists()


def handed_over(keys: list[str]) -> dict[str, str]:
    """key -> the JSON fetch read, for those of ``keys`` that hold one (one query per page)."""
    found: dict[str, str] = {}
    for start in range(0, len(keys), WRITE_BATCH):
        query = (MirrorObject.select(MirrorObject.key, MirrorObject.body)
                 .where(MirrorObject.key.in_(keys[start:start + WRITE_BATCH]) & MirrorObject.body.is_null(False))
                 .tuples())
        found.update(query.iterator())
    return found


def release_handed_over(keys: list[str]) -> None:
    """Bodies backfill has used: dropped, so the state DB keeps no second copy of the mirror."""
    with database.atomic():
        for start in range(0, len(keys), WRITE_BATCH):
            (MirrorObject.update(body=None)
             .where(MirrorObject.key.in_(keys[start:start + WRITE_BATCH])).execute())


def record_listed(docket_id: str, entries: Iterable, now: str, bodies: dict[str, str] | None = None,
                  owners: dict[str, str] | None = None) -> int:
    """Upsert the objects (``ListedObject``s) as listed now, with the JSON read of each
    (``bodies``: key -> text) kept for backfill, and the item each belongs to (``owners``:
    key -> item, "" for none; without it the rows are left to be filed, ``unfiled``);
    returns how many rows.

    One prepared statement run for every row (``pipeline.store.prepared``): building the SQL
    of 200,000 rows value by value in Python cost ten times the insert itself."""
    bodies = bodies or {}
    rows = [(e.key, docket_id, e.size, e.etag, e.modified, LISTED, None, now, bodies.get(e.key),
             None if owners is None else owners.get(e.key, "")) for e in entries]
    return prepared.run_many("mirror_object.upsert", _upsert, rows)


_FIELDS = (MirrorObject.key, MirrorObject.docket, MirrorObject.size, MirrorObject.etag, MirrorObject.modified,
           MirrorObject.state, MirrorObject.reason, MirrorObject.seen_at, MirrorObject.body, MirrorObject.item)


def _upsert(row: tuple):
    return (MirrorObject.insert_many([row], fields=list(_FIELDS))
            .on_conflict(conflict_target=[MirrorObject.key], preserve=list(_FIELDS[1:])))


def record_gone(keys: list[str], now: str, reason: str) -> int:
    """Objects no longer in the listing: kept, with the state and the reason."""
    with database.atomic():
        for start in range(0, len(keys), WRITE_BATCH):
            (MirrorObject.update(state=GONE, reason=reason, seen_at=now)
             .where(MirrorObject.key.in_(keys[start:start + WRITE_BATCH])).execute())
    return len(keys)


# --------------------------------------------------------------------------- a backfill run's scan


def new_scan(docket_id: str, now: str) -> str:
    """A new scan's id; the docket's scans left by killed runs (older than a day) dropped."""
    left = iso(parse_iso(now) - SCAN_EXPIRY)
    MirrorScan.delete().where((MirrorScan.docket == docket_id) & (MirrorScan.taken_at < left)).execute()
    return uuid.uuid4().hex


def record_scan(scan: str, docket_id: str, owned: Iterable[tuple[str, object]], now: str) -> int:
    """Write ``(item id, ListedObject)`` pairs as they come, ``WRITE_BATCH`` rows per
    transaction (a walk of S3 is not held in one write transaction); returns how many."""
    written, batch = 0, []
    for item_id, entry in owned:
        batch.append((scan, entry.key, docket_id, item_id, entry.size, entry.etag, entry.modified, now))
        if len(batch) >= WRITE_BATCH:
            written += prepared.run_many("mirror_scan.insert", _scan_insert, batch)
            batch = []
    return written + prepared.run_many("mirror_scan.insert", _scan_insert, batch)


_SCAN_FIELDS = (MirrorScan.scan, MirrorScan.key, MirrorScan.docket, MirrorScan.item, MirrorScan.size,
                MirrorScan.etag, MirrorScan.modified, MirrorScan.taken_at)


def _scan_insert(row: tuple):
    return MirrorScan.insert_many([row], fields=list(_SCAN_FIELDS))


def scanned(scan: str, item_ids: list[str]) -> list[tuple[str, int, str | None, str]]:
    """(key, size, etag, modified) of the scan's objects that belong to ``item_ids``."""
    found: list[tuple[str, int, str | None, str]] = []
    for start in range(0, len(item_ids), WRITE_BATCH):
        found.extend(MirrorScan.select(MirrorScan.key, MirrorScan.size, MirrorScan.etag, MirrorScan.modified)
                     .where((MirrorScan.scan == scan) & MirrorScan.item.in_(item_ids[start:start + WRITE_BATCH]))
                     .order_by(MirrorScan.key).tuples())
    return found


def scan_pages(scan: str, page: int | None = None) -> Iterator[list[tuple[str, str, int, str | None, str]]]:
    """The scan's rows, ``page`` at a time in (item, key) order (keyset pages): (item, key,
    size, etag, modified). An item's objects come together, in one page or two adjacent."""
    page = page or READ_PAGE
    after: tuple[str, str] | None = None
    while True:
        query = MirrorScan.select(MirrorScan.item, MirrorScan.key, MirrorScan.size, MirrorScan.etag,
                                  MirrorScan.modified).where(MirrorScan.scan == scan)
        if after is not None:
            query = query.where(Tuple(MirrorScan.item, MirrorScan.key) > Tuple(*after))
        rows = list(query.order_by(MirrorScan.item, MirrorScan.key).limit(page).tuples())
        if rows:
            yield rows
        if len(rows) < page:
            return
        after = rows[-1][:2]


def drop_scan(scan: str) -> None:
    MirrorScan.delete().where(MirrorScan.scan == scan).execute()
