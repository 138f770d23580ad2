"""Browsing without a query: the home page's list of dockets, a docket's comments paged and
sorted with facets and their counts, a campaign's page, an organisation's page; and the one
check of the query string every page shares (a bad value is said on the page, with HTTP 400,
never dropped in silence).

Plain functions over ``pipeline/reading/browsing.py`` (no web framework here); nothing writes.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from datetime import date

from pipeline.clock import eastern_day_bounds
from pipeline.reading import browsing, comments, search_arguments
from pipeline.reading.search_arguments import BadSearch
from pipeline.web import pages, plots

BROWSE_PAGE_SIZE = 50
MEMBERS_PAGE_SIZE = 50
MAX_BROWSE_PAGE = 100_000  # a bound on the number, not on the data: offsets stay integers
CHOICES = {"attachments": ("yes", "no"), "withdrawn": ("yes", "no"), "per_campaign": ("1",),
           "sort": tuple(browsing.SORTS), "kind": tuple(search_arguments.KINDS),
           "position": search_arguments.POSITIONS}
FILTER_NAMES = ("docket", "from", "to", "org", "campaign", "topic", "position", "attachments", "withdrawn",
                *search_arguments.ATTRIBUTES)


class BadParameters(ValueError):
    """One or more values of the query string that cannot be used, each said in one line."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("; ".join(problems))
        self.problems = problems


MAX_PARAMETER_CHARS = 1000  # a value longer than any a page links to is not one to work with


def problems_of(params, path_params=None, known_ids: bool = True) -> list[str]:
    """What is wrong with a request's values, one line each (empty: nothing): the one check
    every page and feed goes through (``app.py`` runs it before any handler). Every value,
    the path's included, is bounded and holds no control character; a number is ASCII
    digits; a campaign, topic or docket filtered by is one this store knows."""
    values = list(params.multi_items() if hasattr(params, "multi_items") else params.items())
    values += list((path_params or {}).items())
    problems = _unusable_values(values)
    if problems:  # nothing else is read from values that cannot be compared or stored
        return problems
    days = {}
    for name in ("from", "to"):
        text = params.get(name, "").strip()
        if text:
            try:  # the one rule for a day searched by, the command line's too
                days[name] = date.fromisoformat(search_arguments.day(text, name))
            except BadSearch as exc:
                problems.append(f"{name}={text[:40]} is not a date to search by ({exc}; "
                                "give it as YYYY-MM-DD, US Eastern)")
    for name in search_arguments.ATTRIBUTES:
        try:
            search_arguments.attribute_text(name, params.get(name, ""))
        except BadSearch as exc:
            problems.append(f"{name}: {exc}")
    if len(days) == 2 and days["from"] > days["to"]:
        problems.append(f"from={days['from']} is after to={days['to']}: no day can match")
    page = params.get("page", "").strip()
    # ASCII digits only: str.isdigit() also says yes to "²" and "٣", which int() refuses.
    if page and (not (page.isascii() and page.isdigit()) or int(page[:9]) < 1):
        problems.append(f"page={page[:20]} is not a page number: give a whole number from 1")
    for name, allowed in CHOICES.items():
        value = params.get(name, "").strip()
        if value and value not in allowed:
            problems.append(f"{name}={value[:40]} is not one of: {', '.join(allowed)}")
    return problems + (_unknown_ids(params) if known_ids else [])


def _unusable_values(values: list[tuple[str, str]]) -> list[str]:
    problems = []
    for name, value in values:
        if search_arguments.CONTROL.search(name) or search_arguments.CONTROL.search(value):
            problems.append(f"{name[:40]!r} holds a control character (such as NUL): {value[:40]!r}")
        elif len(value) > MAX_PARAMETER_CHARS:
            problems.append(f"{name[:40]} is {len(value):,} characters long: at most {MAX_PARAMETER_CHARS:,}")
    return problems


def _unknown_ids(params) -> list[str]:
    """A filter by an id this store does not hold is said, never an empty or unfiltered list."""
    from pipeline.reading import campaigns, reports

    problems = []
    campaign = params.get("campaign", "").strip()
    if campaign and not campaigns.campaign_exists(campaign):
        problems.append(f"campaign={campaign[:100]}: no campaign with this id in this store")
    topic = params.get("topic", "").strip()
    if topic:
        try:
            search_arguments.topic(topic)
        except BadSearch as exc:
            problems.append(f"topic={topic[:100]}: {exc}")
    docket = params.get("docket", "").strip()
    if docket and reports.find_docket(docket) is None:
        problems.append(f"docket={docket[:100]}: no docket with this id in this store")
    return problems


def yes_no(value: str) -> bool | None:
    return {"yes": True, "no": False}.get(value)


@dataclass(frozen=True)
class BrowseForm:
    """The browse page's query string, checked (``parse`` raises ``BadParameters``)."""

    q: str = ""
    docket: str = ""
    date_from: str = ""
    date_to: str = ""
    org: str = ""
    campaign: str = ""
    topic: str = ""
    position: str = ""  # one of search_arguments.POSITIONS, or "" (any, or none yet)
    attachments: str = ""  # "yes", "no" or "" (either)
    withdrawn: str = ""
    sort: str = "newest"
    page: int = 1
    subtype: str = ""
    category: str = ""
    state: str = ""
    country: str = ""
    kind: str = ""  # what a search looks in (search_arguments.KINDS): kept for the search and its feed

    @classmethod
    def parse(cls, params) -> BrowseForm:
        problems = problems_of(params, known_ids=False)  # the ids: app.py's check of every request
        if problems:
            raise BadParameters(problems)
        return cls(q=params.get("q", "").strip()[:500], docket=params.get("docket", "").strip()[:100],
                   date_from=params.get("from", "").strip(), date_to=params.get("to", "").strip(),
                   org=params.get("org", "").strip()[:200], campaign=params.get("campaign", "").strip()[:100],
                   topic=params.get("topic", "").strip()[:120], position=params.get("position", "").strip(),
                   attachments=params.get("attachments", "").strip(), withdrawn=params.get("withdrawn", "").strip(),
                   sort=params.get("sort", "").strip() or "newest",
                   # Past the last page is an empty page; a number too long to be one is the bound.
                   page=min(MAX_BROWSE_PAGE, int(params.get("page", "").strip()[:9] or 1)),
                   kind="" if params.get("kind", "").strip() == "both" else params.get("kind", "").strip(),
                   **search_arguments.attribute_values(params))

    def filters(self) -> browsing.BrowseFilters:
        posted_from, posted_before = eastern_day_bounds(self.date_from or None, self.date_to or None)
        return browsing.BrowseFilters(
            docket=self.docket or None, organization=self.org or None, campaign=self.campaign or None,
            topic=self.topic or None, position=self.position or None, has_attachments=yes_no(self.attachments),
            withdrawn=yes_no(self.withdrawn),
            posted_from=posted_from, posted_before=posted_before,
            **{name: getattr(self, name) or None for name in search_arguments.ATTRIBUTES})

    def query_string(self, **changes) -> dict[str, str]:
        """This page's parameters with ``changes`` (a value of "" drops the parameter); a
        change of filter or order goes back to page 1."""
        values = {"q": self.q, "docket": self.docket, "from": self.date_from, "to": self.date_to,
                  "org": self.org, "campaign": self.campaign, "topic": self.topic, "position": self.position,
                  "attachments": self.attachments, "withdrawn": self.withdrawn,
                  "sort": "" if self.sort == "newest" else self.sort,
                  "page": "" if self.page == 1 else str(self.page),
                  **{name: getattr(self, name) for name in search_arguments.ATTRIBUTES}, "kind": self.kind}
        if "page" not in changes:
            values["page"] = ""
        values |= {k: str(v) for k, v in changes.items()}
        return {k: v for k, v in values.items() if v}

    @property
    def active(self) -> list[tuple[str, str, str]]:
        """(parameter, label, value) of every filter set: the page lists them, each removable."""
        labels = {"docket": "docket", "from": "from", "to": "to", "org": "organisation or name",
                  "campaign": "campaign", "topic": "topic", "position": "position", "attachments": "has attachments",
                  "withdrawn": "withdrawn", **search_arguments.ATTRIBUTES}
        values = self.query_string()
        return [(name, labels[name], values[name]) for name in FILTER_NAMES if name in values]


@dataclass
class BrowsePage:
    form: BrowseForm
    total: int
    rows: list[browsing.CommentRow]
    facets: browsing.Facets
    docket: object | None = None  # the docket's row when the page is one docket's

    @property
    def first(self) -> int:
        return (self.form.page - 1) * BROWSE_PAGE_SIZE + 1

    @property
    def last_page(self) -> int:
        return max(1, -(-self.total // BROWSE_PAGE_SIZE))


def browse_page(form: BrowseForm) -> BrowsePage:
    """One page of comments without a query: the total, the page's rows and the facets (a
    fixed number of statements whatever the data's size)."""
    from pipeline.reading import reports

    filters = form.filters()
    return BrowsePage(form, browsing.count(filters),
                      browsing.comments(filters, sort=form.sort, offset=(form.page - 1) * BROWSE_PAGE_SIZE,
                                        limit=BROWSE_PAGE_SIZE),
                      browsing.facets(filters), reports.find_docket(form.docket) if form.docket else None)


# --- the home page ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DocketLine:
    summary: browsing.DocketSummary
    per_day: list[tuple[str, int]]

    @property
    def sparkline(self):
        return plots.sparkline(self.per_day, label=f"comments per day, {self.summary.docket.id}")


HOME_PAGE_SIZE = 100


@dataclass
class HomePage:
    lines: list[DocketLine]
    page: int
    total: int

    @property
    def last_page(self) -> int:
        return max(1, -(-self.total // HOME_PAGE_SIZE))


def home_page(page: int = 1) -> HomePage:
    """One page of dockets (a store may know 100,000): each with its sparkline."""
    summaries = browsing.docket_summaries((page - 1) * HOME_PAGE_SIZE, HOME_PAGE_SIZE)
    return HomePage([DocketLine(s, plots.daily_series(pages.eastern_days(s.per_hour))) for s in summaries],
                    page, browsing.docket_count())


# --- a campaign --------------------------------------------------------------------------------


@dataclass
class CampaignPage:
    campaign: object  # the Campaign row
    representative_pages: list[tuple[int | None, str]]
    members: list[browsing.CampaignMemberRow]
    page: int
    added: dict[str, list[str]] = field(default_factory=dict)
    submissions: int = 0  # the members' records and the duplicates they stand for

    @property
    def first(self) -> int:
        return (self.page - 1) * MEMBERS_PAGE_SIZE + 1

    @property
    def last_page(self) -> int:
        return max(1, -(-self.campaign.size // MEMBERS_PAGE_SIZE))


def clean_pages(text: str) -> list[tuple[int | None, str]]:
    """A text with page markers as (page number or None before the first marker, its text):
    the pages show a break between pages, never the marker itself."""
    return comments.pages(text or "")


def campaign_page(campaign_id: str, page: int) -> CampaignPage | None:
    from pipeline.reading import campaigns

    found = campaigns.campaign_rows([campaign_id]).get(campaign_id)
    if found is None:
        return None
    representative = campaigns.members([found.representative]).get(found.representative)
    members = browsing.campaign_members(campaign_id, offset=(page - 1) * MEMBERS_PAGE_SIZE, limit=MEMBERS_PAGE_SIZE)
    added = {m.key: json.loads(m.added_sentences or "[]") for m in members}
    return CampaignPage(found, clean_pages(representative.text if representative else ""), members, page, added,
                        campaigns.submissions([campaign_id]).get(campaign_id, found.size))


# --- an organisation ---------------------------------------------------------------------------


@dataclass
class OrganisationPage:
    name: str
    dockets: list[tuple[str, int]]
    rows: list[browsing.CommentRow]
    page: int
    organisation_id: str | None = None  # resolved: every spelling of it; None: the name as written alone
    variants: list[tuple[str, int]] = field(default_factory=list)  # (as written, comments)

    @property
    def total(self) -> int:
        return sum(n for _, n in self.dockets)

    @property
    def query(self) -> str:
        """The page's own query string (``id=`` once resolved, else ``name=``)."""
        from urllib.parse import urlencode

        return urlencode({"id": self.organisation_id} if self.organisation_id else {"name": self.name})

    @property
    def last_page(self) -> int:
        return max(1, -(-self.total // BROWSE_PAGE_SIZE))

    def by_docket(self) -> list[tuple[str, list[browsing.CommentRow]]]:
        grouped: dict[str, list[browsing.CommentRow]] = {}
        for row in self.rows:
            grouped.setdefault(row.docket, []).append(row)
        return list(grouped.items())


def organisation_page(name: str, page: int) -> OrganisationPage | None:
    """The resolved organisation a name (any spelling seen) or an id stands for, with every
    comment resolved to it; a name the stage has not resolved: the comments written with it."""
    resolved = browsing.resolved_organisation(name)
    if resolved is not None:
        organisation, canonical = resolved
        rows = browsing.comments(browsing.BrowseFilters(organisation_id=organisation), sort="docket",
                                 offset=(page - 1) * BROWSE_PAGE_SIZE, limit=BROWSE_PAGE_SIZE)
        return OrganisationPage(canonical, browsing.resolved_organisation_dockets(organisation), rows, page,
                                organisation, browsing.organisation_variants(organisation))
    dockets = browsing.organisation_dockets(name)
    if not dockets:
        return None
    rows = browsing.comments(browsing.BrowseFilters(organization_exact=name), sort="docket",
                             offset=(page - 1) * BROWSE_PAGE_SIZE, limit=BROWSE_PAGE_SIZE)
    return OrganisationPage(name, dockets, rows, page)
