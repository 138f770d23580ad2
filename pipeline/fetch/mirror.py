"""Fetch from the mirror (``list_source = mirror``): a docket's comment and document list
built from its mirror folder, with no API key and no API call.

One LIST walk of the docket's folder is compared with what the last one showed
(``pipeline.fetch.mirror_listing``); only new or changed objects are read. The docket JSON
and the documents' JSON give the docket's fields and comment windows, as the API's resolve
does; each comment JSON gives the list item the API would have shown (``records.
listed_attributes``), upserted by the same ``Walk`` as an API walk, so items have the same
keys, fields and summary hashes from either source and a store may switch between them.

A new or changed attachment, or a changed record, sends its item back to backfill
(``stale``): the mirror delivers files late, and a record's text may change under the same
list fields. Objects gone from the listing keep their row, marked ``gone`` with the reason.
An object whose read failed transiently is not recorded, so the next run reads it again.

No step holds the docket's listing. The walk is compared a page at a time with the
stored rows of the page's keys; the new or changed objects are filed by item in
``mirror_scan`` (the docket's and documents' JSON alone are kept: documents are few, and
the docket is resolved from them before its comments are read); the filed objects are then
read a scan page at a time, in item order. Gone objects are known by count, and by key only
when some are gone: a second walk, filed whole, tells which.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Container, Iterable
from dataclasses import dataclass, field

from pipeline.clock import iso
from pipeline.counters import counters
from pipeline.engine.read_ahead import read_ahead
from pipeline.engine.stage import StageContext, StageResult
from pipeline.errors import BadRecord, BudgetSpent
from pipeline.failures import RETRY, item_failure
from pipeline.fetch import walk as shared  # the API walk's Walk, resolution and finish
from pipeline.fetch.mirror_listing import ListingTally, PageDiff, diff_page
from pipeline.fetch.walk import STAGE
from pipeline.ids import validate_id
from pipeline.sources import connect, records
from pipeline.sources.http import RequestBudget
from pipeline.sources.mirror import DocketListing, ListedObject, default_agency, listing_of
from pipeline.store import item_states, items, mirror_objects
from pipeline.store.models import Docket, database

log = logging.getLogger("docketeer")
BACKFILL = "backfill"
GONE_REASON = "no longer in the mirror listing"
PAGE = mirror_objects.WRITE_BATCH  # objects of the walk compared and filed at once
MIRROR_SUPERSEDED = "mirror_copies_superseded"  # older ``(N)`` copies of records passed over
MIRROR_FETCH_HELD = "mirror_fetch_held"  # the most listed objects one step held (a peak)


def fetch_from_mirror(ctx: StageContext, docket: Docket, *, mirror=None) -> StageResult:
    """The docket's list from the mirror; a listing or docket record that cannot be had
    leaves the result unclean with the reason (run-stopping causes go up)."""
    result = StageResult()
    try:
        return _fetch(ctx, docket, mirror or connect.mirror(ctx.settings), result)
    except BudgetSpent as exc:
        # What was upserted stays, recorded with its objects; the rest of the listing is not
        # recorded, so the next run reads the rest (and finds what it read unchanged).
        result.budget_spent, result.message = True, str(exc)
        return result
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        result.clean, result.message = False, f"listing of {docket.id} from the mirror broke off: {failure.reason}"
        log.warning(result.message)
        return result


def _fetch(ctx: StageContext, docket: Docket, mirror, result: StageResult) -> StageResult:
    reads = _Reads(ctx)
    agency = docket.agency or default_agency(docket.id)
    scan = mirror_objects.new_scan(docket.id, iso(ctx.clock()))
    try:
        walked = _walk_listing(ctx, mirror, docket, agency, scan, reads, result)
        if not walked.tally.listed:
            result.message = f"{docket.id}: not in the mirror {mirror!r} (yet)"
            log.warning(result.message)
            return result
        if _needs_resolve(docket, walked, ctx.force):
            docket = _resolve(ctx, mirror, docket, walked, result, reads)
            _record_resolved(ctx, docket.id, walked, reads, result)
        _read_filed(ctx, mirror, docket, agency, scan, walked.comments, result, reads)
    finally:
        mirror_objects.drop_scan(scan)
    if walked.tally.some_gone:
        _record_gone(ctx, mirror, docket, agency, reads, result)
    if reads.failures:
        result.clean = False
        result.message = f"{reads.failures} mirror objects could not be read; the next run reads them again"
    shared.finish_clean_walk(ctx, docket, docket.pull_watermark, result)
    return result


class _Reads:
    """What this walk read: the run's request budget (``mirror_request_budget``, and the
    time budget), the keys of the batch being read whose read failed transiently (and how
    many failed in the run), and the JSON read, handed to backfill through
    ``mirror_object.body``."""

    def __init__(self, ctx: StageContext) -> None:
        self.budget = RequestBudget(ctx.settings.mirror_request_budget or None, ctx.deadline)
        self.failed: set[str] = set()  # cleared once the batch is recorded
        self.failures = 0
        self.bodies: dict[str, str] = {}  # key -> JSON text, until recorded

    def record(self, key: str, raw: bytes) -> None:
        try:
            self.bodies[key] = raw.decode("utf-8")
        except UnicodeDecodeError:  # parsed as another encoding: backfill reads it itself
            pass

    def failed_transiently(self, key: str) -> None:
        self.failed.add(key)
        self.failures += 1

    def take(self, keys: Iterable[str]) -> tuple[list[str], dict[str, str]]:
        """Of ``keys``, those to record (read, or failed for good) and their JSON; the
        batch's failures forgotten (they are counted)."""
        kept = [key for key in keys if key not in self.failed]
        bodies = {key: self.bodies.pop(key) for key in kept if key in self.bodies}
        self.failed.clear()
        return kept, bodies


@dataclass
class _Walked:
    """What the walk found besides the objects it filed: the counts, the docket's and the
    documents' JSON keys (every one, for a resolve) and those of them new or changed (with
    whether changed), and how many comment records it filed to read."""

    tally: ListingTally
    docket_key: str | None = None
    documents: dict[str, str] = field(default_factory=dict)  # document id -> JSON key
    fresh: dict[str, ListedObject] = field(default_factory=dict)  # of the keys above
    changed: set[str] = field(default_factory=set)
    comments: int = 0
    superseded: int = 0  # older copies of a record the listing shows, passed over

    def keep(self, page: DocketListing, diff: PageDiff) -> set[str]:
        """The page's docket and documents JSON noted; returns their keys."""
        self.docket_key = page.docket_key or self.docket_key
        self.documents.update(page.documents)
        keys = {key for key in (page.docket_key, *page.documents.values()) if key}
        self.fresh.update((e.key, e) for e in diff.fresh() if e.key in keys)
        self.changed.update(e.key for e in diff.changed if e.key in keys)
        return keys


def _walk_listing(ctx, mirror, docket: Docket, agency: str, scan: str, reads: _Reads, result: StageResult) -> _Walked:
    """One walk of the docket's folder, a page at a time: the page compared with the stored
    rows of its keys, its docket and documents JSON noted, its other new or changed objects
    filed in the scan by the item each belongs to (read once the docket is resolved), and a
    new or changed object whose name is no safe key or id named. No page is kept."""
    walked = _Walked(ListingTally(0 if ctx.force else mirror_objects.count_listed(docket.id)))
    bad = shared.BadItems(ctx, docket.id, result)
    now = iso(ctx.clock())
    for entries in shared.batches(mirror.docket_entries(docket.id, agency, spend=reads.budget.spend), PAGE):
        counters.note_peak(MIRROR_FETCH_HELD, len(entries))
        # --force reads everything (and, comparing with nothing, finds nothing gone).
        diff = diff_page(entries, {} if ctx.force else mirror_objects.stored_of([e.key for e in entries]))
        walked.tally.add(len(entries), diff)
        page = listing_of(docket.id, agency, entries)
        kept = walked.keep(page, diff)
        fresh = {e.key: e for e in diff.fresh()}
        _name_rejected(bad, page, fresh)
        owners = page.owners()
        walked.comments += sum(1 for key in page.comments.values() if key in fresh)
        walked.superseded += len(page.superseded)
        mirror_objects.record_scan(scan, docket.id, [(owners.get(key, ""), entry) for key, entry in fresh.items()
                                                     if key not in kept], now)
    for name in ("listed", "new", "changed", "unchanged"):
        result.add(f"mirror.{name}", getattr(walked.tally, name))
    if walked.superseded:
        # An older copy of a record a higher ``(N)`` copy replaces: listed, never read as the record.
        result.add("mirror.superseded", walked.superseded)
        counters.incr(MIRROR_SUPERSEDED, walked.superseded)
    return walked


def _name_rejected(bad, page: DocketListing, fresh: Container[str]) -> None:
    """New or changed objects whose names are no safe key or id: skipped, each counted and
    named (as an API list item without a safe id is), never the docket's failure. Recorded
    with the listing, they are not named again while they stay as they are."""
    for rejected in page.rejected:
        if rejected.key in fresh:
            bad.unkeyed("mirror object", rejected.key, rejected.reason,
                        label=f"key {records.rendering(rejected.key[len(page.prefix):])}")


def _needs_resolve(docket: Docket, walked: _Walked, force: bool) -> bool:
    """The docket's fields and windows come from its docket and documents JSON: read again
    only when one of them is new or changed (documents are few; comments are many)."""
    return force or not docket.resolved_at or bool(walked.fresh)


# --------------------------------------------------------------------------- resolve


def _resolve(ctx, mirror, docket: Docket, walked: _Walked, result: StageResult, reads: _Reads) -> Docket:
    data = {}
    if walked.docket_key:
        # The docket record is the docket's own: unreadable, the walk breaks off (unclean).
        reads.budget.spend()
        body = mirror.read_json(walked.docket_key)
        result.add("mirror.read")
        data = body["data"] if isinstance(body.get("data"), dict) else {}
    documents = []
    for document_id, key in sorted(walked.documents.items()):
        body = _read(mirror, key, ctx, docket.id, document_id, result, reads)
        if body is None:
            continue
        try:
            documents.append(_as_list_item(body, document_id))
        except BadRecord as exc:
            _failed(ctx, docket.id, document_id, f"document {document_id}: {exc}", "permanent", result)
    return shared.record_resolution(docket, data, documents, ctx, result)


def _record_resolved(ctx, docket_id: str, walked: _Walked, reads: _Reads, result: StageResult) -> None:
    """The docket and documents JSON just read, recorded at once with the changed
    documents sent back to backfill: a run stopped later (its budget) reads none again."""
    keys, bodies = reads.take(sorted(walked.fresh))
    with database.atomic():
        owners = {key: document_id for document_id, key in walked.documents.items()}  # the docket's: ""
        mirror_objects.record_listed(docket_id, [walked.fresh[key] for key in keys], iso(ctx.clock()), bodies,
                                     owners)
        _mark_stale(ctx, docket_id, sorted(d for d, key in walked.documents.items()
                                           if key in walked.changed and key in keys), result)


def _as_list_item(body: dict, item_id: str) -> dict:
    """The mirror's detail JSON as the API's list item: ``{"id", "attributes"}``."""
    data = body.get("data")
    if not isinstance(data, dict) or data.get("id") != item_id:
        raise BadRecord(f"mirror JSON of {item_id} has no data object for this id")
    return {"id": item_id, "attributes": records.listed_attributes(data, f"{item_id} data")}


def _read(mirror, key: str, ctx, docket_id: str, item_id: str, result: StageResult,
          reads: _Reads) -> dict | None:
    """One mirror JSON, read now (``_taken``)."""
    return _taken(lambda: _read_record(mirror, key, reads), key, ctx, docket_id, item_id, result, reads)


def _read_record(mirror, key: str, reads: _Reads) -> tuple[dict, bytes]:
    """The request (a reader thread may make it): the budget spent first, so a spent budget
    goes up before the request."""
    reads.budget.spend()
    return mirror.read_record(key)


def _taken(read, key: str, ctx, docket_id: str, item_id: str, result: StageResult,
           reads: _Reads) -> dict | None:
    """What ``read()`` gave, in the stage's thread: the parsed JSON (its bytes kept for
    backfill); None (and the key left unrecorded) when the read failed transiently, or a
    ``failed`` fetch row with the reason when it failed for good. A spent budget or a
    run-stopping cause goes up."""
    try:
        body, raw = read()
    except Exception as exc:  # noqa: BLE001 - classified in one place: pipeline.failures
        failure = item_failure(exc)
        if failure.state == RETRY:
            reads.failed_transiently(key)
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


# --------------------------------------------------------------------------- the filed objects


def _read_filed(ctx, mirror, docket: Docket, agency: str, scan: str, comments: int, result: StageResult,
                reads: _Reads) -> None:
    """The objects the walk filed, a scan page at a time in item order: the page's comment
    records read and upserted, then its other objects recorded (``_record_rest``)."""
    walk = shared.Walk(ctx, docket, result)
    by_object = _windows_by_object(docket)
    ctx.progress.start(comments)
    for rows in mirror_objects.scan_pages(scan):
        counters.note_peak(MIRROR_FETCH_HELD, len(rows))
        page = listing_of(docket.id, agency, (ListedObject(*row[1:]) for row in rows))
        _read_comments(ctx, mirror, walk, page, by_object, result, reads)
        records = set(page.comments.values())
        _record_rest(ctx, docket.id, page, [e for key, e in page.objects.items() if key not in records], result)


def _read_comments(ctx, mirror, walk, page: DocketListing, by_object: dict[str, str], result: StageResult,
                   reads: _Reads) -> None:
    """The page's comment records, each read and upserted, recorded (with the JSON, for
    backfill) batch by batch as its items are written, so a run stopped at its budget
    leaves nothing half done: the next reads only what this one did not."""
    todo = sorted(page.comments.items())
    # Not recorded yet in this run: a record the last listing showed is one that changed.
    changed = set() if ctx.force else {key for key, before in mirror_objects.stored_of([k for _i, k in todo]).items()
                                       if before.state == mirror_objects.LISTED}
    done: list[tuple[str, str]] = []
    try:
        # The GETs overlap (``mirror_concurrency`` readers: S3 reads mostly wait), over the
        # whole page: one pool, not one per batch (starting its threads again for every 250
        # records cost more than a folder's reads). Each record is taken and upserted here,
        # in order, as a plain loop would, and written batch by batch.
        for n, ((comment_id, key), read) in enumerate(read_ahead(
                lambda job: _read_record(mirror, job[1], reads), todo, ctx.settings.mirror_concurrency,
                ctx.check_time)):
            if n % shared.WRITE_BATCH == 0:
                if done:
                    _record_batch(ctx, walk, done, page, changed, reads, result)
                    done = []
                walk.look_up_keys([comment_id for comment_id, _key in todo[n:n + shared.WRITE_BATCH]])
            body = _taken(read, key, ctx, walk.docket_id, comment_id, result, reads)
            outcome = "unread" if body is None else _upsert_comment(walk, body, comment_id, by_object)
            if body is not None:
                result.add(outcome)
            done.append((comment_id, key))
            ctx.progress.advance(outcome)
    finally:
        _record_batch(ctx, walk, done, page, changed, reads, result)


def _record_batch(ctx, walk, batch: list[tuple[str, str]], page: DocketListing, changed: set[str],
                  reads: _Reads, result: StageResult) -> None:
    """The batch's items written, then its objects recorded as read (with their JSON; one
    whose read failed transiently is left to be read again) and its changed records sent
    back to backfill, in one transaction."""
    walk.flush()
    keys, bodies = reads.take(key for _item, key in batch)
    if not keys:
        return
    recorded = set(keys)
    with database.atomic():
        mirror_objects.record_listed(walk.docket_id, [page.objects[key] for key in keys], iso(ctx.clock()), bodies,
                                     {key: item for item, key in batch})
        _mark_stale(ctx, walk.docket_id, [item for item, key in batch if key in changed and key in recorded],
                    result)


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


def _record_rest(ctx, docket_id: str, page: DocketListing, rest: list[ListedObject], result: StageResult) -> None:
    """The page's objects other than comment records (files, tombstones, documents' content,
    keys the pipeline does not read), in one transaction: a comment or document the mirror
    marks unavailable and holds no record of is recorded gone with the reason (one with a
    record is backfill's: it reads the mark there); a known item whose file or tombstone is
    new or changed goes back to backfill; the objects are recorded as listed."""
    if not rest:
        return
    marked = [t for t in page.tombstones if t.kind in ("comment", "document")]
    known = items.summary_hashes(docket_id, sorted({t.item_id for t in marked})) if marked else {}
    gone = [{"stage": STAGE, "item": t.item_id, "docket": docket_id, "state": "gone", "run_id": ctx.run_id,
             "reason": "marked unavailable in the mirror", "detail": "permanent"}
            for t in marked if t.item_id not in known]
    owners = page.owners()
    with database.atomic():
        if gone:
            item_states.transition_many(gone)
            result.add("gone", len(gone))
        _mark_stale(ctx, docket_id, sorted({owners[e.key] for e in rest if e.key in owners}), result)
        mirror_objects.record_listed(docket_id, rest, iso(ctx.clock()), owners=owners)


def _mark_stale(ctx, docket_id: str, touched: list[str], result: StageResult) -> None:
    # An item never backfilled (no detail yet) is backfilled anyway: only the others are marked.
    known = [i.key for i in items.items_by_key(touched)
             if i.docket == docket_id and i.detail_hash is not None] if touched else []
    if known:
        item_states.transition_many([{"stage": BACKFILL, "item": key, "docket": docket_id, "state": "stale",
                                      "run_id": ctx.run_id, "reason": "changed in the mirror listing"}
                                     for key in known])
        result.add("sent_to_backfill", len(known))


# --------------------------------------------------------------------------- gone


def _record_gone(ctx, mirror, docket: Docket, agency: str, reads: _Reads, result: StageResult) -> None:
    """Some object the last listing showed is not in this one: a second walk, filed whole
    in a scan of its own, tells which, and they are recorded gone (kept, with the reason).
    Objects seldom leave the mirror; a first walk that kept every key, or recorded every
    unchanged object, would cost every run what this costs the few that need it."""
    now = iso(ctx.clock())
    scan = mirror_objects.new_scan(docket.id, now)
    gone = 0
    try:
        entries = mirror.docket_entries(docket.id, agency, spend=reads.budget.spend)
        mirror_objects.record_scan(scan, docket.id, (("", entry) for entry in entries), now)
        for keys in mirror_objects.unseen_listed(docket.id, scan):
            gone += mirror_objects.record_gone(keys, now, GONE_REASON)
    finally:
        mirror_objects.drop_scan(scan)
    if gone:
        result.add("mirror.gone", gone)
