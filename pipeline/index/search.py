"""Query the index with text: embed the query, search the index DB, print ranked hits."""

from __future__ import annotations

import math

from pipeline.errors import DocketeerError
from pipeline.index.database import IndexDB, SearchHit
from pipeline.index.embedders import Embedder

SNIPPET_CHARS = 200


class NothingToSearch(DocketeerError):
    """The query embeds to no direction at all (only punctuation or stop words)."""


def search(
    index_db: IndexDB,
    embedder: Embedder,
    query: str,
    *,
    collection: str | None = None,
    docket: str | None = None,
    k: int = 10,
) -> list[SearchHit]:
    """The ``k`` chunks most similar to ``query`` among those embedded by ``embedder``."""
    if not query.strip():
        return []
    [query_vector] = embedder.embed([query])
    if not _has_direction(query_vector):
        # A zero vector has no cosine similarity with anything: every score would be NaN.
        raise NothingToSearch(f"nothing to search for in {query!r}: give some words")
    hits = index_db.search(
        query_vector, collection=collection, docket=docket, k=k, embedder_id=embedder.id
    )
    return [hit for hit in hits if not math.isnan(hit.score)]


def _has_direction(vector: list[float]) -> bool:
    return all(math.isfinite(x) for x in vector) and any(x != 0.0 for x in vector)


def format_hits(hits: list[SearchHit]) -> str:
    """One block per hit: rank, score, comment id, docket, who, page, then a snippet."""
    if not hits:
        return "no matches\n"
    return "".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, start=1))


def _format_hit(rank: int, hit: SearchHit) -> str:
    who = _submitter(hit.metadata)
    page = f"  p.{hit.page}" if hit.page is not None else ""
    header = f"{rank:>3}. {hit.score:.3f}  {hit.item_key}  [{hit.docket}]{page}"
    if who:
        header += f"  — {who}"
    return f"{header}\n     {_snippet(hit.text)}\n"


def _submitter(metadata: dict) -> str:
    """'First Last (Organization)', whichever parts the comment's metadata has."""
    name = metadata.get("submitter") or " ".join(
        part for part in (metadata.get("firstName"), metadata.get("lastName")) if part
    )
    organization = metadata.get("organization")
    if name and organization:
        return f"{name} ({organization})"
    return name or organization or ""


def _snippet(text: str) -> str:
    flat = " ".join(text.split())
    if len(flat) <= SNIPPET_CHARS:
        return flat
    cut = flat.rfind(" ", 0, SNIPPET_CHARS)
    return flat[: cut if cut > SNIPPET_CHARS // 2 else SNIPPET_CHARS] + "…"
