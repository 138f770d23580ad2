"""Docket rows: lookup, creation, seals."""

from __future__ import annotations

import json
from datetime import datetime

from peewee import fn

from pipeline.clock import iso, utcnow
from pipeline.errors import DocketeerError
from pipeline.ids import agency_of_docket, validate_id
from pipeline.seals import SealFacts
from pipeline.store import item_states
from pipeline.store.models import Docket, DocketStage, ItemState, database


class UnknownDocket(DocketeerError):
    pass


# Out of the known set, their rows and data kept (no schema change: ``discovered_by`` says
# so). An operator's `docketeer forget`, or a docket the source answered 404 for. Naming the
# docket again with --docket brings it back; discovery alone does not.
FORGOTTEN = "forgotten"
NOT_FOUND = "not found"
OUT_OF_SET = (FORGOTTEN, NOT_FOUND)


def in_known_set():
    """The condition on docket rows that selects the known set."""
    return Docket.discovered_by.is_null() | Docket.discovered_by.not_in(OUT_OF_SET)


def get_docket(docket_id: str) -> Docket | None:
    return Docket.get_or_none(Docket.id == docket_id)


def require_docket(docket_id: str) -> Docket:
    docket = get_docket(docket_id)
    if docket is None:
        raise UnknownDocket(f"unknown docket {docket_id!r}")
    return docket


def ensure_dockets(docket_ids: list[str], discovered_by: str) -> int:
    """Insert rows for dockets not known yet; returns how many were new. Known rows are untouched."""
    ids = [validate_id(d, "docket id") for d in docket_ids]
    known = {d.id for d in Docket.select(Docket.id).where(Docket.id.in_(ids))} if ids else set()
    new = [
        {"id": d, "agency": agency_of_docket(d), "discovered_by": discovered_by}
        for d in dict.fromkeys(ids)
        if d not in known
    ]
    if new:
        with database.atomic():
            Docket.insert_many(new).on_conflict_ignore().execute()
    return len(new)


def readmit(docket_ids: list[str]) -> None:
    """Named on the command line: forgotten or not-found dockets are known again."""
    if docket_ids:
        Docket.update(discovered_by="cli").where(
            Docket.id.in_(docket_ids) & Docket.discovered_by.in_(OUT_OF_SET)).execute()


def leave_known_set(docket_id: str, why: str) -> bool:
    """Take the docket out of the known set (FORGOTTEN or NOT_FOUND), its rows kept; False
    if it was out already."""
    return bool(Docket.update(discovered_by=why).where(
        (Docket.id == docket_id) & in_known_set()).execute())


def out_of_set(docket: Docket) -> str | None:
    """FORGOTTEN, NOT_FOUND, or None for a docket in the known set."""
    return docket.discovered_by if docket.discovered_by in OUT_OF_SET else None


def record_resolve(docket_id: str, **fields) -> None:
    """What fetch learned resolving the docket: agency, title, documents, comment dates."""
    Docket.update(**fields).where(Docket.id == docket_id).execute()


def record_clean_pull(docket_id: str, *, watermark: str | None, pulled_at: str, new: int) -> None:
    """The end of a clean walk: where the next one starts, when, and how much it changed."""
    Docket.update(pull_watermark=watermark, last_pull_at=pulled_at, last_pull_new=new).where(
        Docket.id == docket_id).execute()


def all_known(docket_ids: list[str]) -> bool:
    """Every one of these dockets has a row (one count query)."""
    return Docket.select().where(Docket.id.in_(docket_ids)).count() == len(set(docket_ids))


def note_close_date(docket_id: str, close: str) -> None:
    """A close date announced elsewhere (the Federal Register), for a docket fetch has not
    resolved yet; a resolved docket, or one that has this date already, is not touched."""
    Docket.update(comment_end_date=close).where(
        (Docket.id == docket_id) & Docket.resolved_at.is_null()
        & (Docket.comment_end_date.is_null() | (Docket.comment_end_date != close))
    ).execute()


def all_docket_ids() -> list[str]:
    """The known set: every docket row but the forgotten and the not found."""
    return [d.id for d in Docket.select(Docket.id).where(in_known_set()).order_by(Docket.id)]


def seal_status(docket_ids: list[str] | None = None) -> dict[str, str | None]:
    """docket id -> sealed_at, in one query (the wrappers use it to pick each task's target)."""
    query = Docket.select(Docket.id, Docket.sealed_at)
    if docket_ids is not None:
        query = query.where(Docket.id.in_(docket_ids))
    return {d.id: d.sealed_at for d in query}


def seal_facts(docket: Docket, waiting: int | None = None) -> SealFacts:
    """``waiting`` given: the docket row's facts alone, without counting the items that wait
    (a read of the docket's state rows)."""
    if waiting is None:
        waiting = item_states.waiting_count(docket.id)
    return SealFacts(docket.comment_end_date, docket.last_pull_at, docket.last_pull_new,
                     docket.sealed_at, waiting)


def state_counts(docket_id: str) -> dict[str, dict[str, int]]:
    """stage -> state -> count, from the per-item state rows alone."""
    query = (
        ItemState.select(ItemState.stage, ItemState.state, fn.COUNT(ItemState.item).alias("n"))
        .where(ItemState.docket == docket_id)
        .group_by(ItemState.stage, ItemState.state)
        .tuples()
    )
    counts: dict[str, dict[str, int]] = {}
    for stage, state, n in query:
        counts.setdefault(stage, {})[state] = n
    return counts


def seal(docket_id: str, reason: str, now: datetime | None = None, why: str = "") -> str:
    """Seal a docket, recording the reason (``auto``/``manual``, with an operator's ``why``)
    and its counts at that moment; returns sealed_at."""
    if reason not in ("auto", "manual"):
        raise ValueError(f"seal reason must be auto or manual, not {reason!r}")
    docket = require_docket(docket_id)
    if docket.sealed_at:
        return docket.sealed_at
    sealed_at = iso(now or utcnow())
    counts = json.dumps(state_counts(docket_id), sort_keys=True)
    recorded = f"{reason}: {why}" if why else reason
    Docket.update(sealed_at=sealed_at, seal_reason=recorded, counts_at_seal=counts).where(
        Docket.id == docket_id
    ).execute()
    return sealed_at


def unseal(docket_id: str) -> bool:
    """Unseal: every sealed marker recorded under the old seal stops matching. True if it was sealed."""
    docket = require_docket(docket_id)
    if not docket.sealed_at:
        return False
    Docket.update(sealed_at=None, seal_reason=None, counts_at_seal=None).where(
        Docket.id == docket_id
    ).execute()
    return True


def owe_stage(docket_id: str, stage: str) -> None:
    """Make the stage's marker for this docket vouch for nothing (its output fingerprint is
    kept): the next run asks the stage again, which redoes only what its items' fingerprints
    say changed."""
    DocketStage.update(input_fingerprint=None, version=0).where(
        (DocketStage.docket == docket_id) & (DocketStage.stage == stage)).execute()
