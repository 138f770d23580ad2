"""What one `luigi` command run shares: an ``Invocation``, handed from task to task.

A `luigi --module pipeline IndexAll` run is one process (forked Luigi workers inherit its
memory), and everything its tasks share lives in one object: when it started (the time
budget, "ran in this run" and the freshness window every judgement uses are fixed there), the budgets given on the command
line, the seals a wrapper read for its dockets, the version ``--force`` resolved per stage,
and the marker reads a wrapper's dockets share.

Tasks carry it as a hidden, insignificant parameter (``InvocationParameter``): never in a
task id, never on the visualiser. A task given none belongs to this process's invocation,
the one a command-line run has; a test that runs several builds in one process gives each
build a new ``Invocation()`` (``tests.fixtures.state_fixtures.run_invocation``).
"""

from __future__ import annotations

import argparse
import dataclasses
import time
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass, field

import luigi
from luigi.parameter import ParameterVisibility

from pipeline.clock import iso, parse_iso, utcnow, window_start


# Compared and hashed by identity (Luigi's instance cache keys on it); a short repr, because
# Luigi formats a task's arguments each time it makes one.
@dataclass(eq=False, repr=False)
class Invocation:
    started: float = field(default_factory=time.monotonic)
    started_at: str = field(default_factory=lambda: iso(utcnow()))
    budgets: dict[str, int] = field(default_factory=dict)
    # docket id -> sealed_at, read in one query by a wrapper, so each task picks its target
    # class without a read of its own (the target re-checks the seal in its one read anyway).
    seal_hints: dict[str, str | None] = field(default_factory=dict)
    forced_versions: dict[str, int] = field(default_factory=dict)
    # Reads every docket of a wrapper shares (the index DB's markers), kept for the rest of
    # the run; None until a wrapper schedules dockets: a task asked alone reads afresh.
    shared_reads: dict[object, object] | None = None
    # docket id -> the stages whose tasks this run asked for it (each asked its requirements
    # when Luigi scheduled it, in the process that schedules, before any forked worker ran):
    # a stage a spent budget stopped hands what it got to the later ones among them.
    asked: dict[str, set[str]] = field(default_factory=dict)
    id: str = field(default_factory=lambda: uuid.uuid4().hex)

    def __post_init__(self) -> None:
        _live[self.id] = self

    def __repr__(self) -> str:
        return f"Invocation({self.id[:8]}, started {self.started_at})"

    def window_start(self, seconds: int) -> str:
        """The start of the freshness window this run started in (windows of ``seconds``).
        Every judgement of the run reads it, the wrappers' and each task's target: a run that
        crosses a window edge is judged in one window throughout, so a task never finds an
        open docket due again that its wrapper, judging a moment earlier, found done (and the
        next run, in the new window, pulls it once as usual)."""
        return window_start(parse_iso(self.started_at), seconds)

    # --- budgets -----------------------------------------------------------------------------
    def override_budgets(self, **budgets: int | None) -> None:
        """Budgets a wrapper was given (None: none given, the setting stands)."""
        self.budgets.update({name: value for name, value in budgets.items() if value is not None})

    def settings(self, settings):
        """``settings`` with this run's budget overrides applied."""
        if not self.budgets:
            return settings
        return dataclasses.replace(settings, values={**settings.values, **self.budgets})

    def deadline(self, budget_seconds: int) -> float | None:
        """time.monotonic() after which the run stops; measured from the invocation's start,
        so a forked worker spends the whole run's budget, not one of its own."""
        return self.started + budget_seconds if budget_seconds else None

    # --- what a wrapper reads once for all its dockets -------------------------------------
    def note_scheduled(self, seals: dict[str, str | None]) -> None:
        """A wrapper schedules these dockets (id -> sealed_at, read in one query): each task
        takes its seal from here, and reads every docket shares are made once from now on."""
        self.seal_hints.update(seals)
        if self.shared_reads is None:
            self.shared_reads = {}

    def read_shared(self, key: object, load: Callable[[], object]):
        """``load()``, read once for the rest of the run; None until a wrapper scheduled
        dockets (a task asked alone reads just what it needs, afresh)."""
        if self.shared_reads is None:
            return None
        if key not in self.shared_reads:
            self.shared_reads[key] = load()
        return self.shared_reads[key]

    def forget(self, key: object) -> None:
        """This process just changed what ``key`` read: the next read goes to the database."""
        if self.shared_reads is not None:
            self.shared_reads.pop(key, None)

    # --- which stages the run asked for a docket -------------------------------------------------
    def note_asked(self, stage: str, docket: str) -> None:
        self.asked.setdefault(docket, set()).add(stage)

    def asked_for(self, docket: str) -> set[str]:
        return self.asked.get(docket, set())

    # --- --force -------------------------------------------------------------------------------
    def forced_version(self, stage: str, next_version: Callable[[], int]) -> int:
        """The version --force asks of ``stage``: resolved once, so every task of the run (and
        a forked worker yielding the same tasks again) asks the same one."""
        if stage not in self.forced_versions:
            self.forced_versions[stage] = next_version()
        return self.forced_versions[stage]

    # --- this process's invocation ---------------------------------------------------------------
    @staticmethod
    def of_process() -> Invocation:
        """The invocation of this process's `luigi` command, made on first use."""
        global _of_process
        if _of_process is None:
            _of_process = Invocation()
        return _of_process

    @staticmethod
    def start_in_process() -> Invocation:
        """Make the next build in this process a new invocation (a harness that runs several
        builds in one process and creates its tasks without one)."""
        global _of_process
        _of_process = Invocation()
        return _of_process

    @staticmethod
    def live(invocation_id: str) -> Invocation:
        try:
            return _live[invocation_id]
        except KeyError:
            raise ValueError(f"no invocation {invocation_id!r} in this process") from None


# Luigi hands tasks between its worker and the scheduler as strings (a wrapper's yielded
# tasks are rebuilt from their parameters): the parameter is the invocation's id, and this
# finds the object again. Weak: an invocation no task holds any more is gone.
_live: weakref.WeakValueDictionary[str, Invocation] = weakref.WeakValueDictionary()
_of_process: Invocation | None = None


class InvocationParameter(luigi.Parameter):
    """The Invocation a task belongs to (None: this process's). Hidden and insignificant:
    it never shows in a task id or the visualiser."""

    def __init__(self) -> None:
        # The description SUPPRESS keeps it out of `luigi ... --help`: it is no option for people.
        super().__init__(default=None, significant=False, visibility=ParameterVisibility.HIDDEN,
                         description=argparse.SUPPRESS)

    def serialize(self, x: Invocation | None) -> str:
        return x.id if x is not None else ""

    def parse(self, x: str) -> Invocation | None:
        return Invocation.live(x) if x else None

    def normalize(self, x):
        return x
