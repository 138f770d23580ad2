"""Index: chunks and embeddings in PostgreSQL/pgvector, in this order per item:

1. fingerprint (extract's recorded output hash + chunker version + embedder id) equals the
   index state -> skip without loading anything;
2. load combined.md; content hash of its text unchanged -> record the new fingerprint only;
3. chunk, embed in batches, replace the item's chunks and state row in one transaction.

Index state is read in bulk (one query per docket and collection). Completion lives in the
index DB beside the chunks, so a wiped index DB is re-indexed, never trusted silently.
"""

from __future__ import annotations

import hashlib
import json
import logging

from pipeline.extract.combined import combined_sections
from pipeline.index.chunking import CHUNKER_VERSION, chunk_text
from pipeline.index.embedders import embed_in_batches, make_embedder
from pipeline.stages.base import StageContext, StageResult
from pipeline.stages.extract import read_combined
from pipeline.store import item_states
from pipeline.store.models import Docket, Item

log = logging.getLogger("docketeer")
STAGE = "index"
UPSTREAM = "extract"
COLLECTIONS = {"comment": "comments", "document": "documents"}
INDEXABLE = ("ok", "ocr_needed", "failed", "unsupported", "too_large", "gone")
MARKER_COLLECTION = "comments"  # the docket-level marker row IndexDocket's target reads


def embedder_from(settings):
    if settings.embedder == "openai":
        return make_embedder("openai", url=settings.openai_url, model=settings.openai_model,
                             api_key=settings.openai_api_key or None)
    return make_embedder(settings.embedder)


def item_fingerprint(extract_hash: str | None, embedder_id: str, chunk_chars: int) -> str:
    text = f"{extract_hash or ''}\x1f{CHUNKER_VERSION}:{chunk_chars}\x1f{embedder_id}"
    return hashlib.sha256(text.encode()).hexdigest()


def text_hash(sections: list[tuple[str, str]]) -> str:
    return hashlib.sha256(json.dumps(sections, separators=(",", ":")).encode()).hexdigest()


def index_docket(ctx: StageContext, docket: Docket, *, index_db, embedder) -> StageResult:
    result = StageResult()
    upstream = {k: r for k, r in item_states.states_for_docket(UPSTREAM, docket.id).items()
                if r.state in INDEXABLE}
    kinds = dict(Item.select(Item.key, Item.kind).where(Item.docket == docket.id).tuples())
    chunk_chars = ctx.settings.chunk_chars
    todo: list[tuple] = []  # (collection, key, fingerprint, known state or None)
    for collection in sorted(set(COLLECTIONS.values())):
        state = index_db.state_for_docket(collection, docket.id)
        for key, row in sorted(upstream.items()):
            if COLLECTIONS.get(kinds.get(key, "comment")) != collection:
                continue
            fingerprint = item_fingerprint(row.content_hash, embedder.id, chunk_chars)
            known = state.get(key)
            if not ctx.force and known is not None and known.fingerprint == fingerprint:
                result.add("unchanged")
                continue
            todo.append((collection, key, fingerprint, known))
    if not todo:
        return result
    ctx.progress.start(len(todo))
    for collection, key, fingerprint, known in todo:
        ctx.check_time()
        outcome = index_item(ctx, docket.id, collection, key, fingerprint, known, index_db, embedder)
        result.add(outcome)
        ctx.progress.advance(outcome)
    return result


def index_item(ctx, docket_id: str, collection: str, key: str, fingerprint: str, known,
               index_db, embedder) -> str:
    frontmatter, body = read_combined(ctx.blobs, docket_id, key)
    sections = combined_sections(body, skip_placeholders=True)
    content = text_hash(sections)
    if (not ctx.force and known is not None and known.content_hash == content
            and known.embedder_id == embedder.id):
        index_db.record_fingerprint(collection, key, fingerprint)
        return "hash_unchanged"
    chunks = chunk_text(sections, max_chars=ctx.settings.chunk_chars)
    vectors = embed_in_batches(embedder, [c.text for c in chunks], ctx.settings.embed_batch)
    index_db.replace_item(collection, key, docket_id, chunks, vectors, fingerprint, content,
                          embedder.id, metadata=_metadata(key, frontmatter))
    return "embedded"


def _metadata(key: str, frontmatter: dict) -> dict:
    item = Item.get_or_none(Item.key == key)
    if item is None:
        return {}
    return {k: v for k, v in {
        "title": item.title, "submitter": item.submitter, "organization": item.organization,
        "posted_date": item.posted_date, "kind": item.kind,
    }.items() if v}
