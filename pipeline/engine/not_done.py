"""What a docket stage task that did not finish its docket in this run waits for.

A task whose stage stopped on a spent budget, or that stepped aside because another run holds
its lease, has kept what it did, but its docket is not done. Its ``run()`` then yields one of
these external tasks, never complete within a run: Luigi leaves the stage task PENDING (the
visualiser shows it so, with its status message saying why), files it under "missing
external dependencies" in its summary, and `luigi` exits with [retcode] missing_data (20), as
for a wrapper's ``ContinuesNextRun``. The next run judges the docket afresh.

A PENDING task holds back every task that requires it, so after a spent budget the task
yields, with its wait, the *continuation*: the tasks of the later stages the run asked for
the docket, each continuing this stage (``DocketStageTask.continuing``), which leave the
stopped stage out of what they require and work on what it got (DONE once they did, no
marker). The docket's usual later tasks stay PENDING behind it: not done.

Luigi's summary reads a pending task's reasons from ``_requires()``, not from what its run()
yielded; the process that schedules learns of each wait when it asks the wait's
``complete()``, and ``DocketStageTask._requires`` adds it from ``waits_of``.
"""

from __future__ import annotations

import luigi

from pipeline.engine.invocation import Invocation, InvocationParameter
from pipeline.engine.store_scope import OfOneStore

# What a run that a spent budget stopped is called, by its stage's line, its wrapper's and
# the summary's
PARTIAL = "partial: budget spent, continues next run"
HELD = "held by another run, which does its work"


class NotDoneThisRun(OfOneStore, luigi.ExternalTask):
    """What a docket stage's task waits for once its run left the docket not done."""

    stage = luigi.Parameter(description="the stage")
    docket = luigi.Parameter(description="the docket")
    invocation = InvocationParameter()

    def complete(self) -> bool:
        _note(self)
        return False

    def said(self) -> str:
        """How the end of Luigi's summary says it, after the docket."""
        return f"{self.stage} not done in this run"


class DocketContinuesNextRun(NotDoneThisRun):
    """Continues next run: a spent budget stopped this stage for this docket; what it did is
    kept (no marker), and the next run continues where it stopped."""

    # In the task id, so Luigi's summary, which names a task by its id's parameters, says it.
    left = luigi.Parameter(default="", description="what is left, as far as known")

    def said(self) -> str:
        """'backfill partial: budget spent, continues next run (left: 9 item(s) ...)'."""
        return f"{self.stage} {PARTIAL} (left: {self.left})"


class HeldByAnotherRun(NotDoneThisRun):
    """Held by another run: a live run holds this stage's lease for this docket, so this run
    left it to that run (nothing done here, no marker); the next run finds it done or takes
    it up."""

    holder = luigi.Parameter(default="", description="the run holding the lease, if known")

    def said(self) -> str:
        return f"{self.stage} {HELD} ({self.holder or 'holder unknown'})"


# (stage, docket, invocation id) -> the waits the process that schedules has seen
_waits: dict[tuple[str, str, str], list[NotDoneThisRun]] = {}
_said: set[tuple[str, str, str]] = set()  # the waits an execution summary has said


def _note(wait: NotDoneThisRun) -> None:
    key = (wait.stage, wait.docket, (wait.invocation or Invocation.of_process()).id)
    seen = _waits.setdefault(key, [])
    if wait not in seen:
        seen.append(wait)


def waits_of(stage: str, docket: str, invocation: Invocation) -> list[NotDoneThisRun]:
    return _waits.get((stage, docket, invocation.id), [])


def waits_in(invocation: Invocation, stages: set[str],
             dockets: list[str] | None = None) -> list[NotDoneThisRun]:
    """Every wait of this invocation's tasks of these stages (for these dockets; None: any)."""
    return [wait for (stage, docket, of), waits in _waits.items()
            if of == invocation.id and stage in stages and (dockets is None or docket in dockets)
            for wait in waits]


def summary_lines() -> list[str]:
    """One line per docket this process's run left not done, for the end of Luigi's summary;
    said once (the run is over when its summary is printed). The waits stay: Luigi reads
    the summary's categories again for its exit status."""
    by_docket: dict[str, list[str]] = {}
    for key, waits in sorted(_waits.items()):
        if key not in _said:
            _said.add(key)
            by_docket.setdefault(key[1], []).extend(wait.said() for wait in waits)
    return [f"{docket}: not done: {'; '.join(said)}" for docket, said in by_docket.items()]
