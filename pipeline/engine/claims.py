"""Item claims: two workers on one (stage, docket) split its items instead of one failing.

The worker that holds the (stage, docket) lease runs the stage as always (it plans, and it
alone writes the marker). A second worker on a shared (PostgreSQL) state DB that finds the
lease held joins its run as a helper: both plan from the state rows with the stage's own
planning, offer their todo under the lease's token (the session) and take it in batches
with ``SELECT ... FOR UPDATE SKIP LOCKED``, so no item is worked twice. A claim expires
(``lease_seconds``, renewed on progress), so a dead claimer's items are taken again. The
holder returns only once every item it offered is done, so its marker is written only when
no item is unfinished. Offers and claims need the session's lease row (read FOR SHARE): once
the holder released it nothing more is handed out, and its rows are cleared.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Iterable, Iterator
from datetime import timedelta
from typing import TypeVar

from peewee import EXCLUDED

from pipeline.clock import iso, utcnow
from pipeline.engine.lease_holders import holder_alive
from pipeline.store.models import ItemClaim, Lease, database

T = TypeVar("T")

WAIT_SECONDS = 1.0  # the holder's pause while a helper still works items it offered


def supported() -> bool:
    """Only PostgreSQL has SKIP LOCKED, and only a shared state DB has other hosts."""
    from pipeline.store.db import is_postgres

    return is_postgres(database.obj)


def session_of(stage: str, docket_id: str) -> str | None:
    """The token of the live lease on (stage, docket): the run a helper joins. An expired
    one, or one whose holder on this host is dead (``lease_holders.holder_alive``, the rule
    ``leases.acquire`` takes over by), is not joined: its holder is taken over instead."""
    row = Lease.get_or_none((Lease.stage == stage) & (Lease.docket == docket_id)
                            & (Lease.expires_at > iso(utcnow())))
    return row.token if row and holder_alive(row.holder, row.expires_at) else None


def _session_live(stage: str, docket_id: str, session: str) -> bool:
    """The session's lease, read FOR SHARE: its holder cannot release it until we commit."""
    query = (Lease.select(Lease.token)
             .where((Lease.stage == stage) & (Lease.docket == docket_id) & (Lease.token == session))
             .for_update("FOR SHARE"))
    return query.exists()


def offer(stage: str, docket_id: str, session: str, items: list[str]) -> int:
    """Rows for ``items`` in this session (rows of an older session are reset, rows of this
    one kept as they are); 0 when the session has ended."""
    if not items:
        return 0
    rows = [{"stage": stage, "item": item, "docket": docket_id, "session": session} for item in items]
    with database.atomic():
        if not _session_live(stage, docket_id, session):
            return 0
        for start in range(0, len(rows), 1000):
            (ItemClaim.insert_many(rows[start:start + 1000])
             .on_conflict(conflict_target=[ItemClaim.stage, ItemClaim.item],
                          update={ItemClaim.session: EXCLUDED.session, ItemClaim.docket: EXCLUDED.docket,
                                  ItemClaim.claimer: None, ItemClaim.expires_at: "",
                                  ItemClaim.done: False},
                          where=(ItemClaim.session != EXCLUDED.session))
             .execute())
    return len(rows)


def claim(stage: str, docket_id: str, session: str, claimer: str, items: list[str],
          limit: int, seconds: int) -> list[str]:
    """Up to ``limit`` of ``items`` that are free (or whose claim expired), now ``claimer``'s;
    rows another transaction holds are skipped, never waited for."""
    now = utcnow()
    with database.atomic():
        if not items or not _session_live(stage, docket_id, session):
            return []
        free = (ItemClaim.select(ItemClaim.item)
                .where((ItemClaim.stage == stage) & (ItemClaim.session == session)
                       & ~ItemClaim.done & (ItemClaim.expires_at <= iso(now))
                       & ItemClaim.item.in_(items))
                .order_by(ItemClaim.item).limit(limit)
                .for_update("FOR UPDATE SKIP LOCKED"))
        taken = [row.item for row in free]
        if taken:
            (ItemClaim.update(claimer=claimer, expires_at=iso(now + timedelta(seconds=seconds)))
             .where((ItemClaim.stage == stage) & ItemClaim.item.in_(taken)).execute())
    return taken


def finish(stage: str, session: str, items: list[str]) -> None:
    """Their states are written: no one takes them again in this session."""
    if items:
        (ItemClaim.update(done=True)
         .where((ItemClaim.stage == stage) & (ItemClaim.session == session)
                & ItemClaim.item.in_(items)).execute())


def renew(stage: str, session: str, claimer: str, seconds: int) -> int:
    """A live claimer keeps its unfinished claims (called on its progress reports)."""
    return (ItemClaim.update(expires_at=iso(utcnow() + timedelta(seconds=seconds)))
            .where((ItemClaim.stage == stage) & (ItemClaim.session == session)
                   & (ItemClaim.claimer == claimer) & ~ItemClaim.done).execute())


def held_by_others(stage: str, session: str, claimer: str, items: list[str]) -> int:
    """Of ``items``, those another worker claimed and has not finished (claim unexpired)."""
    if not items:
        return 0
    return (ItemClaim.select()
            .where((ItemClaim.stage == stage) & (ItemClaim.session == session) & ~ItemClaim.done
                   & (ItemClaim.expires_at > iso(utcnow())) & (ItemClaim.claimer != claimer)
                   & ItemClaim.item.in_(items))
            .count())


def release(stage: str, session: str, claimer: str) -> int:
    """A claimer that stops (its budget spent, a run-stopping error, nothing left to take)
    frees what it claimed and did not finish: the holder takes those items at once instead
    of waiting for their claims to expire (only a dead claimer's wait for expiry)."""
    return (ItemClaim.update(claimer=None, expires_at="")
            .where((ItemClaim.stage == stage) & (ItemClaim.session == session)
                   & (ItemClaim.claimer == claimer) & ~ItemClaim.done).execute())


def claimed_by_others(stage: str, session: str, claimer: str) -> bool:
    """Another worker claimed items in this session: it may have written their rows, so the
    holder that wrote none itself must not keep the output recorded before the run."""
    return (ItemClaim.select()
            .where((ItemClaim.stage == stage) & (ItemClaim.session == session)
                   & ItemClaim.claimer.is_null(False) & (ItemClaim.claimer != claimer))
            .exists())


def clear(stage: str, docket_id: str, *, session: str | None = None, keep: str | None = None) -> int:
    """Claim rows of (stage, docket): one session's (its holder is done with them), or every
    one but ``keep``'s (a new holder: the sessions before it are over)."""
    here = (ItemClaim.stage == stage) & (ItemClaim.docket == docket_id)
    if session is not None:
        here &= ItemClaim.session == session
    if keep is not None:
        here &= ItemClaim.session != keep
    return ItemClaim.delete().where(here).execute()


class ItemClaims:
    """One worker's share of a (stage, docket) run; a stage takes its todo through it."""

    def __init__(self, stage: str, docket_id: str, session: str, claimer: str, *,
                 holder: bool, batch: int, seconds: int, on_wait=None) -> None:
        self.stage, self.docket_id, self.session, self.claimer = stage, docket_id, session, claimer
        self.holder, self.batch, self.seconds = holder, batch, seconds
        self.on_wait = on_wait  # the holder's lease renewal: waiting for helpers is not dying

    def take(self, todo: Iterable[str]) -> Iterator[str]:
        """The keys of ``todo`` this worker claims, a batch at a time, in key order. The
        holder waits for what helpers still hold and takes what they left to expire."""
        keys = sorted(todo)
        offer(self.stage, self.docket_id, self.session, keys)
        while True:
            taken = claim(self.stage, self.docket_id, self.session, self.claimer, keys,
                          self.batch, self.seconds)
            if taken:
                yield from taken
                continue
            if not (self.holder and held_by_others(self.stage, self.session, self.claimer, keys)):
                return
            if self.on_wait:
                self.on_wait()
            time.sleep(WAIT_SECONDS)

    def work_of(self, todo: Iterable[T], key: Callable[[T], str]) -> Iterator[T]:
        """The elements of ``todo`` whose keys (``key(element)``) this worker claims, in
        key order (``take``)."""
        by_key = {key(element): element for element in todo}
        for claimed in self.take(by_key):
            yield by_key[claimed]

    def done(self, keys: list[str]) -> None:
        finish(self.stage, self.session, keys)

    def renew(self) -> None:
        renew(self.stage, self.session, self.claimer, self.seconds)

    def release(self) -> None:
        release(self.stage, self.session, self.claimer)

    def others_claimed(self) -> bool:
        return claimed_by_others(self.stage, self.session, self.claimer)
