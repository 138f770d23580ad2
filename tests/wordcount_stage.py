"""A stage that exists only in the tests: the word count of each comment's text, after extract.

It shows what adding a stage takes: this one module — the stage's plain functions and its
declaration — and its tests (``tests/test_stage_declared_elsewhere.py``). Its Luigi tasks,
``CountWords`` and the wrapper ``CountWordsAll``, are made from the declaration; its markers
go to the state DB like most stages'. The tests register it for their own duration only,
so every other test sees the real chain.
"""

from __future__ import annotations

from pipeline.stages.base import Stage, StageContext, StageResult
from pipeline.stages.extract import read_combined
from pipeline.store import item_states
from pipeline.store.models import Docket
from pipeline.tasks import stage_tasks

STAGE = "wordcount"
UPSTREAM = "extract"
NOT_WRITTEN = ("pending", "stale")  # extract rows without a combined.md vouched for yet
LEAVE_OUT: set[str] = set()  # items count_words skips: a test's stand-in for work left undone


def plan(docket_id: str, force: bool) -> dict[str, str]:
    """item key -> the text's content hash, for the items whose count is missing or stale."""
    mine = item_states.states_for_docket(STAGE, docket_id)
    todo = {}
    for key, row in item_states.states_for_docket(UPSTREAM, docket_id).items():
        if row.state in NOT_WRITTEN or not row.content_hash:
            continue
        done = mine.get(key)
        if force or done is None or done.fingerprint != row.content_hash:
            todo[key] = row.content_hash
    return todo


def count_words(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    for key, text_hash in sorted(plan(docket.id, ctx.force).items()):
        if key in LEAVE_OUT:
            continue
        _, text = read_combined(ctx.blobs, docket.id, key)
        item_states.transition(STAGE, key, docket.id, "ok", run_id=ctx.run_id, fingerprint=text_hash,
                               content_hash=text_hash, detail=f"words={len(text.split())}")
        result.add("counted")
    return result


def unfinished(runtime, docket_id: str, now: str) -> int:
    return len(plan(docket_id, False))


DECLARATION = Stage(
    name=STAGE, upstream=UPSTREAM, run=count_words, task="CountWords", wrapper="CountWordsAll",
    doc="The word count of every new or changed comment text.", unfinished=unfinished,
)

CountWords, CountWordsAll = stage_tasks(DECLARATION, module=__name__)
