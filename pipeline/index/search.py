"""Query the index with text: hybrid search (vector + full text), print ranked hits.

Two rankings of the same chunks are fused by reciprocal rank fusion (Cormack et al. 2009):
a chunk's fused score is the sum of ``1 / (RRF_K + rank)`` over the rankings it is in. The
vector ranking finds paraphrases; the full-text ranking (PostgreSQL ``tsvector``) finds the
exact phrase, statute number or name that an embedding blurs into its neighbours.

A search reads like a search engine's: a "quoted phrase" is a condition of both rankings
(only passages holding those words in that order), a passage holding the query's words
verbatim ranks above every other (``EXACT_BOOST``), and the results are comments, each with
its best passage first and its other matching passages folded under it (``per_item``).
The score a result shows is ``fused``, the number that orders the list.

A result is shown only when it matches (``relevant``): it holds the query's words (it is in
the full-text ranking, or holds the query verbatim) or its cosine similarity reaches the
embedder's floor (``floor_of``: calibrated per embedder, or the ``search_floor`` setting). A
query that nothing matches gets no results, and the best similarity it reached, not the
nearest noise: "no good match" is an answer.
"""

from __future__ import annotations

import math
import re
import unicodedata
from dataclasses import dataclass, replace

from pipeline.clock import eastern_date
from pipeline.errors import DocketeerError
from pipeline.index.database import IndexDB, SearchFilters, SearchHit
from pipeline.index.embedders import Embedder

SNIPPET_CHARS = 200
RRF_K = 60  # the constant of the RRF paper: damps the weight of the very first places
MIN_POOL = 50  # candidates each ranking contributes at least, so fusion has material
MAX_POOL = 1000
MODES = ("hybrid", "vector", "text")
# Added to the fused score of a passage holding the query verbatim: more than any two ranks
# give (2 / (RRF_K + 1)), so an exact sentence comes before every passage that lacks it.
EXACT_BOOST = 1.0
# The vector ranking's first passages that are also read for the query verbatim: a passage
# whose words the full-text index does not see as the query's (an OCR'd "regu-\nlation", a
# "ﬁ" ligature) is still its nearest by meaning when it holds the query's sentence.
EXACT_LOOK = 50
MORE_PASSAGES = 5  # other matching passages kept under a comment's best one
_QUOTED = re.compile(r'"([^"]*)"')


class NothingToSearch(DocketeerError):
    """The query embeds to no direction at all (only punctuation or stop words)."""


@dataclass(frozen=True)
class SearchAnswer:
    """A search's results and what decided them: ``best_score`` is the best cosine any
    passage reached, shown or not (None: nothing was compared), ``floor`` the similarity a
    passage without the query's words needed."""

    hits: list[SearchHit]
    best_score: float | None
    floor: float

    def no_good_match(self) -> str:
        """What a search that found nothing says: how near the nearest passage came."""
        if self.best_score is None:
            return "no results"
        return f"no good match (best similarity {self.best_score:.2f}, floor {self.floor:.2f})"


def floor_of(embedder: Embedder, setting: float | None = None) -> float:
    """The cosine similarity a passage must reach to be shown without the query's words: the
    ``search_floor`` setting when given, else the embedder's own calibrated ``search_floor``
    (an embedder that has none: no floor)."""
    if setting is not None:
        return float(setting)
    return float(getattr(embedder, "search_floor", 0.0))


def relevant(hit: SearchHit, floor: float, phrased: bool = False) -> bool:
    """Whether a passage matches the query, the one rule every search applies: it holds the
    query's words (the full-text ranking found it, it holds the query verbatim, or, for a
    query with "quoted phrases", the vector ranking found it among the passages holding
    them), or it is as near the query's meaning as ``floor``."""
    words = hit.text_rank is not None or hit.exact or (phrased and hit.vector_rank is not None)
    return words or (not math.isnan(hit.score) and hit.score >= floor)


def search(index_db: IndexDB, embedder: Embedder, query: str, **options) -> list[SearchHit]:
    """The hits of ``search_answer`` (same arguments)."""
    return search_answer(index_db, embedder, query, **options).hits


def search_answer(
    index_db: IndexDB,
    embedder: Embedder,
    query: str,
    *,
    collection: str | None = None,
    docket: str | None = None,
    k: int = 10,
    filters: SearchFilters | None = None,
    mode: str = "hybrid",
    offset: int = 0,
    per_item: bool = True,
    floor: float | None = None,
) -> SearchAnswer:
    """The best ``k`` matching chunks for ``query`` after the first ``offset``, best first.

    ``mode``: ``hybrid`` (fused), ``vector`` or ``text`` alone. ``per_item`` keeps only the
    best chunk of each comment, its other matching chunks in its ``more`` (a list of results
    lists comments, not passages: what ``docketeer search`` and the page ask). ``floor``:
    the similarity a passage without the query's words needs (None: ``floor_of`` the
    embedder, or the index DB's ``search_floor`` setting).
    """
    if mode not in MODES:
        raise ValueError(f"mode must be one of {MODES}, not {mode!r}")
    floor = floor_of(embedder, getattr(index_db, "search_floor", None) if floor is None else floor)
    if not query.strip() or k < 1:
        return SearchAnswer([], None, floor)
    [query_vector] = embedder.embed([query])
    if not _has_direction(query_vector):
        # A zero vector has no cosine similarity with anything: every score would be NaN.
        raise NothingToSearch(f"nothing to search for in {query!r}: give some words")
    filters = (filters or SearchFilters()).narrowed(collection, docket)
    pool = min(MAX_POOL, max(MIN_POOL, 2 * (offset + k)))
    if per_item:
        pool = min(MAX_POOL, 2 * pool)  # a comment may fill several places of a ranking
    phrases = quoted_phrases(query)
    by_vector = by_text = exact = []
    if mode != "text":
        by_vector = index_db.search(query_vector, k=pool, embedder_id=embedder.id, filters=filters,
                                    must_match=phrases)
    if mode != "vector":
        by_text = index_db.text_search(query, query_vector, k=pool, embedder_id=embedder.id,
                                       filters=filters)
    verbatim = exact_text(query)
    if mode == "hybrid" and verbatim:
        # The passages holding the whole query as a phrase and the nearest by meaning (where
        # one whose words the full-text index misreads is), kept if they hold it verbatim
        # once their text is flattened. The full-text ranking's others hold the words but
        # not the phrase: the phrase search has them already when they do.
        phrase = index_db.text_search(f'"{verbatim}"', query_vector, k=pool, embedder_id=embedder.id,
                                      filters=filters)
        exact = verbatim_among(phrase + by_vector[:EXACT_LOOK], verbatim)
    fused = fuse(by_vector, by_text, exact)
    scores = [hit.score for hit in fused if not math.isnan(hit.score)]
    fused = [hit for hit in fused if relevant(hit, floor, phrased=phrases is not None)]
    if per_item:
        fused = _best_per_item(fused)
    return SearchAnswer(fused[offset:offset + k], max(scores, default=None), floor)


def verbatim_among(hits: list[SearchHit], verbatim: str) -> list[SearchHit]:
    """The hits (each passage once) whose text holds ``verbatim`` (``exact_text``)."""
    seen: set[tuple] = set()
    kept = []
    for hit in hits:
        key = (hit.collection, hit.item_key, hit.ordinal)
        if key not in seen:
            seen.add(key)
            if holds_verbatim(hit.text, verbatim):
                kept.append(hit)
    return kept


def quoted_phrases(query: str) -> str | None:
    """The query's quoted phrases as a web search box reads them ('"a b" "c d"'), or None."""
    phrases = [" ".join(p.split()) for p in _QUOTED.findall(query)]
    return " ".join(f'"{p}"' for p in phrases if p) or None


def exact_text(query: str) -> str | None:
    """What a passage must hold to match the query verbatim (lower case, single spaces, no
    quote marks), or None for a single plain word, which the rankings match already (a single
    id such as CMS-2026-0042, holding a digit, is matched verbatim too)."""
    flat = _flat(query)
    if len(flat.split()) >= 2 or any(ch.isdigit() for ch in flat):
        return flat
    return None


def holds_verbatim(text: str, verbatim: str) -> bool:
    """Whether a passage holds ``verbatim`` (``exact_text``) as whole words, its text read as
    a person reads it: a word hyphenated at a line's end joined again ("regu-\nlation"), or
    kept hyphenated ("well-\nknown"), ligatures as letters, curly quotes straight, any
    breaks and spaces as one space, any case."""
    if _holds(_flat(text), verbatim):
        return True
    if not _LINE_END_HYPHEN.search(text):
        return False
    return any(_holds(_flat(_LINE_END_HYPHEN.sub(joint, text)), verbatim) for joint in ("", "-"))


def _holds(flat_text: str, verbatim: str) -> bool:
    """``verbatim`` in the text as whole words (CMS-2026-0042 is not in CMS-2026-00421)."""
    return verbatim in flat_text and re.search(r"(?<!\w)" + re.escape(verbatim) + r"(?!\w)", flat_text) is not None


# A hyphen that ends a line, between letters: the word was cut to fit the line (OCR, PDF text).
# (The hyphen first, the letter before it looked back at: a pattern that starts with a look
# back is tried at every character of the passage.)
_LINE_END_HYPHEN = re.compile(r"-(?<=[^\W\d_]-)[ \t]*\r?\n\s*(?=[^\W\d_])")
# Quote marks as typed on a keyboard; double quotes are no part of a verbatim match (a
# query's are its phrase marks), so they become spaces.
_STRAIGHT = str.maketrans({"\u2018": "'", "\u2019": "'", "\u201a": "'", "\u201b": "'", "\u02bc": "'",
                           "\u2032": "'", "\u00b4": "'", "`": "'", "\u00ad": None,
                           **{q: " " for q in '"\u201c\u201d\u201e\u201f\u00ab\u00bb\u2033'}})


def _flat(text: str) -> str:
    """Text as it is compared verbatim: compatibility characters as plain letters (NFKC:
    "ﬁ" is "fi", a non-breaking space a space), quotes straight, soft hyphens gone, single
    spaces, case folded."""
    if text.isascii():  # most passages: the same, without the costlier per-character passes
        return " ".join(text.replace('"', " ").replace("`", "'").lower().split())
    return " ".join(unicodedata.normalize("NFKC", text).translate(_STRAIGHT).casefold().split())


def filters_of(request: dict) -> SearchFilters:
    """A search request's filters, as ``docketeer search`` and its warm service both read
    them: ``from`` / ``to`` are Washington's calendar days (YYYY-MM-DD, inclusive; see
    ``clock.eastern_day_bounds``), ``org`` a part of the submitter's name or organisation,
    ``org_items`` the comments ``org`` also matches (of the organisations resolved with that
    name, read from the state DB), ``items`` the only item keys searched (None: any),
    ``excluded`` keys never returned."""
    from pipeline.clock import eastern_day_bounds

    posted_from, posted_before = eastern_day_bounds(request.get("from") or None, request.get("to") or None)
    # The comments an attribute filter allows, or those it does not (read from the state DB).
    items, excluded = request.get("items"), request.get("excluded")
    return SearchFilters(posted_from=posted_from, posted_before=posted_before,
                         organization=request.get("org") or None, org_items=tuple(request.get("org_items") or ()),
                         items=None if items is None else tuple(items),
                         excluded=None if excluded is None else tuple(excluded))


def fuse(by_vector: list[SearchHit], by_text: list[SearchHit],
         exact: list[SearchHit] = ()) -> list[SearchHit]:
    """Both rankings as one, by reciprocal rank fusion; each hit knows its two places. The
    passages in ``exact`` (holding the query verbatim) gain ``EXACT_BOOST``."""
    hits: dict[tuple, SearchHit] = {}
    for field, ranking in (("vector_rank", by_vector), ("text_rank", by_text)):
        for rank, hit in enumerate(ranking, start=1):
            key = (hit.collection, hit.item_key, hit.ordinal)
            hits[key] = replace(hits.get(key, hit), **{field: rank})
    for hit in exact:
        key = (hit.collection, hit.item_key, hit.ordinal)
        hits[key] = replace(hits.get(key, hit), exact=True)
    fused = [replace(h, fused=_rrf(h.vector_rank) + _rrf(h.text_rank) + (EXACT_BOOST if h.exact else 0.0))
             for h in hits.values()]
    return sorted(fused, key=lambda h: (-h.fused, -h.score, h.collection, h.item_key, h.ordinal))


def _rrf(rank: int | None) -> float:
    return 0.0 if rank is None else 1.0 / (RRF_K + rank)


def _best_per_item(hits: list[SearchHit]) -> list[SearchHit]:
    """One hit per comment, its best passage, with its other passages (best first) folded
    under it in ``more``; the comments in the order of their best passages."""
    folded: dict[tuple[str, str], list[SearchHit]] = {}
    for hit in hits:
        folded.setdefault((hit.collection, hit.item_key), []).append(hit)
    return [replace(best, more=tuple(others[:MORE_PASSAGES])) for best, *others in folded.values()]


def _has_direction(vector: list[float]) -> bool:
    return all(math.isfinite(x) for x in vector) and any(x != 0.0 for x in vector)


def answer_text(answer: SearchAnswer) -> str:
    """What ``docketeer search`` prints: the results, or that none matches well enough."""
    return format_hits(answer.hits).rstrip() if answer.hits else answer.no_good_match()


def answer_fields(answer: SearchAnswer) -> dict:
    """The numbers behind an answer, as the warm service sends them and ``--json`` prints them."""
    return {"best_score": None if answer.best_score is None else round(answer.best_score, 4),
            "floor": answer.floor}


def format_hits(hits: list[SearchHit]) -> str:
    """One block per hit: rank, score, comment id, docket, who, page, then a snippet."""
    if not hits:
        return "no matches\n"
    return "".join(_format_hit(rank, hit) for rank, hit in enumerate(hits, start=1))


def _format_hit(rank: int, hit: SearchHit) -> str:
    who = _submitter(hit.metadata)
    page = f"  p.{hit.page}" if hit.page is not None else ""
    # The day it was posted as people read it: Washington's (a 02:00 UTC post is the day before).
    posted = eastern_date(hit.metadata.get("posted_date"))
    header = f"{rank:>3}. {shown_score(hit):.4f}  {hit.item_key}  [{hit.docket}]{page}" + (f"  {posted}" if posted else "")
    if who:
        header += f"  — {who}"
    more = "".join(f"       also{_page(other)}: {_snippet(other.text, SNIPPET_CHARS // 2)}\n" for other in hit.more)
    return f"{header}\n     {_snippet(hit.text)}\n{more}"


def shown_score(hit: SearchHit) -> float:
    """The number a result shows: the one its list is sorted by (the cosine when unfused)."""
    return hit.score if hit.fused is None else hit.fused


def _page(hit: SearchHit) -> str:
    return f" p.{hit.page}" if hit.page is not None else ""


def _submitter(metadata: dict) -> str:
    """'First Last (Organization)', whichever parts the comment's metadata has."""
    name = metadata.get("submitter") or " ".join(
        part for part in (metadata.get("firstName"), metadata.get("lastName")) if part
    )
    organization = metadata.get("organization")
    if name and organization:
        return f"{name} ({organization})"
    return name or organization or ""


def _snippet(text: str, chars: int = SNIPPET_CHARS) -> str:
    flat = " ".join(text.split())
    if len(flat) <= chars:
        return flat
    cut = flat.rfind(" ", 0, chars)
    return flat[: cut if cut > chars // 2 else chars] + "…"
