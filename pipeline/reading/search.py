"""The search as the search page, its feed and ``docketeer search`` ask it: the index's
rankings (``pipeline/index/search.py``) with the embedder the settings name, the filters
they take and the hits they give, as text and as records."""

from __future__ import annotations

from pipeline.index.database import SearchFilters, SearchHit
from pipeline.index.search import (
    answer_fields,
    answer_text,
    filters_of,
    format_hits,
    search,
    search_answer,
)
from pipeline.index.search_results import hit_records
from pipeline.index.stage import COLLECTIONS

__all__ = ["COLLECTIONS", "SearchFilters", "SearchHit", "answer_fields", "answer_text", "embedder_from",
           "filters_of", "format_hits", "hit_records", "search", "search_answer"]


def embedder_from(settings):
    """The embedder the settings name, as the index stage embeds with it (a query is embedded
    by the model its chunks were)."""
    from pipeline.index.stage import embedder_from as stage_embedder

    return stage_embedder(settings)
