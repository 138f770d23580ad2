"""Per-(stage, item) state rows: one row each, transitioned in place, never one per run."""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import peewee

from pipeline.clock import iso, utcnow
from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.store.models import ItemState, database

PENDING = "pending"
TERMINAL = frozenset(
    {"ok", "skipped", "unchanged", "ocr_needed", "failed", "unsupported", "gone", "too_large",
     "withdrawn", "stale"}
)


@dataclass(frozen=True)
class StateRow:
    item: str
    fingerprint: str | None
    content_hash: str | None
    state: str
    reason: str | None


def states_for_docket(stage: str, docket_id: str) -> dict[str, StateRow]:
    """All of a stage's rows for a docket in one query (never one query per item)."""
    query = (
        ItemState.select(
            ItemState.item, ItemState.fingerprint, ItemState.content_hash, ItemState.state,
            ItemState.reason,
        )
        .where((ItemState.stage == stage) & (ItemState.docket == docket_id))
        .tuples()
    )
    return {row[0]: StateRow(*row) for row in query}


def transition(
    stage: str,
    item: str,
    docket_id: str,
    state: str,
    *,
    run_id: str,
    fingerprint: str | None = None,
    content_hash: str | None = None,
    reason: str | None = None,
    detail: str | None = None,
) -> None:
    """Move the (stage, item) row to ``state`` in place (insert the first time)."""
    values = {
        ItemState.docket: docket_id,
        ItemState.fingerprint: fingerprint,
        ItemState.content_hash: content_hash,
        ItemState.state: state,
        ItemState.reason: reason,
        ItemState.detail: detail,
        ItemState.run_id: run_id,
        ItemState.written_at: iso(utcnow()),
    }
    (
        ItemState.insert({ItemState.stage: stage, ItemState.item: item, **values})
        .on_conflict(conflict_target=[ItemState.stage, ItemState.item], update=values)
        .execute()
    )


# transition_many's columns, in the order of its rows' tuples.
_MANY_FIELDS = (
    ItemState.stage, ItemState.item, ItemState.docket, ItemState.fingerprint,
    ItemState.content_hash, ItemState.state, ItemState.reason, ItemState.detail,
    ItemState.run_id, ItemState.written_at,
)
_MANY_PRESERVE = _MANY_FIELDS[2:]


def transition_many(rows: Iterable[Mapping]) -> int:
    """``transition`` for many rows in one statement: each (stage, item) row in place.

    A row is a mapping with ``transition``'s arguments: ``stage``, ``item``, ``docket``,
    ``state``, ``run_id`` and optionally ``fingerprint``, ``content_hash``, ``reason``,
    ``detail`` (absent means NULL, as in ``transition``). Rows share one ``written_at``; of
    two rows for the same (stage, item) the later wins, as two transitions would leave it.
    Returns the number of rows written."""
    now = iso(utcnow())
    values = {}
    for row in rows:
        get = row.get
        values[row["stage"], row["item"]] = (
            row["stage"], row["item"], row["docket"], get("fingerprint"), get("content_hash"),
            row["state"], get("reason"), get("detail"), get("run_id"), now,
        )
    if values:
        _upsert(list(values.values()))
    return len(values)


_sqlite_upsert: str | None = None


def _upsert(values: list[tuple]) -> None:
    def upsert(rows):
        return ItemState.insert_many(rows, fields=list(_MANY_FIELDS)).on_conflict(
            conflict_target=[ItemState.stage, ItemState.item], preserve=list(_MANY_PRESERVE))

    if not isinstance(database.obj, peewee.SqliteDatabase):
        upsert(values).execute()
        return
    # SQLite: peewee writes the statement for one row and sqlite3 runs it for every row.
    # Building the SQL of hundreds of rows value by value costs more in Python than the
    # insert itself (measured: 8 ms against 1.5 ms for 200 rows), on every extract batch.
    global _sqlite_upsert
    if _sqlite_upsert is None:  # the same statement every time (only the values change)
        _sqlite_upsert = upsert(values[:1]).sql()[0]
    with database.atomic(), peewee.__exception_wrapper__:  # sqlite3 errors as peewee's
        database.cursor().executemany(_sqlite_upsert, values)
    counters.incr(ROWS_WRITTEN)


def mark_pending(stage: str, item: str, docket_id: str, *, run_id: str, reason: str) -> None:
    """Record intent before an irreversible side effect; a surviving row means a process died."""
    transition(stage, item, docket_id, PENDING, run_id=run_id, reason=reason)


def pending_items(stage: str, docket_id: str) -> list[str]:
    query = ItemState.select(ItemState.item).where(
        (ItemState.stage == stage) & (ItemState.docket == docket_id) & (ItemState.state == PENDING)
    )
    return [row.item for row in query]


def all_pending(older_than: str | None = None) -> list[ItemState]:
    query = ItemState.select().where(ItemState.state == PENDING)
    if older_than:
        query = query.where(ItemState.written_at < older_than)
    return list(query.order_by(ItemState.written_at))


def mark_stale(stage: str, docket_id: str, states: Iterable[str], limit: int, run_id: str) -> list[str]:
    """Re-drive: the oldest ``limit`` rows in ``states`` become ``stale`` so the stage redoes them."""
    with database.atomic():
        query = (
            ItemState.select(ItemState.item)
            .where(
                (ItemState.stage == stage)
                & (ItemState.docket == docket_id)
                & (ItemState.state.in_(list(states)))
            )
            .order_by(ItemState.written_at, ItemState.item)
            .limit(limit)
        )
        if isinstance(database.obj, __import__("peewee").PostgresqlDatabase):
            query = query.for_update("FOR UPDATE SKIP LOCKED")
        items = [row.item for row in query]
        if items:
            ItemState.update(
                state="stale", fingerprint=None, reason="re-driven", run_id=run_id,
                written_at=iso(utcnow()),
            ).where((ItemState.stage == stage) & (ItemState.item.in_(items))).execute()
    return items


def docket_output_fingerprint(stage: str, docket_id: str) -> str:
    """A digest of what the stage produced for the docket: same rows, same digest.

    Computed from the state rows alone (item, state, content hash), in one ordered query.
    """
    digest = hashlib.sha256()
    query = (
        ItemState.select(ItemState.item, ItemState.state, ItemState.content_hash)
        .where((ItemState.stage == stage) & (ItemState.docket == docket_id))
        .order_by(ItemState.item)
        .tuples()
    )
    for item, state, content_hash in query:
        digest.update(f"{item}\x1f{state}\x1f{content_hash or ''}\x1e".encode())
    return digest.hexdigest()
