"""The index DB's writes: an item's chunks, vectors and state row replaced together, the
fingerprints and re-drives of item states, a docket's markers, and a docket removed whole.

Writes never churn: rewriting a docket marker or a fingerprint with the same values
changes nothing, so a no-op run leaves every table byte-identical.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

from psycopg2.extras import execute_values

from pipeline.fingerprints import digest
from pipeline.index import copy_rows
from pipeline.index.chunking import Chunk
from pipeline.index.migrations import text_words


@dataclass(frozen=True)
class ItemRows:
    """One item's rows for ``replace_items``: its chunks, each with its vector or None (the
    vector stored for its text), and its state row's values."""

    collection: str
    item_key: str
    docket: str
    chunks: list[Chunk]
    vectors: list[list[float] | None]
    fingerprint: str | None
    content_hash: str | None
    metadata: dict[str, Any]
    chunks_before_cap: int | None = None
    # Each chunk's text hash (``fingerprints.digest`` of its text) when the caller made them
    # already (the index stage does, once per chunk); made here when None.
    text_hashes: list[str] | None = None

    def hashes(self) -> list[str]:
        return self.text_hashes if self.text_hashes is not None else [digest(c.text) for c in self.chunks]


class VectorsGone(Exception):  # noqa: N818 - a condition the writer handles, not an error
    """Chunks were to point to stored vectors that were dropped meanwhile (their last other
    chunks replaced by another writer): embed these texts (by hash) and write again."""

    def __init__(self, text_hashes: set[str]) -> None:
        super().__init__(f"{len(text_hashes)} stored vectors were dropped meanwhile")
        self.text_hashes = text_hashes


class _BatchVectors:
    """What a batch of ``ItemRows`` asks of the vectors: those given (by text hash, with
    their texts), every text hash its chunks need, each item's hashes and the dimensions."""

    def __init__(self, batch: list[ItemRows]) -> None:
        self.given: dict[str, list[float]] = {}
        self.text_of: dict[str, str] = {}  # text hash -> text of the vectors given
        self.needed: set[str] = set()
        self.hashes_of: list[list[str]] = []
        for rows in batch:
            if len(rows.chunks) != len(rows.vectors):
                raise ValueError(f"{len(rows.chunks)} chunks but {len(rows.vectors)} vectors for {rows.item_key}")
            hashes = rows.hashes()
            self.hashes_of.append(hashes)
            self.needed.update(hashes)
            for chunk, text_hash, vector in zip(rows.chunks, hashes, rows.vectors, strict=True):
                if vector is not None:
                    self.given[text_hash] = vector
                    self.text_of[text_hash] = chunk.text
        self.dims = {len(v) for v in self.given.values()}
        if len(self.dims) > 1:
            raise ValueError(f"mixed vector dimensions {sorted(self.dims)} for {[r.item_key for r in batch]}")


class IndexWrites:
    """``IndexDB``'s writes."""

    # --- per-item state --------------------------------------------------------------

    def replace_item(
        self,
        collection: str,
        item_key: str,
        docket: str,
        chunks: list[Chunk],
        vectors: list[list[float] | None],
        fingerprint: str | None,
        content_hash: str | None,
        embedder_id: str,
        metadata: dict[str, Any] | None = None,
        chunks_before_cap: int | None = None,
    ) -> None:
        """Replace one item's chunks and upsert its state row, in one transaction.

        ``metadata`` (submitter, organization, title…) is stored on every chunk of the item.
        An item with no chunks (empty text) keeps a state row with chunk_count 0.
        ``chunks_before_cap``: how many chunks the item made before a cap cut them (default:
        the chunks given). A vector given as None is the one already stored for the chunk's
        text (``stored_texts``); ``VectorsGone`` when it is not there any more.
        """
        self.replace_items([ItemRows(collection, item_key, docket, chunks, vectors, fingerprint,
                                     content_hash, metadata or {}, chunks_before_cap)], embedder_id)

    def replace_items(self, batch: list[ItemRows], embedder_id: str, *, refresh: bool = False,
                      index_after: bool = False) -> None:
        """Replace the chunks and upsert the state rows of several items in one transaction,
        in a fixed number of statements whatever their count.

        New vectors are stored once per distinct (embedder, text): a text already stored keeps
        its vector (``refresh``: the given one replaces it, as ``--force`` asks). Each chunk
        points to its text's vector; vectors no chunk points to any more are dropped.
        Raises ``VectorsGone`` (and writes nothing) when a chunk given no vector has none
        stored: dropped since the caller looked. Every vector must have one dimension.

        ``index_after``: a bulk load that builds the dimension's HNSW index once it is done
        (``ensure_dimension_index``), when there is none yet, rather than inserting every
        vector into a live graph (pgvector's advice for a first load: several times less
        work). Until it is built, searches of that dimension are exact.
        """
        vectors = _BatchVectors(batch)
        if vectors.dims and not index_after:
            self.ensure_dimension_index(next(iter(vectors.dims)))
        with self._conn, self._conn.cursor() as cur:
            if vectors.given:
                self._store_vectors(cur, embedder_id, vectors.given, vectors.text_of, refresh)
            vector_ids = self._hold_vectors(cur, embedder_id, vectors.needed)
            gone = vectors.needed - vector_ids.keys()
            if gone:
                raise VectorsGone(gone)
            displaced = _delete_chunks(cur, batch)
            _copy_chunks(cur, batch, vectors.hashes_of, embedder_id, vector_ids)
            _upsert_states(cur, batch, embedder_id)
            self._drop_orphan_vectors(cur, displaced - {vector_id for vector_id, _ in vector_ids.values()})
        self._staging_ready = self._staging_ready or bool(vectors.given)  # committed with it

    def _store_vectors(self, cur, embedder_id: str, given: dict[str, Any], text_of: dict[str, str],
                       refresh: bool) -> None:
        """Store the given vectors of texts not stored yet (``refresh``: replace those stored).

        The vectors travel in COPY's binary format (pgvector's own: 4-byte floats) into a
        staging table, then one INSERT parses each text's words beside its vector: written
        and read as decimal text, 256 floats cost more to format here than all the rest of
        a row. In hash order: two writers storing the same texts wait for each other, never
        on each other, and ids follow the hashes as before."""
        if not self._staging_ready:
            cur.execute("""CREATE TEMP TABLE IF NOT EXISTS vectors_in (
                               text_hash text NOT NULL, embedding vector NOT NULL, text text NOT NULL)
                           ON COMMIT DELETE ROWS""")
        cur.copy_expert("COPY vectors_in (text_hash, embedding, text) FROM STDIN (FORMAT binary)",
                        copy_rows.binary_vectors(sorted(given.items()), text_of))
        conflict = ("DO UPDATE SET embedding = EXCLUDED.embedding"
                    " WHERE chunk_vectors.embedding IS DISTINCT FROM EXCLUDED.embedding"
                    if refresh else "DO NOTHING")
        cur.execute(
            f"""INSERT INTO chunk_vectors (embedder_id, text_hash, dim, embedding, tsv)
                SELECT %s, n.text_hash, vector_dims(n.embedding), n.embedding, {text_words("n.text")}
                FROM vectors_in AS n ORDER BY n.text_hash COLLATE "C"
                ON CONFLICT (embedder_id, text_hash) {conflict}""",
            (embedder_id,),
        )

    def _hold_vectors(self, cur, embedder_id: str, text_hashes: set[str]) -> dict[str, tuple[int, int]]:
        """text hash -> (vector id, dimension) of those stored, each locked against being dropped (KEY
        SHARE) until this transaction has pointed its chunks to it."""
        if not text_hashes:
            return {}
        cur.execute(
            """SELECT text_hash, id, dim FROM chunk_vectors WHERE embedder_id = %s AND text_hash = ANY(%s)
               ORDER BY id FOR KEY SHARE""",
            (embedder_id, sorted(text_hashes)),
        )
        return {text_hash: (vector_id, dim) for text_hash, vector_id, dim in cur.fetchall()}

    @staticmethod
    def _drop_orphan_vectors(cur, vector_ids: set[int]) -> None:
        """Drop those of these vectors no chunk points to. A vector another transaction holds
        (about to point a chunk to it) is skipped, never waited for; one locked here first
        is gone for that writer, which then stores it again."""
        if not vector_ids:
            return
        cur.execute("SELECT id FROM chunk_vectors WHERE id = ANY(%s) FOR UPDATE SKIP LOCKED",
                    (sorted(vector_ids),))
        lockable = [row[0] for row in cur.fetchall()]
        if lockable:
            cur.execute(
                """DELETE FROM chunk_vectors AS v WHERE v.id = ANY(%s)
                   AND NOT EXISTS (SELECT 1 FROM chunks AS c WHERE c.vector_id = v.id)""",
                (lockable,),
            )

    def record_fingerprint(self, collection: str, item_key: str, fingerprint: str) -> bool:
        """Content unchanged: store the new fingerprint only. True if a row changed."""
        return self.record_fingerprints(collection, {item_key: fingerprint}) > 0

    def record_fingerprints(self, collection: str, fingerprints: dict[str, str]) -> int:
        """Bulk form of record_fingerprint (one statement); returns the rows changed."""
        if not fingerprints:
            return 0
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """UPDATE index_state AS s SET fingerprint = v.fingerprint
                   FROM unnest(%s::text[], %s::text[]) AS v(item_key, fingerprint)
                   WHERE s.collection = %s AND s.item_key = v.item_key
                     AND s.fingerprint IS DISTINCT FROM v.fingerprint""",
                (list(fingerprints), list(fingerprints.values()), collection),
            )
            return cur.rowcount

    def mark_stale(self, docket: str, states: list[str], limit: int) -> list[str]:
        """Re-drive: clear fingerprint and content hash of the oldest eligible rows of a docket.

        States: ``stale`` (already cleared), ``indexed`` (any row with a fingerprint),
        ``mismatch`` (recorded chunk count disagrees with the chunk rows). The next index run
        re-embeds exactly those items; SKIP LOCKED lets concurrent re-drives split the work.
        """
        with self._conn, self._conn.cursor() as cur:
            cur.execute(_MARK_STALE_SQL, {"docket": docket, "states": list(states), "limit": limit})
            return sorted(row[0] for row in cur.fetchall())

    def delete_item(self, collection: str, item_key: str) -> None:
        """Remove one item's chunks and state row together (withdrawn or gone comments)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                "DELETE FROM chunks WHERE collection = %s AND item_key = %s RETURNING vector_id",
                (collection, item_key),
            )
            displaced = {row[0] for row in cur.fetchall()}
            cur.execute(
                "DELETE FROM index_state WHERE collection = %s AND item_key = %s",
                (collection, item_key),
            )
            self._drop_orphan_vectors(cur, displaced)

    # --- a whole docket (docketeer forget --purge) --------------------------------------

    _DOCKET_TABLES = ("chunks", "index_state", "index_docket_state")

    def docket_row_counts(self, docket: str) -> dict[str, int]:
        """table -> rows of this docket, every collection."""
        with self._conn, self._conn.cursor() as cur:
            counts = {}
            for table in self._DOCKET_TABLES:
                cur.execute(f"SELECT count(*) FROM {table} WHERE docket = %s", (docket,))  # noqa: S608
                counts[table] = cur.fetchone()[0]
        return counts

    def purge_docket(self, docket: str) -> dict[str, int]:
        """Delete the docket's chunks, item states and markers in one transaction."""
        with self._conn, self._conn.cursor() as cur:
            deleted = {}
            cur.execute("DELETE FROM chunks WHERE docket = %s RETURNING vector_id", (docket,))
            deleted["chunks"] = cur.rowcount
            displaced = {row[0] for row in cur.fetchall()}
            for table in self._DOCKET_TABLES[1:]:
                cur.execute(f"DELETE FROM {table} WHERE docket = %s", (docket,))  # noqa: S608
                deleted[table] = cur.rowcount
            # Texts other dockets share keep their vectors.
            self._drop_orphan_vectors(cur, displaced)
        return deleted

    # --- per-docket completion markers -----------------------------------------------

    def fill_vouched(self, rows: list[tuple[str, str, str]], under: str) -> None:
        """Record the plain terms of markers that lack them under ``under`` (written before
        migration 4, or when the terms were spelled otherwise), once: each (docket, input
        fingerprint, the output it digests) is set only where the marker still vouches for
        exactly that fingerprint (in every collection)."""
        with self._conn, self._conn.cursor() as cur:
            execute_values(
                cur,
                """UPDATE index_docket_state AS m SET vouched_output = v.output, vouched_under = v.under
                   FROM (VALUES %s) AS v (docket, fingerprint, output, under)
                   WHERE m.docket = v.docket AND m.input_fingerprint = v.fingerprint
                     AND (m.vouched_output IS NULL OR m.vouched_under IS DISTINCT FROM v.under)""",
                [(*row, under) for row in rows], page_size=5000,
            )

    def write_docket_marker(
        self,
        collection: str,
        docket: str,
        sealed_at: str | None,
        version: int,
        input_fingerprint: str | None,
        vouched: tuple[str, str] | None = None,
    ) -> None:
        """Record the docket as indexed; an identical existing marker is left untouched.
        ``vouched``: (the input's output, the configuration) ``input_fingerprint`` digests."""
        output, under = vouched or (None, None)
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """INSERT INTO index_docket_state AS m
                       (collection, docket, sealed_at, version, input_fingerprint, indexed_at,
                        vouched_output, vouched_under)
                   VALUES (%s, %s, %s, %s, %s, now(), %s, %s)
                   ON CONFLICT (collection, docket) DO UPDATE SET
                       sealed_at = EXCLUDED.sealed_at, version = EXCLUDED.version,
                       input_fingerprint = EXCLUDED.input_fingerprint, indexed_at = EXCLUDED.indexed_at,
                       vouched_output = EXCLUDED.vouched_output, vouched_under = EXCLUDED.vouched_under
                   WHERE (m.sealed_at, m.version, m.input_fingerprint, m.vouched_output, m.vouched_under)
                         IS DISTINCT FROM (EXCLUDED.sealed_at, EXCLUDED.version, EXCLUDED.input_fingerprint,
                                           EXCLUDED.vouched_output, EXCLUDED.vouched_under)""",
                (collection, docket, sealed_at, version, input_fingerprint, output, under),
            )

    def clear_docket_marker(self, collection: str, docket: str) -> None:
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                "DELETE FROM index_docket_state WHERE collection = %s AND docket = %s",
                (collection, docket),
            )


def _delete_chunks(cur, batch: list[ItemRows]) -> set[int]:
    """Delete the items' chunk rows; return the vectors they pointed to."""
    cur.execute(
        """DELETE FROM chunks AS c USING unnest(%s::text[], %s::text[]) AS k(collection, item_key)
           WHERE c.collection = k.collection AND c.item_key = k.item_key RETURNING c.vector_id""",
        ([r.collection for r in batch], [r.item_key for r in batch]),
    )
    return {row[0] for row in cur.fetchall()}


def _copy_chunks(cur, batch: list[ItemRows], hashes_of: list[list[str]], embedder_id: str,
                 vector_ids: dict[str, tuple[int, int]]) -> None:
    # COPY: the chunk rows are most of a cold load's bytes, and a form letter's copies
    # are many rows of one text; an INSERT's statement text would be built per value.
    cur.copy_expert(
        """COPY chunks (collection, item_key, ordinal, docket, text, page, section,
                        embedder_id, dim, vector_id, metadata) FROM STDIN""",
        copy_rows.text_rows(row for rows, hashes in zip(batch, hashes_of, strict=True)
                            for row in _chunk_rows(rows, hashes, embedder_id, vector_ids)),
    )


def _upsert_states(cur, batch: list[ItemRows], embedder_id: str) -> None:
    execute_values(
        cur,
        """INSERT INTO index_state AS s (collection, item_key, docket, fingerprint,
               content_hash, chunk_count, embedder_id, indexed_at, chunks_before_cap)
           VALUES %s
           ON CONFLICT (collection, item_key) DO UPDATE SET
               docket = EXCLUDED.docket, fingerprint = EXCLUDED.fingerprint,
               content_hash = EXCLUDED.content_hash, chunk_count = EXCLUDED.chunk_count,
               embedder_id = EXCLUDED.embedder_id, indexed_at = EXCLUDED.indexed_at,
               chunks_before_cap = EXCLUDED.chunks_before_cap""",
        [(r.collection, r.item_key, r.docket, r.fingerprint, r.content_hash, len(r.chunks),
          embedder_id, len(r.chunks) if r.chunks_before_cap is None else r.chunks_before_cap)
         for r in batch],
        template="(%s, %s, %s, %s, %s, %s, %s, now(), %s)",
        page_size=500,
    )


_MARK_STALE_SQL = """
WITH counted AS (
    SELECT collection, item_key, count(*) AS n FROM chunks WHERE docket = %(docket)s
    GROUP BY collection, item_key
), picked AS (
    SELECT s.collection, s.item_key FROM index_state s
    LEFT JOIN counted c ON c.collection = s.collection AND c.item_key = s.item_key
    WHERE s.docket = %(docket)s AND (
        (s.fingerprint IS NULL AND 'stale' = ANY(%(states)s))
        OR (s.fingerprint IS NOT NULL AND 'indexed' = ANY(%(states)s))
        OR (s.fingerprint IS NOT NULL AND 'mismatch' = ANY(%(states)s)
            AND s.chunk_count <> coalesce(c.n, 0)))
    ORDER BY s.indexed_at, s.collection, s.item_key
    LIMIT %(limit)s
    FOR UPDATE OF s SKIP LOCKED
)
UPDATE index_state s SET fingerprint = NULL, content_hash = NULL
FROM picked p WHERE s.collection = p.collection AND s.item_key = p.item_key
RETURNING s.item_key
"""


def _chunk_rows(rows: ItemRows, hashes: list[str], embedder_id: str,
                vector_ids: dict[str, tuple[int, int]]):
    item_metadata = _canonical_json(rows.metadata or {})  # once per item, not per chunk
    for chunk, text_hash in zip(rows.chunks, hashes, strict=True):
        vector_id, dim = vector_ids[text_hash]
        yield (rows.collection, rows.item_key, chunk.ordinal, rows.docket, chunk.text, chunk.page,
               chunk.section, embedder_id, dim, vector_id, item_metadata)


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
