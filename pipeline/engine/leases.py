"""(stage, docket) leases: two independent invocations never work the same docket stage at once.

A holder is ``host_id:pid``; whether it still lives is ``lease_holders.holder_alive``, the
rule a helper joining a lease applies too (``claims.session_of``).
"""

from __future__ import annotations

import os
import uuid
from contextlib import contextmanager
from datetime import timedelta

from pipeline.clock import eastern_instant, iso, utcnow
from pipeline.engine.lease_holders import holder_alive, host_id
from pipeline.errors import LeaseHeld
from pipeline.store.models import Lease, database


def holder_name() -> str:
    return f"{host_id()}:{os.getpid()}"


def acquire(stage: str, docket_id: str, seconds: int) -> str:
    """Take the lease or raise LeaseHeld; an expired lease is taken over."""
    token = uuid.uuid4().hex
    now = utcnow()
    here = (Lease.stage == stage) & (Lease.docket == docket_id)
    with database.atomic():
        Lease.delete().where(here & (Lease.expires_at <= iso(now))).execute()
        _drop_if_holder_died(here)
        Lease.insert(
            stage=stage,
            docket=docket_id,
            token=token,
            holder=holder_name(),
            expires_at=iso(now + timedelta(seconds=seconds)),
        ).on_conflict_ignore().execute()
    # The primary key lets exactly one inserter win; everyone else sees another token.
    current = Lease.get_or_none(here)
    if current is None or current.token != token:
        who = f"{current.holder} until {eastern_instant(current.expires_at, seconds=True)}" if current else "another run"
        raise LeaseHeld(f"{stage} {docket_id} is being worked by {who}", holder=who)
    return token


def _drop_if_holder_died(here) -> None:
    """A lease held by a dead process on this host (killed, OOM) is taken over at once."""
    current = Lease.get_or_none(here)
    if current is not None and not holder_alive(current.holder, current.expires_at):
        Lease.delete().where(here & (Lease.token == current.token)).execute()


def renew(stage: str, docket_id: str, token: str, seconds: int) -> bool:
    expires = iso(utcnow() + timedelta(seconds=seconds))
    return bool(
        Lease.update(expires_at=expires)
        .where((Lease.stage == stage) & (Lease.docket == docket_id) & (Lease.token == token))
        .execute()
    )


def release(stage: str, docket_id: str, token: str) -> None:
    """Only the holder's token releases it."""
    Lease.delete().where(
        (Lease.stage == stage) & (Lease.docket == docket_id) & (Lease.token == token)
    ).execute()


@contextmanager
def held(stage: str, docket_id: str, seconds: int):
    token = acquire(stage, docket_id, seconds)
    try:
        yield token
    finally:
        release(stage, docket_id, token)
        _clear_claims(stage, docket_id, token)


def _clear_claims(stage: str, docket_id: str, token: str) -> None:
    """The item claims of the run that held the lease: released first, so that no helper
    offers or claims in its session any more (pipeline/engine/claims.py)."""
    from pipeline.engine import claims

    if claims.supported():
        claims.clear(stage, docket_id, session=token)
