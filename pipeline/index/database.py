"""The index DB: chunks + embeddings, per-item index state and per-docket completion markers.

Everything the index stage vouches for lives here, in one PostgreSQL database, so a
marker can never outlive the data it describes: wipe the database and the markers go with
it (and ``instance_id()`` changes, which anything caching index facts elsewhere can check).

Schema (migrations 1-6; see ``_MIGRATIONS``)
--------------------------------------------
* ``index_schema_version(version, applied_at)`` — applied migrations.
* ``index_meta(key, value)`` — ``instance_id``: a random id made when the schema is created.
* ``chunks(collection, item_key, ordinal, docket, text, page, section, embedder_id, dim,
  vector_id, metadata jsonb, name_words text[])``, primary key ``(collection, item_key,
  ordinal)``; ``name_words`` (migration 6) are the lexemes of its submitter and
  organisation, generated and GIN-indexed (``chunks_name_words``).
* ``chunk_vectors(id, embedder_id, text_hash, dim, embedding vector, tsv tsvector)``
  (migration 5): each distinct chunk text's vector, once per embedder (``text_hash`` =
  ``fingerprints.digest`` of the text); ``chunks.vector_id`` points to it. A vector no
  chunk points to any more is dropped by the write that left it alone. ``tsv`` (migration
  6; before it a ``chunks.tsv`` per chunk row) is the text's words, GIN-indexed
  (``chunk_vectors_tsv``) for the full-text half of hybrid search: a chunk's words are
  those and its names'.
* ``index_state(collection, item_key, docket, fingerprint, content_hash, chunk_count,
  embedder_id, indexed_at)``, primary key ``(collection, item_key)``, indexed by docket.
* ``index_docket_state(collection, docket, sealed_at, version, input_fingerprint,
  indexed_at, vouched_output, vouched_under)``, primary key ``(collection, docket)``;
  ``vouched_output`` / ``vouched_under`` (migration 4): the input stage's output the marker
  vouches for and the configuration it was read under (``input_fingerprint`` is their
  digest), so a wrapper compares every docket's marker with the state DB in one checksum.

Embedding dimensions
--------------------
``chunk_vectors.embedding`` is an *unconstrained* ``vector`` column with its dimension kept
in ``dim`` (a CHECK ties the two). Each dimension in use gets its own partial HNSW
expression index, created on first write of that dimension (or after a first bulk load,
``replace_items(index_after=True)``)::

    CREATE INDEX chunks_hnsw_384 ON chunk_vectors
        USING hnsw ((embedding::vector(384)) vector_cosine_ops) WHERE dim = 384

(``halfvec`` for 2001..4000 dimensions, which HNSW cannot index as ``vector``; above
4000 the search is exact.) Search filters ``dim = len(query)`` and the embedder id and
orders by the same expression, so it uses the index for that dimension. Switching the
embedder (even to another dimension) needs no migration: the embedder id is part of the
index fingerprint, every item is re-embedded and ``replace_item`` swaps its rows, while
searches with the new embedder see only new rows. ``drop_unused_dimension_indexes()``
removes the old dimension's index once no rows use it.

Writes never churn: rewriting a docket marker or a fingerprint with the same values
changes nothing, so a no-op run leaves every table byte-identical.
"""

from __future__ import annotations

import io
import json
import struct
from dataclasses import dataclass, field, replace
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

import psutil
import psycopg2
import psycopg2.extensions
from pgvector import Vector
from pgvector.psycopg2 import register_vector
from psycopg2.extras import execute_values

from pipeline.counters import INDEX_QUERIES, TEXT_RANKED, count_query, counters
from pipeline.fingerprints import digest
from pipeline.index import embedded_server
from pipeline.index.chunking import Chunk

# pg_advisory_xact_lock keys: serialise migrations and per-dimension index creation.
_MIGRATION_LOCK = 0x646B7401
_DIMENSION_INDEX_LOCK = 0x646B7402
_HNSW_VECTOR_MAX_DIM = 2000
_HNSW_HALFVEC_MAX_DIM = 4000
# An HNSW build's memory per vector beyond the vector itself: its element and neighbour lists
# at pgvector's default m = 16 (measured: 64 MB held 29,802 vectors of 384 dimensions, 2,252
# bytes each, 1,544 of them the vector), with a margin.
_HNSW_ELEMENT_OVERHEAD = 1024
# What the build's memory blocks may hold beyond that: they grow by doubling up to 8 MB, so
# a small graph uses up to twice its size (1,000 such vectors did not fit 2.5 MB).
_HNSW_BUILD_BLOCKS = 16 * 1024 ** 2
# The most a build's memory is raised to, however many vectors (a server's own larger
# setting is kept).
BUILD_MEMORY_CEILING = 2 * 1024 ** 3

TEXT_SEARCH_CONFIG = "english"  # stems words ("hospitals" finds "hospital"), keeps numbers
# The full-text half ranks (ts_rank_cd: cover density, the costly part) at most this many
# matching chunks, chosen first by a cheap rank; beyond it a common word's tens of thousands
# of matches would each be ranked for a list that shows ten (docs/BENCHMARKS.md).
TEXT_CANDIDATES = 400
# hnsw.ef_search when the search_ef setting is not given: recall@10 of HNSW against an exact
# scan is 1.000 at 250 (0.787 at 200) on MiniLM vectors of a duplicate-heavy 100,000-comment docket
# (benchmarks/search_scale.py, docs/BENCHMARKS.md). A search asking for more results asks more.
DEFAULT_EF_SEARCH = 250



def _sql_text_hash(column: str) -> str:
    """PostgreSQL's spelling of ``fingerprints.digest(text)``: the hex sha256 of the UTF-8 text."""
    return f"encode(sha256(convert_to({column}, 'UTF8')), 'hex')"


# A chunk's words are as migration 2's ``chunks.tsv`` made them: its text's at weight A, its
# submitter's and organisation's at weight B. Since migration 6 the first part is stored once
# per distinct text (``chunk_vectors.tsv``) and the second made when a search needs it.
def _text_words(column: str) -> str:
    return f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', {column}), 'A')"


def _name_words(metadata: str) -> str:
    return f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', {_names(metadata)}), 'B')"


def _names(metadata: str) -> str:
    return f"coalesce({metadata}->>'submitter', '') || ' ' || coalesce({metadata}->>'organization', '')"


_MIGRATIONS: list[tuple[int, list[str]]] = [
    (
        1,
        [
            "CREATE EXTENSION IF NOT EXISTS vector",
            """CREATE TABLE index_meta (key text PRIMARY KEY, value text NOT NULL)""",
            """INSERT INTO index_meta (key, value) VALUES ('instance_id', gen_random_uuid()::text)""",
            """CREATE TABLE chunks (
                collection text NOT NULL,
                item_key text NOT NULL,
                ordinal integer NOT NULL,
                docket text NOT NULL,
                text text NOT NULL,
                page integer,
                section text NOT NULL DEFAULT '',
                embedder_id text NOT NULL,
                dim integer NOT NULL,
                embedding vector NOT NULL,
                metadata jsonb NOT NULL DEFAULT '{}'::jsonb,
                PRIMARY KEY (collection, item_key, ordinal),
                CHECK (vector_dims(embedding) = dim)
            )""",
            "CREATE INDEX chunks_docket ON chunks (collection, docket)",
            """CREATE TABLE index_state (
                collection text NOT NULL,
                item_key text NOT NULL,
                docket text NOT NULL,
                fingerprint text,
                content_hash text,
                chunk_count integer NOT NULL,
                embedder_id text,
                indexed_at timestamptz NOT NULL,
                PRIMARY KEY (collection, item_key)
            )""",
            "CREATE INDEX index_state_docket ON index_state (collection, docket)",
            """CREATE TABLE index_docket_state (
                collection text NOT NULL,
                docket text NOT NULL,
                sealed_at text,
                version integer NOT NULL,
                input_fingerprint text,
                indexed_at timestamptz NOT NULL,
                PRIMARY KEY (collection, docket)
            )""",
        ],
    ),
    (
        # Hybrid search: the words of every chunk (and its submitter and organisation, so
        # names are found) as a stored tsvector beside it, GIN-indexed. A generated column:
        # PostgreSQL fills it for the rows already there when the column is added (an
        # existing store is upgraded and backfilled in place) and keeps it current on
        # every insert, so the index stage writes nothing more.
        2,
        [
            f"""ALTER TABLE chunks ADD COLUMN tsv tsvector GENERATED ALWAYS AS (
                setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', text), 'A')
                || setweight(to_tsvector('{TEXT_SEARCH_CONFIG}',
                     coalesce(metadata->>'submitter', '') || ' '
                     || coalesce(metadata->>'organization', '')), 'B')) STORED""",
            "CREATE INDEX chunks_tsv ON chunks USING gin (tsv)",
        ],
    ),
    (
        # How many chunks an item made before max_item_chunks cut them, so that a changed cap
        # is judged per item from state rows alone (NULL: indexed before it was recorded;
        # its chunk_count is then the count known).
        3,
        ["ALTER TABLE index_state ADD COLUMN chunks_before_cap integer"],
    ),
    (
        # What a marker vouches for in plain terms (its input fingerprint is their digest):
        # the wrappers compare 100,000 dockets' markers with the state DB by one checksum of
        # each side instead of a digest per docket. Older markers have none: judged per docket.
        4,
        [
            """ALTER TABLE index_docket_state ADD COLUMN vouched_output text,
                   ADD COLUMN vouched_under text""",
            # The checksum's rows in its order, from the index alone (no sort of 100,000 rows).
            """CREATE INDEX index_docket_vouching ON index_docket_state
                   (collection, docket COLLATE "C") INCLUDE (sealed_at, version, vouched_under, vouched_output)""",
        ],
    ),
]
_MIGRATIONS.append((
    # Each distinct chunk text is embedded once per embedder: the vectors move to their own
    # table, keyed by (embedder, sha256 of the text), and every chunk points to its vector.
    # A form letter copied 15,000 times is one vector (one HNSW entry: copies no longer crowd
    # each other out of a search's candidate list). An existing store is upgraded in place:
    # each distinct (embedder, text) keeps one of its stored vectors, nothing is re-embedded;
    # every chunk row is rewritten once and the HNSW indexes are built over the distinct
    # vectors (the old per-chunk ones go with the column).
    5,
    [
        """CREATE TABLE chunk_vectors (
            id bigint GENERATED ALWAYS AS IDENTITY PRIMARY KEY,
            embedder_id text NOT NULL,
            text_hash text NOT NULL,
            dim integer NOT NULL,
            embedding vector NOT NULL,
            UNIQUE (embedder_id, text_hash),
            CHECK (vector_dims(embedding) = dim)
        )""",
        f"""INSERT INTO chunk_vectors (embedder_id, text_hash, dim, embedding)
            SELECT DISTINCT ON (embedder_id, text_hash) embedder_id, text_hash, dim, embedding
            FROM (SELECT embedder_id, {_sql_text_hash("text")} AS text_hash, dim, embedding,
                         collection, item_key, ordinal FROM chunks) AS c
            ORDER BY embedder_id, text_hash, collection, item_key, ordinal""",
        "ALTER TABLE chunks ADD COLUMN vector_id bigint",
        f"""UPDATE chunks AS c SET vector_id = v.id FROM chunk_vectors AS v
            WHERE v.embedder_id = c.embedder_id AND v.text_hash = {_sql_text_hash("c.text")}""",
        """ALTER TABLE chunks ALTER COLUMN vector_id SET NOT NULL,
               ADD CONSTRAINT chunks_vector_fk FOREIGN KEY (vector_id) REFERENCES chunk_vectors (id),
               DROP COLUMN embedding""",
        "CREATE INDEX chunks_vector ON chunks (vector_id)",
        f"""DO $$
            DECLARE d integer;
            BEGIN
              -- An array, not a loop over a query: no scan of the table may be open while
              -- an index is built on it.
              FOREACH d IN ARRAY (SELECT coalesce(array_agg(DISTINCT dim), '{{}}') FROM chunk_vectors
                                  WHERE dim <= {_HNSW_HALFVEC_MAX_DIM}) LOOP
                EXECUTE format('CREATE INDEX chunks_hnsw_%s ON chunk_vectors USING hnsw'
                               ' ((embedding::%s(%s)) %s) WHERE dim = %s', d,
                               CASE WHEN d > {_HNSW_VECTOR_MAX_DIM} THEN 'halfvec' ELSE 'vector' END, d,
                               CASE WHEN d > {_HNSW_VECTOR_MAX_DIM} THEN 'halfvec_cosine_ops'
                                    ELSE 'vector_cosine_ops' END, d);
              END LOOP;
            END $$""",
    ],
))
_MIGRATIONS.append((
    # Each distinct chunk text's words are parsed and GIN-indexed once, beside its vector:
    # a form letter's 15,000 copies each parsed their text into a tsvector of their own and
    # gave it a GIN entry, most of what a cold load cost PostgreSQL. A chunk keeps only its
    # names' words (``name_words``, a few per chunk): a search judges a chunk whose names
    # hold one of the query's words on its text's and its names' words together, as before,
    # and every other chunk on its text's alone (docs/BENCHMARKS.md). An existing store is
    # upgraded in place: each vector's text is parsed once from one of its chunks; nothing
    # is re-embedded.
    6,
    [
        # A vector no chunk points to has no text to parse: it would have been dropped.
        "DELETE FROM chunk_vectors AS v WHERE NOT EXISTS (SELECT 1 FROM chunks AS c WHERE c.vector_id = v.id)",
        "ALTER TABLE chunk_vectors ADD COLUMN tsv tsvector",
        f"""UPDATE chunk_vectors AS v SET tsv = {_text_words("c.text")}
            FROM (SELECT DISTINCT ON (vector_id) vector_id, text FROM chunks ORDER BY vector_id) AS c
            WHERE c.vector_id = v.id""",
        "ALTER TABLE chunk_vectors ALTER COLUMN tsv SET NOT NULL",
        "CREATE INDEX chunk_vectors_tsv ON chunk_vectors USING gin (tsv)",
        "ALTER TABLE chunks DROP COLUMN IF EXISTS tsv",  # and its GIN index, chunks_tsv
        f"""ALTER TABLE chunks ADD COLUMN name_words text[] GENERATED ALWAYS AS (
                tsvector_to_array(to_tsvector('{TEXT_SEARCH_CONFIG}', {_names('metadata')}))) STORED""",
        "CREATE INDEX chunks_name_words ON chunks USING gin (name_words)",
    ],
))
SCHEMA_VERSION = _MIGRATIONS[-1][0]


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
class SearchHit:
    item_key: str
    collection: str
    docket: str
    ordinal: int
    text: str
    page: int | None
    score: float
    metadata: dict[str, Any] = field(default_factory=dict)
    section: str = ""
    # Hybrid search (pipeline/index/search.py) fills these; ``score`` stays the cosine.
    vector_rank: int | None = None  # 1-based place in the vector ranking, None: not in it
    text_rank: int | None = None  # 1-based place in the full-text ranking, None: no match
    fused: float | None = None  # reciprocal rank fusion of the two (+ the exact boost): the order
    exact: bool = False  # the passage holds the query's words verbatim (any case, any spacing)
    more: tuple[SearchHit, ...] = ()  # the comment's other matching passages, best first (folded)


@dataclass(frozen=True)
class SearchFilters:
    """What a search may return. Every value reaches SQL as a bound parameter."""

    collection: str | None = None
    docket: str | None = None
    posted_from: str | None = None  # UTC ISO instant, inclusive
    posted_before: str | None = None  # UTC ISO instant, exclusive
    organization: str | None = None  # a part of the submitter's name or organisation, any case
    # Also matched by ``organization``: the comments of the resolved organisations it names
    # (``pipeline.store.organisation_filter``: the index DB holds no organisations).
    org_items: tuple[str, ...] | None = None
    items: tuple[str, ...] | None = None  # only these item keys (a campaign's members)
    # Not these item keys: a narrowing that allows most of the comments is sent as the few it
    # does not allow (a list of 12,000 keys cost a search 230 ms more than one of 8,000 fewer).
    excluded: tuple[str, ...] | None = None

    def narrowed(self, collection: str | None, docket: str | None) -> SearchFilters:
        """These filters, with ``collection`` / ``docket`` when they are given."""
        given = {"collection": collection, "docket": docket}
        return replace(self, **{name: value for name, value in given.items() if value is not None})

    def params(self) -> dict[str, Any]:
        return {"f_collection": self.collection, "f_docket": self.docket,
                "f_from": self.posted_from, "f_before": self.posted_before,
                "f_org": self.organization.lower() if self.organization else None,
                "f_org_items": array_literal(self.org_items) if self.organization and self.org_items else None,
                "f_items": None if self.items is None else array_literal(self.items),
                "f_excluded": None if self.excluded is None else array_literal(self.excluded)}


def array_literal(keys) -> str:
    """Keys as one PostgreSQL array literal ('{"a","b"}', cast to text[] in the SQL): one
    string to parse, where a Python list is sent as ARRAY['a', 'b', ...], an expression per
    key (thousands of keys in a narrowed search)."""
    quoted = ('"' + key.replace("\\", "\\\\").replace('"', '\\"') + '"' for key in keys)
    return "{" + ",".join(quoted) + "}"


# Each filter is inert when its parameter is NULL; position() rather than LIKE, so a % or _
# the user typed is a character, not a wildcard. A name is compared by its first 1,000
# characters (``organisation_filter.MAX_NAME_CHARS``): one 100,000-character "organisation"
# must not make every search through it slow.
_FILTER_SQL = """
      AND (%(f_collection)s::text IS NULL OR collection = %(f_collection)s)
      AND (%(f_docket)s::text IS NULL OR docket = %(f_docket)s)
      AND (%(f_from)s::text IS NULL OR metadata->>'posted_date' >= %(f_from)s)
      AND (%(f_before)s::text IS NULL OR metadata->>'posted_date' < %(f_before)s)
      AND (%(f_org)s::text IS NULL
           OR position(%(f_org)s in lower(left(coalesce(metadata->>'organization', ''), 1000))) > 0
           OR position(%(f_org)s in lower(left(coalesce(metadata->>'submitter', ''), 1000))) > 0
           OR (%(f_org_items)s::text[] IS NOT NULL AND item_key = ANY(%(f_org_items)s::text[])))
      AND (%(f_items)s::text[] IS NULL OR item_key = ANY(%(f_items)s::text[]))
      AND (%(f_excluded)s::text[] IS NULL OR item_key <> ALL(%(f_excluded)s::text[]))"""


# A vector search's condition on the words (a query's quoted phrases); a phrase of stop words
# only is no condition. Written only when there is one: the plain search's SQL stays as it was.
_MUST_MATCH_SQL = f"""
      AND (numnode(websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(must)s)) = 0
           OR (v.tsv || {_name_words("c.metadata")}) @@ websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(must)s))"""

# The lexemes a tsquery ``q`` names, negated ones included, read from its text form: each
# quoted, a quote or backslash within doubled. (websearch_to_tsquery writes no prefix match,
# ':*', which a list of lexemes could not stand for.)
_QUERY_LEXEMES = r"""ARRAY(SELECT replace(replace(m[1], '''''', ''''), '\\', '\')
                          FROM regexp_matches(q::text, '''((?:[^'']|'''')*)''', 'g') AS m)"""


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


@dataclass(frozen=True)
class CountMismatch:
    collection: str
    item_key: str
    recorded: int | None  # index_state.chunk_count, None when the state row is missing
    actual: int


class CountedCursor(psycopg2.extensions.cursor):
    """Counts every statement (``index_queries``, ``item_reads``): what a no-op read."""

    def execute(self, query, vars=None):  # noqa: A002 - psycopg2's signature
        count_query(str(query), INDEX_QUERIES)
        return super().execute(query, vars)

    def copy_expert(self, sql, file, size=8192):
        count_query(str(sql), INDEX_QUERIES)
        return super().copy_expert(sql, file, size)


class IndexDB:
    """One connection to the index database (not shared between threads)."""

    def __init__(self, conn, server=None, *, ef_search: int = DEFAULT_EF_SEARCH) -> None:
        self._conn = conn
        self._server = server
        self.ef_search = ef_search  # HNSW candidates a vector search keeps (at least its k)
        self._indexed_dims: set[int] = set()
        self._iterative_scan = False
        self._staging_ready = False  # vectors_in (a temporary table) made on this connection

    # --- lifecycle -------------------------------------------------------------------

    @classmethod
    def open(cls, url: str | None, data_dir: Path, *, cursor_factory=None,
             ef_search: int = DEFAULT_EF_SEARCH) -> IndexDB:
        """Connect to ``url``, or start/join the embedded server under ``data_dir`` when None.

        Runs the migrations. ``cursor_factory`` is passed to psycopg2 (tests count queries);
        ``ef_search``: HNSW candidates a vector search keeps (the ``search_ef`` setting).
        """
        server = embedded_server.acquire(data_dir) if url is None else None
        try:
            dsn = embedded_server.database_url(server) if server is not None else url
            conn = psycopg2.connect(dsn, cursor_factory=cursor_factory or CountedCursor)
        except Exception:
            if server is not None:
                embedded_server.release(server)
            raise
        db = cls(conn, server, ef_search=ef_search)
        try:
            db.migrate()
            register_vector(conn)
            db._load_capabilities()
        except Exception:
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
        applied_now = []
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
            cur.execute(
                "CREATE TABLE IF NOT EXISTS index_schema_version ("
                " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
            )
            cur.execute("SELECT version FROM index_schema_version")
            applied = {row[0] for row in cur.fetchall()}
            for version, statements in _MIGRATIONS:
                if version in applied:
                    continue
                for statement in statements:
                    cur.execute(statement)
                cur.execute("INSERT INTO index_schema_version (version) VALUES (%s)", (version,))
                applied_now.append(version)
        return applied_now

    def _load_capabilities(self) -> None:
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT extversion FROM pg_extension WHERE extname = 'vector'")
            major_minor = tuple(int(part) for part in cur.fetchone()[0].split(".")[:2])
            # hnsw.iterative_scan (0.8+) keeps filtered HNSW searches from returning < k rows.
            self._iterative_scan = major_minor >= (0, 8)
            cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunk_vectors'")
            self._indexed_dims = {
                int(name.rsplit("_", 1)[1])
                for (name,) in cur.fetchall()
                if name.startswith("chunks_hnsw_")
            }

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

    def indexed_counts(self, collection: str) -> dict[str, int]:
        """docket -> items with an index state row in ``collection`` (one grouped query)."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT docket, count(*) FROM index_state WHERE collection = %s GROUP BY docket",
                        (collection,))
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
        given: dict[str, list[float]] = {}
        text_of: dict[str, str] = {}  # text hash -> text of the vectors given
        needed: set[str] = set()
        hashes_of: list[list[str]] = []
        for rows in batch:
            if len(rows.chunks) != len(rows.vectors):
                raise ValueError(f"{len(rows.chunks)} chunks but {len(rows.vectors)} vectors for {rows.item_key}")
            hashes = rows.hashes()
            hashes_of.append(hashes)
            needed.update(hashes)
            for chunk, text_hash, vector in zip(rows.chunks, hashes, rows.vectors, strict=True):
                if vector is not None:
                    given[text_hash] = vector
                    text_of[text_hash] = chunk.text
        dims = {len(v) for v in given.values()}
        if len(dims) > 1:
            raise ValueError(f"mixed vector dimensions {sorted(dims)} for {[r.item_key for r in batch]}")
        if dims and not index_after:
            self.ensure_dimension_index(next(iter(dims)))
        with self._conn, self._conn.cursor() as cur:
            if given:
                self._store_vectors(cur, embedder_id, given, text_of, refresh)
            vector_ids = self._hold_vectors(cur, embedder_id, needed)
            gone = needed - vector_ids.keys()
            if gone:
                raise VectorsGone(gone)
            cur.execute(
                """DELETE FROM chunks AS c USING unnest(%s::text[], %s::text[]) AS k(collection, item_key)
                   WHERE c.collection = k.collection AND c.item_key = k.item_key RETURNING c.vector_id""",
                ([r.collection for r in batch], [r.item_key for r in batch]),
            )
            displaced = {row[0] for row in cur.fetchall()}
            # COPY: the chunk rows are most of a cold load's bytes, and a form letter's copies
            # are many rows of one text; an INSERT's statement text would be built per value.
            cur.copy_expert(
                """COPY chunks (collection, item_key, ordinal, docket, text, page, section,
                                embedder_id, dim, vector_id, metadata) FROM STDIN""",
                _copy_text(row for rows, hashes in zip(batch, hashes_of, strict=True)
                           for row in _chunk_rows(rows, hashes, embedder_id, vector_ids)),
            )
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
            self._drop_orphan_vectors(cur, displaced - {vector_id for vector_id, _ in vector_ids.values()})
        self._staging_ready = self._staging_ready or bool(given)  # committed with it

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
                        _copy_binary_vectors(sorted(given.items()), text_of))
        conflict = ("DO UPDATE SET embedding = EXCLUDED.embedding"
                    " WHERE chunk_vectors.embedding IS DISTINCT FROM EXCLUDED.embedding"
                    if refresh else "DO NOTHING")
        cur.execute(
            f"""INSERT INTO chunk_vectors (embedder_id, text_hash, dim, embedding, tsv)
                SELECT %s, n.text_hash, vector_dims(n.embedding), n.embedding, {_text_words("n.text")}
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

    def max_marker_version(self, collection: str) -> int:
        """Highest marker version in ``collection`` (0 when none): --force bumps past it."""
        return self._fetch_value(
            "SELECT coalesce(max(version), 0) FROM index_docket_state WHERE collection = %s",
            (collection,),
        )

    # --- embeddings and search -------------------------------------------------------

    def ensure_dimension_index(self, dim: int) -> None:
        """Create the partial HNSW index for ``dim`` if it does not exist yet (own transaction)."""
        if dim in self._indexed_dims or dim > _HNSW_HALFVEC_MAX_DIM:
            return
        if dim < 1:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        expression, opclass = _indexed_expression(dim), _operator_class(dim)
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMENSION_INDEX_LOCK,))
            _size_build_memory(cur, dim)
            cur.execute(
                f"CREATE INDEX IF NOT EXISTS chunks_hnsw_{dim} ON chunk_vectors"
                f" USING hnsw (({expression}) {opclass}) WHERE dim = {dim}"
            )
        self._indexed_dims.add(dim)

    def drop_unused_dimension_indexes(self) -> list[int]:
        """Drop the HNSW indexes of dimensions no chunk uses any more; return those dims."""
        with self._conn, self._conn.cursor() as cur:
            cur.execute("SELECT pg_advisory_xact_lock(%s)", (_DIMENSION_INDEX_LOCK,))
            cur.execute("SELECT indexname FROM pg_indexes WHERE tablename = 'chunk_vectors'")
            indexed = {
                int(n.rsplit("_", 1)[1]) for (n,) in cur.fetchall() if n.startswith("chunks_hnsw_")
            }
            cur.execute("SELECT DISTINCT dim FROM chunks")
            unused = sorted(indexed - {row[0] for row in cur.fetchall()})
            for dim in unused:
                cur.execute(f"DROP INDEX IF EXISTS chunks_hnsw_{dim}")
            if unused:  # what a writer could not drop on the way (held at the time)
                cur.execute("""DELETE FROM chunk_vectors AS v WHERE v.dim = ANY(%s)
                               AND NOT EXISTS (SELECT 1 FROM chunks AS c WHERE c.vector_id = v.id)""",
                            (unused,))
        self._indexed_dims -= set(unused)
        return unused

    def search(
        self,
        query_vector: list[float],
        *,
        collection: str | None = None,
        docket: str | None = None,
        k: int = 10,
        embedder_id: str | None = None,
        filters: SearchFilters | None = None,
        must_match: str | None = None,
    ) -> list[SearchHit]:
        """The ``k`` chunks nearest to ``query_vector`` (cosine), best first.

        Only chunks of the query's dimension are searched; pass ``embedder_id`` to keep
        chunks of another model with the same dimension out (search.search does).
        ``collection`` and ``docket`` narrow ``filters`` (kept for the callers before it).
        ``must_match``: only chunks whose words match it as a web search box reads it (the
        quoted phrases of a query: a phrase asked for is a condition, not a hint).
        """
        dim = len(query_vector)
        if dim == 0 or k < 1:
            return []
        filters = (filters or SearchFilters()).narrowed(collection, docket)
        distance = f"(v.{_indexed_expression(dim)}) <=> %(query)s::{_cast_type(dim)}"
        params = {"query": Vector([float(x) for x in query_vector]), "embedder": embedder_id,
                  "k": k, "must": must_match, **filters.params()}
        columns = f"""c.item_key, c.collection, c.docket, c.ordinal, c.text, c.page,
                      1 - ({distance}) AS score, c.metadata, c.section"""
        conditions = f"""{_MUST_MATCH_SQL if must_match else ""}
                      {_FILTER_SQL}"""
        with self._conn, self._conn.cursor() as cur:
            if self._iterative_scan:
                cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                        (str(min(1000, max(self.ef_search, k))),))
            # The graph holds each distinct text once (a form letter's copies share a vector):
            # ask it for the k nearest *vectors*, then read the chunks holding them. k vectors
            # are held by at least k chunks, so without filters this is the whole answer.
            cur.execute(
                f"""WITH nearest AS MATERIALIZED (
                        SELECT v.id FROM chunk_vectors AS v
                        WHERE v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                        ORDER BY {distance}
                        LIMIT %(k)s)
                    SELECT {columns}
                    FROM nearest AS n JOIN chunk_vectors AS v ON v.id = n.id
                         JOIN chunks AS c ON c.vector_id = n.id
                    WHERE true {conditions}
                    ORDER BY {distance}, c.collection, c.item_key, c.ordinal
                    LIMIT %(k)s""",
                params,
            )
            hits = [SearchHit(*row) for row in cur.fetchall()]
            if len(hits) < k:
                # Filters (or a phrase) left fewer than k of those chunks: search the chunks
                # that pass them, the graph scanned further as the filters need.
                cur.execute(
                    f"""SELECT {columns}
                        FROM chunk_vectors AS v JOIN chunks AS c ON c.vector_id = v.id
                        WHERE v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                          {conditions}
                        ORDER BY {distance}
                        LIMIT %(k)s""",
                    params,
                )
                hits = [SearchHit(*row) for row in cur.fetchall()]
        # relaxed_order may return near-ties out of order; make the ranking stable.
        return sorted(hits, key=lambda h: (-h.score, h.collection, h.item_key, h.ordinal))

    def text_search(
        self,
        query: str,
        query_vector: list[float],
        *,
        k: int = 10,
        embedder_id: str | None = None,
        filters: SearchFilters | None = None,
    ) -> list[SearchHit]:
        """The ``k`` chunks whose words match ``query`` best (full text, GIN index), best first.

        ``query`` is read as a web search box is (``websearch_to_tsquery``): every word must
        occur, "quoted words" as a phrase, ``or`` and ``-word`` as expected. Each hit's
        ``score`` is still its cosine to ``query_vector``, so both rankings speak one unit.
        At most ``max(k, TEXT_CANDIDATES)`` matches are ranked (counted as ``TEXT_RANKED``).
        """
        dim = len(query_vector)
        if dim == 0 or k < 1 or not query.strip():
            return []
        filters = filters or SearchFilters()
        distance = f"(v.{_indexed_expression(dim)}) <=> %(vector)s::{_cast_type(dim)}"
        with self._conn, self._conn.cursor() as cur:
            # Cover density (ts_rank_cd) ranks at most TEXT_CANDIDATES matches, those a
            # cheap rank puts first; only the k kept are joined to their vectors. The words
            # of each distinct text are matched and cheaply ranked once, then its chunks are
            # read; a chunk whose names hold a word of the query is judged on its text's and
            # names' words together (without one its names change neither match nor rank).
            cur.execute(
                f"""WITH q AS (SELECT w.q, {_QUERY_LEXEMES} AS lexemes
                               FROM websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(query)s) AS w (q)),
                    texts AS MATERIALIZED (
                        SELECT v.id, v.tsv, ts_rank(v.tsv, q.q) AS cheap
                        FROM chunk_vectors AS v, q
                        WHERE v.tsv @@ q.q AND v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)),
                    matches AS (
                        SELECT c.collection, c.item_key, c.ordinal, t.tsv, t.cheap
                        FROM texts AS t JOIN chunks AS c ON c.vector_id = t.id, q
                        WHERE NOT (c.name_words && q.lexemes) {_FILTER_SQL}
                        UNION ALL
                        SELECT c.collection, c.item_key, c.ordinal, n.tsv, ts_rank(n.tsv, q.q)
                        FROM q, chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id,
                             LATERAL (SELECT v.tsv || {_name_words("c.metadata")} AS tsv) AS n
                        WHERE c.name_words && q.lexemes AND v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                          AND n.tsv @@ q.q {_FILTER_SQL}),
                    candidates AS MATERIALIZED (
                        SELECT collection, item_key, ordinal, tsv FROM matches
                        ORDER BY cheap DESC, collection, item_key, ordinal
                        LIMIT %(candidates)s),
                    ranked AS (
                        SELECT r.collection, r.item_key, r.ordinal, ts_rank_cd(r.tsv, q.q) AS rank
                        FROM candidates AS r, q
                        ORDER BY rank DESC, r.collection, r.item_key, r.ordinal
                        LIMIT %(k)s)
                    SELECT c.item_key, c.collection, c.docket, c.ordinal, c.text, c.page,
                           1 - ({distance}) AS score, c.metadata, c.section,
                           (SELECT count(*) FROM candidates)
                    FROM ranked AS r
                         JOIN chunks AS c USING (collection, item_key, ordinal)
                         JOIN chunk_vectors AS v ON v.id = c.vector_id
                    ORDER BY r.rank DESC, c.collection, c.item_key, c.ordinal""",
                {"query": query, "vector": Vector([float(x) for x in query_vector]),
                 "embedder": embedder_id, "k": k, "candidates": max(k, TEXT_CANDIDATES),
                 **filters.params()},
            )
            rows = cur.fetchall()
        counters.incr(TEXT_RANKED, rows[0][-1] if rows else 0)
        return [SearchHit(*row[:-1]) for row in rows]

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


_COPY_BINARY_HEADER = b"PGCOPY\n\xff\r\n\x00" + struct.pack(">ii", 0, 0)
_COPY_BINARY_TRAILER = struct.pack(">h", -1)


def _copy_binary_vectors(vectors, text_of: dict[str, str]) -> io.BytesIO:
    """(text hash, vector, text) rows in COPY's binary format; a vector as pgvector sends
    one (``vector_send``): its dimension and a spare as 2-byte integers, then 4-byte floats,
    all big-endian."""
    out = io.BytesIO()
    out.write(_COPY_BINARY_HEADER)
    for text_hash, vector in vectors:
        dim = len(vector)
        floats = (vector.astype(">f4").tobytes() if hasattr(vector, "astype")
                  else struct.pack(f">{dim}f", *vector))
        hash_bytes, text_bytes = text_hash.encode(), text_of[text_hash].encode()
        out.write(struct.pack(">hi", 3, len(hash_bytes)))
        out.write(hash_bytes)
        out.write(struct.pack(">ihh", 4 + len(floats), dim, 0))
        out.write(floats)
        out.write(struct.pack(">i", len(text_bytes)))
        out.write(text_bytes)
    out.write(_COPY_BINARY_TRAILER)
    out.seek(0)
    return out


def _copy_text(rows) -> io.StringIO:
    """Rows in COPY's text format: tab-separated, ``\\N`` for NULL, backslash escapes."""
    out = io.StringIO()
    for row in rows:
        out.write("\t".join("\\N" if value is None else _copy_field(str(value)) for value in row))
        out.write("\n")
    out.seek(0)
    return out


def _copy_field(value: str) -> str:
    if "\\" in value:
        value = value.replace("\\", "\\\\")
    return value.replace("\t", "\\t").replace("\n", "\\n").replace("\r", "\\r")


def _cast_type(dim: int) -> str:
    return (
        f"halfvec({dim})"
        if _HNSW_VECTOR_MAX_DIM < dim <= _HNSW_HALFVEC_MAX_DIM
        else f"vector({dim})"
    )


def _size_build_memory(cur, dim: int) -> None:
    """Raise this transaction's ``maintenance_work_mem`` to what an HNSW build of ``dim``'s
    vectors needs, within ``BUILD_MEMORY_CEILING`` and a quarter of the memory free here.

    pgvector builds the graph in that memory; past it ("hnsw graph no longer fits into
    maintenance_work_mem") it goes on tuple by tuple on disk: at 60,000 vectors of 384
    dimensions under the default 64 MB the build took 2.6 times as long. The server's own
    setting is kept when it is larger."""
    cur.execute("SELECT count(*), current_setting('maintenance_work_mem') FROM chunk_vectors WHERE dim = %s",
                (dim,))
    vectors, setting = cur.fetchone()
    value_bytes = 8 + (2 if dim > _HNSW_VECTOR_MAX_DIM else 4) * dim
    needed_kb = (vectors * (value_bytes + _HNSW_ELEMENT_OVERHEAD) + _HNSW_BUILD_BLOCKS) // 1024
    ceiling_kb = min(BUILD_MEMORY_CEILING, psutil.virtual_memory().available // 4) // 1024
    wanted_kb = min(needed_kb, ceiling_kb)
    if wanted_kb > _setting_kb(setting):
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{wanted_kb}kB",))


def _setting_kb(setting: str) -> int:
    """A memory setting as PostgreSQL shows it ("64MB", "1GB", "512kB") in kB."""
    units = {"kB": 1, "MB": 1024, "GB": 1024 ** 2, "TB": 1024 ** 3}
    number = setting.rstrip("kMGTB")
    return int(number) * units.get(setting[len(number):], 1)


def _indexed_expression(dim: int) -> str:
    return f"embedding::{_cast_type(dim)}"


def _operator_class(dim: int) -> str:
    return "halfvec_cosine_ops" if dim > _HNSW_VECTOR_MAX_DIM else "vector_cosine_ops"


def _canonical_json(value: Any) -> str:
    return json.dumps(value, sort_keys=True, ensure_ascii=False, default=str)
