"""The index DB's two searches: the chunks nearest a query's vector (``search``) and those
whose words match it best (``text_search``), under the same filters (``SearchFilters``).

``pipeline/index/search.py`` fuses the two rankings.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from pgvector import Vector

from pipeline.counters import TEXT_RANKED, counters
from pipeline.index.dimension_indexes import cast_type, indexed_expression
from pipeline.index.migrations import TEXT_SEARCH_CONFIG, name_words

# The full-text half ranks (ts_rank_cd: cover density, the costly part) at most this many
# matching texts, chosen first by a cheap rank; beyond it a common word's tens of thousands
# of matches would each be ranked for a list that shows ten (docs/BENCHMARKS.md).
TEXT_CANDIDATES = 400
# hnsw.ef_search when the search_ef setting is not given: recall@10 of HNSW against an exact
# scan is 1.000 at 250 (0.787 at 200) on MiniLM vectors of a duplicate-heavy 100,000-comment docket
# (benchmarks/search_scale.py, docs/BENCHMARKS.md). A search asking for more results asks more.
DEFAULT_EF_SEARCH = 250


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
    # (``pipeline.reading.organisation_filter``: the index DB holds no organisations).
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
           OR (v.tsv || {name_words("c.metadata")}) @@ websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(must)s))"""

# The lexemes a tsquery ``q`` names, negated ones included, read from its text form: each
# quoted, a quote or backslash within doubled. (websearch_to_tsquery writes no prefix match,
# ':*', which a list of lexemes could not stand for.)
_QUERY_LEXEMES = r"""ARRAY(SELECT replace(replace(m[1], '''''', ''''), '\\', '\')
                          FROM regexp_matches(q::text, '''((?:[^'']|'''')*)''', 'g') AS m)"""


class IndexSearches:
    """``IndexDB``'s searches."""

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
        nearest, filtered = _vector_statements(dim, bool(must_match))
        params = {"query": Vector([float(x) for x in query_vector]), "embedder": embedder_id,
                  "k": k, "must": must_match, **filters.params()}
        with self._conn, self._conn.cursor() as cur:
            if self._iterative_scan:
                cur.execute("SET LOCAL hnsw.iterative_scan = relaxed_order")
            cur.execute("SELECT set_config('hnsw.ef_search', %s, true)",
                        (str(min(1000, max(self.ef_search, k))),))
            # The graph holds each distinct text once (a form letter's copies share a vector):
            # ask it for the k nearest *vectors*, then read the chunks holding them. k vectors
            # are held by at least k chunks, so without filters this is the whole answer.
            cur.execute(nearest, params)
            hits = [SearchHit(*row) for row in cur.fetchall()]
            if len(hits) < k:
                # Filters (or a phrase) left fewer than k of those chunks: search the chunks
                # that pass them, the graph scanned further as the filters need.
                cur.execute(filtered, params)
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
        At most ``max(k, TEXT_CANDIDATES)`` matching texts (and as many chunks matching by their
        names) are ranked (counted as ``TEXT_RANKED``).
        """
        dim = len(query_vector)
        if dim == 0 or k < 1 or not query.strip():
            return []
        filters = filters or SearchFilters()
        with self._conn, self._conn.cursor() as cur:
            cur.execute(
                _text_statement(dim),
                {"query": query, "vector": Vector([float(x) for x in query_vector]),
                 "embedder": embedder_id, "k": k, "candidates": max(k, TEXT_CANDIDATES),
                 **filters.params()},
            )
            rows = cur.fetchall()
        counters.incr(TEXT_RANKED, rows[0][-1] if rows else 0)
        return [SearchHit(*row[:-1]) for row in rows]


def _vector_statements(dim: int, must_match: bool) -> tuple[str, str]:
    """A vector search's two statements: the chunks holding the k nearest vectors of ``dim``,
    and the k nearest of the chunks passing the filters (when the first leaves fewer)."""
    distance = f"(v.{indexed_expression(dim)}) <=> %(query)s::{cast_type(dim)}"
    columns = f"""c.item_key, c.collection, c.docket, c.ordinal, c.text, c.page,
                      1 - ({distance}) AS score, c.metadata, c.section"""
    conditions = f"""{_MUST_MATCH_SQL if must_match else ""}
                      {_FILTER_SQL}"""
    nearest = f"""WITH nearest AS MATERIALIZED (
                        SELECT v.id FROM chunk_vectors AS v
                        WHERE v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                        ORDER BY {distance}
                        LIMIT %(k)s)
                    SELECT {columns}
                    FROM nearest AS n JOIN chunk_vectors AS v ON v.id = n.id,
                         LATERAL (SELECT * FROM chunks AS c
                                  WHERE c.vector_id = n.id {conditions}
                                  ORDER BY c.collection, c.item_key, c.ordinal
                                  LIMIT %(k)s) AS c
                    ORDER BY {distance}, c.collection, c.item_key, c.ordinal
                    LIMIT %(k)s"""
    filtered = f"""SELECT {columns}
                        FROM chunk_vectors AS v JOIN chunks AS c ON c.vector_id = v.id
                        WHERE v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                          {conditions}
                        ORDER BY {distance}
                        LIMIT %(k)s"""
    return nearest, filtered


def _text_statement(dim: int) -> str:
    """The full-text search over vectors of ``dim``.

    The words are stored once per distinct text, beside its vector, so texts are what is
    ranked: those matching the query (and holding a chunk that passes the filters) are put in
    order by a cheap rank, at most TEXT_CANDIDATES of them ranked by cover density
    (ts_rank_cd), and only then are their chunks read, text by text in that order, until k are
    found. A form letter's 10,000 copies are one candidate read as the k chunks it needs, not
    10,000 rows sorted (the composite index on (vector_id, collection, item_key, ordinal)
    hands each text's chunks in order). A chunk whose names hold a word of the query is judged
    on its text's and names' words together (without one its names change neither match nor
    rank): those few are ranked chunk by chunk, under the same bound."""
    distance = f"(v.{indexed_expression(dim)}) <=> %(vector)s::{cast_type(dim)}"
    own_words = f"NOT (c.name_words && q.lexemes) {_FILTER_SQL}"
    return f"""WITH q AS (SELECT w.q, {_QUERY_LEXEMES} AS lexemes
                               FROM websearch_to_tsquery('{TEXT_SEARCH_CONFIG}', %(query)s) AS w (q)),
                    texts AS MATERIALIZED (
                        SELECT v.id, v.tsv, ts_rank(v.tsv, q.q) AS cheap
                        FROM chunk_vectors AS v, q
                        WHERE v.tsv @@ q.q AND v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                          AND EXISTS (SELECT 1 FROM chunks AS c WHERE c.vector_id = v.id AND {own_words})),
                    candidates AS MATERIALIZED (
                        SELECT t.id, ts_rank_cd(t.tsv, q.q) AS rank
                        FROM (SELECT id, tsv FROM texts ORDER BY cheap DESC, id LIMIT %(candidates)s) AS t, q),
                    by_text AS (
                        SELECT t.rank, c.collection, c.item_key, c.ordinal
                        FROM (SELECT id, rank FROM candidates ORDER BY rank DESC, id) AS t, q,
                             LATERAL (SELECT c.collection, c.item_key, c.ordinal FROM chunks AS c
                                      WHERE c.vector_id = t.id AND {own_words}
                                      ORDER BY c.collection, c.item_key, c.ordinal
                                      LIMIT %(k)s) AS c
                        ORDER BY t.rank DESC, t.id, c.collection, c.item_key, c.ordinal
                        LIMIT %(k)s),
                    named AS MATERIALIZED (
                        SELECT c.collection, c.item_key, c.ordinal, n.tsv
                        FROM q, chunks AS c JOIN chunk_vectors AS v ON v.id = c.vector_id,
                             LATERAL (SELECT v.tsv || {name_words("c.metadata")} AS tsv) AS n
                        WHERE c.name_words && q.lexemes AND v.dim = {dim}
                          AND (%(embedder)s::text IS NULL OR v.embedder_id = %(embedder)s)
                          AND n.tsv @@ q.q {_FILTER_SQL}
                        ORDER BY ts_rank(n.tsv, q.q) DESC, c.collection, c.item_key, c.ordinal
                        LIMIT %(candidates)s),
                    by_names AS (
                        SELECT ts_rank_cd(r.tsv, q.q) AS rank, r.collection, r.item_key, r.ordinal
                        FROM named AS r, q),
                    ranked AS (
                        SELECT * FROM (SELECT * FROM by_text UNION ALL SELECT * FROM by_names) AS u
                        ORDER BY rank DESC, collection, item_key, ordinal
                        LIMIT %(k)s)
                    SELECT c.item_key, c.collection, c.docket, c.ordinal, c.text, c.page,
                           1 - ({distance}) AS score, c.metadata, c.section,
                           (SELECT count(*) FROM candidates) + (SELECT count(*) FROM named)
                    FROM ranked AS r
                         JOIN chunks AS c USING (collection, item_key, ordinal)
                         JOIN chunk_vectors AS v ON v.id = c.vector_id
                    ORDER BY r.rank DESC, c.collection, c.item_key, c.ordinal"""
