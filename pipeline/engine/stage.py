"""What every stage declares, receives and returns; stages are plain functions, not tasks.

A stage is declared once, in its own module, as a ``Stage``: its name, the stage it reads
from, the function that does its work for one docket, how many items it still owes a
docket, and where it keeps its markers. ``pipeline.engine.registry`` holds the stages in
pipeline order and ``pipeline.tasks`` gives each its two Luigi tasks.
"""

from __future__ import annotations

import time
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import datetime

from pipeline.clock import utcnow
from pipeline.engine.completion import Completion
from pipeline.engine.markers import MarkerStore, state_markers
from pipeline.engine.progress import Progress
from pipeline.errors import BudgetSpent
from pipeline.store import item_states


@dataclass
class StageResult:
    counts: dict[str, int] = field(default_factory=dict)
    clean: bool = True  # every item reached a terminal state without a run-level error
    budget_spent: bool = False
    message: str = ""
    # The stage raised an unexpected error (not run-stopping): it produced no output for the
    # docket, ``message`` says why, and the engine records it as the docket stage's failure.
    failed: bool = False

    @property
    def complete(self) -> bool:
        """Only a complete result may be vouched for by a marker."""
        return self.clean and not self.budget_spent

    def add(self, outcome: str, n: int = 1) -> None:
        self.counts[outcome] = self.counts.get(outcome, 0) + n


@dataclass
class StageContext:
    """The stores and run facts a stage function works with."""

    runtime: object  # pipeline.runtime.Runtime (kept loose so stages stay importable alone)
    run_id: str
    force: bool = False
    progress: Progress = field(default_factory=lambda: Progress("stage"))
    clock: Callable[[], datetime] = utcnow
    deadline: float | None = None  # time.monotonic() after which the run stops
    # The run's settings: the runtime's, with the invocation's budgets (--budget-seconds).
    settings: object = None
    # pipeline.engine.claims.ItemClaims when the run shares its items with other workers
    # (a stage with splits_items, on PostgreSQL): the todo is taken through it.
    claims: object = None
    # What the stage's ``prepare`` left for its run (None: it has none, or was not called).
    prepared: object = None

    def __post_init__(self) -> None:
        if self.settings is None:
            self.settings = self.runtime.settings

    @property
    def blobs(self):
        return self.runtime.blobs

    def check_time(self) -> None:
        """Call at item boundaries: stop cleanly once the time budget is spent."""
        if self.deadline is not None and time.monotonic() >= self.deadline:
            raise BudgetSpent("time budget spent")


# --- declarations --------------------------------------------------------------------------

# (what the stage's marker vouches for, runtime, invocation) -> the stage's marker store
MarkerFactory = Callable[[Completion, object, object], MarkerStore]
# (runtime, stage name, docket id, states, limit, run id) -> the items marked stale
MarkStale = Callable[[object, str, str, list, int, str], list]


@dataclass(frozen=True)
class Redrivable:
    """How ``Redrive`` sends a stage's items back: the states it may pick, the default, and
    what marks a batch of them stale (the stage then redoes them through its own code)."""

    states: tuple[str, ...]
    default: str
    mark_stale: MarkStale


def _mark_state_rows(runtime, stage: str, docket_id: str, states: list[str], limit: int,
                     run_id: str) -> list[str]:
    return item_states.mark_stale(stage, docket_id, states, limit, run_id)


# Per-item state rows in the state DB: every stage but the index.
STATE_ROWS = Redrivable(tuple(sorted(item_states.TERMINAL)), "failed", _mark_state_rows)


def owes_nothing(runtime, docket_id: str, now: str) -> int:
    return 0


def always(settings) -> bool:
    return True


def no_terms(settings) -> str:
    return ""


@dataclass(frozen=True)
class Stage:
    """One stage of the pipeline, declared once in its own module."""

    name: str
    upstream: str | None  # the stage Luigi runs before it; None: it walks lists (fetch)
    run: Callable[[StageContext, object], StageResult]  # (context, docket row)
    task: str  # the Luigi task over one docket, e.g. "ExtractText"
    wrapper: str  # the Luigi task over the known dockets, e.g. "ExtractAll"
    doc: str = ""
    # Items its upstream vouches for without a decided state here, for their current input
    # (the stage's own planning without --force): a marker is refused while this is > 0.
    unfinished: Callable[[object, str, str], int] = owes_nothing  # (runtime, docket, now)
    markers: MarkerFactory = state_markers
    # The settings that change this stage's own output, as canonical text, "" at their
    # defaults (so markers written before a setting counted stay valid). A stage's marker
    # vouches for these and for those of every stage its input comes from
    # (``registry.completion``): a changed cap reaches the index through IndexAll.
    terms: Callable[[object], str] = no_terms  # (settings)
    # The stage whose output its marker vouches for, when not its upstream's (campaigns run
    # after the index but read extract's text).
    input: str | None = None
    # An optional stage (OCR: settings.ocr): when off, the stage after it requires its
    # upstream instead.
    enabled: Callable[[object], bool] = always  # (settings)
    # Its work lands in its upstream's output (OCR re-renders extract's combined.md and
    # refreshes extract's output fingerprint): the stages after it read that output as
    # their input, and its own marker vouches for that output as the run left it.
    merges_into_upstream: bool = False
    redrive: Redrivable | None = STATE_ROWS  # None: nothing Redrive may send back
    # Its run takes its todo through ctx.claims, so a second worker on a shared state DB
    # helps the lease holder instead of failing (pipeline/engine/claims.py).
    splits_items: bool = False
    # Its output is derived rows it replaces as a whole (campaigns, topics): its run, its item
    # states and its marker are one state-DB transaction, so a run killed or failing at any
    # write leaves the rows as they were before it, never a mix or a marker over missing rows
    # (``DocketStageTask._one_transaction``). Its run must write the state DB only through the
    # task's connection (no thread of its own writing it), or SQLite would wait on itself.
    atomic: bool = False
    # (context, docket row) -> None: slow work done before the run and outside an atomic
    # stage's transaction (asking an outside service, whose answers it keeps in rows of its
    # own as they come), so the transaction holds the state DB's write lock only while the
    # derived rows are written, and an error in it loses none of the answers paid for. It
    # may leave what the run needs in ``ctx.prepared``.
    prepare: Callable[[StageContext, object], None] | None = None
    # Stages whose output it reads besides its upstream's (topics counts organisations): its
    # task requires theirs too, when they are on, so the order is never left to chance.
    reads: tuple[str, ...] = ()
    # (docket id) -> what is wrong between its derived rows and its item states, one line each
    # ([]: they agree). ``docketeer verify`` asks it of every docket its marker says done.
    rows_agree: Callable[[str], list[str]] | None = None

    def __post_init__(self) -> None:
        if self.atomic and self.splits_items:
            # Its helpers would write their items through connections of their own, outside
            # the holder's transaction (and on SQLite wait on its write lock).
            raise ValueError(f"stage {self.name!r}: an atomic stage cannot split its items")
