"""Small test-only stages that drive the real base task, targets, leases and run log.

``ToyFetch`` plays the fetch stage (it pulls, so it stamps the docket's last pull and may
seal); ``ToyProcess`` plays a downstream stage with per-item fingerprints. Both are plain
functions declared as stages, with tasks made from the declarations like the real ones.
They form a chain of their own beside the real one, registered on import for as long as
the process lives (``luigi --module tests.core_stages ToyAll`` needs them that way).

Environment switches (for subprocess tests): TOY_ITEMS (items per docket, default 3),
TOY_FAIL (a docket id whose ToyProcess raises), TOY_KILL (a docket id whose ToyProcess
SIGKILLs itself after marking an item pending).
"""

from __future__ import annotations

import hashlib
import os
import signal

from pipeline.clock import iso
from pipeline.stages import registry
from pipeline.stages.base import Stage, StageContext, StageResult
from pipeline.store import item_states
from pipeline.store.models import Docket
from pipeline.tasks import stage_tasks

CALLS: list[tuple[str, str]] = []


def toy_fetch(ctx: StageContext, docket: Docket) -> StageResult:
    CALLS.append(("toyfetch", docket.id))
    result = StageResult()
    known = item_states.states_for_docket("toyfetch", docket.id)
    for n in range(int(os.environ.get("TOY_ITEMS", "3"))):
        item = f"{docket.id}-{n:04d}"
        content = hashlib.sha256(item.encode()).hexdigest()
        if item in known and known[item].content_hash == content:
            result.add("unchanged")
            continue
        item_states.transition("toyfetch", item, docket.id, "ok", run_id=ctx.run_id,
                               content_hash=content)
        result.add("created")
    Docket.update(last_pull_at=iso(ctx.clock()), last_pull_new=result.counts.get("created", 0)).where(
        Docket.id == docket.id).execute()
    return result


def toy_process(ctx: StageContext, docket: Docket) -> StageResult:
    CALLS.append(("toyprocess", docket.id))
    if os.environ.get("TOY_FAIL") == docket.id:
        raise RuntimeError(f"toy failure in {docket.id}")
    result = StageResult()
    upstream = item_states.states_for_docket("toyfetch", docket.id)
    mine = item_states.states_for_docket("toyprocess", docket.id)
    for item, row in sorted(upstream.items()):
        fingerprint = row.content_hash
        if not ctx.force and item in mine and mine[item].state == "ok" and mine[item].fingerprint == fingerprint:
            result.add("skipped")
            continue
        item_states.mark_pending("toyprocess", item, docket.id, run_id=ctx.run_id, reason="processing")
        if os.environ.get("TOY_KILL") == docket.id:
            os.kill(os.getpid(), signal.SIGKILL)
        item_states.transition("toyprocess", item, docket.id, "ok", run_id=ctx.run_id,
                               fingerprint=fingerprint, content_hash=fingerprint)
        result.add("processed")
    return result


TOYFETCH = registry.register(Stage(
    name="toyfetch", upstream=None, run=toy_fetch, task="ToyFetch", wrapper="ToyFetchAll"))
TOYPROCESS = registry.register(Stage(
    name="toyprocess", upstream="toyfetch", run=toy_process, task="ToyProcess", wrapper="ToyAll"))

ToyFetch, ToyFetchAll = stage_tasks(TOYFETCH, module=__name__)
ToyProcess, ToyAll = stage_tasks(TOYPROCESS, module=__name__)
