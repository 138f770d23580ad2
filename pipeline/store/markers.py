"""Docket-stage completion markers: the protocol every marker store follows, and the state
DB's (``docket_stage`` rows, beside the item rows they vouch for).

A marker store reads a ``Probe`` (everything a target needs, in one indexed read), writes a
marker, clears one (re-drive), and answers ``docketeer verify`` which dockets its markers
say are done. The index DB's store is ``pipeline.store.index_markers``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

from peewee import JOIN, fn

from pipeline.clock import iso, utcnow
from pipeline.store import item_states
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
    upstream_output: str | None = None  # what the marker's input must equal to vouch for it
    retry_due_at: str | None = None  # the docket's earliest next attempt of a waiting item


class MarkerStore(Protocol):
    """Where one stage records the dockets it has done, and under which input."""

    stage: str
    where: str  # "state DB", "index DB": named in verify's report

    def probe(self, docket_id: str) -> Probe: ...

    def input_fingerprint(self, docket_id: str) -> str | None:
        """What a marker written now would vouch for: the stage's input as recorded now."""

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str) -> None: ...

    def clear(self, docket_id: str) -> None:
        """Make the stage incomplete for this docket (re-drive)."""

    def max_version(self) -> int: ...

    def claims(self, dockets: dict[str, Docket]) -> list[str] | None:
        """The dockets whose marker says done now (None: this store's database does not
        exist yet, so nothing is claimed or to check). ``dockets``: id -> its row."""


class StateMarkers:
    """A stage's markers in the state DB. The marker also records the stage's output
    fingerprint (a digest of its item rows), which is the input of the stage after it."""

    where = "state DB"

    def __init__(self, stage: str, input_stage: str | None) -> None:
        self.stage, self.input_stage = stage, input_stage

    def probe(self, docket_id: str) -> Probe:
        return probe(docket_id, self.stage, self.input_stage)

    def input_fingerprint(self, docket_id: str) -> str | None:
        return output_fingerprint(docket_id, self.input_stage) if self.input_stage else None

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str) -> None:
        write_marker(docket_id, self.stage, version=version, sealed_at=sealed_at,
                     input_fingerprint=input_fingerprint,
                     output_fingerprint=item_states.docket_output_fingerprint(self.stage, docket_id),
                     run_id=run_id)

    def refresh_output(self, docket_id: str) -> None:
        """The stage's rows changed under its marker (OCR merged text into extract's): record
        the new output fingerprint so the stage after it sees the change. The marker's input,
        version and seal stay as they were; no marker, nothing to refresh."""
        marker = read_marker(docket_id, self.stage)
        if marker is not None:
            self.write(docket_id, version=marker.version, sealed_at=marker.sealed_at,
                       input_fingerprint=marker.input_fingerprint, run_id=marker.run_id)

    def clear(self, docket_id: str) -> None:
        clear_marker(docket_id, self.stage)

    def max_version(self) -> int:
        return max_version(self.stage)

    def claims(self, dockets: dict[str, Docket]) -> list[str]:
        """Markers that vouch for the input's current output, or were recorded under the
        docket's current seal: the two ways a FingerprintTarget or SealedDocketTarget says done."""
        inputs = stage_markers(self.input_stage) if self.input_stage else {}
        claimed = []
        for docket, marker in sorted(stage_markers(self.stage).items()):
            upstream = inputs.get(docket)
            if vouches(marker.input_fingerprint, upstream.output_fingerprint if upstream else None) or \
                    _under_current_seal(marker.sealed_at, marker.version, dockets.get(docket)):
                claimed.append(docket)
        return claimed


def state_markers(stage: str, input_stage: str | None, runtime=None, invocation=None) -> StateMarkers:
    """A stage declaration's marker store factory for the state DB (the default)."""
    return StateMarkers(stage, input_stage)


def vouches(marker_input: str | None, upstream_output: str | None) -> bool:
    return marker_input is not None and marker_input == upstream_output


def _under_current_seal(marker_sealed_at: str | None, version: int, docket: Docket | None) -> bool:
    # Version 0 is a marker a re-drive cleared (clear_marker): it claims nothing.
    return (docket is not None and docket.sealed_at is not None
            and marker_sealed_at == docket.sealed_at and version > 0)


# --- the docket_stage table ------------------------------------------------------------------


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


def stage_markers(stage: str) -> dict[str, DocketStage]:
    """docket -> the stage's marker, for every docket (verify)."""
    return {m.docket: m for m in DocketStage.select().where(DocketStage.stage == stage)}
