"""The HNSW index of each embedding dimension in use: made on its first write, dropped
when no chunk uses it any more, its build given the memory it needs.

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
"""

from __future__ import annotations

import psutil

from pipeline.index.migrations import HNSW_HALFVEC_MAX_DIM, HNSW_VECTOR_MAX_DIM

# pg_advisory_xact_lock key: serialise per-dimension index creation.
_DIMENSION_INDEX_LOCK = 0x646B7402
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


class DimensionIndexes:
    """``IndexDB``'s HNSW indexes: which exist, and making and dropping them."""

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

    def ensure_dimension_index(self, dim: int) -> None:
        """Create the partial HNSW index for ``dim`` if it does not exist yet (own transaction)."""
        if dim in self._indexed_dims or dim > HNSW_HALFVEC_MAX_DIM:
            return
        if dim < 1:
            raise ValueError(f"vector dimension must be positive, got {dim}")
        expression, opclass = indexed_expression(dim), operator_class(dim)
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


def cast_type(dim: int) -> str:
    return (
        f"halfvec({dim})"
        if HNSW_VECTOR_MAX_DIM < dim <= HNSW_HALFVEC_MAX_DIM
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
    value_bytes = 8 + (2 if dim > HNSW_VECTOR_MAX_DIM else 4) * dim
    needed_kb = (vectors * (value_bytes + _HNSW_ELEMENT_OVERHEAD) + _HNSW_BUILD_BLOCKS) // 1024
    ceiling_kb = min(BUILD_MEMORY_CEILING, psutil.virtual_memory().available // 4) // 1024
    wanted_kb = min(needed_kb, ceiling_kb)
    if wanted_kb > setting_kb(setting):
        cur.execute("SELECT set_config('maintenance_work_mem', %s, true)", (f"{wanted_kb}kB",))


def setting_kb(setting: str) -> int:
    """A memory setting as PostgreSQL shows it ("64MB", "1GB", "512kB") in kB."""
    units = {"kB": 1, "MB": 1024, "GB": 1024 ** 2, "TB": 1024 ** 3}
    number = setting.rstrip("kMGTB")
    return int(number) * units.get(setting[len(number):], 1)


def indexed_expression(dim: int) -> str:
    return f"embedding::{cast_type(dim)}"


def operator_class(dim: int) -> str:
    return "halfvec_cosine_ops" if dim > HNSW_VECTOR_MAX_DIM else "vector_cosine_ops"
