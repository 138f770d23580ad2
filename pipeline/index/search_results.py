"""Search hits as plain records: what the warm search service sends and `search --json` prints.

A record is the ``SearchHit``'s fields plus what a reader of the result needs beside them:
its rank, its kind, whether the item is withdrawn (read from the state DB, so it is
current without re-indexing), the attachment the passage came from (file name and title, from the
state DB) and its page on regulations.gov. Importing this module is cheap (no database
driver): the client of the warm service prints records it did not make.
"""

from __future__ import annotations

from dataclasses import asdict, replace
from typing import TYPE_CHECKING

from pipeline.clock import eastern_date
from pipeline.ids import REGULATIONS_GOV

if TYPE_CHECKING:
    from pipeline.index.database import SearchHit



def hit_records(hits: list[SearchHit]) -> list[dict]:
    """Each hit as a JSON-ready dict, best first, with its attachment's title (one query)."""
    from pipeline.extract.combined import DOCUMENT_HEADING, INLINE_HEADING
    from pipeline.index.stage import TITLE_HEADING
    from pipeline.store import items

    own = (INLINE_HEADING, DOCUMENT_HEADING, TITLE_HEADING, "")  # the item's own sections, not a file's
    from_files = [hit for hit in hits if hit.section not in own]
    titles = items.attachment_titles((hit.item_key, hit.section) for hit in from_files)
    withdrawn = items.withdrawn_among(hit.item_key for hit in hits)
    return [_record(rank, hit, hit in from_files, titles, hit.item_key in withdrawn)
            for rank, hit in enumerate(hits, start=1)]


def _record(rank: int, hit: SearchHit, from_file: bool, titles: dict, withdrawn: bool) -> dict:
    kind = hit.metadata.get("kind") or ("document" if hit.collection == "documents" else "comment")
    attachment = None
    if from_file:
        attachment = {"file": hit.section, "title": titles.get((hit.item_key, hit.section))}
    posted = hit.metadata.get("posted_date")
    fields = asdict(replace(hit, more=()))
    del fields["more"]
    # "score" is the number the results are sorted by (the fused score); "cosine" the passage's
    # similarity to the query. The comment's other matching passages follow, best first.
    fields.update(score=hit.score if hit.fused is None else hit.fused, cosine=hit.score)
    more = [{"chunk": other.ordinal, "section": other.section, "page": other.page,
             "score": other.score if other.fused is None else other.fused, "passage": other.text}
            for other in hit.more]
    # The instant as stored (UTC) for scripts, and the Eastern date people read beside it.
    return {"rank": rank, **fields, "kind": kind, "attachment": attachment, "posted_date": posted,
            "posted_day": eastern_date(posted) or None, "withdrawn": withdrawn, "link": f"{REGULATIONS_GOV}/{kind}/{hit.item_key}",
            "more_passages": more}


def search_document(query: str, k: int, docket: str | None, collection: str | None,
                    records: list[dict], filters: dict | None = None, *,
                    best_score: float | None = None, floor: float | None = None) -> dict:
    """The one JSON document of ``docketeer search --json`` (``filters``: its ``from``, ``to``,
    ``org``, attribute, topic and position filters, None when not given). ``best_score``: the best
    cosine any passage reached, shown or not; ``floor``: the cosine a result without the
    query's words needed (empty ``results`` with both: no good match)."""
    given = {name: (filters or {}).get(name) for name in ("from", "to", "org", "subtype", "category", "state", "country", "topic",
                                                     "position")}
    return {"query": query, "k": k, "docket": docket, "collection": collection, **given,
            "best_score": best_score, "floor": floor, "results": [_public(record) for record in records]}


def _public(record: dict) -> dict:
    """The record under the names a script reads: ``item_id``, ``passage``."""
    out = {name: value for name, value in record.items() if name not in ("item_key", "text", "ordinal")}
    return {"rank": record["rank"], "item_id": record["item_key"], **out, "passage": record["text"],
            "chunk": record["ordinal"]}
