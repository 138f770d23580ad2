"""Backfill: per-item detail records and attachment bytes, from the API or the mirror.

An item needs work when its detail was never fetched, its list summary changed since, or
its row was left ``pending``/``stale``. Attachment rows are keyed ``(item, filename)``
and blobs by sha256: a rerun creates no row and copies no byte, and a file attached to two
comments is stored once.
"""

from __future__ import annotations

import logging
import tempfile
from dataclasses import dataclass

from pipeline.errors import (
    BadResponse,
    BudgetSpent,
    InvalidIdentifier,
    PermanentHTTPError,
    TransientHTTPError,
)
from pipeline.ids import validate_filename
from pipeline.sources import connect
from pipeline.sources.regulations_gov import TooLarge
from pipeline.stages.base import StageContext, StageResult
from pipeline.store import item_states, items
from pipeline.store.blobs import BlobSizeMismatch, BlobTooLarge
from pipeline.store.models import Attachment, Docket, Item

log = logging.getLogger("docketeer")
STAGE = "backfill"
FILE_STAGE = "backfill.file"
GONE_STATUSES = (404, 410)


@dataclass(frozen=True)
class FileRef:
    """One attachment file to have: where it comes from and what it will be called."""

    filename: str
    ordinal: int
    format: str
    size: int | None
    url: str | None = None  # API download
    mirror_key: str | None = None  # mirror binary


def backfill_docket(ctx: StageContext, docket: Docket, *, api=None, mirror=None) -> StageResult:
    if docket.sealed_at and not ctx.force:
        log.info("%s: sealed %s, skipping", docket.id, docket.sealed_at)
        return StageResult(message="sealed")
    todo = _todo(docket.id, ctx.force)
    result = StageResult()
    if not todo:
        return result
    source = _make_source(ctx, docket, api, mirror)
    ctx.progress.start(len(todo))
    try:
        for item in todo:
            ctx.check_time()
            outcome = backfill_item(ctx, source, item, result)
            ctx.progress.advance(outcome)
    except BudgetSpent as exc:
        result.budget_spent, result.message = True, str(exc)
    finally:
        source.add_calls(result)
    return result


def _todo(docket_id: str, force: bool) -> list[Item]:
    todo = {item.key: item for item in items.items_needing_detail(docket_id, force)}
    redo = [
        key for key, row in item_states.states_for_docket(STAGE, docket_id).items()
        if row.state in ("pending", "stale") and key not in todo
    ]
    if redo:
        todo.update({item.key: item for item in Item.select().where(Item.key.in_(redo))})
    return [todo[key] for key in sorted(todo)]


def _make_source(ctx: StageContext, docket: Docket, api, mirror):
    if ctx.settings.source == "mirror":
        return MirrorSource(mirror or connect.mirror(ctx.settings), docket)
    budget = connect.request_budget(ctx.settings, ctx.deadline)
    return ApiSource(api or connect.regulations_gov(ctx.settings, budget))


def backfill_item(ctx: StageContext, source, item: Item, result: StageResult) -> str:
    try:
        body = source.detail(item)
    except PermanentHTTPError as exc:
        if exc.status in GONE_STATUSES:
            return _finish_gone(ctx, item, result, str(exc))
        return _finish_failed(ctx, item, result, str(exc), permanent=True)
    except (BadResponse, InvalidIdentifier) as exc:
        return _finish_failed(ctx, item, result, str(exc), permanent=True)
    except TransientHTTPError as exc:
        result.clean = False
        result.message = f"{item.key}: {exc}"
        return _finish_failed(ctx, item, result, str(exc), permanent=False)
    if body is None:
        return _finish_gone(ctx, item, result, "marked unavailable in the mirror")
    fields = normalize_detail(body)
    detail_hash = items.content_digest(fields)
    files = source.files(item, body, ctx.settings.formats)
    item_states.mark_pending(STAGE, item.key, item.docket, run_id=ctx.run_id, reason="downloading")
    file_states = [_have_file(ctx, source, item, ref, result) for ref in files]
    state = _item_state(file_states)
    if state == "failed-transient":
        result.clean = False
        return _finish_failed(ctx, item, result, "an attachment download failed; retried next run",
                              permanent=False)
    items.update_detail(item.key, fields, detail_hash, item.summary_hash)
    content = items.content_digest({"detail": detail_hash, "files": _file_digest(item.key)})
    item_states.transition(STAGE, item.key, item.docket, state, run_id=ctx.run_id,
                           content_hash=content, reason=None if state == "ok" else "see files")
    result.add(state)
    return state


def _item_state(file_states: list[str]) -> str:
    for worst in ("failed-transient", "failed", "too_large", "gone"):
        if worst in file_states:
            return worst
    return "ok"


def _file_digest(item_key: str) -> list:
    rows = Attachment.select(Attachment.filename, Attachment.sha256).where(
        Attachment.item == item_key).order_by(Attachment.filename).tuples()
    return [list(row) for row in rows]


def _finish_gone(ctx, item: Item, result: StageResult, reason: str) -> str:
    items.update_detail(item.key, {}, "gone", item.summary_hash)
    item_states.transition(STAGE, item.key, item.docket, "gone", run_id=ctx.run_id, reason=reason[:500],
                           content_hash="gone")
    result.add("gone")
    return "gone"


def _finish_failed(ctx, item: Item, result: StageResult, reason: str, *, permanent: bool) -> str:
    if permanent:  # never retried by default runs; Redrive can send it back
        items.update_detail(item.key, {}, "failed", item.summary_hash)
    item_states.transition(STAGE, item.key, item.docket, "failed", run_id=ctx.run_id,
                           reason=reason[:500], detail="permanent" if permanent else "transient")
    result.add("failed")
    return "failed"


def normalize_detail(body: dict) -> dict:
    attrs = body["data"].get("attributes") or {}
    names = [attrs.get("firstName"), attrs.get("lastName")]
    submitter = " ".join(n for n in names if isinstance(n, str) and n.strip()) or None
    return {
        "body": attrs.get("comment") if isinstance(attrs.get("comment"), str) else None,
        "submitter": submitter,
        "organization": attrs.get("organization") if isinstance(attrs.get("organization"), str) else None,
        "received_date": attrs.get("receiveDate"),
        "withdrawn": bool(attrs.get("withdrawn")),
        "comment_on_document_id": attrs.get("commentOnDocumentId"),
    }


def _have_file(ctx, source, item: Item, ref: FileRef, result: StageResult) -> str:
    """Make sure one file is stored and has its row; returns the file's state."""
    key = f"{item.key}/{ref.filename}"
    existing = Attachment.get_or_none((Attachment.item == item.key) & (Attachment.filename == ref.filename))
    if existing and existing.sha256 and not ctx.force:
        result.add("files_unchanged")
        return "ok"
    try:
        stored = source.fetch_file(ref, ctx.blobs, ctx.settings.max_attachment_bytes, ctx.runtime.data_dir)
    except (TooLarge, BlobTooLarge) as exc:
        return _file_state(ctx, item, key, "too_large", str(exc), result)
    except PermanentHTTPError as exc:
        state = "gone" if exc.status in GONE_STATUSES else "failed"
        return _file_state(ctx, item, key, state, str(exc), result)
    except (TransientHTTPError, BlobSizeMismatch) as exc:
        _file_state(ctx, item, key, "failed", str(exc), result)
        return "failed-transient"
    if stored is None:
        return _file_state(ctx, item, key, "gone", "marked unavailable in the mirror", result)
    values = {"ordinal": ref.ordinal, "format": ref.format, "source_url": ref.url or ref.mirror_key,
              "declared_size": ref.size, "sha256": stored.sha256, "size": stored.size}
    (Attachment.insert(item=item.key, filename=ref.filename, **values)
        .on_conflict(conflict_target=[Attachment.item, Attachment.filename], update=values).execute())
    result.add("files_stored" if stored.created else "files_deduplicated")
    item_states.transition(FILE_STAGE, key, item.docket, "ok", run_id=ctx.run_id, content_hash=stored.sha256)
    return "ok"


def _file_state(ctx, item: Item, key: str, state: str, reason: str, result: StageResult) -> str:
    item_states.transition(FILE_STAGE, key, item.docket, state, run_id=ctx.run_id, reason=reason[:500])
    result.add(f"files_{state}")
    return state


def choose_format(formats: list[dict], preference: list[str]) -> dict | None:
    usable = [f for f in formats if isinstance(f, dict) and isinstance(f.get("fileUrl"), str)]
    ranked = sorted(usable, key=lambda f: _rank(str(f.get("format", "")).lower(), preference))
    return ranked[0] if ranked else None


def _rank(fmt: str, preference: list[str]) -> int:
    return preference.index(fmt) if fmt in preference else len(preference)


class ApiSource:
    """Details from ``/comments/{id}?include=attachments``, files from their fileUrl."""

    def __init__(self, api) -> None:
        self.api = api

    def detail(self, item: Item) -> dict:
        if item.kind == "document":
            return self.api.get_document(item.key)
        return self.api.get_comment(item.key)

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        refs: list[FileRef] = []
        own = (body["data"].get("attributes") or {}).get("fileFormats")
        if isinstance(own, list) and own:  # a document's own content file
            refs.extend(self._ref(own, preference, 0, "content"))
        for n, attachment in enumerate(_included_attachments(body), start=1):
            formats = (attachment.get("attributes") or {}).get("fileFormats") or []
            order = (attachment.get("attributes") or {}).get("docOrder") or n
            refs.extend(self._ref(formats, preference, int(order), None))
        return refs

    @staticmethod
    def _ref(formats, preference, ordinal: int, stem: str | None) -> list[FileRef]:
        chosen = choose_format(formats, preference)
        if chosen is None:
            return []
        url = chosen["fileUrl"]
        name = url.rstrip("/").rsplit("/", 1)[-1]
        if stem:
            name = f"{stem}.{name.rsplit('.', 1)[-1]}" if "." in name else f"{stem}.bin"
        size = chosen.get("size") if isinstance(chosen.get("size"), int) else None
        return [FileRef(validate_filename(name.lower()), ordinal, str(chosen.get("format", "")).lower(),
                        size, url=url)]

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir):
        (data_dir / "tmp").mkdir(exist_ok=True)
        # An unnamed temporary file vanishes with the process: a kill leaves nothing behind.
        with tempfile.TemporaryFile(dir=data_dir / "tmp") as spool:
            self.api.download(ref.url, spool, max_bytes=max_bytes)
            spool.seek(0)
            return blobs.ingest(spool, max_bytes=max_bytes)

    def add_calls(self, result: StageResult) -> None:
        for endpoint, n in self.api.stats().items():
            result.add(f"api.{endpoint}", n)


def _included_attachments(body: dict) -> list[dict]:
    included = body.get("included") or []
    return [i for i in included if isinstance(i, dict) and i.get("type") == "attachments"]


class MirrorSource:
    """Details and files from a mirrulations-layout mirror; the docket is listed once, lazily."""

    def __init__(self, mirror, docket: Docket) -> None:
        self.mirror = mirror
        self.docket = docket
        self._listing = None

    @property
    def listing(self):
        if self._listing is None:
            self._listing = self.mirror.docket_listing(self.docket.id, self.docket.agency)
        return self._listing

    def detail(self, item: Item) -> dict | None:
        table = self.listing.documents if item.kind == "document" else self.listing.comments
        if item.key in self.listing.gone_items() or item.key not in table:
            return None
        body = self.mirror.read_json(table[item.key])
        if not isinstance(body, dict) or not isinstance(body.get("data"), dict):
            raise BadResponse(f"{item.key}: mirror JSON has no data object")
        return body

    def files(self, item: Item, body: dict, preference: list[str]) -> list[FileRef]:
        by_stem: dict[str, list] = {}
        for attachment in self.listing.attachments.get(item.key, []):
            stem = attachment.stored_name.rsplit(".", 1)[0]
            by_stem.setdefault(stem, []).append(attachment)
        refs = []
        for _stem, choices in sorted(by_stem.items()):
            best = min(choices, key=lambda a: _rank(a.ext.lower(), preference))
            refs.append(FileRef(validate_filename(best.stored_name), best.n or 0, best.ext.lower(),
                                best.size, mirror_key=best.key))
        gone = {stem for key, stem in self.listing.gone_attachments() if key == item.key}
        refs.extend(FileRef(f"{stem}.unavailable", 0, "", None) for stem in sorted(gone - set(by_stem)))
        return refs

    def fetch_file(self, ref: FileRef, blobs, max_bytes: int, data_dir):
        if ref.mirror_key is None:
            return None
        with self.mirror.open_binary(ref.mirror_key) as stream:
            return blobs.ingest(stream, max_bytes=max_bytes, expected_size=ref.size)

    def add_calls(self, result: StageResult) -> None:
        pass
