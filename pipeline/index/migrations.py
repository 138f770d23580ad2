"""The index DB's schema, as the migrations that made it (``MIGRATIONS``), and ``apply``.

A migration's SQL is what every existing index DB was upgraded by: it never changes once
released; a change of schema is a migration of its own, appended.

Schema (migrations 1-6; see ``MIGRATIONS``)
-------------------------------------------
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
"""

from __future__ import annotations

# pg_advisory_xact_lock key: two processes opening a new index DB migrate it one at a time.
_MIGRATION_LOCK = 0x646B7401
# The largest dimension HNSW indexes as ``vector``; up to the second, as ``halfvec``.
HNSW_VECTOR_MAX_DIM = 2000
HNSW_HALFVEC_MAX_DIM = 4000
TEXT_SEARCH_CONFIG = "english"  # stems words ("hospitals" finds "hospital"), keeps numbers


def sql_text_hash(column: str) -> str:
    """PostgreSQL's spelling of ``fingerprints.digest(text)``: the hex sha256 of the UTF-8 text."""
    return f"encode(sha256(convert_to({column}, 'UTF8')), 'hex')"


# A chunk's words are as migration 2's ``chunks.tsv`` made them: its text's at weight A, its
# submitter's and organisation's at weight B. Since migration 6 the first part is stored once
# per distinct text (``chunk_vectors.tsv``) and the second made when a search needs it.
def text_words(column: str) -> str:
    return f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', {column}), 'A')"


def name_words(metadata: str) -> str:
    return f"setweight(to_tsvector('{TEXT_SEARCH_CONFIG}', {names(metadata)}), 'B')"


def names(metadata: str) -> str:
    return f"coalesce({metadata}->>'submitter', '') || ' ' || coalesce({metadata}->>'organization', '')"


MIGRATIONS: list[tuple[int, list[str]]] = [
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
MIGRATIONS.append((
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
            FROM (SELECT embedder_id, {sql_text_hash("text")} AS text_hash, dim, embedding,
                         collection, item_key, ordinal FROM chunks) AS c
            ORDER BY embedder_id, text_hash, collection, item_key, ordinal""",
        "ALTER TABLE chunks ADD COLUMN vector_id bigint",
        f"""UPDATE chunks AS c SET vector_id = v.id FROM chunk_vectors AS v
            WHERE v.embedder_id = c.embedder_id AND v.text_hash = {sql_text_hash("c.text")}""",
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
                                  WHERE dim <= {HNSW_HALFVEC_MAX_DIM}) LOOP
                EXECUTE format('CREATE INDEX chunks_hnsw_%s ON chunk_vectors USING hnsw'
                               ' ((embedding::%s(%s)) %s) WHERE dim = %s', d,
                               CASE WHEN d > {HNSW_VECTOR_MAX_DIM} THEN 'halfvec' ELSE 'vector' END, d,
                               CASE WHEN d > {HNSW_VECTOR_MAX_DIM} THEN 'halfvec_cosine_ops'
                                    ELSE 'vector_cosine_ops' END, d);
              END LOOP;
            END $$""",
    ],
))
MIGRATIONS.append((
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
        f"""UPDATE chunk_vectors AS v SET tsv = {text_words("c.text")}
            FROM (SELECT DISTINCT ON (vector_id) vector_id, text FROM chunks ORDER BY vector_id) AS c
            WHERE c.vector_id = v.id""",
        "ALTER TABLE chunk_vectors ALTER COLUMN tsv SET NOT NULL",
        "CREATE INDEX chunk_vectors_tsv ON chunk_vectors USING gin (tsv)",
        "ALTER TABLE chunks DROP COLUMN IF EXISTS tsv",  # and its GIN index, chunks_tsv
        f"""ALTER TABLE chunks ADD COLUMN name_words text[] GENERATED ALWAYS AS (
                tsvector_to_array(to_tsvector('{TEXT_SEARCH_CONFIG}', {names('metadata')}))) STORED""",
        "CREATE INDEX chunks_name_words ON chunks USING gin (name_words)",
    ],
))
MIGRATIONS.append((
    # A search reads a text's chunks in order, a few at a time (search_queries: the nearest
    # vectors' chunks, the best-matching texts' chunks): with the order in the index, a form
    # letter's 10,000 copies give their first k without being read and sorted. It replaces the
    # index on vector_id alone, its first column.
    7,
    [
        "CREATE INDEX IF NOT EXISTS chunks_vector_order ON chunks (vector_id, collection, item_key, ordinal)",
        "DROP INDEX IF EXISTS chunks_vector",
    ],
))
SCHEMA_VERSION = MIGRATIONS[-1][0]


def apply(conn) -> list[int]:
    """Apply the migrations not yet applied, in one transaction; return their versions."""
    applied_now = []
    with conn, conn.cursor() as cur:
        cur.execute("SELECT pg_advisory_xact_lock(%s)", (_MIGRATION_LOCK,))
        cur.execute(
            "CREATE TABLE IF NOT EXISTS index_schema_version ("
            " version integer PRIMARY KEY, applied_at timestamptz NOT NULL DEFAULT now())"
        )
        cur.execute("SELECT version FROM index_schema_version")
        applied = {row[0] for row in cur.fetchall()}
        for version, statements in MIGRATIONS:
            if version in applied:
                continue
            for statement in statements:
                cur.execute(statement)
            cur.execute("INSERT INTO index_schema_version (version) VALUES (%s)", (version,))
            applied_now.append(version)
    return applied_now
