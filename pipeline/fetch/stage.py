"""Fetch: walk a docket's comment lists from its watermark; no-op upserts; seal when due.

Fetch is the only stage that learns about new comments. An unknown docket is resolved once
(docket + documents); a known open one is walked from its watermark with no resolve and no
document listing; a sealed one costs zero calls. A docket resolved before its documents were
stored (``documents_unread``, marked by the schema v17 upgrade) is resolved once more, sealed
or not, and walked only if a walk is due anyway. The watermark, last-pull time and count
advance only after a clean walk, and only then may the docket auto-seal.

What the server sends is untrusted; ``pipeline.sources.records`` makes the stored fields of
it. A field an older response lacks (``lastModifiedDate``, a document's ``objectId``) is
absent, not an error. One bad list item is never the docket's failure: an item with a safe
id but mistyped or unreadable fields becomes a per-item ``failed`` row with the reason; an
item that cannot be keyed (an id with ``/``, ``..``, NUL, a number, none at all) is counted
``malformed`` and named, by a short safe rendering, in the run's message and in a
``fetch.unkeyed`` row of the docket (``docketeer stats``, ``docketeer explain``). The rest of
the page and the next pages are taken and the walk stays clean, but the watermark is held at
the earliest bad item's lastModifiedDate, so the next run lists it again and takes it once
upstream repairs it: nothing is ever lost behind an advanced watermark. A response that is
not the promised JSON stops the walk (unclean, the watermark where it was).
"""

from __future__ import annotations

from pipeline.clock import window_start
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.errors import (
    BadResponse,
    BudgetSpent,
    DocketeerError,
    Gone,
    InvalidIdentifier,
    PermanentHTTPError,
    RunStopping,
    TransientHTTPError,
)
from pipeline.fetch.mirror import fetch_from_mirror
from pipeline.fetch.walk import (
    STAGE,
    BadItems,
    finish_clean_walk,
    log,
    record_resolution,
    walk_docket,
)
from pipeline.sources import connect
from pipeline.store import dockets as docket_rows
from pipeline.store.models import Docket


class DocketNotFound(DocketeerError):
    """The source answered 404/410 for the docket itself: a mistyped or withdrawn id."""


def fetch_docket(ctx: StageContext, docket: Docket, *, api=None) -> StageResult:
    from_api = connect.list_source(ctx.settings) != "mirror"
    # A docket resolved before its documents were stored (schema v17) has them read once,
    # sealed or not (a mirror fetch reads its documents from its listing instead).
    unread = bool(docket.documents_unread) and from_api and not ctx.force
    if docket.sealed_at and not ctx.force and not unread:
        # Debug only: the wrapper already printed the one-line notice for a named docket.
        log.debug("%s: sealed %s, skipping", docket.id, docket.sealed_at)
        return StageResult(message="sealed")
    if not from_api:
        return fetch_from_mirror(ctx, docket)
    budget = connect.request_budget(ctx.settings, ctx.deadline)
    api = api or connect.regulations_gov(ctx.settings, budget)
    calls_before = api.stats()  # a client passed in may have served earlier runs
    result = StageResult()
    try:
        # --force also re-resolves: the only way a known docket learns of new documents.
        if not docket.resolved_at or ctx.force or unread:
            docket = resolve_docket(api, docket, ctx, result)
        if unread and _walked_already(ctx, docket):
            result.add("documents_read")
            return _with_calls(result, api, calls_before)
        watermark = walk_docket(api, docket, ctx, result)
    except DocketNotFound as exc:
        if unread:
            _leave_unread_not_found(docket.id, exc, result)
        else:
            _leave_not_found(docket.id, exc, result)
        return _with_calls(result, api, calls_before)
    except BudgetSpent as exc:
        result.budget_spent, result.message = True, str(exc)
    except RunStopping:
        raise  # the key, the quota, the disk: not this docket's fault, and the run must stop
    except (TransientHTTPError, PermanentHTTPError, BadResponse, InvalidIdentifier) as exc:
        # The walk broke: keep what was upserted, leave the watermark, never seal.
        result.clean, result.message = False, f"walk of {docket.id} broke off: {exc}"
    else:
        finish_clean_walk(ctx, docket, watermark, result)
    return _with_calls(result, api, calls_before)


def _walked_already(ctx: StageContext, docket: Docket) -> bool:
    """A read of an unread docket's documents needs no walk of its comments when none is due:
    it is sealed, or was pulled in this freshness window."""
    if docket.sealed_at:
        return True
    window = window_start(ctx.clock(), ctx.settings.freshness_seconds)
    return docket.last_pull_at is not None and docket.last_pull_at >= window


def _leave_unread_not_found(docket_id: str, exc: DocketNotFound, result: StageResult) -> None:
    # A docket whose comments the store holds stays known: upstream withdrew it since, and
    # what was fetched is kept. Its documents are recorded as read (there are none to read).
    docket_rows.record_resolve(docket_id, documents_unread=None)
    result.message = f"{docket_id}: not found upstream ({exc}) when reading its documents; kept as it is"
    log.warning(result.message)


def _with_calls(result: StageResult, api, before: dict[str, int]) -> StageResult:
    for endpoint, n in api.stats().items():
        if n - before.get(endpoint, 0):
            result.add(f"api.{endpoint}", n - before.get(endpoint, 0))
    return result


# --------------------------------------------------------------------------- the declaration

DECLARATION = Stage(
    name=STAGE, upstream=None, run=fetch_docket, task="FetchComments", wrapper="FetchAll",
    doc="Walk the docket's comment lists from its watermark (resolve it first if unknown).",
)


# --------------------------------------------------------------------------- resolve




def _leave_not_found(docket_id: str, exc: DocketNotFound, result: StageResult) -> None:
    # Recorded once, with one notice; from now on no wrapper schedules it (an hourly
    # failure would teach cron to ignore failures). `--docket ID` asks again.
    docket_rows.leave_known_set(docket_id, docket_rows.NOT_FOUND)
    result.message = (f"{docket_id}: not found upstream ({exc}); recorded as not found and "
                      f"skipped from now on (`docketeer forget {docket_id} --purge` removes it)")
    log.warning(result.message)


def _get_docket(api, docket_id: str) -> dict:
    try:
        return api.get_docket(docket_id)
    except (PermanentHTTPError, Gone) as exc:
        if getattr(exc, "status", 404) in (404, 410):
            raise DocketNotFound(str(exc)) from exc
        raise


def resolve_docket(api, docket: Docket, ctx: StageContext, result: StageResult) -> Docket:
    """Learn the docket's documents, object ids and comment dates: once per docket."""
    data = _get_docket(api, docket.id)
    bad = BadItems(ctx, docket.id, result)
    documents = api.list_documents(docket.id, on_bad_item=bad.document)
    return record_resolution(docket, data, documents, ctx, result, bad)










# --------------------------------------------------------------------------- walk
















# --------------------------------------------------------------------------- finish




