"""Docket-stage completion markers in the state DB, read by the targets in one query."""

from __future__ import annotations

from dataclasses import dataclass

from peewee import JOIN, fn

from pipeline.clock import iso, utcnow
from pipeline.store.models import Docket, DocketStage


@dataclass(frozen=True)
class Probe:
    """Everything a target needs to decide completeness, read in one indexed query."""

    docket_exists: bool
    docket_sealed_at: str | None = None
    last_pull_at: str | None = None
    marker_version: int | None = None
    marker_sealed_at: str | None = None
    marker_input: str | None = None
    upstream_output: str | None = None
    retry_due_at: str | None = None  # the docket's earliest next attempt of a waiting item


def probe(docket_id: str, stage: str, upstream: str | None) -> Probe:
    """One query: the docket row, this stage's marker and the upstream stage's marker."""
    mine = DocketStage.alias("m")
    up = DocketStage.alias("u")
    query = (
        Docket.select(
            Docket.sealed_at,
            Docket.last_pull_at,
            mine.version,
            mine.sealed_at,
            mine.input_fingerprint,
            up.output_fingerprint,
            Docket.retry_due_at,
        )
        .join(mine, JOIN.LEFT_OUTER, on=(mine.docket == Docket.id) & (mine.stage == stage))
        .switch(Docket)
        .join(up, JOIN.LEFT_OUTER, on=(up.docket == Docket.id) & (up.stage == (upstream or "")))
        .where(Docket.id == docket_id)
        .tuples()
    )
    row = query.first()
    if row is None:
        return Probe(docket_exists=False)
    return Probe(True, *row)


def write_marker(
    docket_id: str,
    stage: str,
    *,
    version: int,
    sealed_at: str | None,
    input_fingerprint: str | None,
    output_fingerprint: str | None,
    run_id: str,
) -> None:
    values = {
        DocketStage.version: version,
        DocketStage.sealed_at: sealed_at,
        DocketStage.input_fingerprint: input_fingerprint,
        DocketStage.output_fingerprint: output_fingerprint,
        DocketStage.completed_at: iso(utcnow()),
        DocketStage.run_id: run_id,
    }
    (
        DocketStage.insert({DocketStage.docket: docket_id, DocketStage.stage: stage, **values})
        .on_conflict(conflict_target=[DocketStage.docket, DocketStage.stage], update=values)
        .execute()
    )


def read_marker(docket_id: str, stage: str) -> DocketStage | None:
    return DocketStage.get_or_none((DocketStage.docket == docket_id) & (DocketStage.stage == stage))


def clear_marker(docket_id: str, stage: str) -> None:
    """Make the stage incomplete for this docket (re-drive); its output fingerprint is kept."""
    DocketStage.update(input_fingerprint=None, version=0).where(
        (DocketStage.docket == docket_id) & (DocketStage.stage == stage)
    ).execute()


def output_fingerprint(docket_id: str, stage: str) -> str | None:
    marker = read_marker(docket_id, stage)
    return marker.output_fingerprint if marker else None


def max_version(stage: str) -> int:
    return DocketStage.select(fn.MAX(DocketStage.version)).where(DocketStage.stage == stage).scalar() or 0
