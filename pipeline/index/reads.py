"""What the index DB holds, read: its identity, each item's state, the docket markers, and
the checks ``docketeer verify`` and the no-churn tests make."""

from __future__ import annotations

import json
from dataclasses import dataclass
from datetime import datetime
from typing import Any, NamedTuple

from pgvector import Vector


@dataclass(frozen=True)
class IndexState:
    item_key: str
    docket: str
    fingerprint: str | None
    content_hash: str | None
    chunk_count: int
    embedder_id: str | None
    indexed_at: datetime
    chunks_before_cap: int | None = None  # its chunks before max_item_chunks (None: not recorded)

    @property
    def chunks_made(self) -> int:
        """The item's chunks before the chunk cap, as far as known."""
        return self.chunk_count if self.chunks_before_cap is None else self.chunks_before_cap


class DocketMarker(NamedTuple):
    """A tuple: a scheduler pass makes one per docket, 100,000 of them (a frozen dataclass
    costs five times as much to make)."""

    collection: str
    docket: str
    sealed_at: str | None
    version: int
    input_fingerprint: str | None
    indexed_at: datetime


@dataclass(frozen=True)
class CountMismatch:
    collection: str
    item_key: str
    recorded: int | None  # index_state.chunk_count, None when the state row is missing
    actual: int


class IndexReads:
    """``IndexDB``'s reads."""

    # --- identity and verification ---------------------------------------------------

    def instance_id(self) -> str:
        return self._fetch_value("SELECT value FROM index_meta WHERE key = 'instance_id'")

    def schema_version(self) -> int:
        return self._fetch_value("SELECT max(version) FROM index_schema_version")

    def chunk_counts(self, collection: str | None = None) -> dict[tuple[str, str], int]:
        """Actual chunk rows per (collection, item_key)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                "SELECT collection, item_key, count(*) FROM chunks"
                " WHERE %(c)s::text IS NULL OR collection = %(c)s GROUP BY collection, item_key",
                {"c": collection},
            )
            return {(c, k): n for c, k, n in cur.fetchall()}

    def count_mismatches(self) -> list[CountMismatch]:
        """Items whose recorded chunk_count disagrees with their chunk rows (one query)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """SELECT coalesce(s.collection, c.collection), coalesce(s.item_key, c.item_key),
                          s.chunk_count, coalesce(c.n, 0)
                   FROM index_state s
                   FULL JOIN (SELECT collection, item_key, count(*) AS n FROM chunks
                              GROUP BY collection, item_key) c
                     ON c.collection = s.collection AND c.item_key = s.item_key
                   WHERE s.chunk_count IS DISTINCT FROM coalesce(c.n, 0)
                   ORDER BY 1, 2"""
            )
            return [CountMismatch(*row) for row in cur.fetchall()]

    def indexed_counts(self, collection: str, dockets: list[str] | None = None) -> dict[str, int]:
        """docket -> items with an index state row in ``collection`` (one grouped query; of
        these dockets, None: all: a page of dockets asks for its own only)."""
        with self._conn, self._conn.cursor() as cur:
            if dockets is None:
                cur.execute("SELECT docket, count(*) FROM index_state WHERE collection = %s GROUP BY docket",
                            (collection,))
            else:
                cur.execute("SELECT docket, count(*) FROM index_state WHERE collection = %s AND docket = ANY(%s) "
                            "GROUP BY docket", (collection, list(dockets)))
            return dict(cur.fetchall())

    def dump_chunks(self) -> str:
        """Every chunk row, in key order, one JSON array per line: for byte-identity tests."""
        return self._dump(
            """SELECT c.collection, c.item_key, c.ordinal, c.docket, c.text, c.page, c.section,
                      c.embedder_id, c.dim, v.embedding::text, c.metadata::text
               FROM chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id
               ORDER BY c.collection COLLATE "C", c.item_key COLLATE "C", c.ordinal"""
        )

    def dump_state(self) -> str:
        """index_state and index_docket_state rows including timestamps (no-churn tests)."""
        items = self._dump(
            """SELECT collection, item_key, docket, fingerprint, content_hash, chunk_count,
                      embedder_id, indexed_at::text, chunks_before_cap
               FROM index_state ORDER BY collection COLLATE "C", item_key COLLATE "C" """
        )
        dockets = self._dump(
            """SELECT collection, docket, sealed_at, version, input_fingerprint, indexed_at::text
               FROM index_docket_state ORDER BY collection COLLATE "C", docket COLLATE "C" """
        )
        return items + "--\n" + dockets

    # --- per-item state --------------------------------------------------------------

    def state_for_docket(self, collection: str, docket: str) -> dict[str, IndexState]:
        """The index state of every item of one docket, in one query."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """SELECT item_key, docket, fingerprint, content_hash, chunk_count, embedder_id,
                          indexed_at, chunks_before_cap
                   FROM index_state WHERE collection = %s AND docket = %s""",
                (collection, docket),
            )
            return {row[0]: IndexState(*row) for row in cur.fetchall()}

    def passage_vectors(self, collection: str, docket: str, item_keys=None) -> list[tuple[str, int, str, Any]]:
        """(item key, ordinal, text, vector) of a docket's chunks (only ``item_keys``' when
        given), in key and ordinal order: the vectors the index holds, read for the topic
        map (one query)."""
        query = """SELECT c.item_key, c.ordinal, c.text, v.embedding
                   FROM chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id
                   WHERE c.collection = %s AND c.docket = %s"""
        params: tuple = (collection, docket)
        if item_keys is not None:
            query += " AND c.item_key = ANY(%s)"
            params += (sorted(item_keys),)
        with self._conn, self._conn.cursor() as cur:
            cur.execute(query + " ORDER BY c.item_key, c.ordinal", params)
            return [(key, ordinal, text, vector.to_numpy() if isinstance(vector, Vector) else vector)
                    for key, ordinal, text, vector in cur.fetchall()]

    def stored_texts(self, embedder_id: str, text_hashes) -> set[str]:
        """Which of these chunk-text hashes already have a vector of ``embedder_id`` (one query)."""
        hashes = sorted(set(text_hashes))
        if not hashes:
            return set()
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT text_hash FROM chunk_vectors WHERE embedder_id = %s AND text_hash = ANY(%s)",
                        (embedder_id, hashes))
            return {row[0] for row in cur.fetchall()}

    # --- per-docket completion markers -----------------------------------------------

    def docket_marker(self, collection: str, docket: str) -> DocketMarker | None:
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """SELECT collection, docket, sealed_at, version, input_fingerprint, indexed_at
                   FROM index_docket_state WHERE collection = %s AND docket = %s""",
                (collection, docket),
            )
            row = cur.fetchone()
        return DocketMarker(*row) if row else None

    def docket_markers(self, collection: str) -> dict[str, DocketMarker]:
        """Every docket marker of a collection in one query (a scheduler pass reads them once)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """SELECT collection, docket, sealed_at, version, input_fingerprint, indexed_at
                   FROM index_docket_state WHERE collection = %s""",
                (collection,),
            )
            return {row[1]: DocketMarker(*row) for row in cur.fetchall()}

    def current_markers(self, collection: str, min_version: int, under: str) -> list[tuple]:
        """(docket, sealed_at, version, input_fingerprint, has its plain terms under ``under``)
        of each marker at ``min_version`` or later, as plain tuples: a wrapper compares 100,000
        of them with the state DB's facts."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                """SELECT docket, sealed_at, version, input_fingerprint,
                          vouched_output IS NOT NULL AND vouched_under IS NOT DISTINCT FROM %s
                   FROM index_docket_state WHERE collection = %s AND version >= %s""",
                (under, collection, min_version),
            )
            return cur.fetchall()

    def vouching_checksum(self, collection: str, min_version: int, under: str) -> str | None:
        """md5 of the lines ``docket US sealed_at US vouched_output`` (NL-joined, by docket in
        byte order) of the markers at ``min_version`` or later read under ``under``: what
        ``markers.input_lines`` gives when each of them vouches for its docket's input."""
        return self._fetch_value(
            """SELECT md5(string_agg(docket || chr(31) || coalesce(sealed_at, '') || chr(31)
                                     || vouched_output, chr(10) ORDER BY docket COLLATE "C"))
               FROM index_docket_state
               WHERE collection = %s AND version >= %s AND vouched_under = %s
                 AND vouched_output <> ''""",
            (collection, min_version, under),
        )

    def max_marker_version(self, collection: str) -> int:
        """Highest marker version in ``collection`` (0 when none): --force bumps past it."""
        return self._fetch_value(
            "SELECT coalesce(max(version), 0) FROM index_docket_state WHERE collection = %s",
            (collection,),
        )

    # --- internals -------------------------------------------------------------------

    def _fetch_value(self, sql: str, params: tuple = ()):
        with self._conn, self._conn.cursor() as cur:
            cur.execute(sql, params)
            return cur.fetchone()[0]

    def _dump(self, sql: str) -> str:
        with self._conn, self._conn.cursor() as cur:
            cur.execute(sql)
            return "".join(
                json.dumps(list(row), ensure_ascii=False) + "\n" for row in cur.fetchall()
            )
