"""The walk both list sources share: a docket's resolution recorded, list pages upserted in
batches (``Walk``), bad items kept as rows (``BadItems``), and a clean walk finished:
the watermark stored and the docket sealed when due.
"""

from __future__ import annotations

import json
import logging
from collections.abc import Iterable, Iterator
from typing import TypeVar

from pipeline.clock import iso, utcnow
from pipeline.engine.stage import StageContext, StageResult
from pipeline.errors import (
    BadRecord,
    BadResponse,
)
from pipeline.fetch.watermark import Watermark
from pipeline.fingerprints import json_digest
from pipeline.ids import validate_id
from pipeline.seals import should_seal
from pipeline.sources import record_checks, records
from pipeline.sources.regulations_gov import MalformedItem
from pipeline.store import dockets as docket_rows
from pipeline.store import documents as docket_documents
from pipeline.store import item_states, items
from pipeline.store.models import Docket, database

log = logging.getLogger("docketeer")


STAGE = "fetch"
T = TypeVar("T")


# List items without a safe id: one row each, named by a digest of the item as listed.
UNKEYED_STAGE = "fetch.unkeyed"


# How many bad items the run's message names (the rest are counted).
NAMED_IN_MESSAGE = 5


# Upserts are committed one list page at a time: one transaction per page instead of one
# per row, and a crash loses at most a page that the unmoved watermark re-lists anyway.
WRITE_BATCH = 250


def comment_documents(documents: list[dict]) -> list[dict]:
    """The documents comments are posted on: those with a comment period, else the rules."""
    with_period = [d for d in documents if d["attributes"].get("commentEndDate")
                   or d["attributes"].get("commentStartDate")]
    if with_period:
        return with_period
    return [d for d in documents
            if d["attributes"].get("documentType") in ("Proposed Rule", "Rule", "Notice")]


def record_resolution(docket: Docket, data: dict, documents: list[dict], ctx: StageContext,
                      result: StageResult, bad: BadItems | None = None) -> Docket:
    """Store what a resolve learnt (from the API or the mirror): the docket's fields, its
    documents and the windows its comments are listed by."""
    bad = bad or BadItems(ctx, docket.id, result)
    windows = _comment_windows(documents, bad)
    starts = [w["start"] for w in windows if w["start"]]
    ends = [w["end"] for w in windows if w["end"]]
    docket_fields = _docket_fields(data)
    keys = [d["id"] for d in documents if isinstance(d.get("id"), str)]
    known = items.summary_hashes(docket.id, keys) if keys else {}
    with database.atomic():
        for d in documents:
            result.add("documents." + _upsert_document(d, docket.id, known, ctx.run_id))
        docket_documents.save_documents(docket.id, documents)
        docket_rows.record_resolve(
            docket.id,
            agency=docket_fields["agency"] or docket.agency,
            title=docket_fields["title"],
            rin=docket_fields["rin"],
            documents=json.dumps(windows, sort_keys=True),
            comment_start_date=min(starts) if starts else None,
            comment_end_date=max(ends) if ends else None,
            resolved_at=iso(ctx.clock()),
            documents_unread=None,  # read now, even when there are none
        )
    return docket_rows.require_docket(docket.id)


def _comment_windows(documents: list[dict], bad: BadItems) -> list[dict]:
    """The windows comments are listed by; a document's unreadable dates or unsafe objectId
    are that document's failure (its comments are not listed), not the docket's."""
    windows = []
    for doc in comment_documents(documents):
        try:
            windows.append(records.comment_window(doc))
        except BadRecord as exc:
            reason = f"document {doc['id']}: {exc}; its comments are not listed"
            bad.result.add("documents." + bad.keyed(doc["id"], reason))
    return windows


def _docket_fields(data: dict) -> dict:
    try:
        return records.docket_fields(data)
    except BadRecord as exc:
        raise BadResponse(f"docket record: {exc}") from None


def _upsert_document(doc: dict, docket_id: str, known: dict, run_id: str) -> str:
    key = validate_id(doc["id"], "document id")
    owner = record_checks.docket_named(key, doc.get("attributes"))
    if owner is not None and owner != docket_id:
        # Another docket's document: its rows are that docket's, never moved or overwritten.
        log.warning("%s: document %s belongs to docket %s: not taken in", docket_id, key, owner)
        item_states.transition(UNKEYED_STAGE, f"{docket_id}/foreign-{key}", docket_id, "failed",
                               run_id=run_id, reason=f"document {key} belongs to docket {owner}: "
                               f"not taken in by {docket_id}"[:500], detail="permanent")
        return "foreign"
    try:
        fields = records.summary_fields(doc["attributes"])
    except BadRecord as exc:
        # One unusable document is its own failure (a row with the reason; --force re-resolves
        # it): the docket's comments are still walked.
        log.warning("%s: document %s: %s", docket_id, key, exc)
        item_states.transition(STAGE, key, docket_id, "failed", run_id=run_id,
                               reason=f"document {key}: {exc}"[:500], detail="permanent")
        return "failed"
    digest = items.content_digest({"kind": "document", **fields})
    return items.upsert_summary(key, docket_id, "document", fields, digest, known.get(key, False))


class BadItems:
    """The bad list items of one walk or resolve: each is its own failure, never the
    docket's. A keyed one gets a ``failed`` row with the reason; one without a safe id a
    ``fetch.unkeyed`` row named by a digest of the item, its reason naming it by a short safe
    rendering. Both are counted and named in the run's message, and the earliest
    lastModifiedDate among them is where the walk's watermark is held."""

    def __init__(self, ctx: StageContext, docket_id: str, result: StageResult) -> None:
        self.ctx, self.docket_id, self.result = ctx, docket_id, result
        self.hold_at: Watermark | None = None
        self.named = 0

    def keyed(self, key: str, reason: str, listed: object = None) -> str:
        """The item's ``failed`` row; the caller counts the outcome it returns."""
        log.warning("%s: %s", self.docket_id, reason)
        item_states.transition(STAGE, key, self.docket_id, "failed", run_id=self.ctx.run_id,
                               reason=reason[:500], detail="permanent")
        self._noted(reason, listed)
        return "failed"

    def unkeyed(self, kind: str, raw: object, reason: str, label: str | None = None) -> None:
        label = label or records.list_item_label(raw)
        name = f"{self.docket_id}/list-item-{json_digest(raw, ensure_ascii=True)[:12]}"
        why = f"{kind} without a safe id ({label}) skipped: {reason[:200]}"
        log.warning("%s: %s", self.docket_id, why)
        item_states.transition(UNKEYED_STAGE, name, self.docket_id, "failed", run_id=self.ctx.run_id,
                               reason=why[:500], detail="permanent")
        self.result.add("malformed")
        self._noted(f"{kind} without a safe id: {label}", raw)

    def foreign(self, kind: str, key: str, owner: str, listed: object) -> str:
        """A listed item whose own record names another docket: a failure of this docket's
        listing, on a row of its own (``fetch.unkeyed``), so the item's rows, which belong
        to ``owner``, are never moved or overwritten. It holds no watermark: no later run
        could take it in."""
        name = f"{self.docket_id}/foreign-{key}"
        why = f"{kind} {key} belongs to docket {owner}: not taken in by {self.docket_id}"
        log.warning("%s: %s", self.docket_id, why)
        item_states.transition(UNKEYED_STAGE, name, self.docket_id, "failed", run_id=self.ctx.run_id,
                               reason=why[:500], detail="permanent")
        self.named += 1
        if self.named <= NAMED_IN_MESSAGE:
            sep = "; " if self.result.message else "bad list items (the docket goes on): "
            self.result.message += sep + why[:160]
        return "foreign"

    def comment(self, exc: MalformedItem) -> None:
        """The client's callback for a comment list item that failed its checks."""
        self._bad("comment", exc)

    def document(self, exc: MalformedItem) -> None:
        """The client's callback for a document list item that failed its checks."""
        self._bad("document", exc)

    def _bad(self, kind: str, exc: MalformedItem) -> None:
        if exc.item_id is not None:
            self.result.add(self.keyed(exc.item_id, str(exc), exc.raw))
        else:
            self.unkeyed(f"{kind} list item", exc.raw, str(exc))

    def _noted(self, what: str, listed: object) -> None:
        self.named += 1
        if self.named <= NAMED_IN_MESSAGE:
            sep = "; " if self.result.message else "bad list items (the docket goes on): "
            self.result.message += sep + what[:160]
        self._hold(listed)

    def _hold(self, listed: object) -> None:
        attrs = listed.get("attributes") if isinstance(listed, dict) else None
        lmd = attrs.get("lastModifiedDate") if isinstance(attrs, dict) else None
        try:
            seen = Watermark(lmd) if isinstance(lmd, str) else None
        except ValueError:
            seen = None  # unreadable: it cannot hold the watermark anywhere
        if seen is not None and (self.hold_at is None or seen < self.hold_at):
            self.hold_at = seen


class Walk:
    """One walk: the stored state read one page at a time, and that page's writes staged.

    A cold docket creates thousands of rows; staging a page and writing it with two
    multi-row statements keeps the walk bound by the API, not by statement building.
    """

    def __init__(self, ctx: StageContext, docket: Docket, result: StageResult) -> None:
        self.ctx, self.docket_id, self.result = ctx, docket.id, result
        self.bad = BadItems(ctx, docket.id, result)
        # What is stored of the page being walked: a docket of a million comments is never
        # held in memory, and a walk that lists nothing new reads none of its rows.
        self.known: dict[str, str | None] = {}
        self.failed: set[str] = set()
        self.new_rows: dict[str, dict] = {}
        self.new_states: dict[str, dict] = {}
        self.changed_rows: dict[str, tuple[dict, str, str | None]] = {}

    def look_up(self, page: list[dict]) -> None:
        """Read what is stored of the page's items (two queries), before upserting them."""
        self.look_up_keys(sorted({s["id"] for s in page if isinstance(s.get("id"), str)}))

    def look_up_keys(self, keys: list[str]) -> None:
        """``look_up`` by the items' keys (a mirror fetch knows them before it reads them)."""
        self.known = items.summary_hashes(self.docket_id, keys) if keys else {}
        self.failed = item_states.items_in_state(STAGE, keys, "failed") if keys else set()

    def upsert(self, summary: dict, document_id: str) -> str:
        key = summary["id"]
        owner = record_checks.docket_named(key, summary.get("attributes"))
        if owner is not None and owner != self.docket_id:
            return self.bad.foreign("comment", key, owner, summary)
        try:
            fields = records.comment_summary(summary["attributes"], document_id)
        except BadRecord as exc:
            return self.fail(key, f"comment {key}: {exc}", summary)
        digest = items.content_digest({"kind": "comment", **fields})
        stored = self.known.get(key, False)
        if stored == digest and key not in self.failed:
            return "unchanged"  # the common case: nothing is written at all
        if stored is False or key in self.new_rows:
            outcome = "created" if stored is False else "updated"
            self.new_rows[key] = {"key": key, "docket": self.docket_id, "kind": "comment",
                                  "summary_hash": digest, **fields}
        elif stored != digest:
            outcome = "updated"
            self.changed_rows[key] = (fields, digest, stored)
        else:
            outcome = "unchanged"  # the row is right; only its failed state is repaired
        self.known[key] = digest
        self.failed.discard(key)
        # Withdrawn comments keep their row (upstream keeps the id): recorded, never deleted.
        withdrawn = fields["withdrawn"]
        self._stage_state(key, "withdrawn" if withdrawn else "ok", digest,
                          "withdrawn by the submitter or agency" if withdrawn else None)
        return outcome

    def fail(self, key: str, reason: str, listed: object = None) -> str:
        """A per-item failure: a ``failed`` row with the reason; the walk goes on, clean."""
        self.new_states.pop(key, None)  # the failure is written now: nothing staged overwrites it
        self.bad.keyed(key, reason, listed)
        self.failed.add(key)
        return "failed"

    def _stage_state(self, key: str, state: str, content_hash: str | None, reason: str | None) -> None:
        # The same columns item_states.transition writes, for a multi-row upsert.
        self.new_states[key] = {"stage": STAGE, "item": key, "docket": self.docket_id,
                                "fingerprint": None, "content_hash": content_hash, "state": state,
                                "reason": reason, "detail": None, "run_id": self.ctx.run_id}

    def flush(self) -> None:
        """Write the staged page in one transaction: rows first, then their state rows."""
        if not (self.new_rows or self.changed_rows or self.new_states):
            return
        now = iso(utcnow())
        with database.atomic():
            for key, (fields, digest, stored) in self.changed_rows.items():
                items.upsert_summary(key, self.docket_id, "comment", fields, digest, stored)
            if self.new_rows:
                items.insert_new(list(self.new_rows.values()), now)
            if self.new_states:
                item_states.upsert_walk_rows([{**row, "written_at": now} for row in self.new_states.values()])
        self.new_rows.clear()
        self.changed_rows.clear()
        self.new_states.clear()


def walk_docket(api, docket: Docket, ctx: StageContext, result: StageResult) -> Watermark | None:
    """Walk every comment-bearing document from the watermark; return the new watermark."""
    stored = Watermark(docket.pull_watermark) if docket.pull_watermark else None
    since = None if ctx.force else stored  # --force walks everything, yet never moves it back
    walk = Walk(ctx, docket, result)
    newest = stored
    ctx.progress.start(0)
    try:
        for window in json.loads(docket.documents or "[]"):
            if window["object_id"] is None:  # an older document record: nothing to list by
                continue
            listed = api.iter_comments(window["object_id"], since, on_bad_item=walk.bad.comment)
            for page in batches(listed, WRITE_BATCH):
                walk.look_up(page)
                for summary in page:
                    outcome = walk.upsert(summary, window["id"])
                    result.add(outcome)
                    ctx.progress.add_total(1)
                    ctx.progress.advance(outcome)
                walk.flush()
                newest = _later(newest, page)
                ctx.check_time()
    finally:
        walk.flush()  # what was read before a break is kept: the next run absorbs it as unchanged
    return _held(newest, walk.bad.hold_at, stored)


def _held(newest: Watermark | None, hold_at: Watermark | None, stored: Watermark | None) -> Watermark | None:
    """The watermark a walk with bad items may store: no later than the earliest of them
    (the next run lists it again), never earlier than where this walk started."""
    if hold_at is None or newest is None or not hold_at < newest:
        return newest
    return stored if stored is not None and hold_at < stored else hold_at


def batches(iterable: Iterable[T], size: int) -> Iterator[list[T]]:
    """Lists of ``size`` elements (the last shorter), each collected whole before it is given:
    a walk's page *before* its transaction opens, so no HTTP call happens inside it."""
    batch: list[T] = []
    for element in iterable:
        batch.append(element)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


def _later(newest: Watermark | None, page: list[dict]) -> Watermark | None:
    """The latest of ``newest`` and the page's lastModifiedDates (compared as instants);
    items without one (older responses) are stored but never move the watermark."""
    for summary in page:
        if not summary["attributes"].get("lastModifiedDate"):
            continue
        seen = Watermark(summary["attributes"]["lastModifiedDate"])
        newest = seen if newest is None else newest.later(seen)
    return newest


def _not_after(watermark: Watermark | str | None, now) -> str | None:
    """What ``pull_watermark`` stores: the watermark capped at the walk's end, as its string."""
    return None if watermark is None else str(Watermark.of(watermark).capped(now))


def finish_clean_walk(ctx: StageContext, docket: Docket, watermark: Watermark | None, result: StageResult) -> None:
    if not result.clean:
        return
    now = ctx.clock()
    # "New" for sealing is anything the walk changed: a docket whose comments are still
    # being edited or withdrawn is not quiet, even if nobody added one.
    changed = result.counts.get("created", 0) + result.counts.get("updated", 0)
    docket_rows.record_clean_pull(docket.id, watermark=_not_after(watermark, now), pulled_at=iso(now),
                                  new=changed)
    fresh = docket_rows.require_docket(docket.id)
    if _seals_now(fresh, now, ctx.settings.seal_quiet_days):
        sealed_at = docket_rows.seal(docket.id, "auto", now)
        log.info("%s: sealed automatically at %s (closed %s, quiet %d days, nothing new)",
                 docket.id, sealed_at, fresh.comment_end_date, ctx.settings.seal_quiet_days)
        result.add("sealed")


def _seals_now(docket: Docket, now, quiet_days: int) -> bool:
    """The docket row's facts first: counting the items that wait reads the docket's state
    rows (a million for a big open docket), so only a docket otherwise ready to seal pays."""
    if not should_seal(docket_rows.seal_facts(docket, waiting=0), now, quiet_days):
        return False
    return should_seal(docket_rows.seal_facts(docket), now, quiet_days)
