"""The run log: one row per task run, with its counters and whether it ended clean."""

from __future__ import annotations

import json
import uuid

from pipeline.clock import iso, utcnow
from pipeline.store import docket_failures
from pipeline.store.models import Run


def start_run(task: str, stage: str | None, docket_id: str | None) -> str:
    run_id = uuid.uuid4().hex
    Run.insert(
        run_id=run_id, task=task, stage=stage, docket=docket_id, started_at=iso(utcnow())
    ).execute()
    return run_id


def finish_run(
    run_id: str, *, clean: bool, counters: dict, message: str = "", budget_spent: bool = False
) -> None:
    Run.update(
        finished_at=iso(utcnow()),
        clean=clean,
        counters=json.dumps(counters, sort_keys=True),
        message=message[:2000],
        budget_spent=budget_spent,
    ).where(Run.run_id == run_id).execute()


def finished_since(stage: str, docket_id: str, since: str) -> bool:
    """Did a run of this stage over this docket finish clean, stop on its budget, or fail for
    this docket alone (a recorded failure: the next run tries again), after ``since``?"""
    return (
        Run.select()
        .where(
            (Run.stage == stage) & (Run.docket == docket_id) & Run.finished_at.is_null(False)
            & ((Run.clean == True) | (Run.budget_spent == True))  # noqa: E712
            & (Run.started_at >= since)
        )
        .exists()
    ) or docket_failures.failed_since(stage, docket_id, since)


def dockets_finished_since(stage: str, since: str) -> set[str]:
    """The dockets a run of this stage finished clean, stopped on its budget, or failed for,
    after ``since`` (``finished_since`` for every docket, in one query per table)."""
    query = Run.select(Run.docket).where(
        (Run.stage == stage) & Run.finished_at.is_null(False)
        & ((Run.clean == True) | (Run.budget_spent == True))  # noqa: E712
        & (Run.started_at >= since)
    )
    return {r.docket for r in query.distinct()} | docket_failures.dockets_failed_since(stage, since)


def dockets_run_since(docket_ids: list[str], since: str) -> set[str]:
    """Which of these dockets had a task run start at or after ``since``."""
    query = Run.select(Run.docket).where(Run.docket.in_(docket_ids) & (Run.started_at >= since))
    return {r.docket for r in query.distinct()}


def by_run_id(run_ids: list[str]) -> dict[str, Run]:
    """run_id -> its row, for the runs that wrote some rows (one query)."""
    return {r.run_id: r for r in Run.select().where(Run.run_id.in_(list(set(run_ids))))} if run_ids else {}


def budget_stopped_since(docket_ids: list[str] | None, since: str) -> dict[str, list[str]]:
    """Which dockets (of these; None: any) had a stage run stop on its budget at or after
    ``since``, and which stages (one query): the dockets a run left partial, to be continued
    by the next."""
    where = (Run.budget_spent == True) & (Run.started_at >= since)  # noqa: E712
    if docket_ids is not None:
        where &= Run.docket.in_(list(docket_ids))
    query = Run.select(Run.docket, Run.stage).where(where).distinct()
    stopped: dict[str, list[str]] = {}
    for row in query:
        stopped.setdefault(row.docket, []).append(row.stage)
    return {docket: sorted(stages) for docket, stages in sorted(stopped.items())}
