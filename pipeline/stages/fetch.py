"""Fetch: walk a docket's comment lists from its watermark; no-op upserts; seal when due.

Fetch is the only stage that learns about new comments. An unknown docket is resolved once
(docket + documents); a known open one is walked from its watermark with no resolve and no
document listing; a sealed one costs zero calls. The watermark, last-pull time and count
advance only after a clean walk, and only then may the docket auto-seal.
"""

from __future__ import annotations

import json
import logging

from pipeline.clock import iso
from pipeline.errors import BadResponse, BudgetSpent, PermanentHTTPError, TransientHTTPError
from pipeline.ids import validate_id
from pipeline.seals import should_seal
from pipeline.sources import connect
from pipeline.stages.base import StageContext, StageResult
from pipeline.store import dockets as docket_rows
from pipeline.store import item_states, items
from pipeline.store.models import Docket, database

log = logging.getLogger("docketeer")
STAGE = "fetch"

SUMMARY_FIELDS = ("title", "postedDate", "lastModifiedDate", "withdrawn", "objectId", "documentType")


def fetch_docket(ctx: StageContext, docket: Docket, *, api=None) -> StageResult:
    if docket.sealed_at and not ctx.force:
        log.info("%s: sealed %s, skipping", docket.id, docket.sealed_at)
        return StageResult(message="sealed")
    budget = connect.request_budget(ctx.settings, ctx.deadline)
    api = api or connect.regulations_gov(ctx.settings, budget)
    result = StageResult()
    try:
        if not docket.resolved_at:
            docket = resolve_docket(api, docket, ctx, result)
        watermark = walk_docket(api, docket, ctx, result)
    except BudgetSpent as exc:
        result.budget_spent, result.message = True, str(exc)
        return _with_calls(result, api)
    except (TransientHTTPError, PermanentHTTPError, BadResponse) as exc:
        # The walk broke: keep what was upserted, leave the watermark, never seal.
        result.clean, result.message = False, f"walk of {docket.id} broke off: {exc}"
        return _with_calls(result, api)
    _finish_clean_walk(ctx, docket, watermark, result)
    return _with_calls(result, api)


def _with_calls(result: StageResult, api) -> StageResult:
    for endpoint, n in api.stats().items():
        result.add(f"api.{endpoint}", n)
    return result


def comment_documents(documents: list[dict]) -> list[dict]:
    """The documents comments are posted on: those with a comment period, else the rules."""
    with_period = [d for d in documents if d["attributes"].get("commentEndDate")
                   or d["attributes"].get("commentStartDate")]
    if with_period:
        return with_period
    return [d for d in documents
            if d["attributes"].get("documentType") in ("Proposed Rule", "Rule", "Notice")]


def resolve_docket(api, docket: Docket, ctx: StageContext, result: StageResult) -> Docket:
    """Learn the docket's documents, object ids and comment dates: once per docket."""
    data = api.get_docket(docket.id)
    documents = api.list_documents(docket.id)
    bearing = comment_documents(documents)
    windows = [
        {
            "id": validate_id(d["id"], "document id"),
            "object_id": validate_id(d["attributes"].get("objectId"), "objectId"),
            "start": (d["attributes"].get("commentStartDate") or "")[:10] or None,
            "end": (d["attributes"].get("commentEndDate") or "")[:10] or None,
        }
        for d in bearing
    ]
    starts = [w["start"] for w in windows if w["start"]]
    ends = [w["end"] for w in windows if w["end"]]
    attrs = data.get("attributes") or {}
    with database.atomic():
        for d in documents:
            _upsert_document(d, docket.id, result)
        Docket.update(
            agency=attrs.get("agencyId") or docket.agency,
            title=attrs.get("title"),
            documents=json.dumps(windows, sort_keys=True),
            comment_start_date=min(starts) if starts else None,
            comment_end_date=max(ends) if ends else None,
            resolved_at=iso(ctx.clock()),
        ).where(Docket.id == docket.id).execute()
    return docket_rows.require_docket(docket.id)


def _upsert_document(doc: dict, docket_id: str, result: StageResult) -> None:
    key = validate_id(doc["id"], "document id")
    attrs = doc["attributes"]
    fields = {
        "title": attrs.get("title"),
        "object_id": attrs.get("objectId"),
        "posted_date": attrs.get("postedDate"),
        "last_modified": attrs.get("lastModifiedDate"),
        "withdrawn": bool(attrs.get("withdrawn")),
    }
    digest = items.content_digest({"kind": "document", **fields})
    known = items.summary_hashes(docket_id).get(key, False)
    items.upsert_summary(key, docket_id, "document", fields, digest, known)


def walk_docket(api, docket: Docket, ctx: StageContext, result: StageResult) -> str | None:
    """Walk every comment-bearing document from the watermark; return the new watermark."""
    since = None if ctx.force else docket.pull_watermark
    known = items.summary_hashes(docket.id)
    newest = docket.pull_watermark
    windows = json.loads(docket.documents or "[]")
    ctx.progress.start(0)
    for window in windows:
        for summary in api.iter_comments(window["object_id"], since, on_bad_item=_bad_item(result)):
            outcome = upsert_comment(summary, docket.id, window["id"], known, ctx.run_id)
            result.add(outcome)
            ctx.progress.add_total(1)
            ctx.progress.advance(outcome)
            lmd = summary["attributes"]["lastModifiedDate"]
            newest = lmd if newest is None or lmd > newest else newest
            ctx.check_time()
    return newest


def _bad_item(result: StageResult):
    def record(exc: BadResponse) -> None:
        # A malformed list item cannot be keyed safely: count it and make the walk unclean
        # so the watermark stays and the next run sees the same records again.
        log.warning("skipping a malformed comment list item: %s", exc)
        result.add("malformed")
        result.clean = False
        result.message = f"malformed list item: {exc}"

    return record


def normalize_summary(summary: dict, document_id: str) -> dict:
    attrs = summary["attributes"]
    return {
        "title": attrs.get("title"),
        "object_id": attrs.get("objectId"),
        "comment_on_document_id": document_id,
        "posted_date": attrs.get("postedDate"),
        "last_modified": attrs.get("lastModifiedDate"),
        "withdrawn": bool(attrs.get("withdrawn")),
    }


def upsert_comment(summary: dict, docket_id: str, document_id: str, known: dict, run_id: str) -> str:
    key = summary["id"]
    fields = normalize_summary(summary, document_id)
    digest = items.content_digest({"kind": "comment", **fields})
    outcome = items.upsert_summary(key, docket_id, "comment", fields, digest, known.get(key, False))
    if outcome != "unchanged":
        known[key] = digest
        state = "withdrawn" if fields["withdrawn"] else "ok"
        item_states.transition(STAGE, key, docket_id, state, run_id=run_id, content_hash=digest,
                               reason="withdrawn by the submitter or agency" if fields["withdrawn"] else None)
    return outcome


def _finish_clean_walk(ctx: StageContext, docket: Docket, watermark: str | None, result: StageResult) -> None:
    if not result.clean:
        return
    now = ctx.clock()
    Docket.update(
        pull_watermark=watermark,
        last_pull_at=iso(now),
        last_pull_new=result.counts.get("created", 0),
    ).where(Docket.id == docket.id).execute()
    fresh = docket_rows.require_docket(docket.id)
    if should_seal(docket_rows.seal_facts(fresh), now.date(), ctx.settings.seal_quiet_days):
        sealed_at = docket_rows.seal(docket.id, "auto", now)
        log.info("%s: sealed automatically at %s (closed %s, quiet %d days, nothing new)",
                 docket.id, sealed_at, fresh.comment_end_date, ctx.settings.seal_quiet_days)
        result.add("sealed")
