"""The Luigi wrappers: one stage task per known docket with work (``DocketWrapper``), after
discovery (the pipeline's ``DiscoverDockets``, which the assembly hands over as
``DocketWrapper.discovery``: the engine names no stage). Every docket is judged by the
targets' own rule in one read per store (``MarkerStore.judge``; for every wrapper of a run at
once, ``run_judgements``), so the finished ones never become tasks.
"""

from __future__ import annotations

import logging
from typing import ClassVar

import luigi

from pipeline.clock import iso, utcnow
from pipeline.collector import collector_paused
from pipeline.engine import not_done, registry, run_judgements, runs
from pipeline.engine.command_line import (
    BoundedIntParameter,
    CheckedParameters,
    DocketIdsParameter,
)
from pipeline.engine.docket_task import BASE_VERSION, PARTIAL, DocketStageTask, runtime_or_exit
from pipeline.engine.invocation import Invocation, InvocationParameter
from pipeline.engine.store_scope import OfOneStore
from pipeline.store import docket_failures
from pipeline.store import dockets as docket_rows

log = logging.getLogger("docketeer")


class DocketWrapper(OfOneStore, CheckedParameters, luigi.Task):
    """Runs one stage task per known docket (after discovery), or only the named dockets."""

    docket = DocketIdsParameter(
        default="", description="comma-separated docket ids: only these, and no discovery call"
    )
    force = luigi.BoolParameter(default=False, parsing=luigi.BoolParameter.EXPLICIT_PARSING,
                                description="redo this stage for these dockets")
    budget_seconds = BoundedIntParameter(
        default=None, significant=False, maximum=366 * 86400,
        description="stop at the next item boundary after this many seconds (0: no limit; "
                    "default: the budget_seconds setting); the next run continues",
    )
    request_budget = BoundedIntParameter(
        default=None, significant=False,
        description="API requests per task run (0: no limit; default: the request_budget setting)",
    )
    invocation = InvocationParameter()

    stage_task: ClassVar[type[DocketStageTask]]
    # The task that makes the known dockets, run before any wrapper over them (unless dockets
    # are named): set once for every wrapper by the assembly (pipeline.discover's task).
    discovery: ClassVar[type[luigi.Task]]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        runtime_or_exit()  # a bad configuration stops here with one line, before scheduling
        # Recorded now, in the process that schedules: with --workers 2 every task runs in a
        # process forked from it, and a run that discovers first learns its docket tasks in
        # the wrapper's own forked run(), too late for the budgets to reach them from there.
        self.current_invocation.override_budgets(budget_seconds=self.budget_seconds,
                                                 request_budget=self.request_budget,
                                                 mirror_request_budget=self.request_budget)

    @property
    def current_invocation(self) -> Invocation:
        return self.invocation or Invocation.of_process()

    def named(self) -> list[str]:
        return [d.strip() for d in self.docket.split(",") if d.strip()]

    def requires(self):
        # Once discovery is current the docket tasks are known when Luigi schedules: required
        # here, a failed one is traced to this wrapper, which Luigi's summary then names once,
        # under "had failed dependencies". Yielded from run() only (right after a discovery),
        # Luigi files the wrapper both as "missing external dependencies" and "not granted
        # run permission" (luigi.execution_summary cannot see dynamic dependencies).
        # Decided once per invocation: Luigi asks again before run() and fails the task if
        # the answer grew (the docket tasks, once a discovery of this run completed).
        # Named dockets need no discovery: their tasks are always required here.
        invocation = self.current_invocation
        if getattr(self, "_required_for", (None,))[0] is not invocation:
            if self.named():
                self._admit_named()
                required = self.docket_tasks()
            else:
                discover = self.discovery()
                required = [discover, *self.docket_tasks()] if discover.complete() else [discover]
            self._required_for = (invocation, required)
        return self._required_for[1]

    def _admit_named(self) -> None:
        """Named on the command line: known from now on, forgotten or not found no longer."""
        named = self.named()
        docket_rows.ensure_dockets(named, discovered_by="cli")
        # Luigi may ask again once tasks ran (a fresh process rebuilding the wrapper): a docket
        # a task of this run just found missing upstream stays out of the known set.
        ran = runs.dockets_run_since(named, self.current_invocation.started_at)
        docket_rows.readmit([d for d in named if d not in ran])

    def docket_tasks(self) -> list[DocketStageTask]:
        """A task for each docket with work; the finished ones never become tasks."""
        # First called by complete(), in the scheduling process: what it records in the
        # invocation is there for every forked worker, which yields the very same tasks.
        invocation = self.current_invocation
        invocation.override_budgets(budget_seconds=self.budget_seconds,
                                    request_budget=self.request_budget,
                                    mirror_request_budget=self.request_budget)
        invocation.note_scheduled({})  # from here on, reads every docket shares are made once
        stage_task = self.stage_task
        version = self.asked_version()
        pending = invocation.read_shared(("dockets with work", self.task_id),
                                         lambda: self._dockets_with_work(version))
        return [stage_task(docket=d, version=version if self.force else None, force=self.force,
                           invocation=self.invocation) for d in pending]

    def asked_version(self) -> int:
        if not self.force:
            return BASE_VERSION
        stage_task = self.stage_task
        return self.current_invocation.forced_version(
            stage_task.stage.name, lambda: stage_task.next_forced_version(self.current_invocation))

    def judged_with(self, version: int) -> list[tuple[type[DocketStageTask], int]]:
        """The stage tasks this run's wrappers judge, each with the version it asks, this
        wrapper's first: their verdicts are read together, in one read per store
        (``run_judgements``). Only its own here; ``IndexAll`` adds its follow-on stages'."""
        return [(self.stage_task, version)]

    def _dockets_with_work(self, version: int) -> list[str]:
        """Every docket judged by the targets' own rule in one read per store (for every
        wrapper of the run: the first asked reads them all): the finished dockets are counted
        in one line, the others returned (ids)."""
        invocation = self.current_invocation
        stage = self.stage_task.stage
        named = self.named()
        runtime = runtime_or_exit()
        asked = [(registry.marker_store(task.stage, runtime, invocation), asked_version)
                 for task, asked_version in self.judged_with(version)]
        with collector_paused():
            judged = run_judgements.judged(
                invocation, self.store, asked, named or None, now=iso(utcnow()),
                window_start=invocation.window_start(runtime.settings.freshness_seconds),
                sample=max(SKIPPED_SHOWN, len(named)))
        pending, done = judged.pending, judged.done
        if pending:
            # Ran in this invocation: done for this run (see DocketStageTask.complete).
            ran = runs.dockets_finished_since(stage.name, invocation.started_at) & pending.keys()
            pending = {d: sealed for d, sealed in pending.items() if d not in ran}
            done += len(ran)
        invocation.note_scheduled(pending)
        log_skipped(type(self).__name__, done, [d for d, _ in judged.done_sample], len(pending))
        # Every named sealed docket is said so, finished or not (fetch does not pull it).
        self._notice_sealed(sorted([*judged.done_sample, *judged.pending.items()]))
        return list(pending)

    def complete(self) -> bool:
        runtime_or_exit()
        if not self.named() and not self.discovery().complete():
            return False
        return not self.docket_tasks()

    def _notice_sealed(self, done_sample: list[tuple[str, str | None]]) -> None:
        """A named docket skipped under its seal is said so (the sample holds every named one)."""
        if self.force or not self.named():
            return
        invocation = self.current_invocation
        for docket, sealed in done_sample:
            if sealed:  # once per run, however many wrappers judge it (IndexAll's campaigns too)
                invocation.read_shared(("sealed notice", docket), lambda docket=docket, sealed=sealed: log.info(
                    "%s: sealed %s, skipping (use --force to redo)", docket, sealed) or True)

    def run(self):
        if not self.named():  # named dockets' tasks were required, so they are done by now
            yield [task.as_dynamic_dependency() for task in self.docket_tasks()]
        yield from self.report_unfinished()

    def report_unfinished(self):
        """After its dockets' tasks ran: a run a spent budget stopped is said partial, a
        docket stage that failed is said failed, and the wrapper waits on what continues or
        retries them (a generator for run() to ``yield from``)."""
        # From the run rows and failure rows, not the task list: with --workers 2 this runs
        # again in a process forked before the tasks ran, whose own judgement finds them
        # done for this run.
        since = self.current_invocation.started_at
        named = self.named() or None
        partial = runs.budget_stopped_since(named, since)
        failed = failed_since(named, since)
        if not partial and not failed:
            return
        ran = runs.dockets_finished_since(self.stage_task.stage.name, since) | partial.keys() | failed.keys()
        waits = []
        # Done for this run, not done: said where operators look. The wrapper's status and
        # log line count them; and the wrapper waits on an external task never complete
        # within a run, so Luigi's summary lists it as a missing external dependency and
        # `luigi` exits with [retcode] missing_data (20): neither success (0) nor a task that
        # failed (30), which stays for what stops a run (the key, a full disk, a DB gone).
        if partial:
            waits.append(ContinuesNextRun(wrapper=type(self).__name__, dockets=",".join(partial),
                                          invocation=self.invocation))
            self._say(log.warning, partial_line(type(self).__name__, len(ran), partial))
        if failed:
            waits.append(RetriesNextRun(wrapper=type(self).__name__, dockets=",".join(failed),
                                        invocation=self.invocation))
            self._say(log.error, failed_line(type(self).__name__, len(ran), failed))
        yield waits

    def _say(self, logged, line: str) -> None:
        logged(line)
        if self.set_status_message:
            self.set_status_message(line)

    def _requires(self):
        """What it requires, and, once its run was partial, what that run waits for: Luigi's
        summary reads a pending task's reasons from here (not from what run() yielded), so
        it files the wrapper under "missing external dependencies", not "not granted run
        permission" (which would set [retcode] not_run). Known only after the wrapper's run
        in the process that schedules, so Luigi's check before a run never meets it.

        So are its docket tasks' waits (``pipeline.engine.not_done``): a docket task yielded
        from run() after a discovery is unseen by the summary, and one left not done keeps
        the wrapper pending on the same reason. Only its own stages' waits: a wrapper of
        another stage in the same run is not held by them."""
        required = super()._requires()
        waits = _waiting.get((type(self).__name__, self.current_invocation.id), {})
        chain = registry.chain_of(self.stage_task.stage, runtime_or_exit().settings)
        stages_waits = not_done.waits_in(self.current_invocation, chain, self.named() or None)
        return [*required, *waits.values(), *stages_waits]


def partial_line(wrapper: str, ran: int, partial: dict[str, list[str]]) -> str:
    """'IndexAll: 2 of 3 dockets partial: budget spent, continues next run (A: backfill; ...)'."""
    shown = "; ".join(f"{docket}: {', '.join(stages)}" for docket, stages in partial.items())
    return f"{wrapper}: {len(partial)} of {ran} docket{'' if ran == 1 else 's'} {PARTIAL} ({shown})"


class ContinuesNextRun(OfOneStore, luigi.ExternalTask):
    """What a partial run's wrapper waits for: the next run, which continues where a spent
    budget stopped this one. Never complete within a run, so Luigi files it as a missing
    external dependency (its summary names it, and `luigi` exits with [retcode]
    missing_data); the next run's wrapper judges its dockets afresh."""

    wrapper = luigi.Parameter(description="the wrapper whose run was partial")
    dockets = luigi.Parameter(description="the dockets a spent budget stopped, comma-separated")
    invocation = InvocationParameter()

    def complete(self) -> bool:
        # Asked by the process that schedules, once the wrapper yielded it: from then on the
        # wrapper counts it among what it requires (DocketWrapper._requires).
        waits = _waiting.setdefault((self.wrapper, (self.invocation or Invocation.of_process()).id), {})
        waits[type(self).__name__] = self
        return False


class RetriesNextRun(ContinuesNextRun):
    """What a wrapper waits for when a stage failed for some of its dockets (an unexpected
    error, recorded with its reason; no marker): the next run, which tries them again.
    Filed as a missing external dependency like ``ContinuesNextRun``, so `luigi` exits with
    [retcode] missing_data (20), not a failure's 30: the other dockets were done."""

    dockets = luigi.Parameter(description="the dockets a stage failed for, comma-separated")


# (wrapper, invocation id) -> what that wrapper's run waits for, by kind (ContinuesNextRun,
# RetriesNextRun)
_waiting: dict[tuple[str, str], dict[str, ContinuesNextRun]] = {}


def failed_since(docket_ids: list[str] | None, since: str) -> dict[str, list[str]]:
    """docket -> 'stage: reason' of each stage that failed for it at or after ``since``."""
    found: dict[str, list[str]] = {}
    for row in docket_failures.current(docket_ids, since):
        found.setdefault(row.docket, []).append(f"{row.stage}: {row.reason}")
    return found


def failed_line(wrapper: str, ran: int, failed: dict[str, list[str]]) -> str:
    """'IndexAll: 1 of 3 dockets failed, the next run tries again (A: topics: ValueError: ...)'."""
    shown = "; ".join(f"{docket}: {', '.join(reasons)}" for docket, reasons in failed.items())
    return (f"{wrapper}: {len(failed)} of {ran} docket{'' if ran == 1 else 's'} failed, "
            f"the next run tries again ({shown})")


SKIPPED_SHOWN = 5  # finished dockets named in the skipped line; the rest are counted


def log_skipped(wrapper: str, done: int, first: list[str], with_work: int) -> None:
    """One line for every finished docket, however many: counted, the first few named."""
    if not done:
        return
    shown = ", ".join(first[:SKIPPED_SHOWN])
    more = f" and {done - len(first[:SKIPPED_SHOWN]):,} more" if done > len(first[:SKIPPED_SHOWN]) else ""
    log.info("%s: %s docket%s complete, skipped (%s%s); %s with work", wrapper, f"{done:,}",
             "" if done == 1 else "s", shown, more, f"{with_work:,}")


