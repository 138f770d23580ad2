"""The Luigi task of one stage over one docket: ``DocketStageTask``.

A task keeps only the lease, the run row and progress; its completion is its target's, one
indexed read through the stage's marker store (``pipeline.engine.completion`` is the rule),
so the scheduler drops finished dockets before any ``run()``. A subclass that sets ``stage``
is that stage's task (``pipeline.tasks`` writes them out; ``stage_tasks`` makes them for a
stage declared elsewhere). What a `luigi` command run shares travels with the tasks as their
``Invocation``.
"""

from __future__ import annotations

import contextlib
import logging
import sys
import time
import types
from typing import ClassVar

import luigi

from pipeline.clock import eastern_instant, iso, utcnow
from pipeline.counters import ITEM_STATE_WRITES, STAGE_CALLS, counters
from pipeline.engine import claims, leases, not_done, process_runtime, registry, runs
from pipeline.engine.command_line import (
    CheckedParameters,
    DocketIdsParameter,
    OneLineUncaught,
    check_scheduler,
    docket_task_label,
    refuse,
)
from pipeline.engine.invocation import Invocation, InvocationParameter
from pipeline.engine.markers import MarkerStore
from pipeline.engine.progress import Progress
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.engine.store_scope import OfOneStore
from pipeline.engine.targets import DocketTarget, FingerprintTarget, SealedDocketTarget
from pipeline.errors import BudgetSpent, ConfigError, DocketeerError, LeaseHeld
from pipeline.failures import classify, describe, original_error
from pipeline.store import docket_failures, item_states, leftovers
from pipeline.store import dockets as docket_rows
from pipeline.store.db import stage_writes
from pipeline.store.models import database as state_database

log = logging.getLogger("docketeer")

BASE_VERSION = 1
PARTIAL = not_done.PARTIAL


def share_luigi_log_handlers() -> None:
    """Send docketeer's log lines wherever the `luigi` command sends its own.

    Luigi attaches its handler to the "luigi-interface" logger only (after parsing the
    command line), so without this our progress and summary lines would go nowhere.
    """
    luigi_logger = logging.getLogger("luigi-interface")
    for kind in (OneLineFailures, OneLineUncaught, NotDoneInSummary):
        if not any(isinstance(f, kind) for f in luigi_logger.filters):
            luigi_logger.addFilter(kind())
    if not luigi_logger.handlers:
        return
    for name in ("docketeer", "pipeline"):
        ours = logging.getLogger(name)
        if not ours.handlers:
            for handler in luigi_logger.handlers:
                ours.addHandler(handler)
            ours.setLevel(min(luigi_logger.getEffectiveLevel(), logging.INFO))


class OneLineFailures(logging.Filter):
    """A task that failed with one of our errors (the key rejected, a disk full) is one line
    naming the cause, not a traceback: the message says it all. So is
    any other run-stopping cause (``failures.classify``): SQLite's "database or disk is full"
    on a full disk, an unreachable DB."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, DocketeerError) or (isinstance(exc, Exception) and classify(exc).stops_run):
            exc = original_error(exc)
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {exc}"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


class NotDoneInSummary(logging.Filter):
    """Luigi's execution summary ends with a line for each docket the run left not done
    (a spent budget, a lease held elsewhere), naming its stages and what is left: the last
    thing a person or cron mail reads says partial, not only Luigi's generic ":|"."""

    BANNER = "===== Luigi Execution Summary ====="

    def filter(self, record: logging.LogRecord) -> bool:
        text = record.getMessage() if isinstance(record.msg, str) and self.BANNER in record.msg else ""
        if text.count(self.BANNER) == 2 and (lines := not_done.summary_lines()):
            head, _, tail = text.rpartition(self.BANNER)
            record.msg = head.rstrip("\n") + "\n\n" + "\n".join(lines) + "\n\n" + self.BANNER + tail
            record.args = ()
        return True


def runtime_or_exit():
    """The runtime, or one clear line on stderr and exit status 2 (no traceback wall)."""
    share_luigi_log_handlers()
    check_scheduler()
    try:
        return process_runtime.runtime()
    except ConfigError as exc:
        print(f"docketeer: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class DocketStageTask(OfOneStore, CheckedParameters, luigi.Task):
    """One stage over one docket; ``stage`` is the declaration it was made from."""

    docket = DocketIdsParameter(many=False, description="docket id, e.g. CMS-2026-2377")
    version = luigi.OptionalIntParameter(
        default=None, description="target version; --force picks the next one"
    )
    # Explicit: `--force` alone, or `--force False` as the visualiser's re-run command
    # writes every parameter out.
    force = luigi.BoolParameter(
        default=False, significant=False, parsing=luigi.BoolParameter.EXPLICIT_PARSING,
        description="redo known-complete work for this run (bypasses seal, fingerprint, hash)",
    )
    invocation = InvocationParameter()
    # Significant: the task that works on what a stopped stage got is a task of its own,
    # beside the usual one (which waits behind the stopped stage, not done).
    continuing = luigi.Parameter(
        default="", description="set by a run, not typed: the stages a spent budget stopped "
        "for this docket in this run (comma-separated), whose output so far this task works on")

    stage: ClassVar[Stage]

    def __init_subclass__(cls, **kwargs) -> None:
        super().__init_subclass__(**kwargs)
        if "stage" in cls.__dict__:  # the stage's task (its copy for yielding sets none)
            _task_of[cls.stage.name] = cls

    def __init__(self, *args, **kwargs) -> None:
        runtime_or_exit()  # a bad configuration stops here with one line, before scheduling
        if kwargs.get("version") is None and kwargs.get("force", True):  # --force may be asked
            kwargs = dict(self.get_param_values(self.get_params(), args, kwargs))
            args = ()
            if kwargs["force"] and kwargs["version"] is None:
                # Resolved before Luigi makes the task id from the parameters: a forced run
                # shows in the visualiser as a task of its own.
                invocation = kwargs["invocation"] or Invocation.of_process()
                kwargs["version"] = invocation.forced_version(
                    self.stage.name, lambda: self.next_forced_version(invocation))
        super().__init__(*args, **kwargs)
        required = registry.chain_of(self.stage, runtime_or_exit().settings) - {self.stage.name}
        if not set(self.stopped()) <= required:
            refuse(f"--continuing {self.continuing}: give stages {self.stage.name} requires "
                   f"({', '.join(sorted(required)) or 'none'}), or leave it out")

    @property
    def current_invocation(self) -> Invocation:
        return self.invocation or Invocation.of_process()

    @property
    def task_family(self) -> str:
        """The name luigid shows for this task (the D3 graph's node label, the sidebar's
        families, the execution summary): the stage task and its docket, so the tasks of two
        dockets differ at a glance; grouped by stage under the sidebar's dotted prefix. Luigi's
        registry, task ids and config sections go by the class (``get_task_family``). A task
        working on what a stopped stage got says which (``...continuing-backfill``)."""
        return docket_task_label(type(self).get_task_family(), self.docket,
                                 self.stopped()[-1] if self.stopped() else "")

    def stopped(self) -> tuple[str, ...]:
        """The stages a spent budget stopped for this docket in this run, whose output so far
        this task works on (``continuing``), in the order they stopped; () for the usual task."""
        return tuple(name for name in self.continuing.split(",") if name)

    def as_dynamic_dependency(self) -> DocketStageTask:
        """This task, to be yielded from a run(): Luigi sends a yielded task to its worker as
        (module, family, params) and loads it by that family from its registry, which knows
        the class name only."""
        cls = type(self)
        if cls not in _yielded:
            # The same task, named by its class alone (what a yielded task's family must be);
            # outside the registry, like luigi.task.externalize's copies, so names stay unique.
            _yielded[cls] = types.new_class(cls.__name__, (cls,), exec_body=lambda ns: ns.update(
                task_family=property(_class_family), _visible_in_registry=False,
                __module__=cls.__module__))
        return _yielded[cls](**self.param_kwargs)

    # --- versions -------------------------------------------------------------------------
    @property
    def asked_version(self) -> int:
        return self.version if self.version is not None else BASE_VERSION

    @classmethod
    def next_forced_version(cls, invocation: Invocation | None = None) -> int:
        store = registry.marker_store(cls.stage, runtime_or_exit(), invocation)
        return max(store.max_version(), BASE_VERSION) + 1

    # --- targets ----------------------------------------------------------------------------
    def marker_store(self) -> MarkerStore:
        return registry.marker_store(self.stage, runtime_or_exit(), self.current_invocation)

    def requires(self):
        """Its upstream's task, and those of the stages it reads (``Stage.reads``): a list
        when there are several. A task continuing a stopped stage leaves that stage out (it
        ran in this run) and requires the continuing tasks of the stages between
        (``task_in_run``). Asked by Luigi when it schedules the task: the run notes that it
        asked this stage for the docket (``Invocation.asked``)."""
        self.current_invocation.note_asked(self.stage.name, self.docket)
        stopped = self.stopped()
        required = [self.task_in_run(stage, stopped)
                    for stage in registry.required_stages(self.stage, runtime_or_exit().settings)
                    if stage.name not in stopped]
        return required[0] if len(required) == 1 else required

    def task_in_run(self, stage: Stage, stopped: tuple[str, ...]) -> DocketStageTask:
        """``stage``'s task for this docket in a run where ``stopped`` stopped on their
        budgets: the one continuing those it requires (``registry.continued``), or the usual."""
        continued = registry.continued(stage, stopped, runtime_or_exit().settings)
        return task_of(stage)(docket=self.docket, force=False, invocation=self.invocation,
                              continuing=",".join(continued))

    def continuation(self) -> list[DocketStageTask]:
        """The tasks that work on what this run, stopped by a spent budget, got: those of the
        later stages the run asked for the docket (``registry.continuation``), each
        continuing this stage (and the stages this task continues)."""
        stopped = (*self.stopped(), self.stage.name)
        later = registry.continuation(self.stage.name, self.current_invocation.asked_for(self.docket),
                                      runtime_or_exit().settings)
        return [self.task_in_run(stage, stopped).as_dynamic_dependency() for stage in later]

    def output(self) -> DocketTarget:
        rt = runtime_or_exit()
        hints = self.current_invocation.seal_hints
        if self.docket in hints:
            sealed = hints[self.docket]
        else:
            row = docket_rows.get_docket(self.docket)
            sealed = row.sealed_at if row else None
        kind = SealedDocketTarget if sealed else FingerprintTarget
        return kind(self.docket, self.asked_version, self.marker_store(),
                    window_start=self.current_invocation.window_start(rt.settings.freshness_seconds))

    def complete(self) -> bool:
        if self.output().exists():
            return True
        # A stage that already ran in this invocation is not asked for again in this run
        # even when its target cannot say so: it failed for this docket (its downstream works
        # on what exists), stopped on its budget or met another run's lease (then its task
        # waits on the next run, pipeline.engine.not_done, and its downstream's usual tasks
        # with it; after a spent budget, continuing tasks work on what it got). No marker
        # vouches for it, and the next run continues.
        return (runs.finished_since(self.stage.name, self.docket, self.current_invocation.started_at)
                or self._scheduled_then_gone())

    def _scheduled_then_gone(self) -> bool:
        """A wrapper of this run scheduled the docket, and its rows have gone since
        (``docketeer forget --purge`` between two of its stages): nothing is left to do."""
        return (self.docket in self.current_invocation.seal_hints
                and docket_rows.get_docket(self.docket) is None)

    def upstream_vouched(self) -> bool:
        """Every stage it requires has a marker: never while it continues a stopped stage,
        whose output it worked on as far as that run got (no marker vouches for that)."""
        if self.stopped():
            return False
        return all(task.output().exists() for task in luigi.task.flatten(self.requires()))

    def input_fingerprint(self) -> str | None:
        """What a marker written now would vouch for: the stage's input as recorded now."""
        return self.marker_store().input_fingerprint(self.docket)


    def write_marker(self, run_id: str, input_fp: str | None, kept_output: str | None = None) -> None:
        """Record the stage done for this docket at the asked version, vouching for ``input_fp``."""
        self.output().touch(input_fingerprint=input_fp, run_id=run_id, kept_output=kept_output)

    # --- running ----------------------------------------------------------------------------
    def make_progress(self, rt) -> Progress:
        return Progress(
            f"{self.stage.name} {self.docket}",
            every=rt.settings.log_every_seconds,
            on_status=self.set_status_message,
            on_percent=self.set_progress_percentage,
        )

    def _requires(self):
        """What it requires, and, once its run left the docket not done (a spent budget, a
        lease held elsewhere), what it waits for: Luigi's summary reads a pending task's
        reasons from here, so it files the task under "missing external dependencies", not
        "not granted run permission" (``pipeline.engine.not_done``)."""
        waits = not_done.waits_of(self.stage.name, self.docket, self.current_invocation)
        return [*luigi.task.flatten(super()._requires()), *waits]

    def run(self):
        """The stage over the docket. Returns a generator (Luigi's dynamic dependency) when
        the docket is not done by this run: the work is done and recorded by then, and the
        task stays PENDING on what it waits for (``pipeline.engine.not_done``)."""
        rt = runtime_or_exit()
        if self._left_complete_by_upstream():
            return
        settings = self.current_invocation.settings(rt.settings)  # with this run's budgets
        if self._scheduled_then_gone():
            self._skip_docket_gone()
            return
        docket = docket_rows.require_docket(self.docket)
        if removed := leftovers.remove_for_run(rt.data_dir, rt.blobs):  # a dead run's scratch
            log.info("removed %d leftovers of dead runs", removed)
        if self._helped_running_holder(rt, settings, docket):
            return
        # Fingerprint the input before the work reads it: a change during the run is seen
        # as a change by the next run.
        input_fp = self.input_fingerprint()
        started = time.monotonic()
        with contextlib.ExitStack() as lease:
            try:
                token = lease.enter_context(leases.held(self.stage.name, self.docket,
                                                        settings.lease_seconds))
            except LeaseHeld as held_by:
                return self._skip_worked_elsewhere(held_by)
            store = self.marker_store()
            ctx = self._context(rt, settings, token)
            ctx.claims = self._holder_claims(ctx, settings, token)
            try:
                self._prepare(ctx, docket)
                with self._one_transaction(ctx):
                    result, io = self._work_then_mark(ctx, docket, store, input_fp)
            except _RolledBack as failed:
                result, io = failed.result, failed.io
            summary = {**result.counts, **io}
            runs.finish_run(ctx.run_id, clean=result.clean, counters=summary,
                            message=rt.settings.mask(result.message),
                            budget_spent=result.budget_spent)
        left = self._log_summary(result, summary, time.monotonic() - started)
        # Cron sees a failure in the exit status (the wrapper waits on the next run): the
        # work done is kept, the marker is not written, the other dockets go on.
        self._record_outcome(ctx.run_id, result)
        if result.budget_spent and not result.failed:
            # The later stages the run asked for work on what it got, as tasks of their own
            # (DONE once they did); this one stays PENDING on the next run, not done.
            return _waiting_on(*self.continuation(), not_done.DocketContinuesNextRun(
                stage=self.stage.name, docket=self.docket, left=left,
                invocation=self.invocation))
        return None

    def _work_then_mark(self, ctx: StageContext, docket, store: MarkerStore,
                        input_fp: str | None) -> tuple[StageResult, dict]:
        """The stage's run over the docket, then its marker if the run finished the docket
        (inside ``_one_transaction``)."""
        held = store.hold_output(self.docket)  # cleared until the run ends well
        result, io = self._call_stage(ctx, docket)
        ctx.progress.finish()
        if result.failed and self.stage.atomic:
            raise _RolledBack(result, io)  # its writes go with the transaction
        # Rows a helper wrote in this run count as written (the holder may have written
        # none itself): the output is recorded afresh, never the one held before the run.
        wrote_rows = bool(io.get(ITEM_STATE_WRITES)) or bool(ctx.claims and ctx.claims.others_claimed())
        if wrote_rows or held is None or docket.retry_due_at:
            # Items waiting to retry never block a marker; the docket row carries the
            # earliest next attempt, and the targets after fetch turn incomplete when it
            # comes. Rows as they were (and a clean last run) leave it as it was.
            item_states.refresh_retry_due(self.docket)
        kept = None if wrote_rows else held
        # A marker vouches for the whole chain: if the upstream stopped short (budget), this
        # stage saw only part of its input and must run again once the upstream is done.
        if not (result.complete and self.upstream_vouched()
                and self._write_marker_if_done(ctx.run_id, input_fp, result, kept)):
            store.restore_output(self.docket, kept)
        return result, io

    def _skip_worked_elsewhere(self, held_by: LeaseHeld):
        """A live run holds this (stage, docket): its work is being done there, so this task
        steps aside with one notice (naming the holder) and waits on ``HeldByAnotherRun``:
        not done by this run, neither a success nor a failure (`luigi` exits 20, as for a
        partial run). Its run row ends clean, with no item touched, so the wrapper does not
        ask for it again in this run; no marker is written (the holder writes its own)."""
        line = f"{held_by}: skipped, that run does its work; not done in this run"
        run_id = runs.start_run(self.task_id, self.stage.name, self.docket)
        runs.finish_run(run_id, clean=True, counters={}, message=line)
        log.info(line)
        if self.set_status_message:
            self.set_status_message(line)
        return _waiting_on(not_done.HeldByAnotherRun(
            stage=self.stage.name, docket=self.docket, holder=held_by.holder,
            invocation=self.invocation))

    def _skip_docket_gone(self) -> None:
        """The docket's rows went after a wrapper of this run scheduled it: nothing is left to
        work on and nothing is written (a run row would be a row of a docket that is gone);
        one notice, and the task succeeds, as its downstream then does."""
        line = f"{self.stage.name} {self.docket}: the docket is no longer in the store (forgotten), skipped"
        log.warning(line)
        if self.set_status_message:
            self.set_status_message(line)

    def _left_complete_by_upstream(self) -> bool:
        """Luigi judged this task before its upstream ran; an upstream that found nothing
        new (fetch, once per freshness window) leaves its input as this stage's marker
        recorded it, so the task is complete now: one probe, not a read of every item row."""
        if self.force or self.stage.upstream is None or not self.output().exists():
            return False
        line = f"{self.stage.name} {self.docket}: input unchanged since its marker, nothing to do"
        log.info(line)
        if self.set_status_message:
            self.set_status_message(line)
        return True

    def _helped_running_holder(self, rt, settings, docket) -> bool:
        """On a shared state DB, a live run holding this (stage, docket) lease is helped, not
        fought: this worker takes its share of the items through claims and writes no marker
        (the holder does). True while that run still holds the lease afterwards; False when
        there is none, or it ended meanwhile: this task then runs as the holder."""
        if not (self.stage.splits_items and claims.supported()):
            return False
        session = claims.session_of(self.stage.name, self.docket)
        if session is None:
            return False
        log.info("%s %s: its lease is held by a live run; taking a share of its items",
                 self.stage.name, self.docket)
        started = time.monotonic()
        ctx = self._context(rt, settings, session)
        ctx.claims = claims.ItemClaims(self.stage.name, self.docket, session, leases.holder_name(),
                                       holder=False, batch=settings.claim_batch,
                                       seconds=settings.lease_seconds)
        ctx.progress.on_tick = ctx.claims.renew  # its claims, never the holder's lease
        try:
            result, io = self._call_stage(ctx, docket)
        finally:
            # What it claimed and did not finish (a spent budget, a run-stopping error) is
            # the holder's at once; only a helper that died leaves it to expire.
            ctx.claims.release()
        ctx.progress.finish()
        if io.get(ITEM_STATE_WRITES):
            item_states.refresh_retry_due(self.docket)
        summary = {**result.counts, **io}
        runs.finish_run(ctx.run_id, clean=result.clean, counters=summary,
                        message=rt.settings.mask(result.message), budget_spent=result.budget_spent)
        self._log_summary(result, summary, time.monotonic() - started)
        self._record_outcome(ctx.run_id, result)
        return claims.session_of(self.stage.name, self.docket) == session

    def _holder_claims(self, ctx: StageContext, settings, token: str):
        """The lease holder's claims (a splitting stage on PostgreSQL), renewed with its lease."""
        if not (self.stage.splits_items and claims.supported()):
            return None
        claims.clear(self.stage.name, self.docket, keep=token)  # earlier sessions are over
        renew_lease = ctx.progress.on_tick
        mine = claims.ItemClaims(self.stage.name, self.docket, token, leases.holder_name(),
                                 holder=True, batch=settings.claim_batch,
                                 seconds=settings.lease_seconds)
        # Waiting for a helper is not dying: the lease, and the claims of the items this run
        # holds undecided meanwhile (read ahead, a batch not written yet), are renewed.
        ctx.progress.on_tick = mine.on_wait = lambda: (renew_lease(), mine.renew())
        return mine

    def _context(self, rt, settings, lease_token: str) -> StageContext:
        """A new run row, and progress whose every report renews the lease: a long run
        keeps it."""
        run_id = runs.start_run(self.task_id, self.stage.name, self.docket)
        progress = self.make_progress(rt)
        progress.on_tick = lambda: leases.renew(self.stage.name, self.docket, lease_token,
                                                settings.lease_seconds)
        deadline = self.current_invocation.deadline(settings.budget_seconds)
        return StageContext(runtime=rt, run_id=run_id, force=self.force, progress=progress,
                            deadline=deadline, settings=settings)

    @contextlib.contextmanager
    def _one_transaction(self, ctx: StageContext):
        """The block from the held output to the marker: for a stage declared ``atomic``, one
        state-DB transaction (on SQLite BEGIN IMMEDIATE: the write lock is taken at once, so
        no read snapshot has to be upgraded later when another process wrote meanwhile). A
        kill at any write of it leaves the docket's derived rows, item states and marker as
        they were; an error rolls them back too, and the run row is then said failed again
        (its first saying went with the rollback). The run row was started before it, so a
        running stage shows as running to other processes."""
        with stage_writes(self.stage.name):
            if not self.stage.atomic:
                yield
                return
            try:
                with state_database.atomic():
                    yield
            except Exception as exc:
                runs.finish_run(ctx.run_id, clean=False, counters=dict(ctx.progress.counts),
                                message=ctx.settings.mask(f"{type(exc).__name__}: {exc}"))
                raise

    def _prepare(self, ctx: StageContext, docket) -> None:
        """The stage's ``prepare``, before its transaction. A spent time budget ends it (the run
        then stops at its first check); a run-stopping error (a key rejected) fails the run as
        in the stage's own run; any other is logged, and the run does the work itself (its
        failure handled as the stage's)."""
        if self.stage.prepare is None:
            return
        try:
            self.stage.prepare(ctx, docket)
        except BudgetSpent:
            return
        except Exception as exc:
            if classify(original_error(exc)).stops_run:
                runs.finish_run(ctx.run_id, clean=False, counters=dict(ctx.progress.counts),
                                message=ctx.settings.mask(f"{type(exc).__name__}: {exc}"))
                raise
            ctx.prepared = None
            log.warning("%s %s: preparing failed (%s); the run does it itself", self.stage.name, self.docket,
                        ctx.settings.mask(describe(exc)))

    def _call_stage(self, ctx: StageContext, docket) -> tuple[StageResult, dict]:
        with counters.measure() as io:
            try:
                counters.incr(STAGE_CALLS)
                result = self.stage.run(ctx, docket)
            except BudgetSpent as exc:
                result = StageResult(budget_spent=True, message=str(exc))
            except Exception as exc:
                if classify(original_error(exc)).stops_run:  # the key, a full disk, a DB gone
                    runs.finish_run(ctx.run_id, clean=False, counters=dict(ctx.progress.counts),
                                    message=ctx.settings.mask(f"{type(exc).__name__}: {exc}"))
                    raise
                result = self._failed(ctx, exc)
        return result, io

    def _failed(self, ctx: StageContext, exc: Exception) -> StageResult:
        """The stage raised for this docket alone: a result saying so, not an exception out
        of ``run()``, so the other dockets go on. The traceback goes to the log at DEBUG
        (``--log-level DEBUG`` shows it); the state DB keeps the one-line reason."""
        log.debug("%s %s failed", self.stage.name, self.docket, exc_info=exc)
        return StageResult(counts=dict(ctx.progress.counts), clean=False, failed=True,
                           message=ctx.settings.mask(describe(exc)))

    def _record_outcome(self, run_id: str, result: StageResult) -> None:
        """A run that raised, or kept its work but could not finish (a broken walk, an item
        it could not index), failed this docket stage: recorded with its reason (one line in
        the log and on the visualiser, a row ``docketeer dockets``, ``stats`` and the web
        pages show), never raised. A clean, complete run clears the stage's earlier failure.
        No marker was written for a failed run, so the next run tries again."""
        if result.failed or not (result.clean or result.budget_spent):
            result.failed = True
            reason = runtime_or_exit().settings.mask(result.message) or "unclean, no reason given"
            row = docket_failures.record(self.docket, self.stage.name, reason, run_id, iso(utcnow()))
            again = (f" ({row.attempts} failures in a row since {eastern_instant(row.first_failed_at)})"
                     if row.attempts > 1 else "")
            line = (f"{self.stage.name} {self.docket}: failed: {reason}{again}; "
                    "no marker, the next run tries again")
            log.error(line)
            if self.set_status_message:
                self.set_status_message(line)
        elif result.complete:
            docket_failures.clear(self.docket, self.stage.name)

    def _write_marker_if_done(self, run_id: str, input_fp: str | None, result: StageResult,
                              kept_output: str | None) -> bool:
        """A marker means done: refused while any vouched item lacks a decided state."""
        left = self.stage.unfinished(runtime_or_exit(), self.docket, iso(utcnow()))
        if left:
            result.message = (f"no marker: {left} item(s) without a decided {self.stage.name} "
                              "state; the next run continues")
            log.warning("%s %s: %s", self.stage.name, self.docket, result.message)
            return False
        if self.stage.merges_into_upstream:
            # Its merge changed its own input (OCR refreshed extract's output): the input it
            # has seen is that output as the run left it, or it would never be complete.
            input_fp = self.input_fingerprint()
        self.write_marker(run_id, input_fp, kept_output)
        return True

    def _left_after_budget(self) -> str:
        """What a spent budget left of this docket, as far as the stage can count it."""
        waiting = self.stage.unfinished(runtime_or_exit(), self.docket, iso(utcnow()))
        if waiting:
            return f"{waiting} item(s) without a decided {self.stage.name} state"
        return f"the rest of the docket's {self.stage.name}"

    def _log_summary(self, result: StageResult, summary: dict, seconds: float) -> str:
        """The run's one line (log and status message); returns what a spent budget left."""
        left = ""
        if result.failed:
            return left  # its one line is the failure's (_record_outcome)
        shown = " ".join(f"{k}={v}" for k, v in sorted(summary.items()) if v)
        line = f"{self.stage.name} {self.docket}: {shown or 'nothing to do'} in {seconds:.2f}s"
        if self.stopped():
            line += f" — on what {self.stopped()[-1]} got so far; {self.stopped()[-1]} continues next run"
        if result.budget_spent:
            left = self._left_after_budget()
            line += f" — {PARTIAL} ({result.message}; left: {left})"
        elif not result.clean:
            line += f" — unclean: {result.message}"
        log.info(line)
        if self.set_status_message:
            self.set_status_message(line)
        return left


class _RolledBack(Exception):
    """An atomic stage failed for its docket: raised through its transaction to roll its
    writes back, then handled as the failure it is."""

    def __init__(self, result: StageResult, io: dict) -> None:
        super().__init__(result.message)
        self.result, self.io = result, io


def _waiting_on(*tasks: luigi.Task):
    """What ``run()`` returns to wait on ``tasks``: a generator, which Luigi takes as run()'s
    dynamic dependencies (luigi.worker.TaskProcess._run_get_new_deps), while the work before
    it was done by the call itself, so a direct ``task.run()`` still does it. Yielded at
    once: the waits never complete within a run, so Luigi runs the other tasks (a
    continuation) and never runs this one again."""
    yield list(tasks)


_task_of: dict[str, type[DocketStageTask]] = {}  # stage name -> its task class
_yielded: dict[type[DocketStageTask], type[DocketStageTask]] = {}  # see as_dynamic_dependency


def task_of(stage: Stage) -> type[DocketStageTask]:
    """The stage's task class (``pipeline.tasks`` defines the pipeline's own)."""
    return _task_of[stage.name]


def _class_family(self) -> str:
    return type(self).get_task_family()
