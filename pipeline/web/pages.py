"""What each page shows, assembled from the stores by plain functions (no web framework
here): the search results, a docket's dashboard, one comment, one rule document, the status
of every docket.

Every read goes through ``pipeline/reading/`` (the state DB's reports, the search, a comment's
text) and the index DB's own methods; nothing here writes.
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field, replace
from datetime import datetime

from pipeline.clock import eastern_date, eastern_day, eastern_day_bounds
from pipeline.ids import record_url
from pipeline.reading import campaigns, search_arguments
from pipeline.reading.search import SearchFilters, SearchHit
from pipeline.web import highlight, plots

PAGE_SIZE = 20
CAMPAIGN_READ = 200  # hits read per page when one result per campaign is asked
MAX_PAGE = 50  # 1,000 results: past that a narrower query or a filter serves better
TOP_ORGANIZATIONS = 15
KINDS = search_arguments.KINDS  # what a search looks in, as the form says it -> the index's collection


# --- search ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SearchForm:
    """The search page's query string, checked and bounded (bad values are dropped)."""

    q: str = ""
    docket: str = ""
    date_from: str = ""  # YYYY-MM-DD, US Eastern, inclusive
    date_to: str = ""  # YYYY-MM-DD, US Eastern, inclusive
    org: str = ""
    campaign: str = ""  # only this campaign's comments
    topic: str = ""  # only comments on this topic of their docket's topic map
    position: str = ""  # only comments the positions stage placed in this position
    one_per_campaign: bool = False  # a campaign's members collapse into its best-ranked one
    page: int = 1
    attachments: str = ""  # "yes" / "no": only comments with (without) attachments
    withdrawn: str = ""  # "yes" / "no"
    subtype: str = ""  # the record's kept attributes, each matched exactly
    category: str = ""
    state: str = ""
    country: str = ""
    kind: str = "both"  # a key of KINDS: comments, documents or both

    @classmethod
    def parse(cls, params) -> SearchForm:
        """The form as given; ``checked()`` says what in it cannot be searched for."""
        return cls(q=params.get("q", "").strip()[:500], docket=params.get("docket", "").strip()[:100],
                   date_from=params.get("from", "").strip()[:40], date_to=params.get("to", "").strip()[:40],
                   org=params.get("org", "").strip()[:200], campaign=params.get("campaign", "").strip()[:100],
                   topic=params.get("topic", "").strip()[:120], position=params.get("position", "").strip()[:40],
                   one_per_campaign=params.get("per_campaign") == "1",
                   page=_bounded_int(params.get("page"), 1, MAX_PAGE),
                   attachments=_choice(params.get("attachments", "")), withdrawn=_choice(params.get("withdrawn", "")),
                   kind=params.get("kind", "").strip() if params.get("kind", "").strip() in KINDS else "both",
                   **search_arguments.attribute_values(params))

    def checked(self) -> SearchForm:
        """The same form, its arguments checked as ``docketeer search`` checks them
        (``pipeline/reading/search_arguments.py``); BadSearch names the first that is not searchable."""
        q = search_arguments.query_text(self.q)
        first = search_arguments.day(self.date_from, "from")
        last = search_arguments.day(self.date_to, "to")
        search_arguments.day_range(first, last)
        if self.campaign:
            search_arguments.campaign(self.campaign, campaigns.campaign_members)
        org = search_arguments.organisation(self.org) if self.org else ""
        topic = search_arguments.topic(self.topic)
        position = search_arguments.position(self.position)
        attributes = {name: search_arguments.attribute(name, getattr(self, name))
                      for name in search_arguments.ATTRIBUTES}
        return replace(self, q=q, date_from=first, date_to=last, org=org, topic=topic, position=position,
                       **attributes)

    @property
    def attributes(self) -> dict[str, str]:
        return {name: getattr(self, name) for name in search_arguments.ATTRIBUTES if getattr(self, name)}

    @property
    def collection(self) -> str | None:
        """The index collection searched: the kind asked. The filters only comments have (an
        organisation, a campaign, a topic, a position, attachments, withdrawn, the record's
        attributes) are read from the comments' rows, so with one of them both kinds means the
        comments."""
        comment_filters = (self.org or self.campaign or self.topic or self.position or self.attachments
                           or self.withdrawn or self.attributes)
        return "comments" if self.kind == "both" and comment_filters else KINDS[self.kind]

    @property
    def searches_comments(self) -> bool:
        """Whether comments are among what this search looks in (its comment facets mean something)."""
        return self.collection != "documents"

    def browse_filters(self):
        """The comments this search is narrowed to, as the browse page filters them."""
        from pipeline.reading import browsing

        posted_from, posted_before = eastern_day_bounds(self.date_from or None, self.date_to or None)
        return browsing.BrowseFilters(
            docket=self.docket or None, organization=self.org or None, campaign=self.campaign or None,
            topic=self.topic or None, position=self.position or None, has_attachments={"yes": True, "no": False}.get(self.attachments),
            withdrawn={"yes": True, "no": False}.get(self.withdrawn), posted_from=posted_from,
            posted_before=posted_before, **self.attributes)

    def filters(self) -> SearchFilters:
        members = campaigns.campaign_members(self.campaign) if self.campaign else None
        excluded = None
        if self.attachments or self.withdrawn or self.attributes or self.topic or self.position:
            # Facts only the state DB holds: the search is narrowed to the comments that have
            # them (or, the shorter list, kept from those that do not).
            from pipeline.reading import browsing

            # The search itself narrows by name and date; the state DB by the rest.
            members, excluded = browsing.narrowing(replace(
                self.browse_filters(), organization=None, posted_from=None, posted_before=None))
        # The dates people give are Washington's: the UTC instants bounding those days.
        posted_from, posted_before = eastern_day_bounds(self.date_from or None, self.date_to or None)
        return SearchFilters(
            items=None if members is None else tuple(members),
            excluded=None if excluded is None else tuple(excluded), collection=self.collection, docket=self.docket or None, organization=self.org or None,
            org_items=self._org_items(), posted_from=posted_from, posted_before=posted_before)

    def _org_items(self) -> tuple[str, ...]:
        """The comments the ``org`` filter matches through their resolved organisation: the
        index DB, which the search asks, holds no organisations."""
        from pipeline.reading.organisation_filter import member_keys

        return tuple(member_keys(self.org, self.docket or None)) if self.org else ()

    def query_string(self, **changes) -> dict[str, str]:
        """The parameters of this search (for links to other pages of it)."""
        values = {"q": self.q, "docket": self.docket, "from": self.date_from, "to": self.date_to,
                  "org": self.org, "campaign": self.campaign, "topic": self.topic, "position": self.position,
                  "per_campaign": "1" if self.one_per_campaign else "",
                  "attachments": self.attachments, "withdrawn": self.withdrawn, **self.attributes,
                  "kind": "" if self.kind == "both" else self.kind, "page": str(self.page)} | {k: str(v) for k, v in changes.items()}
        return {k: v for k, v in values.items() if v}


@dataclass(frozen=True)
class Result:
    hit: SearchHit
    passage: list[tuple[str, bool]]
    posted: str
    campaign: dict | None
    withdrawn: bool = False  # the item's row says so: marked, still found
    # The comment's other matching passages, best first: (section, page, highlighted passage)
    more: tuple = ()

    @property
    def kind(self) -> str:
        """comment or document: the page shows which, and links to its page."""
        return "document" if self.hit.collection == "documents" else "comment"

    @property
    def url(self) -> str:
        return record_url(self.kind, self.hit.item_key)


class WarmSearch:
    """The embedder loaded once for the life of the server, with its index DB.

    A lock serialises searches: the index DB is one connection, and the web page and the
    CLI's socket may ask at the same time.
    """

    def __init__(self, runtime, embedder=None) -> None:
        from pipeline.reading.search import embedder_from

        self.runtime = runtime
        self.embedder = embedder or embedder_from(runtime.settings)
        if hasattr(self.embedder, "load"):
            self.embedder.load()
        self.lock = threading.Lock()

    def search(self, query: str, filters: SearchFilters, *, k: int, offset: int) -> list[SearchHit]:
        """The matching hits only (``answer``'s): what a search's feed holds."""
        return self.answer(query, filters, k=k, offset=offset).hits

    def answer(self, query: str, filters: SearchFilters, *, k: int, offset: int):
        """The search's ``SearchAnswer``: its matching hits, one per comment, and how near
        the nearest passage came."""
        from pipeline.reading.search import search_answer

        with self.lock:
            return search_answer(self.runtime.index_db(), self.embedder, query, filters=filters, k=k,
                                 offset=offset, per_item=True)


def search_results(engine: WarmSearch, form: SearchForm) -> tuple[list[Result], str]:
    """One page of results, best first, one per comment; and, when there are none, what the
    page says ("no good match (best similarity 0.18, floor 0.45)")."""
    from pipeline.store import items

    if not form.q:
        return [], ""
    offset = (form.page - 1) * PAGE_SIZE
    if form.one_per_campaign:
        answer, hits, info = _one_per_campaign(engine, form, offset)
    else:
        answer = engine.answer(form.q, form.filters(), k=PAGE_SIZE, offset=offset)
        hits = answer.hits
        info = campaigns.campaign_info([h.item_key for h in hits])
    withdrawn = items.withdrawn_among(h.item_key for h in hits)
    return [Result(h, highlight.passage(h.text, form.q), eastern_date(h.metadata.get("posted_date")),
                   info.get(h.item_key), h.item_key in withdrawn,
                   tuple((o.section, o.page, highlight.passage(o.text, form.q)) for o in h.more)) for h in hits], \
        ("" if hits or form.page > 1 else answer.no_good_match())


def _one_per_campaign(engine: WarmSearch, form: SearchForm, offset: int) -> tuple[object, list[SearchHit], dict]:
    """The page's hits once each campaign is represented by its best-ranked member.

    Collapsing happens before paging, so the ranking is read from the top: up to
    ``CAMPAIGN_READ`` hits per page shown (a page deep into a huge campaign may run short).
    """
    answer = engine.answer(form.q, form.filters(), k=min(MAX_PAGE * PAGE_SIZE, (form.page + 1) * CAMPAIGN_READ),
                           offset=0)
    hits = answer.hits
    info = campaigns.campaign_info([h.item_key for h in hits])
    seen, kept = set(), []
    for hit in hits:
        group = (info.get(hit.item_key) or {}).get("id") or ("item", hit.item_key)
        if group not in seen:
            seen.add(group)
            kept.append(hit)
    return answer, kept[offset:offset + PAGE_SIZE], info


# --- a docket -------------------------------------------------------------------------------


@dataclass
class DocketPage:
    docket: object
    state_counts: list
    stage_totals: dict[str, int]
    retry_reasons: list
    per_day: list[tuple[str, int]]
    organizations: list[tuple[str, int]]
    campaigns: list[dict] = field(default_factory=list)
    # (comment records, submissions they represent: a mass-mail record counts its duplicates)
    submissions: tuple[int, int] = (0, 0)
    unit: str = "day"  # of per_day's points: a long span is drawn by week, month or year
    timeline: object = None  # pipeline.reading.lineage.Timeline: the rule the docket is part of
    topics: list = field(default_factory=list)  # pipeline.reading.topics.TopicSummary, largest first
    topic_message: str = ""  # what the map says when it has no topics ("too few comments ...")
    documents: list = field(default_factory=list)  # pipeline.reading.documents.ListedDocument, as posted
    positions: dict = field(default_factory=dict)  # pipeline.reading.positions.figures

    @property
    def position_shares(self) -> list[tuple[str, str, list[dict]]]:
        """(measure, estimate, its rows) for the positions table: the stored figures, each
        estimate labelled with its method, comments before submissions."""
        from pipeline.reading.positions import share_rows

        found: dict[tuple[str, str], list[dict]] = {}
        for row in share_rows(self.positions.get("estimates", {})):
            found.setdefault((row["measure"], row["estimate"]), []).append(row)
        return [(measure, estimate, rows) for (measure, estimate), rows in found.items()]

    @property
    def stored_documents(self) -> set[str]:
        """The documents this store holds (the timeline links those to their page)."""
        return {d.key for d in self.documents}

    @property
    def topic_bars(self) -> list[tuple[object, int]]:
        """Each topic with its bar's width in percent of the largest topic's submissions."""
        largest = max((t.submissions for t in self.topics), default=0) or 1
        return [(t, max(1, round(100 * t.submissions / largest))) for t in self.topics]

    @property
    def plot(self):
        return plots.bar_chart(self.per_day, label=f"comments received per {self.unit}, {self.docket.id}")


def docket_page(docket_id: str) -> DocketPage | None:
    from pipeline.reading import reports

    docket = reports.find_docket(docket_id)
    if docket is None:
        return None
    counts = reports.state_counts(docket_id)
    totals: dict[str, int] = {}
    for row in counts:
        totals[row.stage] = totals.get(row.stage, 0) + row.count
    from pipeline.reading import documents, positions, topics

    unit, points = plots.dated_series(eastern_days(reports.comments_per_hour(docket_id)))
    mapped = topics.map_of(docket_id)
    return DocketPage(docket, counts, totals, reports.retry_reasons(docket_id), points,
                      reports.top_organizations(docket_id, TOP_ORGANIZATIONS),
                      campaigns.largest_campaigns(docket_id, 10),
                      reports.submissions(docket_id).get(docket_id, (0, 0)), unit=unit,
                      timeline=rule_timeline(docket_id),
                      topics=topics.topics_of(docket_id), topic_message=mapped.message if mapped else "",
                      documents=documents.docket_documents(docket_id), positions=positions.figures(docket_id))


def rule_timeline(docket_id: str):
    from pipeline.reading.lineage import timeline

    return timeline(docket_id)


def eastern_days(per_hour: dict[str, int]) -> dict[str, int]:
    """UTC hour buckets ('YYYY-MM-DDTHH') folded into US Eastern days."""
    days: dict[str, int] = {}
    for hour, count in per_hour.items():
        try:
            moment = datetime.fromisoformat(f"{hour}:00:00+00:00")
            day = eastern_day(moment).isoformat()
        except (ValueError, OverflowError):
            continue  # a malformed or impossible stored date: not plotted, still counted elsewhere
        days[day] = days.get(day, 0) + count
    return days


# --- a comment ------------------------------------------------------------------------------


@dataclass(frozen=True)
class Section:
    heading: str
    pages: list[tuple[int | None, str]]  # (page number or None before the first marker, text)


@dataclass
class CommentPage:
    item: object
    attachments: list
    file_states: dict
    sections: list[Section]
    extracted: bool
    campaign: dict | None
    # each organisation it names, once resolved: (id, canonical name, as written, where from:
    # organization | title | signature), in the field's order
    organisations: list[tuple[str, str, str, str]] = field(default_factory=list)
    position: object = None  # its PositionMember row (None: the positions stage has not placed it)

    @property
    def url(self) -> str:
        return record_url(self.item.kind, self.item.key)

    def state_of(self, stage: str, filename: str) -> str:
        row = self.file_states.get((stage, f"{self.item.key}/{filename}"))
        return f"{row.state}" + (f" ({row.reason})" if row.reason else "") if row else "-"

    def section_of(self, filename: str) -> Section | None:
        return next((s for s in self.sections if s.heading == filename), None)

    @property
    def kept(self) -> list[tuple[str, object]]:
        from pipeline.reading import reports

        return reports.kept_attributes(self.item)

    @property
    def attachments_summary(self) -> str:
        """'9 attachments: 2 read, 7 waiting for the mirror' (or: not listed in this record)."""
        from pipeline.reading import reports
        from pipeline.store.models import ItemState

        key = self.item.key
        # A scan OCR read stands as OCR says, while its text is the one stored (as in explain).
        extracted = ItemState.get_or_none((ItemState.stage == "extract") & (ItemState.item == key))
        standings = [reports.file_standing(a, self.file_states.get(("backfill.file", f"{key}/{a.filename}")),
                                           self.file_states.get(("extract.file", f"{key}/{a.filename}")),
                                           reports.ocr_in_force(self.file_states.get(("ocr", f"{key}/{a.filename}")),
                                                                extracted))
                     for a in self.attachments]
        return reports.attachments_summary(reports.attachment_count(self.item, self.attachments), standings)


def comment_page(runtime, key: str) -> CommentPage | None:
    from pipeline.reading import reports

    item = reports.find_item(key)
    if item is None:
        return None
    sections, extracted = item_text(runtime, item)
    from pipeline.reading.positions import member_of

    return CommentPage(item, reports.attachments_of(key), reports.file_rows_of(key), sections, extracted,
                       campaigns.campaign_info([key]).get(key), resolved_organisations(key), member_of(key))


def resolved_organisations(key: str) -> list[tuple[str, str, str, str]]:
    from pipeline.reading import reports

    return reports.resolved_organisations(key)  # the one query, explain's too


def item_text(runtime, item) -> tuple[list[Section], bool]:
    """The item's text (a comment's or a document's): each section of its combined.md split at
    its page markers, and whether extract has written it (none before). One blob read."""
    from pipeline.reading import comments

    found, extracted = comments.text_pages(runtime.blobs, item.docket, item.key)
    return [Section(heading, pages) for heading, pages in found], extracted


# --- a rule document -------------------------------------------------------------------------


@dataclass
class DocumentPage:
    facts: object  # pipeline.reading.documents.DocumentFacts
    sections: list[Section]  # the document's own text first, then each content or attachment file's
    extracted: bool
    # its text split by its structure (``pipeline.reading.sections``), each section with the
    # comments citing it and nearest it; None before the sections stage split it
    outline: object = None

    @property
    def item(self):
        return self.facts.item

    @property
    def url(self) -> str:
        return record_url("document", self.item.key)

    def state_of(self, stage: str, filename: str | None = None) -> str:
        """'failed (reason)' of the document's row in ``stage`` (of its file's, given one); '' none."""
        row = self.facts.file_state(stage, filename) if filename else self.facts.states.get((stage, self.item.key))
        return f"{row.state}" + (f" ({row.reason})" if row.reason else "") if row else ""

    @property
    def text_missing(self) -> str:
        """Why the page shows no text: extract's state and reason ('' when there is text)."""
        if self.extracted:
            return ""
        state = self.state_of("extract")
        return f"Its text was not extracted: extract {state}." if state else "Its text is not extracted yet."


def document_page(runtime, key: str) -> DocumentPage | str | None:
    """The document's page (its record with its type, its state rows, then its sections and
    the comments tied to them; its text file only before the sections stage split it), the
    comment's key when ``key`` names a comment, or None when no item has that id."""
    from pipeline.reading import documents

    facts = documents.find_document(key)
    if facts is None or facts.item.kind != "document":
        return None if facts is None else facts.item.key
    from pipeline.reading import sections
    from pipeline.reading.comments import is_placeholder

    if facts.extract is not None and facts.extract.state == "ok":
        # Split by the sections stage: its sections are the text shown, no file read.
        outline = sections.document_sections(key, facts.states.get(("sections", key)))
        if outline.sections:
            return DocumentPage(facts, [], True, outline)
    found, extracted = document_text(runtime, facts.item)
    # The record's own text is usually none (a document's text is in its content file): its
    # section is shown only when it holds some.
    own, files = found[:1], found[1:]
    shown = [s for s in own if not all(is_placeholder(text) for _, text in s.pages)] + files
    return DocumentPage(facts, shown, extracted)


def section_page(key: str, section: str):
    """(the document's facts, the section, its comments) or None when either is unknown."""
    from pipeline.reading import documents, sections

    facts = documents.find_document(key)
    if facts is None or facts.item.kind != "document":
        return None
    found = next((s for s in sections.document_sections(key).sections if s.id == section), None)
    return None if found is None else (facts, found, sections.section_comments(key, section))


def document_text(runtime, item) -> tuple[list[Section], bool]:
    """The document's pages of text, section by section (its own text, then each file's): what
    its page shows, and what a view of one section picks from."""
    return item_text(runtime, item)


# --- status ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class DocketStatus:
    docket: object
    progress: dict[str, int]
    indexed: int | None
    waiting: int
    pending: int

    def cell(self, column: str) -> str:
        """A progress count with what it leaves out: '34 (1 failed, 2 waiting to retry)'."""
        from pipeline.reading.reports import progress_cell

        return progress_cell(self.progress, column)


STATUS_PAGE_SIZE = 100


@dataclass
class StatusPage:
    rows: list[DocketStatus]
    page: int
    total: int  # every known docket (one count), not only this page's

    @property
    def last_page(self) -> int:
        from pipeline.reading.reports import page_count

        return page_count(self.total, STATUS_PAGE_SIZE)


def status_page(runtime, page: int = 1) -> StatusPage:
    """One page of dockets with their progress, its reads filtered to the page's dockets: the
    same statements at 3 dockets as at 276,000."""
    from pipeline.reading import reports

    dockets = reports.docket_page((page - 1) * STATUS_PAGE_SIZE, STATUS_PAGE_SIZE)
    ids = [d.id for d in dockets]
    if not ids:
        return StatusPage([], page, reports.docket_count())
    progress, waiting, pending = reports.comment_progress(ids), reports.retry_waiting(ids), reports.pending_counts(ids)
    index_db = runtime.existing_index_db()
    indexed = index_db.indexed_counts("comments", ids) if index_db is not None else None
    rows = [DocketStatus(d, progress.get(d.id, {}), None if indexed is None else indexed.get(d.id, 0),
                         waiting.get(d.id, 0), pending.get(d.id, 0)) for d in dockets]
    return StatusPage(rows, page, reports.docket_count())


# --- values ---------------------------------------------------------------------------------


def _choice(text: str) -> str:
    return text.strip() if text.strip() in ("yes", "no") else ""


def _bounded_int(text: str | None, low: int, high: int) -> int:
    try:
        return min(high, max(low, int(text or low)))
    except ValueError:
        return low
