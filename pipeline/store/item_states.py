"""Per-(stage, item) state rows: one row each, transitioned in place, never one per run."""

from __future__ import annotations

import itertools
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from datetime import datetime

import peewee
from peewee import fn

from pipeline import text_validity
from pipeline.clock import iso, parse_iso, utcnow
from pipeline.failures import RETRY, RetryPolicy, gave_up_reason
from pipeline.fingerprints import RecordsDigest
from pipeline.store import prepared
from pipeline.store.models import Docket, Item, ItemState, database

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
    next_attempt_at: str | None = None
    detail: str | None = None  # extract: the item's text sizes, what its caps are judged by

    def waits(self, now: str) -> bool:
        """A transient failure whose next attempt has not come yet: no work for now."""
        return self.state == RETRY and self.next_attempt_at is not None and self.next_attempt_at > now


def states_for_docket(stage: str, docket_id: str) -> dict[str, StateRow]:
    """All of a stage's rows for a docket in one query (never one query per item)."""
    return {row[0]: StateRow(*row) for row in prepared.raw_rows(_rows(stage, docket_id))}


def ok_without_rows(stage: str, docket_id: str, with_rows: set[str], missing: str, stray: str) -> list[str]:
    """A derived stage's rows against its states (``docketeer verify``): one line per item
    whose state is ``ok`` but that is not in ``with_rows`` ("KEY: <missing>"), and one per
    item in ``with_rows`` whose state is not ``ok`` ("KEY: <stray>")."""
    ok = {key for key, row in states_for_docket(stage, docket_id).items() if row.state == "ok"}
    return ([f"{key}: {missing}" for key in sorted(ok - with_rows)]
            + [f"{key}: {stray}" for key in sorted(with_rows - ok)])


def beside_upstream(stage: str, upstream: str, docket_id: str, item_fields: tuple[str, ...]) -> list[tuple]:
    """Every ``upstream`` row of a docket beside the item's ``stage`` row and its ``item_fields``
    (text columns), in one query: (item, upstream content hash, upstream state, own
    fingerprint, own state, *fields), None where there is no row. A stage that plans from
    its input's rows reads only the columns it decides by, joined by the store (two whole
    state reads cost a 20,000-comment docket twice as much)."""
    mine = ItemState.alias()
    query = (ItemState.select(ItemState.item, ItemState.content_hash, ItemState.state, mine.fingerprint,
                              mine.state, *(getattr(Item, name) for name in item_fields))
             .join(mine, peewee.JOIN.LEFT_OUTER, on=((mine.stage == stage) & (mine.item == ItemState.item)))
             .join_from(ItemState, Item, peewee.JOIN.LEFT_OUTER, on=(Item.key == ItemState.item))
             .where((ItemState.stage == upstream) & (ItemState.docket == docket_id)))
    return prepared.raw_rows(query)


PAGE = 5000  # state rows a planning pass holds at once


def paired_pages(stage: str, other: str, docket_id: str,
                 size: int = PAGE) -> Iterator[tuple[dict[str, StateRow], dict[str, StateRow]]]:
    """A docket's rows of ``stage``, ``size`` at a time in key order (keyset pagination),
    each page with ``other``'s rows in the same key range: a stage plans a docket of a
    million items holding two pages, never every row."""
    after = None
    while True:
        query = _rows(stage, docket_id).order_by(ItemState.item).limit(size)
        if after is not None:
            query = query.where(ItemState.item > after)
        page = {row[0]: StateRow(*row) for row in prepared.raw_rows(query)}
        if not page:
            return
        low, high = min(page), max(page)
        others = _rows(other, docket_id).where(ItemState.item.between(low, high))
        yield page, {row[0]: StateRow(*row) for row in prepared.raw_rows(others)}
        if len(page) < size:
            return
        after = high


def keys_under(stage: str, docket_id: str, item_keys: set[str], sep: str = "/") -> Iterator[str]:
    """The keys of ``stage``'s rows that belong to ``item_keys`` (``<item key><sep>...``, an
    item's file rows), streamed over the key range of those items: the rows of the items
    between them pass by without being kept."""
    if not item_keys:
        return
    low, high = min(item_keys), max(item_keys) + chr(ord(sep) + 1)
    query = (ItemState.select(ItemState.item)
             .where((ItemState.stage == stage) & (ItemState.docket == docket_id)
                    & (ItemState.item > low) & (ItemState.item < high))
             .tuples())
    for (key,) in query.iterator():
        if key.rsplit(sep, 1)[0] in item_keys:
            yield key


def rows_in_states(stage: str, docket_id: str, states: Iterable[str]) -> dict[str, StateRow]:
    """The docket's rows of ``stage`` in ``states`` only (an index range, not every row)."""
    return {row[0]: StateRow(*row)
            for row in prepared.raw_rows(_rows(stage, docket_id).where(ItemState.state.in_(list(states))))}


def count_rows(stage: str, docket_id: str) -> int:
    return ItemState.select().where((ItemState.stage == stage) & (ItemState.docket == docket_id)).count()


def _rows(stage: str, docket_id: str):
    return ItemState.select(
        ItemState.item, ItemState.fingerprint, ItemState.content_hash, ItemState.state,
        ItemState.reason, ItemState.next_attempt_at, ItemState.detail,
    ).where((ItemState.stage == stage) & (ItemState.docket == docket_id))


def items_in_state(stage: str, keys: list[str], state: str) -> set[str]:
    """Which of ``keys`` (a page of items) have this stage's row in ``state``, in one query."""
    query = ItemState.select(ItemState.item).where(
        (ItemState.stage == stage) & ItemState.item.in_(keys) & (ItemState.state == state))
    return {item for (item,) in query.tuples()}


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
    row = (stage, item, docket_id, fingerprint, content_hash, state, _reason(reason), detail, run_id, iso(utcnow()))
    if state == PENDING:
        prepared.run_one(*_PENDING, row)
    else:
        prepared.run_one(*_DECIDED, (*row, None, None, None))


# The columns of a transition's row, in the order of its tuple. A decided state ends any
# retry series (the next transient failure starts afresh: attempts, first failure and next
# attempt go NULL); ``pending`` is a retry in progress and keeps them.
_FIELDS = (
    ItemState.stage, ItemState.item, ItemState.docket, ItemState.fingerprint,
    ItemState.content_hash, ItemState.state, ItemState.reason, ItemState.detail,
    ItemState.run_id, ItemState.written_at, ItemState.attempts, ItemState.first_failed_at,
    ItemState.next_attempt_at,
)
_PENDING_FIELDS = _FIELDS[:10]


def _upsert(fields: tuple):
    def build(row: tuple):
        return ItemState.insert_many([row], fields=list(fields)).on_conflict(
            conflict_target=[ItemState.stage, ItemState.item], preserve=list(fields[2:]))
    return build


_DECIDED = ("item_state.decided", _upsert(_FIELDS))
_PENDING = ("item_state.pending", _upsert(_PENDING_FIELDS))


@dataclass(frozen=True)
class RetryStep:
    """The next step of an item's retry series after one more transient failure: its attempt
    count, when the series began, and when to try again (None: past the policy's horizon,
    the failure is given up as permanent)."""

    attempts: int
    first_failed_at: datetime
    now: datetime
    next_attempt_at: datetime | None

    @property
    def gives_up(self) -> bool:
        return self.next_attempt_at is None

    def gave_up_reason(self, last: str) -> str:
        return gave_up_reason(self.attempts, self.first_failed_at, self.now, last)


def next_retry(stage: str, item: str, *, policy: RetryPolicy, now: datetime | None = None) -> RetryStep:
    """What one more transient failure of the (stage, item) row would make of its series (one
    read, no write): a row in ``retry`` (or ``pending``: a retry in progress) goes on with its
    series, any other starts one."""
    now = now or utcnow()
    row = ItemState.get_or_none((ItemState.stage == stage) & (ItemState.item == item))
    series = row is not None and row.state in (RETRY, PENDING) and row.first_failed_at
    attempts = (row.attempts or 0) + 1 if series else 1
    first = parse_iso(row.first_failed_at) if series else now
    return RetryStep(attempts, first, now, policy.next_attempt(attempts, first, now))


def _reason(reason: str | None) -> str | None:
    """A reason as stored and shown: a failure's message may quote what a record gave (a
    lone surrogate no database takes, a control character a terminal acts on)."""
    return None if reason is None else text_validity.shown(reason)


def retry_later(stage: str, item: str, docket_id: str, reason: str, *, run_id: str,
                policy: RetryPolicy, now: datetime | None = None, step: RetryStep | None = None) -> str:
    """A transient failure: the row goes to ``retry`` with its attempt count and next attempt
    time, or — past the policy's horizon — to ``failed`` for good. Returns the state written.
    ``step``: the series' next step as the caller read it already (``next_retry``)."""
    step = step or next_retry(stage, item, policy=policy, now=now)
    if step.gives_up:
        transition(stage, item, docket_id, "failed", run_id=run_id, detail="permanent",
                   reason=step.gave_up_reason(reason))
        return "failed"
    values = {
        ItemState.docket: docket_id, ItemState.fingerprint: None, ItemState.content_hash: None,
        ItemState.state: RETRY, ItemState.reason: _reason(reason[:500]), ItemState.detail: "transient",
        ItemState.run_id: run_id, ItemState.written_at: iso(step.now), ItemState.attempts: step.attempts,
        ItemState.first_failed_at: iso(step.first_failed_at), ItemState.next_attempt_at: iso(step.next_attempt_at),
    }
    (
        ItemState.insert({ItemState.stage: stage, ItemState.item: item, **values})
        .on_conflict(conflict_target=[ItemState.stage, ItemState.item], update=values)
        .execute()
    )
    return RETRY


def earliest_retry(docket_id: str) -> str | None:
    """The earliest next attempt of any of the docket's items waiting to retry, any stage."""
    return (ItemState.select(fn.MIN(ItemState.next_attempt_at))
            .where((ItemState.docket == docket_id) & (ItemState.state == RETRY)).scalar())


def waiting_count(docket_id: str) -> int:
    """How many of the docket's items wait to retry, in any stage (auto-seal waits for them)."""
    return ItemState.select().where((ItemState.docket == docket_id) & (ItemState.state == RETRY)).count()


def refresh_retry_due(docket_id: str) -> str | None:
    """Copy the earliest next attempt onto the docket row, which every target reads anyway."""
    due = earliest_retry(docket_id)
    known = Docket.select(Docket.retry_due_at).where(Docket.id == docket_id).scalar()
    if known != due:  # no write when nothing changed: reruns leave the tables as they were
        Docket.update(retry_due_at=due).where(Docket.id == docket_id).execute()
    return due


def transition_many(rows: Iterable[Mapping]) -> int:
    """``transition`` for many rows in one statement: each (stage, item) row in place.

    A row is a mapping with ``transition``'s arguments: ``stage``, ``item``, ``docket``,
    ``state``, ``run_id`` and optionally ``fingerprint``, ``content_hash``, ``reason``,
    ``detail`` (absent means NULL, as in ``transition``), and for a ``retry`` row its series,
    ``attempts``, ``first_failed_at`` and ``next_attempt_at`` (``retry_later``'s values). Rows share one ``written_at``; of
    two rows for the same (stage, item) the later wins, as two transitions would leave it.
    Returns the number of rows written."""
    now = iso(utcnow())
    decided, pending = {}, {}
    for row in rows:
        get = row.get
        key = row["stage"], row["item"]
        values = (row["stage"], row["item"], row["docket"], get("fingerprint"), get("content_hash"),
                  row["state"], _reason(get("reason")), get("detail"), get("run_id"), now)
        decided.pop(key, None)
        pending.pop(key, None)
        if row["state"] == PENDING:
            pending[key] = values
        else:
            decided[key] = (*values, get("attempts"), get("first_failed_at"), get("next_attempt_at"))
    with database.atomic():
        prepared.run_many(*_PENDING, list(pending.values()))
        prepared.run_many(*_DECIDED, list(decided.values()))
    return len(decided) + len(pending)


def mark_pending_many(stage: str, items: Iterable[tuple[str, str]], *, run_id: str, reason: str) -> int:
    """``mark_pending`` for many (item, docket) pairs in one statement (a batch of items
    about to be read), committed before the caller goes on."""
    now = iso(utcnow())
    rows = [(stage, item, docket_id, None, None, PENDING, reason, None, run_id, now) for item, docket_id in items]
    return prepared.run_many(*_PENDING, rows)


def mark_pending(stage: str, item: str, docket_id: str, *, run_id: str, reason: str) -> None:
    """Record intent before an irreversible side effect; a surviving row means a process died."""
    transition(stage, item, docket_id, PENDING, run_id=run_id, reason=reason)


def drop(stage: str, item_keys: Iterable[str]) -> None:
    """Delete the stage's rows of items that no longer exist (an attachment the comment lost),
    so they stop counting in `docketeer stats`."""
    keys = sorted(item_keys)
    if keys:
        ItemState.delete().where((ItemState.stage == stage) & ItemState.item.in_(keys)).execute()


def upsert_walk_rows(rows: list[dict]) -> None:
    """Fetch's rows of one list page (the columns ``transition`` writes, and ``written_at``);
    a row already there takes the new values and keeps its retry series, as a ``pending``
    transition's does: the same prepared statement, run for every row (peewee building a
    page's multi-row SQL value by value cost more than the write)."""
    names = [field.name for field in _PENDING_FIELDS]
    prepared.run_many(*_PENDING, [tuple(row.get(name) for name in names) for row in rows])


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
        if isinstance(database.obj, peewee.PostgresqlDatabase):
            query = query.for_update("FOR UPDATE SKIP LOCKED")
        items = [row.item for row in query]
        if items:
            ItemState.update(
                state="stale", fingerprint=None, reason="re-driven", run_id=run_id,
                written_at=iso(utcnow()), attempts=None, first_failed_at=None, next_attempt_at=None,
            ).where((ItemState.stage == stage) & (ItemState.item.in_(items))).execute()
    return items


def docket_output_fingerprint(stage: str, docket_id: str) -> str:
    """A digest of what the stage produced for the docket: same rows, same digest.

    Computed from the state rows alone (item, state, content hash), in one ordered query.
    """
    query = (
        ItemState.select(ItemState.item, ItemState.state, ItemState.content_hash)
        .where((ItemState.stage == stage) & (ItemState.docket == docket_id))
        .order_by(ItemState.item)
        .tuples()
    )
    return _output_digest(query.iterator())


def output_fingerprints(stage: str) -> dict[str, str]:
    """docket -> ``docket_output_fingerprint``, for every docket with rows of the stage, in
    one ordered pass (building state for a benchmark of many dockets)."""
    query = (
        ItemState.select(ItemState.docket, ItemState.item, ItemState.state, ItemState.content_hash)
        .where(ItemState.stage == stage)
        .order_by(ItemState.docket, ItemState.item)
        .tuples()
    )
    grouped = itertools.groupby(query.iterator(), key=lambda row: row[0])
    return {docket: _output_digest(row[1:] for row in rows) for docket, rows in grouped}


def _output_digest(rows: Iterable[tuple]) -> str:
    digest = RecordsDigest()
    for item, state, content_hash in rows:
        digest.add(item, state, content_hash or "")
    return digest.hexdigest()
