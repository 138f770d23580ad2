"""Re-drive: send a bounded batch of items back to their normal stage task.

``luigi --module pipeline Redrive --docket D --stage extract --states failed,ocr_needed --limit 25``

Re-drive, never re-implement: this module does no stage work. It marks the oldest
``limit`` items of one (stage, docket) whose state is in ``--states`` as ``stale`` and
clears the completion markers of that stage and of every stage downstream of it, so the
next ordinary run (``IndexAll``, ``ExtractAll``...) schedules those stage tasks again and
they pick the stale items up through their own code:

* backfill: ``_todo`` takes rows in ``pending``/``stale`` whatever ``detail_summary_hash``
  says, so a final (permanently failed) detail is refetched without clearing that column;
* extract: ``plan`` takes rows in ``pending``/``stale``;
* index: its per-item state lives in the index DB and has no state column. An index row is
  ``indexed`` (fingerprint set), ``mismatch`` (indexed, but its recorded chunk count
  disagrees with its chunk rows, as ``docketeer verify`` reports) or ``stale`` (fingerprint
  cleared). Re-driving clears the row's fingerprint *and* content hash, so the index stage
  reloads ``combined.md`` and re-embeds it instead of trusting the unchanged-text shortcut.

Which states a stage's items may be re-driven from, and what marks them stale, is part of
the stage's declaration (``Stage.redrive``); the markers are cleared through each stage's
marker store, wherever it keeps them.

Downstream markers are cleared too because Luigi asks the downstream task first: a complete
``IndexDocket`` would otherwise prune the ``ExtractText`` that has to redo the items.

Guarantees: only rows of that docket, stage and states are touched; the batch is bounded
(``--limit`` is capped at ``MAX_LIMIT``); a rerun picks the next batch (stale rows are not
eligible again unless ``stale`` is in ``--states``); nothing is ever unsealed; the (stage,
docket) leases of the stages touched are held while marking, so a running stage task never
has its marker cleared under it.
"""

from __future__ import annotations

import logging
import sys
from collections.abc import Iterable
from contextlib import ExitStack
from dataclasses import dataclass, field

import luigi

import pipeline.assembly  # noqa: F401 - registers the pipeline's stages, in order
from pipeline.clock import eastern_instant
from pipeline.engine import leases, registry, runs
from pipeline.engine.command_line import BoundedIntParameter, CheckedParameters, DocketIdsParameter
from pipeline.engine.docket_task import runtime_or_exit
from pipeline.engine.store_scope import OfOneStore
from pipeline.errors import DocketeerError
from pipeline.runtime import get_runtime
from pipeline.store import dockets as docket_rows

log = logging.getLogger("docketeer")

MAX_LIMIT = 500


class RedriveError(DocketeerError):
    """A Redrive request that cannot be honoured (unknown stage, state, bad limit)."""


@dataclass
class RedriveResult:
    stage: str
    docket: str
    states: list[str]
    limit: int
    items: list[str] = field(default_factory=list)
    capped_from: int | None = None  # the --limit asked, when it was above MAX_LIMIT
    markers_cleared: list[str] = field(default_factory=list)
    sealed_at: str | None = None
    by_state: dict[str, int] = field(default_factory=dict)  # state -> items marked (state rows)

    def line(self) -> str:
        marked = ", ".join(f"{n} {state}" for state, n in sorted(self.by_state.items()))
        text = (f"redrive {self.stage} {self.docket}: {len(self.items)} item(s) in "
                f"{','.join(self.states)} marked stale" + (f" ({marked})" if marked else "")
                + f" (limit {self.limit})")
        if self.capped_from is not None:
            text += f"; --limit {self.capped_from} capped at {MAX_LIMIT}"
        if self.markers_cleared:
            text += f"; markers cleared: {','.join(self.markers_cleared)}"
            text += "; the next run of the pipeline reprocesses them"
        if self.sealed_at:
            text += f"; docket stays sealed (since {eastern_instant(self.sealed_at)})"
        return text


# --- which stages can be re-driven -----------------------------------------------------------


def redrivable_stages() -> list[str]:
    # A stage without an upstream walks lists (fetch): it has no per-item decision to redo.
    return sorted(s.name for s in registry.stages() if s.upstream is not None and s.redrive)


# --- validation -----------------------------------------------------------------------------


def parse_request(stage: str, states: str | Iterable[str], limit: int) -> tuple[list[str], int, int | None]:
    """(states, bounded limit, the limit asked when capped) or RedriveError with one clear line."""
    if stage not in redrivable_stages():
        raise RedriveError(f"cannot re-drive stage {stage!r}; one of: {', '.join(redrivable_stages())}")
    spec = registry.get(stage).redrive
    if isinstance(states, str):
        states = states or spec.default
        states = [s.strip() for s in states.split(",") if s.strip()]
    unknown = sorted(set(states) - set(spec.states))
    if unknown or not states:
        raise RedriveError(f"--states for {stage} must be among: {', '.join(spec.states)} (got {', '.join(unknown) or 'none'})")
    if limit < 1:
        raise RedriveError(f"--limit must be at least 1 (got {limit})")
    if limit > MAX_LIMIT:
        return sorted(set(states)), MAX_LIMIT, limit
    return sorted(set(states)), limit, None


# --- the work -------------------------------------------------------------------------------


def redrive(stage: str, docket: str, states: str | Iterable[str], limit: int, run_id: str) -> RedriveResult:
    """Mark a bounded, oldest-first batch of eligible items stale and clear the markers."""
    chosen, bounded, capped_from = parse_request(stage, states, limit)
    row = docket_rows.require_docket(docket)
    result = RedriveResult(stage, docket, chosen, bounded, capped_from=capped_from,
                           sealed_at=row.sealed_at)
    rt = get_runtime()
    touched = [registry.get(stage), *registry.downstream(stage)]
    with ExitStack() as held:
        for name in (s.name for s in touched):  # in pipeline order: two re-drives cannot deadlock
            held.enter_context(leases.held(name, docket, rt.settings.lease_seconds))
        before = docket_rows.state_counts(docket).get(stage, {})
        result.items = touched[0].redrive.mark_stale(rt, stage, docket, chosen, bounded, run_id)
        result.by_state = _marked_by_state(before, docket_rows.state_counts(docket).get(stage, {}),
                                           chosen, len(result.items))
        if result.items:
            for declared in touched:
                registry.marker_store(declared, rt).clear(docket)
            result.markers_cleared = [s.name for s in touched]
    return result


def _marked_by_state(before: dict[str, int], after: dict[str, int], chosen: list[str],
                     marked: int) -> dict[str, int]:
    """state -> items it lost to the re-drive (the leases held keep anyone else out). Empty for
    a stage whose rows are not state rows (the index's): the line then gives the total only."""
    if not before:
        return {}
    lost = {s: before.get(s, 0) - after.get(s, 0) for s in chosen if s != "stale"}
    lost = {s: n for s, n in lost.items() if n > 0}
    if "stale" in chosen and marked > sum(lost.values()):
        lost["stale"] = marked - sum(lost.values())
    return lost


# --- the Luigi task -------------------------------------------------------------------------


class Redrive(OfOneStore, CheckedParameters, luigi.Task):
    """Mark a bounded batch of items stale so the normal stage task reprocesses them."""

    docket = DocketIdsParameter(many=False, description="docket id")
    stage = luigi.Parameter(description="backfill, extract or index")
    states = luigi.Parameter(
        default="", description="comma-separated states to re-drive (default: failed; index: mismatch)"
    )
    limit = BoundedIntParameter(default=25, minimum=1, description=f"items per re-drive, at most {MAX_LIMIT}")

    def __init__(self, *args, **kwargs) -> None:
        super().__init__(*args, **kwargs)
        self._done = False
        runtime_or_exit()
        try:  # a bad request stops here with one line, before anything is scheduled
            parse_request(self.stage, self.states, self.limit)
            docket_rows.require_docket(self.docket)
        except DocketeerError as exc:
            print(f"docketeer: {exc}", file=sys.stderr)
            raise SystemExit(2) from None

    def complete(self) -> bool:
        # An action, not a product: it runs once per invocation (a rerun takes the next batch).
        return self._done

    def run(self) -> None:
        runtime_or_exit()  # Luigi's log handlers exist by now: our line is shown with its own
        run_id = runs.start_run(self.task_id, self.stage, self.docket)
        result = redrive(self.stage, self.docket, self.states, self.limit, run_id)
        line = result.line()
        runs.finish_run(run_id, clean=True, counters={"redriven": len(result.items)}, message=line)
        log.info(line)
        self.set_status_message(line)
        self._done = True
