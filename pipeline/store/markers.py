"""Docket-stage completion markers: the protocol every marker store follows, and the state
DB's (``docket_stage`` rows, beside the item rows they vouch for).

A marker store reads a ``Probe`` (everything a target needs, in one indexed read), writes a
marker, clears one (re-drive), and answers ``docketeer verify`` which dockets its markers
say are done. The index DB's store is ``pipeline.store.index_markers``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from peewee import JOIN, fn

from pipeline.clock import iso, utcnow
from pipeline.counters import COMPLETION_READS_STATE, count_completion_read
from pipeline.store import dockets as docket_rows
from pipeline.store import item_states
from pipeline.store.models import Docket, DocketStage, database


class Probe(NamedTuple):
    """Everything a target needs to decide completeness, read in one indexed query. (A tuple:
    a wrapper makes one per known docket, 100,000 of them; a frozen dataclass costs 5x.)"""

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

    def probes(self, docket_ids: list[str] | None = None) -> dict[str, Probe]:
        """``probe`` of many dockets (None: the known set) in one read per database: the
        wrappers prune finished dockets with it before Luigi sees a task."""

    def input_fingerprint(self, docket_id: str) -> str | None:
        """What a marker written now would vouch for: the stage's input as recorded now."""

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str, kept_output: str | None = None) -> None:
        """``kept_output``: what ``hold_output`` returned, when the run wrote no item row
        since (a store that records the stage's output keeps it instead of reading every row)."""

    def hold_output(self, docket_id: str) -> str | None:
        """Before a run: the recorded output of the stage, cleared until the run ends, so a
        run that dies after writing item rows leaves no output that vouches for old rows."""

    def restore_output(self, docket_id: str, kept_output: str | None) -> None:
        """After a run that wrote no item row and no marker: the held output stands again."""

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

    def probes(self, docket_ids: list[str] | None = None) -> dict[str, Probe]:
        return probes(self.stage, self.input_stage, docket_ids)

    def input_fingerprint(self, docket_id: str) -> str | None:
        return output_fingerprint(docket_id, self.input_stage) if self.input_stage else None

    def write(self, docket_id: str, *, version: int, sealed_at: str | None,
              input_fingerprint: str | None, run_id: str, kept_output: str | None = None) -> None:
        # A run that wrote no item row keeps the output it found: a no-op fetch of an open
        # docket of a million comments reads none of them.
        output = kept_output or item_states.docket_output_fingerprint(self.stage, docket_id)
        write_marker(docket_id, self.stage, version=version, sealed_at=sealed_at,
                     input_fingerprint=input_fingerprint, output_fingerprint=output, run_id=run_id)

    def hold_output(self, docket_id: str) -> str | None:
        held = output_fingerprint(docket_id, self.stage)
        if held is not None:
            set_output(docket_id, self.stage, None)
        return held

    def restore_output(self, docket_id: str, kept_output: str | None) -> None:
        if kept_output is not None:
            set_output(docket_id, self.stage, kept_output)

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
    row = _probe_query(stage, upstream).where(Docket.id == docket_id).first()
    if row is None:
        return Probe(docket_exists=False)
    return Probe(True, *row[1:])


def probes(stage: str, upstream: str | None, docket_ids: list[str] | None = None) -> dict[str, Probe]:
    """``probe`` of every docket of the known set (or of ``docket_ids``; a missing one is
    ``Probe(docket_exists=False)``), in one query."""
    found = {row[0]: Probe(True, *row[1:]) for row in probe_rows(stage, upstream, docket_ids)}
    if docket_ids is None:
        return found
    return {d: found.get(d, Probe(docket_exists=False)) for d in docket_ids}


def probe_rows(stage: str, upstream: str | None, docket_ids: list[str] | None = None) -> list[tuple]:
    """The rows ``probes`` makes its probes of: (docket id, then a probe's fields after
    ``docket_exists``), sorted by docket id."""
    query = _probe_query(stage, upstream)
    if docket_ids is None:
        query = query.where(docket_rows.in_known_set())
    elif len(docket_ids) <= _IN_LIST_MAX:
        query = query.where(Docket.id.in_(docket_ids))
    # Raw rows, sorted here: a scan of 100,000 docket rows costs half as much unordered, and
    # the columns are text and integers already (no conversion per value).
    return sorted(database.execute(query).fetchall())


# A longer list of named dockets reads the whole table instead (SQLite caps the parameters
# of one statement): still one query.
_IN_LIST_MAX = 5000


def _probe_query(stage: str, upstream: str | None):
    count_completion_read(COMPLETION_READS_STATE)
    mine = DocketStage.alias("m")
    up = DocketStage.alias("u")
    return (
        Docket.select(
            Docket.id,
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
        .tuples()
    )


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


def set_output(docket_id: str, stage: str, output: str | None) -> None:
    DocketStage.update(output_fingerprint=output).where(
        (DocketStage.docket == docket_id) & (DocketStage.stage == stage)).execute()


def output_fingerprint(docket_id: str, stage: str) -> str | None:
    marker = read_marker(docket_id, stage)
    return marker.output_fingerprint if marker else None


def max_version(stage: str) -> int:
    return DocketStage.select(fn.MAX(DocketStage.version)).where(DocketStage.stage == stage).scalar() or 0


def stage_markers(stage: str) -> dict[str, DocketStage]:
    """docket -> the stage's marker, for every docket (verify)."""
    return {m.docket: m for m in DocketStage.select().where(DocketStage.stage == stage)}
