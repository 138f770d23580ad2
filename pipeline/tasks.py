"""Thin Luigi wrappers: one task per (stage, docket), plus wrappers over the known dockets.

A task only wires parameters, targets, the lease, the run row and progress to a plain stage
function (``pipeline.stages``). Completion is decided by targets that read one indexed row,
so the scheduler drops finished dockets before any ``run()``.
"""

from __future__ import annotations

import dataclasses
import logging
import sys
import time
from typing import ClassVar

import luigi

from pipeline.clock import iso, utcnow, window_start
from pipeline.counters import STAGE_CALLS, counters
from pipeline.errors import BudgetSpent, ConfigError, DocketeerError
from pipeline.progress import Progress
from pipeline.runtime import get_runtime
from pipeline.stages.base import StageContext, StageResult
from pipeline.store import dockets as docket_rows
from pipeline.store import item_states, leases, markers, runs
from targets import FingerprintTarget, SealedDocketTarget

log = logging.getLogger("docketeer")

BASE_VERSION = 1
# Taken when the module is imported in the parent process, so a forked worker measures the
# time budget from the start of the whole invocation.
INVOCATION_STARTED = time.monotonic()
INVOCATION_STARTED_AT = iso(utcnow())


class StageIncomplete(DocketeerError):
    """The stage kept its progress but could not finish (a broken walk, a failed download)."""


# Budgets given on the command line (--budget-seconds, --request-budget) override the
# settings for this invocation; set in the scheduling process, inherited by forked workers.
_budget_overrides: dict[str, int] = {}

# docket id -> sealed_at, bulk-loaded by a wrapper so each task picks its target class
# without a read of its own; a target re-checks the seal in its one read anyway.
_seal_hints: dict[str, str | None] = {}


# The index DB's docket markers, read once per invocation in one query: a scheduler pass over
# a thousand sealed dockets costs one index-DB read, not a thousand. Completion still lives
# with the index data, so a wiped index DB is noticed on the next invocation.
_index_marker_cache: dict[str, dict] = {}


def new_invocation() -> None:
    """Start a new invocation in this process (tests that call luigi.build repeatedly).

    A real `luigi` command is one process, one invocation; this resets what an invocation
    remembers: when it started, its budget overrides, its seal hints, Luigi's instance cache.
    """
    global INVOCATION_STARTED, INVOCATION_STARTED_AT
    INVOCATION_STARTED, INVOCATION_STARTED_AT = time.monotonic(), iso(utcnow())
    _budget_overrides.clear()
    _seal_hints.clear()
    _index_marker_cache.clear()
    luigi.task_register.Register.clear_instance_cache()


def effective_settings(rt):
    """The runtime's settings with this invocation's budget overrides applied."""
    if not _budget_overrides:
        return rt.settings
    return dataclasses.replace(rt.settings, values={**rt.settings.values, **_budget_overrides})


def share_luigi_log_handlers() -> None:
    """Send docketeer's log lines wherever the `luigi` command sends its own.

    Luigi attaches its handler to the "luigi-interface" logger only (after parsing the
    command line), so without this our progress and summary lines would go nowhere.
    """
    luigi_logger = logging.getLogger("luigi-interface")
    if not any(isinstance(f, OneLineFailures) for f in luigi_logger.filters):
        luigi_logger.addFilter(OneLineFailures())
    if not luigi_logger.handlers:
        return
    for name in ("docketeer", "pipeline"):
        ours = logging.getLogger(name)
        if not ours.handlers:
            for handler in luigi_logger.handlers:
                ours.addHandler(handler)
            ours.setLevel(min(luigi_logger.getEffectiveLevel(), logging.INFO))


class OneLineFailures(logging.Filter):
    """A task that failed with one of our errors (the key rejected, a disk full, a stage left
    incomplete) is one line naming the cause, not a traceback: the message says it all."""

    def filter(self, record: logging.LogRecord) -> bool:
        exc = record.exc_info[1] if record.exc_info else None
        if isinstance(exc, DocketeerError):
            record.msg = f"{record.getMessage()}: {type(exc).__name__}: {exc}"
            record.args, record.exc_info, record.exc_text = (), None, None
        return True


def runtime_or_exit():
    """The runtime, or one clear line on stderr and exit status 2 (no traceback wall)."""
    share_luigi_log_handlers()
    try:
        return get_runtime()
    except ConfigError as exc:
        print(f"docketeer: configuration error: {exc}", file=sys.stderr)
        raise SystemExit(2) from None


class DocketStageTask(luigi.Task):
    """One stage over one docket. Subclasses set ``stage``/``upstream`` and ``run_stage``."""

    docket = luigi.Parameter(description="docket id, e.g. CMS-2026-2377")
    version = luigi.OptionalIntParameter(
        default=None, description="target version; --force picks the next one"
    )
    force = luigi.BoolParameter(
        default=False, significant=False,
        description="redo known-complete work for this run (bypasses seal, fingerprint, hash)",
    )

    stage: ClassVar[str] = ""
    upstream: ClassVar[type[DocketStageTask] | None] = None

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        runtime_or_exit()  # a bad configuration stops here with one line, before scheduling
        if self.force and self.version is None:
            self._set_version(self.next_forced_version())

    # --- versions -------------------------------------------------------------------------
    def _set_version(self, version: int) -> None:
        # Luigi derives task_id from param_kwargs in __init__; a forced run must show up in
        # the visualiser as its own task, so the id is rebuilt with the resolved version.
        self.version = version
        self.param_kwargs["version"] = version
        self.task_id = luigi.task.task_id_str(
            self.get_task_family(), self.to_str_params(only_significant=True, only_public=True)
        )
        self._Task__hash = hash(self.task_id)

    @property
    def asked_version(self) -> int:
        return self.version if self.version is not None else BASE_VERSION

    @classmethod
    def next_forced_version(cls) -> int:
        runtime_or_exit()
        return max(cls.max_recorded_version(), BASE_VERSION) + 1

    @classmethod
    def max_recorded_version(cls) -> int:
        return markers.max_version(cls.stage)

    # --- targets ----------------------------------------------------------------------------
    def requires(self):
        if self.upstream is None:
            return []
        return self.upstream(docket=self.docket)

    def read_probe(self) -> markers.Probe:
        return markers.probe(self.docket, self.stage, self.upstream.stage if self.upstream else None)

    def output(self):
        rt = runtime_or_exit()
        if self.docket in _seal_hints:
            sealed = _seal_hints[self.docket]
        else:
            row = docket_rows.get_docket(self.docket)
            sealed = row.sealed_at if row else None
        if sealed:
            return SealedDocketTarget(self.docket, self.stage, self.asked_version, self.read_probe,
                                      has_upstream=self.upstream is not None)
        start = window_start(utcnow(), rt.settings.freshness_seconds)
        return FingerprintTarget(
            self.docket, self.stage, self.asked_version, self.read_probe,
            window_start=start, has_upstream=self.upstream is not None,
        )

    def complete(self) -> bool:
        if self.output().exists():
            return True
        # A stage that already ran in this invocation is done *for this run* even when its
        # target cannot say so: it stopped on its budget, or its upstream did (so the input
        # fingerprints disagree). Its downstream works on what exists; no marker vouches for
        # it, and the next run continues.
        return runs.finished_since(self.stage, self.docket, INVOCATION_STARTED_AT)

    # --- running ----------------------------------------------------------------------------
    def run_stage(self, ctx: StageContext, docket) -> StageResult:  # pragma: no cover - abstract
        raise NotImplementedError

    def upstream_vouched(self) -> bool:
        return self.upstream is None or self.requires().output().exists()

    def upstream_output_fingerprint(self) -> str | None:
        if self.upstream is None:
            return None
        return markers.output_fingerprint(self.docket, self.upstream.stage)

    def stage_output_fingerprint(self) -> str:
        return item_states.docket_output_fingerprint(self.stage, self.docket)

    def unfinished(self) -> int:
        """Items the upstream vouches for that have no decided state in this stage for their
        current input (items waiting to retry, not yet due, count as decided)."""
        return 0

    def write_marker(self, run_id: str, input_fp: str | None) -> None:
        docket = docket_rows.require_docket(self.docket)  # re-read: fetch may have sealed it
        markers.write_marker(
            self.docket, self.stage, version=self.asked_version, sealed_at=docket.sealed_at,
            input_fingerprint=input_fp, output_fingerprint=self.stage_output_fingerprint(),
            run_id=run_id,
        )

    def make_progress(self, rt) -> Progress:
        return Progress(
            f"{self.stage} {self.docket}",
            every=rt.settings.log_every_seconds,
            on_status=self.set_status_message,
            on_percent=self.set_progress_percentage,
        )

    def run(self) -> None:
        rt = runtime_or_exit()
        docket = docket_rows.require_docket(self.docket)
        # Fingerprint the input before the work reads it: a change during the run is seen
        # as a change by the next run.
        input_fp = self.upstream_output_fingerprint()
        started = time.monotonic()
        settings = effective_settings(rt)
        with leases.held(self.stage, self.docket, settings.lease_seconds) as token:
            run_id = runs.start_run(self.task_id, self.stage, self.docket)
            progress = self.make_progress(rt)
            # A long run keeps its lease: each progress report pushes the expiry forward.
            progress.on_tick = lambda: leases.renew(self.stage, self.docket, token,
                                                    settings.lease_seconds)
            ctx = StageContext(
                runtime=rt, run_id=run_id, force=self.force, progress=progress,
                deadline=_deadline(settings.budget_seconds),
            )
            ctx.extras["settings"] = settings
            with counters.measure() as io:
                try:
                    counters.incr(STAGE_CALLS)
                    result = self.run_stage(ctx, docket)
                except BudgetSpent as exc:
                    result = StageResult(budget_spent=True, message=str(exc))
                except Exception as exc:
                    runs.finish_run(run_id, clean=False, counters=dict(ctx.progress.counts),
                                    message=rt.settings.mask(f"{type(exc).__name__}: {exc}"))
                    raise
            ctx.progress.finish()
            # Items waiting to retry never block a marker; the docket row carries the earliest
            # next attempt, and the targets after fetch turn incomplete when it comes.
            item_states.refresh_retry_due(self.docket)
            # A marker vouches for the whole chain: if the upstream stopped short (budget), this
            # stage saw only part of its input and must run again once the upstream is done.
            if result.complete and self.upstream_vouched():
                self._write_marker_if_done(run_id, input_fp, result)
            summary = {**result.counts, **io}
            runs.finish_run(run_id, clean=result.clean, counters=summary,
                            message=rt.settings.mask(result.message),
                            budget_spent=result.budget_spent)
        self._log_summary(result, summary, time.monotonic() - started)
        if not result.clean and not result.budget_spent:
            # Cron must see it: the work done is kept, the marker is not written.
            raise StageIncomplete(f"{self.stage} {self.docket}: {rt.settings.mask(result.message)}")

    def _write_marker_if_done(self, run_id: str, input_fp: str | None, result: StageResult) -> None:
        """A marker means done: refused while any vouched item lacks a decided state."""
        left = self.unfinished()
        if left:
            result.message = (f"no marker: {left} item(s) without a decided {self.stage} state; "
                              "the next run continues")
            log.warning("%s %s: %s", self.stage, self.docket, result.message)
            return
        self.write_marker(run_id, input_fp)

    def _log_summary(self, result: StageResult, summary: dict, seconds: float) -> None:
        shown = " ".join(f"{k}={v}" for k, v in sorted(summary.items()) if v)
        line = f"{self.stage} {self.docket}: {shown or 'nothing to do'} in {seconds:.2f}s"
        if result.budget_spent:
            line += f" — budget spent ({result.message}); the next run continues"
        elif not result.clean:
            line += f" — unclean: {result.message}"
        log.info(line)
        if self.set_status_message:
            self.set_status_message(line)


def _deadline(budget_seconds: int) -> float | None:
    return INVOCATION_STARTED + budget_seconds if budget_seconds else None


class DiscoverDockets(luigi.Task):
    """Docket rows from the configured list, a Federal Register search, or a mirror listing."""

    def complete(self) -> bool:
        from pipeline.stages import discover

        rt = runtime_or_exit()
        return discover.is_current(rt, utcnow())

    def run(self) -> None:
        from pipeline.stages import discover

        rt = runtime_or_exit()
        found = discover.discover(rt, utcnow())
        log.info("discover (%s): %d dockets known, %d new", rt.settings.discover, found.known, found.new)


class DocketWrapper(luigi.Task):
    """Runs one stage task per known docket (after discovery), or only the named dockets."""

    docket = luigi.Parameter(
        default="", description="comma-separated docket ids: only these, and no discovery call"
    )
    force = luigi.BoolParameter(default=False, description="redo this stage for these dockets")
    budget_seconds = luigi.IntParameter(
        default=-1, significant=False,
        description="stop at the next item boundary after this many seconds (0: no limit; "
                    "default: the budget_seconds setting); the next run continues",
    )
    request_budget = luigi.IntParameter(
        default=-1, significant=False,
        description="API requests per task run (0: no limit; default: the request_budget setting)",
    )

    stage_task: ClassVar[type[DocketStageTask]]

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        runtime_or_exit()
        for name in ("budget_seconds", "request_budget"):
            if getattr(self, name) >= 0:
                _budget_overrides[name] = getattr(self, name)
        # Fixed once in the scheduling process so forked workers yield the very same tasks.
        self.forced_version = self.stage_task.next_forced_version() if self.force else None

    def named(self) -> list[str]:
        return [d.strip() for d in self.docket.split(",") if d.strip()]

    def requires(self):
        return [] if self.named() else DiscoverDockets()

    def docket_ids(self) -> list[str]:
        return self.named() or docket_rows.all_docket_ids()

    def docket_tasks(self) -> list[DocketStageTask]:
        ids = self.docket_ids()
        _seal_hints.update(docket_rows.seal_status(ids))
        return [self.stage_task(docket=d, version=self.forced_version, force=self.force) for d in ids]

    def complete(self) -> bool:
        runtime_or_exit()
        if not self.named() and not DiscoverDockets().complete():
            return False
        tasks = self.docket_tasks()
        self._notice_sealed()
        return all(task.complete() for task in tasks)

    def _notice_sealed(self) -> None:
        if self.force:
            return
        for docket in self.named():
            sealed = _seal_hints.get(docket)
            if sealed:
                log.info("%s: sealed %s, skipping (use --force to redo)", docket, sealed)

    def run(self):
        named = self.named()
        if named:
            docket_rows.ensure_dockets(named, discovered_by="cli")
        yield self.docket_tasks()


class FetchComments(DocketStageTask):
    """Walk the docket's comment lists from its watermark (resolve it first if unknown)."""

    stage = "fetch"

    def run_stage(self, ctx, docket):
        from pipeline.stages.fetch import fetch_docket

        return fetch_docket(ctx, docket)


class BackfillComments(DocketStageTask):
    """Details and attachments for new or changed items, from the API or the mirror."""

    stage = "backfill"
    upstream = FetchComments

    def unfinished(self) -> int:
        from pipeline.stages.backfill import unfinished

        return unfinished(self.docket, iso(utcnow()))

    def run_stage(self, ctx, docket):
        from pipeline.stages.backfill import backfill_docket

        return backfill_docket(ctx, docket)


class FetchAll(DocketWrapper):
    stage_task = FetchComments


class BackfillAll(DocketWrapper):
    stage_task = BackfillComments


class ExtractText(DocketStageTask):
    """Text of every new or changed comment into combined.md, in a process pool."""

    stage = "extract"
    upstream = BackfillComments

    def unfinished(self) -> int:
        from pipeline.stages.extract import unfinished

        return unfinished(self.docket)

    def run_stage(self, ctx, docket):
        from pipeline.stages.extract import extract_docket

        return extract_docket(ctx, docket)


class ExtractAll(DocketWrapper):
    stage_task = ExtractText


class OcrText(DocketStageTask):
    """Image-only PDFs (extract.file ocr_needed) through Tesseract, merged into combined.md.

    Without Tesseract it says so in one line and changes nothing (and counts as done: after
    installing Tesseract, run `OcrAll --force` once).
    """

    stage = "ocr"
    upstream = ExtractText

    def unfinished(self) -> int:
        from pipeline.stages.ocr import unfinished

        return unfinished(self.docket)

    def write_marker(self, run_id: str, input_fp: str | None) -> None:
        # OCR merges text into extract's output and refreshes extract's marker: the input it
        # has seen is extract's output *after* its own merge, or it would never be complete.
        super().write_marker(run_id, self.upstream_output_fingerprint())

    def run_stage(self, ctx, docket):
        from pipeline.stages.ocr import ocr_docket

        return ocr_docket(ctx, docket)


class OcrAll(DocketWrapper):
    stage_task = OcrText




def _index_markers() -> dict:
    from pipeline.stages.index import MARKER_COLLECTION

    if "markers" not in _index_marker_cache:
        index_db = runtime_or_exit().index_db()
        _index_marker_cache["markers"] = index_db.docket_markers(MARKER_COLLECTION)
    return _index_marker_cache["markers"]


class IndexDocket(DocketStageTask):
    """Chunks and embeddings for new or changed comments; completion kept in the index DB."""

    stage = "index"
    upstream = ExtractText

    @classmethod
    def max_recorded_version(cls) -> int:
        from pipeline.stages.index import MARKER_COLLECTION

        return runtime_or_exit().index_db().max_marker_version(MARKER_COLLECTION)

    def read_probe(self) -> markers.Probe:
        """The docket and extract's output from the state DB, this stage's marker from the index DB."""

        state_side = markers.probe(self.docket, "", ExtractText.stage)
        if not state_side.docket_exists:
            return state_side
        # The marker vouches for extract's output *under this chunker and embedder*: a new
        # config must invalidate it, sealed docket or not (sealed_complete ignores inputs).
        expected = self._index_input(state_side.upstream_output)
        state_side = dataclasses.replace(state_side, upstream_output=expected)
        marker = _index_markers().get(self.docket)
        if marker is None or marker.input_fingerprint != expected:
            return state_side
        return dataclasses.replace(
            state_side, marker_version=marker.version, marker_sealed_at=marker.sealed_at,
            marker_input=marker.input_fingerprint,
        )

    def requires(self):
        # OCR (when enabled) runs between extract and index; the index's input fingerprint
        # stays extract's output, which OCR refreshes when it merges text.
        if runtime_or_exit().settings.ocr:
            return OcrText(docket=self.docket)
        return ExtractText(docket=self.docket)

    def upstream_output_fingerprint(self) -> str | None:
        return self._index_input(super().upstream_output_fingerprint())

    @staticmethod
    def _index_input(extract_output: str | None) -> str | None:
        from pipeline.stages.index import config_id_for, marker_input_fingerprint

        if extract_output is None:
            return None
        return marker_input_fingerprint(extract_output, config_id_for(runtime_or_exit().settings))

    def unfinished(self) -> int:
        from pipeline.stages.index import config_id_for, unfinished

        rt = runtime_or_exit()
        return unfinished(self.docket, rt.index_db(), config_id_for(rt.settings))

    def write_marker(self, run_id: str, input_fp: str | None) -> None:
        from pipeline.stages.index import COLLECTIONS

        docket = docket_rows.require_docket(self.docket)
        index_db = runtime_or_exit().index_db()
        for collection in sorted(set(COLLECTIONS.values())):
            index_db.write_docket_marker(collection, self.docket, docket.sealed_at,
                                         self.asked_version, input_fp)
        _index_marker_cache.clear()  # this process re-reads what it just wrote

    def run_stage(self, ctx, docket):
        from pipeline.stages.index import embedder_from, index_docket

        return index_docket(ctx, docket, index_db=ctx.runtime.index_db(),
                            embedder=embedder_from(ctx.settings))


class IndexAll(DocketWrapper):
    """The main job: everything up to a searchable index, for every known docket."""

    stage_task = IndexDocket
