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
        ``sample``: how many finished dockets to name. (``state_ask`` answered alone, then
        ``judged_from``: ``judge_together`` answers many stores' asks in one statement.)"""

    def state_ask(self, version: int) -> RuleAsk | LinesAsk:
        """What its judgement at ``version`` reads from the state DB."""

    def judged_from(self, answer, docket_ids: list[str] | None, *, version: int, window_start: str,
                    now: str, sample: int) -> Judged:
        """The judgement, given the state DB's answer to ``state_ask`` (read under the same terms)."""

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
        return judge_together([(self, version)], docket_ids, window_start=window_start, now=now,
                              sample=sample)[0]

    def state_ask(self, version: int) -> RuleAsk:
        return RuleAsk(self.completion, version)

    def judged_from(self, answer: Judged, docket_ids: list[str] | None, *, version: int,
                    window_start: str, now: str, sample: int) -> Judged:
        return answer  # its markers are in the state DB: the statement judged them

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


def _columns(completion: Completion, mine, up) -> dict:
    """The rule's column names as SQL over a docket row, its stage's marker ``mine`` and its
    input stage's ``up`` (table aliases)."""
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


class RuleAsk(NamedTuple):
    """A store whose markers are in the state DB asks its rule over them (``completion`` at
    ``version``): answered by a ``Judged``."""

    completion: Completion
    version: int


class LinesAsk(NamedTuple):
    """A store whose markers live in another database asks its input stage's ``input_lines``
    (of the named dockets, or of the known set): answered by their text (None: no docket)."""

    upstream: str


def judge_together(stores: list[tuple[MarkerStore, int]], docket_ids: list[str] | None, *,
                   window_start: str, now: str, sample: int) -> list[Judged]:
    """Each (store, version)'s judgement of the known set (or of ``docket_ids``), every store's
    state-DB side read in one statement (``judge_asks``), then each finished by its own store
    (one read of another database where its markers live)."""
    answers = judge_asks([store.state_ask(version) for store, version in stores], docket_ids,
                         window_start=window_start, now=now, sample=sample)
    return [store.judged_from(answer, docket_ids, version=version, window_start=window_start,
                              now=now, sample=sample)
            for (store, version), answer in zip(stores, answers, strict=True)]


def judge_asks(asks: list[RuleAsk | LinesAsk], docket_ids: list[str] | None, *, window_start: str,
               now: str, sample: int) -> list:
    """Every ask answered by one statement over every docket of the known set, or of
    ``docket_ids`` (in parts of ``_IN_LIST_MAX``; a named docket without a row has work):
    each rule's dockets with work, the first ``sample`` finished ones and their count; each
    store elsewhere its input lines. Whatever the number of stages, each docket row is read
    once and judged by every rule (``completion.rule``, compiled once per stage)."""
    if docket_ids is not None and len(docket_ids) > _IN_LIST_MAX:
        parts = [judge_asks(asks, docket_ids[i:i + _IN_LIST_MAX], window_start=window_start, now=now,
                            sample=sample) for i in range(0, len(docket_ids), _IN_LIST_MAX)]
        return [_joined(ask, [part[n] for part in parts], sample) for n, ask in enumerate(asks)]
    rules = [ask for ask in asks if isinstance(ask, RuleAsk)]
    lines = [ask for ask in asks if isinstance(ask, LinesAsk)]
    count_completion_read(COMPLETION_READS_STATE)
    work, sampled, total, texts = [], {}, 0, {}
    for kind, part, docket, sealed_at, n in database.execute(
            _asks_query(rules, lines, docket_ids, window_start, now, sample)):
        if kind == _WORK:
            work.append((docket, sealed_at, n))
        elif kind == _SAMPLE:
            sampled.setdefault(part, []).append((docket, sealed_at))
        elif kind == _COUNT:
            total = n
        else:
            texts[part] = docket
    judged = iter([_judged_by(bit, work, total, sampled.get(bit, []), docket_ids)
                   for bit in range(len(rules))])
    text = iter([texts.get(n) for n in range(len(lines))])
    return [next(judged) if isinstance(ask, RuleAsk) else next(text) for ask in asks]


def _judged_by(bit: int, work: list[tuple], total: int, sampled: list[tuple],
               docket_ids: list[str] | None) -> Judged:
    """One rule's verdict from the statement's rows: a docket has work where its bit is 0."""
    pending = {docket: sealed_at for docket, sealed_at, done in work if not done & (1 << bit)}
    finished = total - len(pending)
    if docket_ids is not None:  # every named docket is judged (the sample holds them all)
        seen = pending.keys() | {d for d, _ in sampled}
        pending.update((d, None) for d in docket_ids if d not in seen)  # no row yet: all to do
    return Judged(dict(sorted(pending.items())), finished, sorted(sampled))


def _joined(ask: RuleAsk | LinesAsk, answers: list, sample: int):
    """One ask's answers over parts of a long list of named dockets, as one."""
    if isinstance(ask, LinesAsk):
        return LINE_SEP.join(text for text in answers if text is not None) or None
    return Judged({d: s for part in answers for d, s in part.pending.items()},
                  sum(part.done for part in answers),
                  sorted(r for part in answers for r in part.done_sample)[:sample])


_WORK, _SAMPLE, _COUNT, _LINES = 0, 1, 2, 3


def _asks_query(rules: list[RuleAsk], lines: list[LinesAsk], docket_ids: list[str] | None,
                window_start: str, now: str, sample: int):
    """WITH judged AS (each docket, its seal, and ``done``: bit i set where rule i says done)
    SELECT the ones with work UNION ALL each rule's first finished ones UNION ALL their count
    UNION ALL each store elsewhere's input lines: a finished docket costs the database a row,
    not Python an object. (A CTE read several times is materialised once by SQLite and
    PostgreSQL.) Rows: (kind, rule or lines number, docket id or text, sealed_at, done or count)."""
    parts = [Select(None, [Value(_LINES), Value(n), input_lines_query(ask.upstream, window_start, now,
                                                                    docket_ids), Value(None), Value(0)])
             for n, ask in enumerate(lines)]
    if rules:
        judged = _judged_cte(rules, docket_ids, window_start, now)
        parts[:0] = [Select([judged], [Value(_WORK), Value(None), judged.c.id, judged.c.sealed_at,
                                       judged.c.done]).where(judged.c.done != (1 << len(rules)) - 1)]
        for bit in range(len(rules)):
            first = (Select([judged], [judged.c.id, judged.c.sealed_at])
                     .where(judged.c.done.bin_and(1 << bit) != 0)
                     .order_by(judged.c.id).limit(sample).alias(f"first_done_{bit}"))
            parts.append(Select([first], [Value(_SAMPLE), Value(bit), first.c.id, first.c.sealed_at, Value(0)]))
        parts.append(Select([judged], [Value(_COUNT), Value(None), Value(None), Value(None),
                                       fn.COUNT(judged.c.id)]))
    query = parts[0]
    for part in parts[1:]:
        query = query + part
    return query.with_cte(judged) if rules else query


def _judged_cte(rules: list[RuleAsk], docket_ids: list[str] | None, window_start: str, now: str):
    """Each docket of the set, its seal, and ``done``, the sum of each rule's bit where it says
    done: every marker a rule reads joined once (a stage's own, its input stage's)."""
    aliases: dict[str, ModelAlias] = {}
    own = {ask.completion.stage for ask in rules}
    by_output = not is_postgres(database.obj)

    def marker(stage: str) -> ModelAlias:
        if stage not in aliases:
            # A stage read only for its output (an input) is read from the covering index on
            # SQLite, not from its table row (``_UP_BY_OUTPUT``): a lookup per docket less.
            aliases[stage] = (_IndexedAlias(DocketStage, f"s{len(aliases)}", DOCKET_STAGE_OUTPUT_INDEX)
                              if by_output and stage not in own else DocketStage.alias(f"s{len(aliases)}"))
        return aliases[stage]

    done = None
    for bit, ask in enumerate(rules):
        completion = ask.completion
        mine = marker(completion.stage)
        up = marker(completion.input_stage) if completion.input_stage else mine  # no input: unread
        said = rule(completion, ask.version, window_start, now).sql(_columns(completion, mine, up))
        term = Case(None, [(said, 1 << bit)], 0)
        done = term if done is None else done + term
    query = Docket.select(Docket.id, Docket.sealed_at, done.alias("done"))
    for stage, alias in aliases.items():
        query = query.join(alias, JOIN.LEFT_OUTER,
                           on=(alias.docket == Docket.id) & (alias.stage == stage)).switch(Docket)
    return query.where(_which(docket_ids)).cte("judged")


def _which(docket_ids: list[str] | None):
    return docket_rows.in_known_set() if docket_ids is None else Docket.id.in_(docket_ids)


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
    return side.sql(_columns(Completion("", upstream), up, up))


def input_lines(upstream: str, window_start: str, now: str) -> str | None:
    """(docket id, sealed_at, the upstream's output) of every docket of the known set as one
    text in one statement, the output None where the docket row alone says the stage after
    it has work (an item's retry has come; open and not pulled in this window): what a store
    whose markers live in another database compares its markers with. A line per docket,
    ``id US sealed_at US output`` ('' for None), NL-joined, by id in byte order (None: no
    docket). One value, however many dockets: that store compares a checksum of it with one
    of its own (``IndexDB.vouching_checksum``). The order is the ordered subquery's, which
    SQLite and PostgreSQL keep; were it ever not kept, the checksums would differ and the
    dockets be judged one by one (``input_rows_of``). (A wrapper reads it as a ``LinesAsk``
    of ``judge_asks``, in the statement that judges every other stage of its run.)"""
    return judge_asks([LinesAsk(upstream)], None, window_start=window_start, now=now, sample=0)[0]


def input_lines_query(upstream: str, window_start: str, now: str,
                      docket_ids: list[str] | None = None) -> Select:
    """``input_lines``' statement (of the known set, or of ``docket_ids``), which reads two
    covering indexes and no table row."""
    up = _UP if is_postgres(database.obj) else _UP_BY_OUTPUT
    state_ok = _docket_ready(upstream, window_start, now, up)
    unit = Value(UNIT_SEP)
    line = (Docket.id.concat(unit).concat(fn.COALESCE(Docket.sealed_at, "")).concat(unit)
            .concat(fn.COALESCE(Case(None, [(state_ok, up.output_fingerprint)], None), "")))
    by_id = Docket.id.collate('"C"') if is_postgres(database.obj) else Docket.id
    lines = (Docket.select(line.alias("line"))
             .join(up, JOIN.LEFT_OUTER, on=(up.docket == Docket.id) & (up.stage == upstream))
             .where(_which(docket_ids))
             .order_by(by_id))
    joined = fn.string_agg if is_postgres(database.obj) else fn.GROUP_CONCAT
    return Select([lines], [joined(lines.c.line, LINE_SEP)])


UNIT_SEP, LINE_SEP = "\x1f", "\n"


def input_rows_of(lines: str | None) -> list[tuple]:
    """(docket id, sealed_at, the upstream's output) of each line of ``input_lines``' text
    (when the checksums differ: some docket has work; or the named dockets')."""
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
