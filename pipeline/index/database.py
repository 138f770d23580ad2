"""The index DB: chunks + embeddings, per-item index state and per-docket completion markers.

Everything the index stage vouches for lives here, in one PostgreSQL database, so a
marker can never outlive the data it describes: wipe the database and the markers go with
it (and ``instance_id()`` changes, which anything caching index facts elsewhere can check).

``IndexDB`` is one connection, opened here; what it does lives beside it, one part each:

* ``migrations.py``: the schema, as migrations 1-6, applied when a connection opens;
* ``dimension_indexes.py``: the HNSW index of each embedding dimension in use;
* ``reads.py``: identity, item states, markers, and the checks of ``docketeer verify``;
* ``writes.py``: chunks, vectors and item states replaced together, markers written, a
  docket purged (with ``copy_rows.py``, the rows as ``COPY`` reads them);
* ``search_queries.py``: the vector and the full-text search, under ``SearchFilters``.

The names callers use are all importable from here.
"""

from __future__ import annotations

from pathlib import Path

import psycopg2
import psycopg2.extensions
from pgvector.psycopg2 import register_vector

from pipeline.counters import INDEX_QUERIES, count_query, note_write
from pipeline.index import embedded_server, migrations
from pipeline.index.dimension_indexes import BUILD_MEMORY_CEILING, DimensionIndexes
from pipeline.index.migrations import SCHEMA_VERSION, TEXT_SEARCH_CONFIG
from pipeline.index.reads import CountMismatch, DocketMarker, IndexReads, IndexState
from pipeline.index.search_queries import (
    DEFAULT_EF_SEARCH,
    TEXT_CANDIDATES,
    IndexSearches,
    SearchFilters,
    SearchHit,
    array_literal,
)
from pipeline.index.writes import IndexWrites, ItemRows, VectorsGone

__all__ = [
    "BUILD_MEMORY_CEILING", "DEFAULT_EF_SEARCH", "SCHEMA_VERSION", "TEXT_CANDIDATES",
    "TEXT_SEARCH_CONFIG", "CountMismatch", "CountedCursor", "DocketMarker", "IndexDB",
    "IndexState", "ItemRows", "SearchFilters", "SearchHit", "VectorsGone", "array_literal",
]


class CountedCursor(psycopg2.extensions.cursor):
    """Counts every statement (``index_queries``, ``item_reads``): what a no-op read."""

    def execute(self, query, vars=None):  # noqa: A002 - psycopg2's signature
        count_query(str(query), INDEX_QUERIES)
        done = super().execute(query, vars)
        note_write(str(query), self.rowcount)
        return done

    def copy_expert(self, sql, file, size=8192):
        count_query(str(sql), INDEX_QUERIES)
        return super().copy_expert(sql, file, size)


class IndexDB(IndexReads, IndexWrites, IndexSearches, DimensionIndexes):
    """One connection to the index database (not shared between threads)."""

    def __init__(self, conn, server=None, *, ef_search: int = DEFAULT_EF_SEARCH,
                 search_floor: float | None = None) -> None:
        self._conn = conn
        self._server = server
        self.ef_search = ef_search  # HNSW candidates a vector search keeps (at least its k)
        # The search_floor setting (None: the embedder's own floor; search.floor_of decides).
        self.search_floor = search_floor
        self._indexed_dims: set[int] = set()
        self._iterative_scan = False
        self._staging_ready = False  # vectors_in (a temporary table) made on this connection

    # --- lifecycle -------------------------------------------------------------------

    @classmethod
    def open(cls, url: str | None, data_dir: Path, *, cursor_factory=None,
             ef_search: int = DEFAULT_EF_SEARCH, search_floor: float | None = None) -> IndexDB:
        """Connect to ``url``, or start/join the embedded server under ``data_dir`` when None.

        Runs the migrations. ``cursor_factory`` is passed to psycopg2 (tests count queries);
        ``ef_search``: HNSW candidates a vector search keeps (the ``search_ef`` setting);
        ``search_floor``: the ``search_floor`` setting (None: each embedder's own).
        """
        server = embedded_server.acquire(data_dir) if url is None else None
        try:
            dsn = embedded_server.database_url(server) if server is not None else url
            conn = psycopg2.connect(dsn, cursor_factory=cursor_factory or CountedCursor)
        except BaseException:  # a signal's SystemExit too: the server is let go either way
            if server is not None:
                embedded_server.release(server)
            raise
        db = cls(conn, server, ef_search=ef_search, search_floor=search_floor)
        try:
            db.migrate()
            register_vector(conn)
            db._load_capabilities()
        except BaseException:  # a signal's SystemExit too (a start waiting on a lock)
            db.close()
            raise
        return db

    def close(self) -> None:
        """Close the connection; stop the embedded server if this was its last user."""
        if self._conn is not None and not self._conn.closed:
            self._conn.close()
        if self._server is not None:
            server, self._server = self._server, None
            embedded_server.release(server)

    def __enter__(self) -> IndexDB:
        return self

    def __exit__(self, *exc_info) -> None:
        self.close()

    def read_only(self, statement_seconds: float | None = None) -> None:
        """Every later transaction on this connection refuses writes (``docketeer serve``),
        and with ``statement_seconds`` each statement is cancelled past that time (a search
        never holds the page's other requests longer)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SET SESSION CHARACTERISTICS AS TRANSACTION READ ONLY")
            if statement_seconds:
                cur.execute(f"SET statement_timeout = {max(1, int(statement_seconds * 1000))}")

    def migrate(self) -> list[int]:
        """Apply the migrations not yet applied, in one transaction; return their versions."""
        return migrations.apply(self._conn)
