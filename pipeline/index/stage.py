"""Index: chunks and embeddings in PostgreSQL/pgvector, in this order per item:

1. fingerprint (extract's recorded output hash + index config + the item's metadata) equals
   the index state -> skip without loading anything;
2. load combined.md; content hash of what the chunk rows are made of unchanged (and the same
   embedder) -> record the new fingerprint only;
3. chunk, embed in batches, replace the item's chunks and state row in one transaction.

State is read in bulk: one query for extract's rows, one for the docket's items and one per
collection for the index state, never one per item. Completion lives in the index DB beside
the chunks, so a wiped index DB is re-indexed, never trusted silently.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass
from functools import partial
from operator import attrgetter

from pipeline.config import SETTINGS
from pipeline.engine.completion import Completion, join_terms
from pipeline.engine.stage import Redrivable, Stage, StageContext, StageResult
from pipeline.errors import BudgetSpent
from pipeline.extract.combined import combined_sections
from pipeline.extract.stage import read_combined
from pipeline.extract.text_caps import chunks_biting, with_caps
from pipeline.failures import item_failure
from pipeline.fingerprints import RECORD, canonical_json, digest, digest_each, json_digest
from pipeline.index.chunking import CHUNKER_VERSION, Chunk, chunk_text
from pipeline.index.database import ItemRows, VectorsGone
from pipeline.index.embedders import embed_in_batches, make_embedder, token_budget_of
from pipeline.index.markers import IndexMarkers
from pipeline.store import item_states, items
from pipeline.store.models import Docket

log = logging.getLogger("docketeer")
STAGE = "index"
UPSTREAM = "extract"  # the stage whose output it indexes (OCR, when on, merges into it)
COLLECTIONS = {"comment": "comments", "document": "documents"}
INDEXABLE = ("ok", "ocr_needed", "failed", "unsupported", "too_large", "gone")
MARKER_COLLECTION = "comments"  # the docket-level marker row IndexDocket's target reads
METADATA_FIELDS = ("title", "submitter", "organization", "posted_date", "kind")
# Hash-unchanged fingerprints are written in bulk statements of at most this many rows.
FINGERPRINT_FLUSH = 500
# Items whose vectors exist are written together, at most this many in one transaction,
# and at most WRITE_TEXTS new vectors: a write's statements and commit cost the same for
# 64 vectors as for 512, so a cold load writes every few embed batches, not after each.
WRITE_BATCH = 500
WRITE_TEXTS = 512
CHUNK_OVERLAP = 150
TITLE_HEADING = "Title"  # the section of an item indexed by its title alone
DEFAULT_ITEM_CHUNKS = next(s.default for s in SETTINGS if s.name == "max_item_chunks")


def chunk_overlap(chunk_chars: int) -> int:
    # chunk_text wants overlap <= max_chars/2; the setting allows chunk_chars down to 200.
    return min(CHUNK_OVERLAP, chunk_chars // 4)


def embedder_from(settings):
    if settings.embedder == "openai":
        return make_embedder("openai", url=settings.openai_url, model=settings.openai_model,
                             api_key=settings.openai_api_key or None)
    if settings.embedder in ("minilm", "minilm-int8"):
        # Its ONNX export (and int8 copy) lives in the machine's model cache: made once for
        # every store, loaded in a second after.
        return make_embedder(settings.embedder, cache_dir=str(settings.model_cache_path),
                             runtime=settings.minilm_runtime)
    return make_embedder(settings.embedder)


def index_config_id(embedder_id: str, chunk_chars: int) -> str:
    """Everything besides the text that shapes the chunk rows: chunker and embedder."""
    return f"{CHUNKER_VERSION}:{chunk_chars}\x1f{embedder_id}"


_config_ids: dict[tuple, str] = {}


def config_id_for(settings) -> str:
    """index_config_id for these settings, once per process: an openai embedder without a
    known dimension costs a probe call to learn its id, and targets ask for it per docket."""
    key = (settings.embedder, settings.openai_url, settings.openai_model, settings.chunk_chars)
    if key not in _config_ids:
        _config_ids[key] = index_config_id(embedder_from(settings).id, settings.chunk_chars)
    return _config_ids[key]


def marker_input_fingerprint(extract_output: str | None, config_id: str) -> str:
    """What IndexDocket's docket marker should vouch for: extract's output under this config,
    so that switching the embedder or the chunker invalidates a docket's marker, not only
    its items."""
    return digest(extract_output or "", config_id, sep=RECORD)


def marker_input_fingerprints(extract_outputs, config_id: str) -> list[str | None]:
    """``marker_input_fingerprint`` of many outputs at once (None where there is none)."""
    return digest_each(extract_outputs, config_id, sep=RECORD)


def item_fingerprint(extract_hash: str | None, config_id: str, metadata: dict) -> str:
    # The metadata is in: a changed submitter must reach the chunks even when the text
    # (and so extract's hash) did not change.
    return digest(extract_hash or "", config_id, canonical_json(metadata, ensure_ascii=False))


def content_hash(sections: list[tuple[str, str]], config_id: str, metadata: dict) -> str:
    """Digest of every input of the item's chunk rows except the embedder.

    The chunker config is in so a new chunk size re-chunks even when the text is the same;
    the embedder id is compared on its own column (index_state.embedder_id).
    """
    chunker = config_id.split("\x1f", 1)[0]
    return json_digest({"chunker": chunker, "sections": sections, "metadata": metadata},
                       ensure_ascii=False)


@dataclass(frozen=True)
class Work:
    """One item that needs a load: its identity, new fingerprint (before the chunk cap,
    ``with_caps``) and recorded state."""

    collection: str
    key: str
    fingerprint: str
    known: object | None  # pipeline.index.database.IndexState
    metadata: dict


@dataclass
class Loaded:
    """An item chunked: its chunks (capped), fingerprint and content hash with the chunk
    cap that bites it, and how many chunks it made before the cap."""

    work: Work
    chunks: list[Chunk]
    content: str
    fingerprint: str
    chunks_made: int
    text_hashes: list[str]  # each chunk's text hash (``digest``), made once here


def index_docket(ctx: StageContext, docket: Docket, *, index_db, embedder) -> StageResult:
    result = StageResult()
    todo = plan(ctx, docket.id, index_db, embedder.id, result)
    if not todo:
        return result
    ctx.progress.start(len(todo))
    _load_model(ctx, embedder)
    writer = Writer(ctx, docket.id, index_db, embedder, result)
    try:
        for work in _taken(ctx, todo):
            ctx.check_time()
            writer.take(work)
    except BudgetSpent as exc:
        result.budget_spent, result.message = True, str(exc)
    finally:
        # Loaded work is kept even when the budget ran out: at most one embed batch more.
        writer.flush()
    return result


def _taken(ctx: StageContext, todo: list[Work]):
    """The planned work this worker does: all of it, or, when the run shares its items with
    other workers (``ctx.claims``), the items it claims, a collection at a time in the
    plan's (key) order."""
    if ctx.claims is None:
        yield from todo
        return
    for collection in sorted({work.collection for work in todo}):
        yield from ctx.claims.work_of([work for work in todo if work.collection == collection], attrgetter("key"))


def _load_model(ctx: StageContext, embedder) -> None:
    # A local model loads for seconds to minutes: the visualiser says so meanwhile, and the
    # rate (and ETA) counts from when the items start moving.
    if getattr(embedder, "loaded", True):
        return
    ctx.progress.phase("loading model")
    embedder.load()
    ctx.progress.phase(None)


def plan(ctx: StageContext, docket_id: str, index_db, embedder_id: str,
         result: StageResult) -> list[Work]:
    """Items whose fingerprint differs from the index state, from bulk reads only."""
    config = index_config_id(embedder_id, ctx.settings.chunk_chars)
    todo, unchanged = plan_work(docket_id, index_db, config, ctx.force, ctx.settings.max_item_chunks)
    if unchanged:
        result.add("unchanged", unchanged)
    return todo


def unfinished(docket_id: str, index_db, config_id: str, max_item_chunks: int | None = None) -> int:
    """Items extract vouches for whose index state is not for their current input."""
    return len(plan_work(docket_id, index_db, config_id, False, max_item_chunks)[0])


def plan_work(docket_id: str, index_db, config: str, force: bool,
              max_item_chunks: int | None = None) -> tuple[list[Work], int]:
    """(the items to load, how many are unchanged). A done item's recorded fingerprint
    carries the chunk cap that bit it; it is compared with the cap that would bite it now,
    judged by the chunks it made, so a changed cap loads exactly the items it bites or bit."""
    upstream = {k: r for k, r in item_states.states_for_docket(UPSTREAM, docket_id).items()
                if r.state in INDEXABLE}
    metadata_of = items.search_metadata(docket_id, METADATA_FIELDS)
    todo: list[Work] = []
    unchanged = 0
    for collection in sorted(set(COLLECTIONS.values())):
        known_states = index_db.state_for_docket(collection, docket_id)
        for key in sorted(upstream):
            metadata = metadata_of.get(key, {})
            if COLLECTIONS.get(metadata.get("kind", "comment")) != collection:
                continue
            fingerprint = item_fingerprint(upstream[key].content_hash, config, metadata)
            known = known_states.get(key)
            if (not force and known is not None
                    and known.fingerprint == with_caps(fingerprint, chunks_biting(known.chunks_made, max_item_chunks))):
                unchanged += 1
                continue
            todo.append(Work(collection, key, fingerprint, known, metadata))
    return todo, unchanged


class Writer:
    """Loads items, embeds their chunks' distinct new texts across items in full batches,
    writes the items.

    Each distinct chunk text is embedded once per embedder, whichever item, docket or run
    it comes from: a text the index already holds a vector for (a form letter's 15,000
    copies, a quoted paragraph, a re-posted comment) is looked up by its hash, not embedded.
    Batching across items matters: most comments are one or two chunks, and MiniLM is far
    faster on a batch of 64 than on 64 batches of one. The items of a few embed batches
    (``WRITE_BATCH``, ``WRITE_TEXTS``) are written together (one transaction, a few
    statements), after their vectors exist.

    When the run shares its items with other workers (``ctx.claims``), the items a write
    or a fingerprint flush wrote (and those that failed meanwhile: worked, with no
    row to write) are marked done in one statement after their rows are committed.
    """

    def __init__(self, ctx: StageContext, docket_id: str, index_db, embedder,
                 result: StageResult) -> None:
        self.ctx, self.docket_id, self.index_db, self.embedder = ctx, docket_id, index_db, embedder
        self.result = result
        self.config = index_config_id(embedder.id, ctx.settings.chunk_chars)
        self.pending: list[Loaded] = []
        self.unknown: dict[str, str] = {}  # text hash -> text of pending chunks not known stored
        self.vectors: dict[str, list[float]] = {}  # text hash -> vector embedded, not yet written
        self.stored: set[str] = set()  # text hashes this run knows to have a stored vector
        self.dims: set[int] = set()  # dimensions of the vectors this run stored
        self.tokens = token_budget_of(embedder)  # chunks the model reads whole
        self.fingerprints: dict[str, dict[str, str]] = {}  # collection -> key -> fingerprint
        self.decided: list[str] = []  # keys written (or failed) since claims last heard of it

    def take(self, work: Work) -> None:
        loaded = self.load(work)
        if loaded is None:
            return
        known = work.known
        if (not self.ctx.force and known is not None and known.content_hash == loaded.content
                and known.embedder_id == self.embedder.id):
            self.fingerprints.setdefault(work.collection, {})[work.key] = loaded.fingerprint
            if sum(map(len, self.fingerprints.values())) >= FINGERPRINT_FLUSH:
                self.flush_fingerprints()
            return
        self.pending.append(loaded)
        for chunk, text_hash in zip(loaded.chunks, loaded.text_hashes, strict=True):
            if text_hash not in self.stored and text_hash not in self.vectors:
                self.unknown[text_hash] = chunk.text
        if len(self.unknown) >= self.ctx.settings.embed_batch:
            self.embed_unknown()
        if len(self.pending) >= WRITE_BATCH or len(self.vectors) >= WRITE_TEXTS:
            self.flush_embeddings()

    def load(self, work: Work) -> Loaded | None:
        """Read and chunk combined.md; a missing or broken file fails the item, not the run."""
        try:
            frontmatter, body = read_combined(self.ctx.blobs, self.docket_id, work.key)
            sections = searchable_sections(frontmatter, body, work.metadata)
        except Exception as exc:  # noqa: BLE001 - one broken item never stops the docket
            self._failed(work.key, item_failure(exc).reason)
            return None
        chars = self.ctx.settings.chunk_chars
        chunks = chunk_text(sections, max_chars=chars, overlap=chunk_overlap(chars), tokens=self.tokens)
        # The cap is in the content hash too: the same text under another cap is other chunks.
        biting = chunks_biting(len(chunks), self.ctx.settings.max_item_chunks)
        capped = self._capped(work.key, chunks)
        return Loaded(work, capped,
                      with_caps(content_hash(sections, self.config, work.metadata), biting),
                      with_caps(work.fingerprint, biting), len(chunks),
                      [digest(chunk.text) for chunk in capped])

    def _capped(self, key: str, chunks: list[Chunk]) -> list[Chunk]:
        """At most ``max_item_chunks`` chunks: one runaway item must not take the run's
        memory and embedding time (4,257 chunks came from one 250 KB PDF)."""
        cap = self.ctx.settings.max_item_chunks
        if len(chunks) <= cap:
            return chunks
        log.warning("index %s %s: chunks capped at %d (of %d)", self.docket_id, key, cap, len(chunks))
        self.result.add("chunks_capped")
        return chunks[:cap]

    def flush(self) -> None:
        self.flush_embeddings()
        self.flush_fingerprints()
        # Vectors of a dimension the index had none of were loaded without its HNSW index:
        # built now, once, over all of them (an existing one took them as they came).
        for dim in sorted(self.dims):
            self.index_db.ensure_dimension_index(dim)

    def embed_unknown(self) -> None:
        """Embed the pending chunks' texts that have no stored vector (one lookup); their
        vectors wait for the write."""
        unknown, self.unknown = self.unknown, {}
        if not unknown:
            return
        # --force re-embeds (and rewrites) every text once in the run; otherwise only the
        # texts without a stored vector are embedded.
        stored = set() if self.ctx.force else self.index_db.stored_texts(self.embedder.id, unknown)
        self.stored.update(stored)
        self.vectors.update(self._embedded({h: t for h, t in unknown.items() if h not in stored}))

    def flush_embeddings(self) -> None:
        if not self.pending:
            return
        self.embed_unknown()
        pending, self.pending = self.pending, []
        vector_of, self.vectors = self.vectors, {}
        batch = [self._rows(loaded, vector_of) for loaded in pending]
        write = partial(self.index_db.replace_items, embedder_id=self.embedder.id,
                        refresh=self.ctx.force, index_after=True)
        try:
            write(batch)
        except VectorsGone as gone:
            # Another writer dropped them after the lookup (their last chunks replaced):
            # embed those texts here and write the batch again.
            texts = {chunk.text for loaded in pending for chunk in loaded.chunks}
            vector_of.update(self._embedded({h: t for t in texts if (h := digest(t)) in gone.text_hashes}))
            write([self._rows(loaded, vector_of) for loaded in pending])
        self.stored.update(vector_of)
        self.dims.update(len(vector) for vector in vector_of.values())
        for loaded in pending:
            self._decide([loaded.work.key])
            self._advance("embedded")
        self._claims_done()

    def _embedded(self, texts: dict[str, str]) -> dict[str, list[float]]:
        """text hash -> vector of these texts, embedded in batches of like length (a batch
        pads to its longest text)."""
        ordered = sorted(texts, key=lambda text_hash: (-len(texts[text_hash]), text_hash))
        vectors = embed_in_batches(self.embedder, [texts[h] for h in ordered], self.ctx.settings.embed_batch)
        return dict(zip(ordered, vectors, strict=True))

    def _rows(self, loaded: Loaded, vector_of: dict[str, list[float]]) -> ItemRows:
        work = loaded.work
        return ItemRows(work.collection, work.key, self.docket_id, loaded.chunks,
                        [vector_of.get(text_hash) for text_hash in loaded.text_hashes],
                        loaded.fingerprint, loaded.content, work.metadata, loaded.chunks_made,
                        loaded.text_hashes)

    def flush_fingerprints(self) -> None:
        fingerprints, self.fingerprints = self.fingerprints, {}
        for collection, by_key in sorted(fingerprints.items()):
            self.index_db.record_fingerprints(collection, by_key)
            self._advance("hash_unchanged", len(by_key))
            self._decide(by_key)
        self._claims_done()

    def _decide(self, keys) -> None:
        if self.ctx.claims is not None:
            self.decided.extend(keys)

    def _claims_done(self) -> None:
        """One statement for the items written since the last: no other worker takes them."""
        if self.decided:
            decided, self.decided = self.decided, []
            self.ctx.claims.done(decided)

    def _failed(self, key: str, reason: str) -> None:
        # No marker for a docket with a broken item: the next run retries it.
        log.warning("index %s %s: %s", self.docket_id, key, reason)
        self.result.clean = False
        self.result.message = self.result.message or f"{key}: {reason}"
        self._decide([key])  # worked: retried by the next run, not by another worker of this one
        self._advance("failed")

    def _advance(self, outcome: str, n: int = 1) -> None:
        self.result.add(outcome, n)
        self.ctx.progress.advance(outcome, n)


def searchable_sections(frontmatter: dict, body: str, metadata: dict) -> list[tuple[str, str]]:
    """What an item is found by: its title (combined.md's ``title:``, or the item's own), then
    its text: its body or abstract and its files' texts. A title names what the text may never
    say (an acronym, the rule it answers), so it is searched for every item, also one with a
    body, as a section of its own: joined to the body it would make every form-letter copy's
    first chunk unique (titles name their senders), and each copy would be embedded again
    instead of pointing to the letter's one vector. When a file's text arrives, the sections
    change, so the content hash does: that item alone is re-embedded."""
    return title_section(metadata, frontmatter) + combined_sections(body, skip_placeholders=True)


def title_section(metadata: dict, frontmatter: dict | None = None) -> list[tuple[str, str]]:
    """The item's title as a section of its own (none when it has no title). Its title is
    part of the item's metadata, so a new title re-indexes it."""
    title = (metadata.get("title") or (frontmatter or {}).get("title") or "").strip()
    return [(TITLE_HEADING, title)] if title else []


# --- the declaration -------------------------------------------------------------------------


def run_index(ctx: StageContext, docket: Docket) -> StageResult:
    return index_docket(ctx, docket, index_db=ctx.runtime.index_db(),
                        embedder=embedder_from(ctx.settings))


def _owed(runtime, docket_id: str, now: str) -> int:
    return unfinished(docket_id, runtime.index_db(), config_id_for(runtime.settings),
                      runtime.settings.max_item_chunks)


def index_terms(settings) -> str:
    """The settings that shape a docket's chunk rows besides its text: ``max_item_chunks``
    (only when not at its default) and the chunker and embedder. (Extract's caps reach these
    terms through the registry: they shape extract's output, which the index reads.)"""
    chunk_cap = settings.max_item_chunks
    return join_terms(("" if chunk_cap == DEFAULT_ITEM_CHUNKS else f"chunks:{chunk_cap}",
                       config_id_for(settings)))


def _markers(completion: Completion, runtime, invocation) -> IndexMarkers:
    """Completion kept in the index DB beside the chunks, one marker row per collection."""
    return IndexMarkers(completion, runtime, invocation,
                        collections=tuple(sorted(set(COLLECTIONS.values()))),
                        probe_collection=MARKER_COLLECTION)


def _mark_stale(runtime, stage: str, docket_id: str, states: list[str], limit: int,
                run_id: str) -> list[str]:
    """Forget the fingerprint and content hash of the oldest eligible index rows."""
    return runtime.index_db().mark_stale(docket_id, states, limit)


# An index row has no state column: ``indexed`` (fingerprint set), ``mismatch`` (its chunk
# count disagrees with its chunk rows, as `docketeer verify` reports) or ``stale``.
INDEX_ROWS = Redrivable(("indexed", "mismatch", "stale"), "mismatch", _mark_stale)

DECLARATION = Stage(
    name=STAGE, upstream="ocr", run=run_index, task="IndexDocket", wrapper="IndexAll",
    doc="Chunks and embeddings for new or changed comments; completion kept in the index DB.",
    unfinished=_owed, markers=_markers, redrive=INDEX_ROWS, splits_items=True, terms=index_terms,
)
