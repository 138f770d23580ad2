"""Fetch from the mirror (``list_source = mirror``): a docket's comment and document list
built from its mirror folder, with no API key and no API call.

One LIST walk of the docket's folder is compared with what the last one showed
(``pipeline.sources.mirror_listing``); only new or changed objects are read. The docket JSON
and the documents' JSON give the docket's fields and comment windows, as the API's resolve
does; each comment JSON gives the list item the API would have shown (``records.
listed_attributes``), upserted by the same ``Walk`` as an API walk, so items have the same
keys, fields and summary hashes from either source and a store may switch between them.

A new or changed attachment, or a changed record, sends its item back to backfill
(``stale``): the mirror delivers files late, and a record's text may change under the same
list fields. Objects gone from the listing keep their row, marked ``gone`` with the reason.
An object whose read failed transiently is not recorded, so the next run reads it again.
"""

from __future__ import annotations

import json
import logging

from pipeline.clock import iso
from pipeline.errors import BadRecord, BudgetSpent
from pipeline.failures import RETRY, item_failure
from pipeline.ids import validate_id
from pipeline.sources import connect, records
from pipeline.sources.http import RequestBudget
from pipeline.sources.mirror import DocketListing, ListedObject
from pipeline.sources.mirror_listing import ListingDiff, diff_listing
from pipeline.stages.base import StageContext, StageResult
from pipeline.store import item_states, items, mirror_objects
from pipeline.store.models import Docket, database

log = logging.getLogger("docketeer")
STAGE = "fetch"
BACKFILL = "backfill"
GONE_REASON = "no longer in the mirror listing"


def fetch_from_mirror(ctx: StageContext, docket: Docket, *, mirror=None) -> StageResult:
    """The docket's list from the mirror; a listing or docket record that cannot be had
    leaves the result unclean with the reason (run-stopping causes go up)."""
    result = StageResult()
    try:
        return _fetch(ctx, docket, mirror or connect.mirror(ctx.settings), result)
    except BudgetSpent as exc:
        # What was upserted stays; the listing is not recorded, so the next run reads the
        # rest (and finds what it read already unchanged).
        result.budget_spent, result.message = True, str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        result.clean, result.message = False, f"listing of {docket.id} from the mirror broke off: {failure.reason}"
        log.warning(result.message)
        return result


class _Reads:
    """What this walk read: the run's request budget (``mirror_request_budget``, and the
    time budget), the keys whose read failed transiently, and the JSON read, handed to
    backfill through ``mirror_object.body``."""

    def __init__(self, ctx: StageContext) -> None:
        self.budget = RequestBudget(ctx.settings.mirror_request_budget or None, ctx.deadline)
        self.failed: set[str] = set()
        self.bodies: dict[str, str] = {}  # key -> JSON text, until recorded

    def record(self, key: str, raw: bytes) -> None:
        try:
            self.bodies[key] = raw.decode("utf-8")
        except UnicodeDecodeError:  # parsed as another encoding: backfill reads it itself
            pass


def _fetch(ctx: StageContext, docket: Docket, mirror, result: StageResult) -> StageResult:
    from pipeline.stages import fetch  # the API walk's Walk, resolution and finish are shared

    reads = _Reads(ctx)
    listing = mirror.docket_listing(docket.id, docket.agency, spend=reads.budget.spend)
    result.add("mirror.listed", len(listing.objects))
    if not listing.objects:
        result.message = f"{docket.id}: not in the mirror {mirror!r} (yet)"
        log.warning(result.message)
        return result
    diff = _diff(docket.id, listing, ctx.force)
    resolved: set[str] = set()
    _name_rejected(ctx, docket.id, listing, diff, result, fetch)
    if _needs_resolve(docket, listing, diff, ctx.force):
        docket = _resolve(ctx, mirror, docket, listing, result, reads, fetch)
        resolved = _record_resolved(ctx, docket.id, listing, diff, reads, result)
    fresh = diff.fresh_keys()
    walked = _walk_comments(ctx, mirror, docket, listing, diff, result, reads, fetch)
    _record_tombstones(ctx, docket.id, listing, fresh, result)
    _send_back_to_backfill(ctx, docket.id, listing, diff, result, skip=walked | resolved)
    _record_listing(ctx, docket.id, diff, reads, result, skip=walked | resolved)
    if reads.failed:
        result.clean = False
        result.message = f"{len(reads.failed)} mirror objects could not be read; the next run reads them again"
    fetch._finish_clean_walk(ctx, docket, docket.pull_watermark, result)
    return result


def _name_rejected(ctx, docket_id: str, listing: DocketListing, diff: ListingDiff, result: StageResult,
                   fetch) -> None:
    """New or changed objects whose names are no safe key or id: skipped, each counted and
    named (as an API list item without a safe id is), never the docket's failure. Recorded
    with the listing, they are not named again while they stay as they are."""
    fresh = diff.fresh_keys()
    rejected = [r for r in listing.rejected if r.key in fresh]
    if rejected:
        bad = fetch.BadItems(ctx, docket_id, result)
        for rejected_object in rejected:
            bad.unkeyed("mirror object", rejected_object.key, rejected_object.reason,
                        label=f"key {records.rendering(rejected_object.key[len(listing.prefix):])}")


def _diff(docket_id: str, listing: DocketListing, force: bool) -> ListingDiff:
    stored = {} if force else mirror_objects.stored_objects(docket_id)  # --force reads everything
    return diff_listing(listing.objects, stored)


def _needs_resolve(docket: Docket, listing: DocketListing, diff: ListingDiff, force: bool) -> bool:
    """The docket's fields and windows come from its docket and documents JSON: read again
    only when one of them is new or changed (documents are few; comments are many)."""
    if force or not docket.resolved_at:
        return True
    fresh = diff.fresh_keys()
    return listing.docket_key in fresh or any(key in fresh for key in listing.documents.values())


# --------------------------------------------------------------------------- resolve


def _resolve(ctx, mirror, docket: Docket, listing: DocketListing, result: StageResult,
             reads: _Reads, fetch) -> Docket:
    data = {}
    if listing.docket_key:
        # The docket record is the docket's own: unreadable, the walk breaks off (unclean).
        reads.budget.spend()
        body = mirror.read_json(listing.docket_key)
        result.add("mirror.read")
        data = body["data"] if isinstance(body.get("data"), dict) else {}
    documents = []
    for document_id, key in sorted(listing.documents.items()):
        body = _read(mirror, key, ctx, docket.id, document_id, result, reads)
        if body is None:
            continue
        try:
            documents.append(_as_list_item(body, document_id))
        except BadRecord as exc:
            _failed(ctx, docket.id, document_id, f"document {document_id}: {exc}", "permanent", result)
    return fetch.record_resolution(docket, data, documents, ctx, result)


def _record_resolved(ctx, docket_id: str, listing: DocketListing, diff: ListingDiff, reads: _Reads,
                     result: StageResult) -> set[str]:
    """The docket and documents JSON just read, recorded at once with the changed
    documents sent back to backfill: a run stopped later (its budget) reads none again."""
    entries = {e.key: e for e in (*diff.new, *diff.changed)}
    keys = {key for key in (listing.docket_key, *listing.documents.values())
            if key in entries and key not in reads.failed}
    changed = {e.key for e in diff.changed}
    with database.atomic():
        mirror_objects.record_listed(docket_id, [entries[key] for key in sorted(keys)], iso(ctx.clock()),
                                     {key: reads.bodies.pop(key) for key in keys if key in reads.bodies})
        _mark_stale(ctx, docket_id, sorted(d for d, key in listing.documents.items() if key in changed), result)
    return keys


def _as_list_item(body: dict, item_id: str) -> dict:
    """The mirror's detail JSON as the API's list item: ``{"id", "attributes"}``."""
    data = body.get("data")
    if not isinstance(data, dict) or data.get("id") != item_id:
        raise BadRecord(f"mirror JSON of {item_id} has no data object for this id")
    return {"id": item_id, "attributes": records.listed_attributes(data, f"{item_id} data")}


def _read(mirror, key: str, ctx, docket_id: str, item_id: str, result: StageResult,
          reads: _Reads) -> dict | None:
    """One mirror JSON (its bytes kept for backfill); None (and the key left unrecorded)
    when the read failed transiently, or a ``failed`` fetch row with the reason when it
    failed for good. A spent budget goes up: the walk stops before the request."""
    reads.budget.spend()
    try:
        body, raw = mirror.read_record(key)
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        if failure.state == RETRY:
            reads.failed.add(key)
            log.warning("%s: reading %s failed (%s); read again next run", item_id, key, failure.reason)
        else:
            _failed(ctx, docket_id, item_id, failure.reason, failure.kind, result)
        return None
    result.add("mirror.read")
    reads.record(key, raw)
    return body


def _failed(ctx, docket_id: str, item_id: str, reason: str, kind: str, result: StageResult) -> None:
    log.warning("%s: %s", docket_id, reason)
    item_states.transition(STAGE, item_id, docket_id, "failed", run_id=ctx.run_id, reason=reason[:500],
                           detail=kind)
    result.add("failed")


# --------------------------------------------------------------------------- comments


def _walk_comments(ctx, mirror, docket: Docket, listing: DocketListing, diff: ListingDiff,
                   result: StageResult, reads: _Reads, fetch) -> set[str]:
    """Read and upsert the new or changed comment records; returns their keys, each recorded
    (with the JSON, for backfill) batch by batch as its items are written, so a run stopped
    at its budget leaves nothing half done: the next reads only what this one did not."""
    entries = {e.key: e for e in (*diff.new, *diff.changed)}
    changed = {e.key for e in diff.changed}
    todo = sorted((item_id, key) for item_id, key in listing.comments.items() if key in entries)
    walk = fetch.Walk(ctx, docket, result)
    by_object = _windows_by_object(docket)
    batch: list[tuple[str, str]] = []
    ctx.progress.start(len(todo))
    try:
        for comment_id, key in todo:
            ctx.check_time()
            body = _read(mirror, key, ctx, docket.id, comment_id, result, reads)
            outcome = "unread" if body is None else _upsert_comment(walk, body, comment_id, by_object)
            if body is not None:
                result.add(outcome)
            if key not in reads.failed:  # read, or failed for good: recorded, not read again
                batch.append((comment_id, key))
            ctx.progress.advance(outcome)
            if len(batch) >= fetch.WRITE_BATCH:
                _record_batch(ctx, docket.id, walk, batch, entries, changed, reads, result)
    finally:
        _record_batch(ctx, docket.id, walk, batch, entries, changed, reads, result)
    return {key for _item, key in todo}


def _record_batch(ctx, docket_id: str, walk, batch: list[tuple[str, str]], entries: dict, changed: set[str],
                  reads: _Reads, result: StageResult) -> None:
    """The batch's items written, then its objects recorded as read (with their JSON) and
    its changed records sent back to backfill, in one transaction."""
    walk.flush()
    if not batch:
        return
    keys = [key for _item, key in batch]
    with database.atomic():
        mirror_objects.record_listed(docket_id, [entries[key] for key in keys], iso(ctx.clock()),
                                     {key: reads.bodies.pop(key) for key in keys if key in reads.bodies})
        _mark_stale(ctx, docket_id, [item for item, key in batch if key in changed], result)
    batch.clear()


def _windows_by_object(docket: Docket) -> dict[str, str]:
    return {w["object_id"]: w["id"] for w in json.loads(docket.documents or "[]") if w.get("object_id")}


def _upsert_comment(walk, body: dict, comment_id: str, by_object: dict[str, str]) -> str:
    try:
        listed = _as_list_item(body, comment_id)
    except BadRecord as exc:
        return walk.fail(comment_id, f"comment {comment_id}: {exc}")
    attrs = listed["attributes"]
    # The API lists a comment under the document it was posted on; the record names it.
    document_id = attrs.get("commentOnDocumentId") or by_object.get(attrs.get("commentOn") or "")
    if not isinstance(document_id, str) or not document_id:
        return walk.fail(comment_id, f"comment {comment_id}: names no document it comments on")
    try:
        validate_id(document_id, "commentOnDocumentId")
    except Exception as exc:  # noqa: BLE001 - InvalidIdentifier: this record's problem only
        return walk.fail(comment_id, f"comment {comment_id}: {exc}")
    return walk.upsert(listed, document_id)


# --------------------------------------------------------------------------- the rest


def _record_tombstones(ctx, docket_id: str, listing: DocketListing, fresh: set[str], result: StageResult) -> None:
    """A comment or document the mirror marks unavailable and holds no record of: recorded
    as gone with the reason (one with a record is backfill's: it reads the mark there)."""
    known = items.summary_hashes(docket_id)
    rows = [{"stage": STAGE, "item": t.item_id, "docket": docket_id, "state": "gone", "run_id": ctx.run_id,
             "reason": "marked unavailable in the mirror", "detail": "permanent"}
            for t in listing.tombstones
            if t.kind in ("comment", "document") and t.key in fresh and t.item_id not in known]
    if rows:
        item_states.transition_many(rows)
        result.add("gone", len(rows))


def _send_back_to_backfill(ctx, docket_id: str, listing: DocketListing, diff: ListingDiff,
                           result: StageResult, skip: set[str]) -> None:
    """Known items whose attachment (or tombstone) is new or changed, or whose record
    changed: backfill reads them again (the comment records of ``skip`` were sent back
    batch by batch as they were read)."""
    files = _file_owners(listing)
    changed = {e.key for e in diff.changed} - skip
    touched = {files[key] for key in diff.fresh_keys() if key in files}
    touched |= {item_id for item_id, key in (*listing.comments.items(), *listing.documents.items())
                if key in changed}
    _mark_stale(ctx, docket_id, sorted(touched), result)


def _mark_stale(ctx, docket_id: str, touched: list[str], result: StageResult) -> None:
    # An item never backfilled (no detail yet) is backfilled anyway: only the others are marked.
    known = [i.key for i in items.items_by_key(touched)
             if i.docket == docket_id and i.detail_hash is not None] if touched else []
    if known:
        item_states.transition_many([{"stage": BACKFILL, "item": key, "docket": docket_id, "state": "stale",
                                      "run_id": ctx.run_id, "reason": "changed in the mirror listing"}
                                     for key in known])
        result.add("sent_to_backfill", len(known))


def _file_owners(listing: DocketListing) -> dict[str, str]:
    """Key of an attachment or a tombstone -> the item it belongs to."""
    owners = {a.key: item_id for item_id, files in listing.attachments.items() for a in files}
    owners.update({t.key: t.item_id for t in listing.tombstones})
    return owners


def _record_listing(ctx, docket_id: str, diff: ListingDiff, reads: _Reads, result: StageResult,
                    skip: set[str]) -> None:
    """The rest of the listing (the comment records of ``skip`` are recorded already)."""
    now = iso(ctx.clock())
    read: list[ListedObject] = [e for e in (*diff.new, *diff.changed)
                                if e.key not in reads.failed and e.key not in skip]
    with database.atomic():
        mirror_objects.record_listed(docket_id, read, now, reads.bodies)
    if diff.gone:
        mirror_objects.record_gone(diff.gone, now, GONE_REASON)
        result.add("mirror.gone", len(diff.gone))
    result.add("mirror.new", len(diff.new))
    result.add("mirror.changed", len(diff.changed))
    result.add("mirror.unchanged", diff.unchanged)
