"""Docket-stage completion markers: the protocol every marker store follows, and the state
DB's (``docket_stage`` rows, beside the item rows they vouch for).

A marker store reads a ``Probe`` (everything a target needs, in one indexed read), writes a
marker, clears one (re-drive), and answers ``docketeer verify`` which dockets its markers
say are done. The index DB's store is ``pipeline.index.markers``.
"""

from __future__ import annotations

from typing import NamedTuple, Protocol

from peewee import JOIN, SCOPE_SOURCE, Case, ModelAlias, Select, Value, fn

from pipeline.clock import iso, utcnow
from pipeline.counters import COMPLETION_READS_STATE, count_completion_read
from pipeline.engine.completion import (
    VERIFY_NOW,
    VERIFY_WINDOW,
    Completion,
    docket_side,
    expected_input,
    expected_input_sql,
    rule,
)
from pipeline.store import dockets as docket_rows
from pipeline.store import item_states
from pipeline.store.db import DOCKET_STAGE_OUTPUT_INDEX, is_postgres
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
    expected_input: str | None = None  # what the marker's input must equal to vouch for it now
    retry_due_at: str | None = None  # the docket's earliest next attempt of a waiting item
    marker_output: str | None = None  # the stage's own recorded output (None: held by a run)

    @property
    def docket_known(self) -> bool | None:
        return True if self.docket_exists else None  # the rule reads "known" as a non-NULL


class Judged(NamedTuple):
    """A wrapper's verdict over many dockets, read in one query per database: the dockets
    with work (id -> sealed_at), how many are done, and the first few of those (id,
    sealed_at, by id) to name in the log line. Nothing is made per finished docket."""

    pending: dict[str, str | None]
    done: int
    done_sample: list[tuple[str, str | None]]


class MarkerStore(Protocol):
    """Where one stage records the dockets it has done, and under which input."""

    completion: Completion
    where: str  # "state DB", "index DB": named in verify's report

    def probe(self, docket_id: str) -> Probe: ...

    def judge(self, docket_ids: list[str] | None, *, version: int, window_start: str, now: str,
              sample: int) -> Judged:
        """``completion.rule`` over many dockets (None: the known set) in one read per
        database: the wrappers prune finished dockets with it before Luigi sees a task.
        ``sample``: how many finished dockets to name."""

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
        """The dockets whose marker says done now, whatever the clock says (None: this
        store's database does not exist yet, so nothing is claimed or to check)."""


class StateMarkers:
    """A stage's markers in the state DB. The marker also records the stage's output
    fingerprint (a digest of its item rows), which is the input of the stage after it."""

    where = "state DB"

    def __init__(self, completion: Completion) -> None:
        self.completion = completion
        self.stage, self.input_stage = completion.stage, completion.input_stage

    def probe(self, docket_id: str) -> Probe:
        found = probe(docket_id, self.stage, self.input_stage)
        return found._replace(expected_input=expected_input(self.completion, found.expected_input))

    def judge(self, docket_ids: list[str] | None, *, version: int, window_start: str, now: str,
              sample: int) -> Judged:
        done = rule(self.completion, version, window_start, now).sql(_columns(self.completion))
        return judge(self.stage, self.input_stage, docket_ids, Case(None, [(done, 1)], 0), sample)

    def input_fingerprint(self, docket_id: str) -> str | None:
        upstream = output_fingerprint(docket_id, self.input_stage) if self.input_stage else None
        return expected_input(self.completion, upstream)

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

    def clear(self, docket_id: str) -> None:
        clear_marker(docket_id, self.stage)

    def max_version(self) -> int:
        return max_version(self.stage)

    def claims(self, dockets: dict[str, Docket]) -> list[str]:
        """The dockets the rule calls done at the base version, with no window and no retry
        time (verify sorts those out itself); the same rule the targets apply."""
        judged = self.judge(None, version=1, window_start=VERIFY_WINDOW, now=VERIFY_NOW,
                            sample=max(len(dockets), 1))
        return [d for d, _ in judged.done_sample if d in dockets]


def state_markers(completion: Completion, runtime=None, invocation=None) -> StateMarkers:
    """A stage declaration's marker store factory for the state DB (the default)."""
    return StateMarkers(completion)


def refresh_output(docket_id: str, stage: str) -> None:
    """The stage's rows changed under its marker (OCR merged text into extract's): record
    the new output fingerprint so the stage after it sees the change. The marker's input,
    version and seal stay as they were; no marker, nothing to refresh."""
    marker = read_marker(docket_id, stage)
    if marker is not None:
        write_marker(docket_id, stage, version=marker.version, sealed_at=marker.sealed_at,
                     input_fingerprint=marker.input_fingerprint,
                     output_fingerprint=item_states.docket_output_fingerprint(stage, docket_id),
                     run_id=marker.run_id)


def _columns(completion: Completion, up=None) -> dict:
    """The rule's column names as SQL over a docket row, its stage marker ``m`` and its input
    stage's ``u``."""
    mine, up = _MINE, up or _UP
    return {
        "docket_known": Docket.id, "docket_sealed_at": Docket.sealed_at,
        "last_pull_at": Docket.last_pull_at, "retry_due_at": Docket.retry_due_at,
        "marker_version": mine.version, "marker_sealed_at": mine.sealed_at,
        "marker_input": mine.input_fingerprint, "marker_output": mine.output_fingerprint,
        "expected_input": expected_input_sql(completion, up.output_fingerprint),
    }


# --- the docket_stage table ------------------------------------------------------------------


def probe(docket_id: str, stage: str, upstream: str | None) -> Probe:
    """One query: the docket row, this stage's marker and the upstream stage's marker (the
    probe's ``expected_input`` is that upstream's output, before any terms are folded in)."""
    row = _probe_query(stage, upstream).where(Docket.id == docket_id).first()
    if row is None:
        return Probe(docket_exists=False)
    return Probe(True, *row[1:])


def judge(stage: str, upstream: str | None, docket_ids: list[str] | None, done,
          sample: int) -> Judged:
    """``done`` (a 1/0 expression over ``mine``, ``up`` and ``Docket``) for every docket of
    the known set, or of ``docket_ids`` (a docket without a row has work): the rows with
    work, the first ``sample`` finished ones and their count, in one query."""
    if docket_ids is not None and len(docket_ids) > _IN_LIST_MAX:
        parts = [judge(stage, upstream, docket_ids[i:i + _IN_LIST_MAX], done, sample)
                 for i in range(0, len(docket_ids), _IN_LIST_MAX)]
        return Judged({d: s for part in parts for d, s in part.pending.items()},
                      sum(part.done for part in parts),
                      sorted(r for part in parts for r in part.done_sample)[:sample])
    pending, finished, sampled = {}, 0, []
    for kind, docket, sealed_at, count in database.execute(_judged_query(stage, upstream, docket_ids,
                                                                         done, sample)):
        if kind == _WORK:
            pending[docket] = sealed_at
        elif kind == _SAMPLE:
            sampled.append((docket, sealed_at))
        else:
            finished = count
    if docket_ids is not None:  # every named docket is judged (the sample holds them all)
        seen = pending.keys() | {d for d, _ in sampled}
        pending.update((d, None) for d in docket_ids if d not in seen)  # no row yet: all to do
    return Judged(dict(sorted(pending.items())), finished, sampled)


_WORK, _SAMPLE, _COUNT = 0, 1, 2


def _judged_query(stage: str, upstream: str | None, docket_ids: list[str] | None, done, sample: int):
    """WITH judged AS (each docket, its seal, done 1/0) SELECT the ones with work UNION ALL
    the first finished ones UNION ALL their count: a finished docket costs the database a
    row, not Python an object. (A CTE read three times is materialised once by SQLite and
    PostgreSQL.)"""
    count_completion_read(COMPLETION_READS_STATE)
    mine, up = _MINE, _UP
    query = (Docket.select(Docket.id, Docket.sealed_at, done.alias("done"))
             .join(mine, JOIN.LEFT_OUTER, on=(mine.docket == Docket.id) & (mine.stage == stage))
             .switch(Docket)
             .join(up, JOIN.LEFT_OUTER, on=(up.docket == Docket.id) & (up.stage == (upstream or "")))
             .where(_which(docket_ids)))
    judged = query.cte("judged")
    work = Select([judged], [Value(_WORK), judged.c.id, judged.c.sealed_at, Value(0)]).where(
        judged.c.done == 0)
    first = (Select([judged], [judged.c.id, judged.c.sealed_at]).where(judged.c.done == 1)
             .order_by(judged.c.id).limit(sample).alias("first_done"))
    shown = Select([first], [Value(_SAMPLE), first.c.id, first.c.sealed_at, Value(0)])
    counted = Select([judged], [Value(_COUNT), Value(None), Value(None), fn.COUNT(judged.c.id)]).where(
        judged.c.done == 1)
    return (work + shown + counted).with_cte(judged)


def _which(docket_ids: list[str] | None):
    return docket_rows.in_known_set() if docket_ids is None else Docket.id.in_(docket_ids)


_MINE = DocketStage.alias("m")
_UP = DocketStage.alias("u")


class _IndexedAlias(ModelAlias):
    """A table alias that tells SQLite which index to read it by (``INDEXED BY``), which
    peewee cannot say. Without statistics SQLite's planner takes the unique primary key
    over a covering index of the same columns, and then reads each row from the table:
    over 100,000 dockets those rows lie all over the file (``db.DOCKET_STAGE_OUTPUT_INDEX``)."""

    def __init__(self, model, alias: str, index: str) -> None:
        super().__init__(model, alias)
        self.__dict__["index"] = index  # a model alias refuses attributes set the usual way

    def __sql__(self, ctx):
        scope = ctx.scope
        ctx = super().__sql__(ctx)
        if scope == SCOPE_SOURCE:
            ctx.literal(f' INDEXED BY "{self.index}"')
        return ctx


_UP_BY_OUTPUT = _IndexedAlias(DocketStage, "u", DOCKET_STAGE_OUTPUT_INDEX)


def _docket_ready(upstream: str, window_start: str, now: str, up):
    """The rule's docket side (``completion.docket_side``) as SQL: what a store whose markers
    live in another database reads from the state DB before it compares its markers."""
    side = docket_side(Completion("", upstream), window_start, now)
    return side.sql(_columns(Completion("", upstream), up))


def input_rows(upstream: str, docket_ids: list[str] | None, window_start: str, now: str) -> list[tuple]:
    """(docket id, sealed_at, the upstream's output) of every docket of the known set (or of
    ``docket_ids``), the output None where the docket row alone says the stage after it has
    work (an item's retry has come; open and not pulled in this window): what a store whose
    markers live in another database compares its markers with."""
    if docket_ids is not None and len(docket_ids) > _IN_LIST_MAX:
        return [row for i in range(0, len(docket_ids), _IN_LIST_MAX)
                for row in input_rows(upstream, docket_ids[i:i + _IN_LIST_MAX], window_start, now)]
    count_completion_read(COMPLETION_READS_STATE)
    up = _UP
    state_ok = _docket_ready(upstream, window_start, now, up)
    query = (Docket.select(Docket.id, Docket.sealed_at, Case(None, [(state_ok, up.output_fingerprint)], None))
             .join(up, JOIN.LEFT_OUTER, on=(up.docket == Docket.id) & (up.stage == upstream))
             .where(_which(docket_ids))
             .tuples())
    # Raw rows: the columns are text already (no conversion per value).
    return database.execute(query).fetchall()


def input_lines(upstream: str, window_start: str, now: str) -> str | None:
    """``input_rows`` of the known set as one text in one statement: a line per docket,
    ``id US sealed_at US output`` ('' for None), NL-joined, by id in byte order (None: no
    docket). One value, however many dockets: a store whose markers live in another database
    compares a checksum of it with one of its own (``IndexDB.vouching_checksum``). The order
    is the ordered subquery's, which SQLite and PostgreSQL keep; were it ever not kept, the
    checksums would differ and the dockets be judged one by one (``input_rows_of``)."""
    count_completion_read(COMPLETION_READS_STATE)
    return input_lines_query(upstream, window_start, now).scalar(database)


def input_lines_query(upstream: str, window_start: str, now: str) -> Select:
    """``input_lines``' statement, which reads two covering indexes and no table row."""
    up = _UP if is_postgres(database.obj) else _UP_BY_OUTPUT
    state_ok = _docket_ready(upstream, window_start, now, up)
    unit = Value(UNIT_SEP)
    line = (Docket.id.concat(unit).concat(fn.COALESCE(Docket.sealed_at, "")).concat(unit)
            .concat(fn.COALESCE(Case(None, [(state_ok, up.output_fingerprint)], None), "")))
    by_id = Docket.id.collate('"C"') if is_postgres(database.obj) else Docket.id
    lines = (Docket.select(line.alias("line"))
             .join(up, JOIN.LEFT_OUTER, on=(up.docket == Docket.id) & (up.stage == upstream))
             .where(docket_rows.in_known_set())
             .order_by(by_id))
    joined = fn.string_agg if is_postgres(database.obj) else fn.GROUP_CONCAT
    return Select([lines], [joined(lines.c.line, LINE_SEP)])


UNIT_SEP, LINE_SEP = "\x1f", "\n"


def input_rows_of(lines: str | None) -> list[tuple]:
    """``input_rows`` from ``input_lines``' text (when the checksums differ: some docket has work)."""
    if lines is None:
        return []
    rows = (line.split(UNIT_SEP) for line in lines.split(LINE_SEP))
    return [(docket, sealed_at or None, output or None) for docket, sealed_at, output in rows]


def first_of(lines: str | None, count: int) -> list[tuple[str, str | None]]:
    """(id, sealed_at) of the first ``count`` dockets of ``input_lines``' text."""
    if lines is None or count <= 0:
        return []
    head = lines.split(LINE_SEP, count)[:count]
    return [(docket, sealed_at or None) for docket, sealed_at, _ in (line.split(UNIT_SEP) for line in head)]


# A longer list of named dockets is judged in parts of this many (SQLite caps the parameters
# of one statement).
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
            mine.output_fingerprint,
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
    docket_rows.owe_stage(docket_id, stage)


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
