"""Lineage: each comment tied to the document it answers, and that document's phase of the
rule (proposed, final, notice, ...); the docket linked to the other dockets of its RIN.

Runs after backfill (a comment's ``commentOnDocumentId`` is its record's; the documents'
types and windows are what fetch's resolve stored, ``docket_document``). An item's
fingerprint is the document it answers and that document's type, with the linker's version,
so only new comments, and those whose document changed, are written; the rest are never
touched. A second run does nothing.
"""

from __future__ import annotations

import logging

from pipeline.clock import iso
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.fingerprints import digest
from pipeline.lineage import consistency, queries
from pipeline.lineage.phases import UNKNOWN, phase_of
from pipeline.store import item_states
from pipeline.store.models import Docket

log = logging.getLogger("docketeer")
STAGE = "lineage"
LINKER_VERSION = "lineage-1"
UNDECIDED = (item_states.PENDING, "stale")  # backfill has not decided these yet


def item_fingerprint(document: str | None, document_type: str | None) -> str:
    return digest(LINKER_VERSION, document or "", document_type or "")


def plan(docket_id: str, force: bool) -> dict[str, tuple[str | None, str | None]]:
    """comment -> (document answered, its type), for the comments to tie, from state rows
    and item facts read in bulk."""
    upstream = item_states.states_for_docket("backfill", docket_id)
    mine = item_states.states_for_docket(STAGE, docket_id)
    answered = queries.comment_documents(docket_id)
    types = queries.document_types(answered.values())
    todo = {}
    for key, row in upstream.items():
        if row.state in UNDECIDED or key not in answered:
            continue
        document = answered[key]
        document_type = types.get(document)
        done = mine.get(key)
        if force or done is None or done.state == "stale" \
                or done.fingerprint != item_fingerprint(document, document_type):
            todo[key] = (document, document_type)
    return todo


def unfinished(docket_id: str) -> int:
    return len(plan(docket_id, False))


def link_docket(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    links = queries.save_rin_links(docket.id)
    if ctx.settings.lineage_federal_register:
        links += federal_register_links(ctx, docket.id, result)
    if links:
        result.add("links_written", links)
    todo = plan(docket.id, ctx.force)
    if not todo:
        return result
    ctx.check_time()
    ctx.progress.start(len(todo))
    ties = {key: (document, phase_of(document_type) if document else UNKNOWN)
            for key, (document, document_type) in todo.items()}
    queries.save_ties(docket.id, ties)
    rows = [{"stage": STAGE, "item": key, "docket": docket.id, "run_id": ctx.run_id,
             "state": "ok" if document else "skipped",
             "fingerprint": item_fingerprint(document, document_type),
             "reason": None if document else "names no document it answers"}
            for key, (document, document_type) in sorted(todo.items())]
    item_states.transition_many(rows)
    ctx.progress.advance("tied", len(todo))
    tied = sum(1 for document, _ in todo.values() if document)
    for outcome, n in (("tied", tied), ("no_document", len(todo) - tied)):
        if n:
            result.add(outcome, n)
    return result


def federal_register_links(ctx: StageContext, docket_id: str, result: StageResult) -> int:
    """The docket linked to the dockets its documents' Federal Register records name. Each FR
    number is asked once (``federal_register_document``). A number the Federal Register does
    not answer now (5xx, a timeout) is the docket's ``fr_item`` row in ``retry``: the docket
    carries its next attempt, so a later run asks again then (``pipeline.failures``); one it
    answers 404 is recorded given up and never asked again (``Redrive`` sends it back). The
    docket's ties are never held up."""
    from pipeline.failures import PERMANENT, RetryPolicy, item_failure
    from pipeline.sources.connect import federal_register, request_budget

    numbers = queries.fr_numbers(docket_id)
    known = queries.fr_documents(numbers)
    # Earlier failures only (an index range: a docket's comments are "ok" or "skipped").
    asked = item_states.rows_in_states(STAGE, docket_id, FR_FAILED) if len(known) < len(numbers) else {}
    now = iso(ctx.clock())
    missing = [n for n in numbers if n not in known and _askable(asked.get(fr_item(docket_id, n)), now)]
    if missing:
        client = federal_register(ctx.settings, request_budget(ctx.settings, ctx.deadline))
        for number in missing:
            key = fr_item(docket_id, number)
            try:
                found = client.document(number)
            except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
                failure = item_failure(exc)  # a spent budget or a run-stopping cause goes up
                if failure.kind == PERMANENT:
                    item_states.transition(STAGE, key, docket_id, failure.state, run_id=ctx.run_id,
                                           reason=f"Federal Register document {number}: {failure.reason}"[:500],
                                           detail=PERMANENT)
                else:
                    item_states.retry_later(STAGE, key, docket_id, f"Federal Register document {number}: "
                                            f"{failure.reason}", run_id=ctx.run_id,
                                            policy=RetryPolicy.from_settings(ctx.settings))
                result.add("federal_register_unanswered")
                log.warning("%s: Federal Register document %s: %s", docket_id, number, failure.reason)
                continue
            queries.save_fr_document(number, found.docket_ids, found.rins)
            if key in asked:  # an earlier failure of it is over
                item_states.transition(STAGE, key, docket_id, "ok", run_id=ctx.run_id)
            known[number] = (found.docket_ids, found.rins)
            result.add("federal_register_calls")
    return queries.save_fr_links(docket_id, known)


def fr_item(docket_id: str, number: str) -> str:
    """The state row of the docket's ask for one Federal Register number (none while every
    ask is answered at once)."""
    return f"{docket_id}/fr-{number}"


# The states an ask of the Federal Register is left in when it failed: waiting for its next
# attempt, given up (404, or past the retry horizon), or sent back by Redrive.
FR_FAILED = ("retry", "gone", "failed", "stale")


def _askable(row, now: str) -> bool:
    """Not given up (a 404) and not waiting for its next attempt."""
    return row is None or not (row.waits(now) or row.state in ("gone", "failed"))


def lineage_terms(settings) -> str:
    """The Federal Register links change the stage's output: on, they are its terms."""
    return "federal_register" if settings.lineage_federal_register else ""


DECLARATION = Stage(
    name=STAGE, upstream="backfill", run=link_docket, task="LinkRule", wrapper="LineageAll",
    doc="Each new comment tied to the document it answers and its phase; dockets linked by RIN.",
    unfinished=lambda runtime, docket_id, now: unfinished(docket_id),
    terms=lineage_terms, atomic=True, rows_agree=consistency.problems,
)
