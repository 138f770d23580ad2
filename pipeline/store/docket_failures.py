"""Docket stages that failed: a stage that could not produce its output for a docket (an
unexpected error, not one that stops the whole run) leaves one row with the reason, kept
until the stage runs clean for that docket again. The engine writes them
(``DocketStageTask``); ``docketeer dockets``/``stats``, the status and docket pages and the
wrappers' end-of-run line read them. Each read is one query.
"""

from __future__ import annotations

from pipeline.store.models import DocketFailure


def record(docket_id: str, stage: str, reason: str, run_id: str | None, at: str) -> DocketFailure:
    """This attempt failed: the reason is the latest one, the attempts in a row counted."""
    before = DocketFailure.get_or_none((DocketFailure.docket == docket_id) & (DocketFailure.stage == stage))
    first, attempts = (before.first_failed_at, before.attempts + 1) if before else (at, 1)
    DocketFailure.insert(docket=docket_id, stage=stage, reason=reason[:500], failed_at=at,
                         first_failed_at=first, attempts=attempts, run_id=run_id).on_conflict(
        conflict_target=[DocketFailure.docket, DocketFailure.stage],
        update={DocketFailure.reason: reason[:500], DocketFailure.failed_at: at,
                DocketFailure.attempts: attempts, DocketFailure.run_id: run_id},
    ).execute()
    return DocketFailure.get((DocketFailure.docket == docket_id) & (DocketFailure.stage == stage))


def clear(docket_id: str, stage: str) -> int:
    """The stage ran clean for this docket: its failure, if any, is over."""
    return DocketFailure.delete().where(
        (DocketFailure.docket == docket_id) & (DocketFailure.stage == stage)).execute()


def failed_since(stage: str, docket_id: str, since: str) -> bool:
    """Did this stage fail for this docket at or after ``since`` (in this run)?"""
    return DocketFailure.select().where(
        (DocketFailure.docket == docket_id) & (DocketFailure.stage == stage)
        & (DocketFailure.failed_at >= since)).exists()


def dockets_failed_since(stage: str, since: str) -> set[str]:
    """The dockets this stage failed for at or after ``since`` (``failed_since`` for all)."""
    query = DocketFailure.select(DocketFailure.docket).where(
        (DocketFailure.stage == stage) & (DocketFailure.failed_at >= since))
    return {row.docket for row in query}


def current(docket_ids: list[str] | None = None, since: str | None = None) -> list[DocketFailure]:
    """The failures standing now (of these dockets; None: all; failed at or after ``since``
    when given), by docket and stage."""
    query = DocketFailure.select()
    if docket_ids is not None:
        query = query.where(DocketFailure.docket.in_(list(docket_ids)))
    if since is not None:
        query = query.where(DocketFailure.failed_at >= since)
    return list(query.order_by(DocketFailure.docket, DocketFailure.stage))


def by_docket(docket_ids: list[str] | None = None) -> dict[str, list[DocketFailure]]:
    """docket -> its failed stages (one query; of these dockets, None: all)."""
    found: dict[str, list[DocketFailure]] = {}
    for row in current(docket_ids):
        found.setdefault(row.docket, []).append(row)
    return found
