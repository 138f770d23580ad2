"""The read queries behind browsing without a query (``docketeer serve``'s home page, a
docket's comments, facets, campaign and organisation pages, feeds): each a fixed number of
statements per page, never one per row, and every page bounded by a limit.

Filters are the ones the search page takes (docket, Eastern days, organisation, campaign, topic,
position, the record's attributes) plus two the state DB alone knows (has attachments,
withdrawn); every value is a bound parameter.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from peewee import JOIN, Case, Value, fn

from pipeline.positions import POSITIONS
from pipeline.reading import organisation_filter, reports
from pipeline.store.models import (
    Attachment,
    Campaign,
    CampaignMember,
    Docket,
    Item,
    Organisation,
    OrganisationMember,
    OrganisationVariant,
    PositionMember,
    Topic,
    TopicMember,
)

IN_CHUNK = 500  # keys per IN (...) list: SQLite allows 999 parameters per statement
SORTS = {  # the name in the URL -> how the page says it (ties broken by the comment's id)
    "newest": "newest first",
    "oldest": "oldest first",
    "organisation": "by organisation, A to Z",
    "campaign": "largest campaign first",
}


# The record's kept attributes people narrow by: the filter's name -> its column.
ATTRIBUTES = {"subtype": Item.subtype, "category": Item.category, "state": Item.state_province_region,
              "country": Item.country}


@dataclass(frozen=True)
class BrowseFilters:
    docket: str | None = None
    # A part of the organisation or submitter name, any case, or of a resolved organisation's
    # names (``organisation_filter``).
    organization: str | None = None
    organization_exact: str | None = None  # exactly this name as written (a name not resolved)
    organisation_id: str | None = None  # the resolved organisation, in any spelling (its page)
    campaign: str | None = None
    topic: str | None = None  # comments on this topic of the docket's topic map (any of theirs)
    # comments the positions stage placed in this position (one not placed yet matches none)
    position: str | None = None
    has_attachments: bool | None = None
    withdrawn: bool | None = None
    posted_from: str | None = None  # UTC instant, inclusive
    posted_before: str | None = None  # UTC instant, exclusive
    changed_since: str | None = None  # updated_at at or after this UTC instant (feeds)
    # The kept attributes of a record, each matched exactly as the facet counts it.
    subtype: str | None = None
    category: str | None = None
    state: str | None = None  # stateProvinceRegion
    country: str | None = None
    # The kinds of item listed: comments (every page's lists); a search's feed lists the
    # documents its search found beside them.
    kinds: tuple[str, ...] = ("comment",)


@dataclass(frozen=True)
class CommentRow:
    key: str
    docket: str
    title: str | None
    posted_date: str | None
    submitter: str | None
    organization: str | None
    withdrawn: bool
    updated_at: str
    body: str | None
    campaign: str | None  # None, or a campaign of at least two comments
    campaign_size: int
    attachments: int = 0
    kind: str = "comment"  # or "document": a search's feed lists both


def _has_attachments():
    return fn.EXISTS(Attachment.select(Attachment.id).where(Attachment.item == Item.key))


def _filtered(query, filters: BrowseFilters):
    """``query`` (over Item joined to its campaign) narrowed to the comments ``filters`` allow."""
    kinds = filters.kinds
    query = query.where(Item.kind == kinds[0] if len(kinds) == 1 else Item.kind.in_(kinds))
    if filters.docket:
        query = query.where(Item.docket == filters.docket)
    if filters.organization:
        query = query.where(organisation_filter.matches(filters.organization))
    if filters.organization_exact:
        query = query.where(Item.organization == filters.organization_exact)
    if filters.organisation_id:
        query = query.where(Item.key.in_(OrganisationMember.select(OrganisationMember.item)
                                         .where(OrganisationMember.organisation == filters.organisation_id)))
    if filters.campaign:
        query = query.where(CampaignMember.campaign == filters.campaign)
    if filters.topic:
        query = query.where(Item.key.in_(TopicMember.select(TopicMember.item).where(_on_topic(filters.topic))))
    if filters.position:
        query = query.where(Item.key.in_(PositionMember.select(PositionMember.item)
                                         .where(PositionMember.position == filters.position)))
    if filters.has_attachments is not None:
        exists = _has_attachments()
        query = query.where(exists if filters.has_attachments else ~exists)
    if filters.withdrawn is not None:
        query = query.where(Item.withdrawn == filters.withdrawn)
    if filters.posted_from:
        query = query.where(Item.posted_date >= filters.posted_from)
    if filters.posted_before:
        query = query.where(Item.posted_date < filters.posted_before)
    if filters.changed_since:
        query = query.where(Item.updated_at >= filters.changed_since)
    for name, column in ATTRIBUTES.items():
        if getattr(filters, name):
            query = query.where(column == getattr(filters, name))
    return query


def _on_topic(topic_id: str):
    """A ``topic_member`` row of a comment on this topic: its main one or any of its others
    (the JSON list holds each id in quotes, so ``t1`` never matches ``t12``)."""
    return (TopicMember.topic == topic_id) | TopicMember.topics.contains(f'"{topic_id}"')


def _joined(*columns, campaigns: bool = True):
    """Item rows with their campaign (``campaigns``), or alone: a count or a facet that neither
    filters nor groups by campaign skips two joins over the whole docket."""
    query = Item.select(*columns)
    if campaigns:
        query = (query.join(CampaignMember, JOIN.LEFT_OUTER, on=(CampaignMember.item == Item.key))
                 .join(Campaign, JOIN.LEFT_OUTER, on=(Campaign.id == CampaignMember.campaign)))
    return query


def count(filters: BrowseFilters) -> int:
    return _filtered(_joined(fn.COUNT(Item.key), campaigns=bool(filters.campaign)), filters).scalar() or 0


def _order(sort: str) -> list:
    size = fn.COALESCE(Campaign.size, 1)
    posted = fn.COALESCE(Item.posted_date, "")
    return {
        "newest": [posted.desc(), Item.key.desc()],
        "oldest": [posted.asc(), Item.key.asc()],
        # Comments without an organisation after the named ones.
        "organisation": [Case(None, [(Item.organization.is_null() | (Item.organization == ""), 1)], 0),
                         fn.LOWER(fn.COALESCE(Item.organization, "")), Item.key],
        "campaign": [size.desc(), fn.COALESCE(Campaign.id, ""), Item.key],
        # Not offered in the URL: an organisation's page (by docket) and the feeds (latest change).
        "docket": [Item.docket, posted.desc(), Item.key.desc()],
        "updated": [Item.updated_at.desc(), Item.key.desc()],
    }[sort]


def comments(filters: BrowseFilters, *, sort: str = "newest", offset: int = 0, limit: int = 50,
             keys: list[str] | None = None) -> list[CommentRow]:
    """One page of the comments ``filters`` allow, in ``sort`` order: three statements (the
    page's keys, sorted over narrow columns only; their rows; their attachment counts), so a
    deep page sorts keys, not every comment's text."""
    needs_campaign = bool(filters.campaign) or sort == "campaign"
    query = _filtered(_joined(Item.key, campaigns=needs_campaign), filters)
    if keys is not None:  # only these (at most IN_CHUNK: a search's hits)
        query = query.where(Item.key.in_(keys))
    page = [key for (key,) in query.order_by(*_order(sort)).offset(offset).limit(limit).tuples()]
    if not page:
        return []
    size = fn.COALESCE(Campaign.size, 1)
    found = {row[0]: row for row in _joined(
        Item.key, Item.docket, Item.title, Item.posted_date, Item.submitter, Item.organization, Item.withdrawn,
        Item.updated_at, Item.body, Campaign.id, size, Item.kind).where(Item.key.in_(page)).tuples()}
    counts = attachment_counts(page)
    rows = []
    for key in page:
        _, docket, title, posted_date, submitter, org, withdrawn, updated, body, campaign, n, kind = found[key]
        rows.append(CommentRow(key, docket, title, posted_date, submitter, org, bool(withdrawn), updated, body,
                               campaign if (campaign and n > 1) else None, n, counts.get(key, 0), kind))
    return rows


def attachment_counts(keys: Iterable[str]) -> dict[str, int]:
    found: dict[str, int] = {}
    keys = list(keys)
    for start in range(0, len(keys), IN_CHUNK):
        chunk = keys[start:start + IN_CHUNK]
        found.update(Attachment.select(Attachment.item, fn.COUNT(Attachment.id))
                     .where(Attachment.item.in_(chunk)).group_by(Attachment.item).tuples())
    return found


def matching_keys(filters: BrowseFilters) -> list[str]:
    """The keys of every comment ``filters`` allow: what a search is narrowed to when a filter
    only the state DB knows (attachments, withdrawn) is asked with a query."""
    return [key for (key,) in _filtered(_joined(Item.key, campaigns=bool(filters.campaign)), filters).tuples()]


SHORT_LIST = 1000  # keys: a narrowing this short is sent as it is, whatever the docket's size


def narrowing(filters: BrowseFilters) -> tuple[list[str] | None, list[str] | None]:
    """What a search (of comments) is narrowed to when a filter only the state DB knows is
    asked: (only these keys, None) or, when that is the longer list, (None, every comment but
    these keys) — among the docket's comments when ``filters`` name a docket, else the store's."""
    matched = matching_keys(filters)
    if len(matched) <= SHORT_LIST:
        return matched, None
    allowed = set(matched)
    scope = Item.select(Item.key).where(Item.kind == "comment")
    if filters.docket:
        scope = scope.where(Item.docket == filters.docket)
    others = [key for (key,) in scope.tuples() if key not in allowed]
    return (None, others) if len(others) < len(matched) else (matched, None)


@dataclass(frozen=True)
class Facets:
    organizations: list[tuple[str, int]]
    campaigns: list[tuple[str, int, int]]  # (campaign id, comments here, its size)
    attachments: dict[bool, int]
    withdrawn: dict[bool, int]
    # ATTRIBUTES' name -> (value, comments), the most frequent first
    attributes: dict[str, list[tuple[str, int]]] = field(default_factory=dict)
    topics: list[TopicCount] = field(default_factory=list)  # the most comments first
    positions: list[tuple[str, int]] = field(default_factory=list)  # (position, comments), POSITIONS' order
    not_estimated: int = 0  # comments the positions stage has not placed: no position filter matches them


@dataclass(frozen=True)
class TopicCount:
    id: str
    label: str
    comments: int  # comments the ``topic`` filter with this topic matches (any of theirs)


def facets(filters: BrowseFilters, limit: int = 10) -> Facets:
    """Counts of the values of each facet among the comments ``filters`` allow (ten
    statements, grouped counts all), the most frequent first.

    The organisation facet counts what its link asks for: a value's count is the number of
    comments the ``org`` filter with that value matches (a part of the organisation or the
    submitter's name, any case, or of a name of the organisation the comment was resolved to:
    ``organisation_filter``), so clicking it shows that many comments. The names counted
    are the organisations as written, the most frequent first."""
    n = fn.COUNT(Item.key)
    alone = bool(filters.campaign)  # campaign joins only when the campaign filter needs them
    names = [name for name, _ in (_filtered(_joined(Item.organization, n, campaigns=alone), filters)
                                  .where(Item.organization.is_null(False) & (Item.organization != ""))
                                  .group_by(Item.organization).order_by(n.desc(), Item.organization)
                                  .limit(limit).tuples())]
    orgs = organisation_counts(filters, names)
    attributes = attribute_counts(filters, limit)
    groups = (_filtered(_joined(Campaign.id, Campaign.size, n), filters)
              .where(Campaign.size > 1)
              .group_by(Campaign.id, Campaign.size).order_by(n.desc(), Campaign.size.desc(), Campaign.id)
              .limit(limit).tuples())
    has = Case(None, [(_has_attachments(), 1)], 0)
    attached = _filtered(_joined(has, n, campaigns=alone), filters).group_by(has).tuples()
    withdrawn = _filtered(_joined(Item.withdrawn, n, campaigns=alone), filters).group_by(Item.withdrawn).tuples()
    return Facets(orgs, [(c, k, size) for c, size, k in groups],
                  {bool(v): k for v, k in attached}, {bool(v): k for v, k in withdrawn}, attributes,
                  topic_counts(filters, limit), *position_counts(filters))


def position_counts(filters: BrowseFilters) -> tuple[list[tuple[str, int]], int]:
    """((position, comments), in POSITIONS' order, those with any) and the comments without a
    position (the stage not run on their docket, or not estimated yet) among the comments
    ``filters`` allow: one grouped count over their rows joined to their positions, if any."""
    n = fn.COUNT(Item.key)
    query = _joined(PositionMember.position, n, campaigns=bool(filters.campaign)).switch(Item).join(
        PositionMember, JOIN.LEFT_OUTER, on=(PositionMember.item == Item.key))
    found = dict(_filtered(query, filters).group_by(PositionMember.position).tuples())
    not_estimated = found.pop(None, 0)
    order = {position: rank for rank, position in enumerate(POSITIONS)}
    return sorted(found.items(), key=lambda pk: (order.get(pk[0], len(order)), pk[0])), not_estimated


TOPIC_CANDIDATES = 3  # times the facet's length: main topics ranked before each one is counted


def topic_counts(filters: BrowseFilters, limit: int = 10) -> list[TopicCount]:
    """The topics of the comments ``filters`` allow, each with the comments its link shows
    (the ``topic`` filter matches a comment's main topic or any of its others), the most
    first: three statements. Candidates are ranked by main topic (one grouped count), then
    each is counted as the filter matches (one conditional count per candidate), so a topic
    many comments touch but few have as their main one still gets its true count."""
    alone = bool(filters.campaign)
    n = fn.COUNT(Item.key)
    member = _joined(TopicMember.topic, n, campaigns=alone).switch(Item).join(
        TopicMember, on=(TopicMember.item == Item.key))
    candidates = [topic for topic, _ in (_filtered(member, filters).where(TopicMember.topic.is_null(False))
                                         .group_by(TopicMember.topic).order_by(n.desc(), TopicMember.topic)
                                         .limit(limit * TOPIC_CANDIDATES).tuples())]
    if not candidates:
        return []
    matched = [fn.SUM(Case(None, [(_on_topic(topic), 1)], 0)) for topic in candidates]
    row = _filtered(_joined(*matched, campaigns=alone).switch(Item).join(
        TopicMember, on=(TopicMember.item == Item.key)), filters).tuples().first() or [0] * len(candidates)
    labels = dict(Topic.select(Topic.id, Topic.label).where(Topic.id.in_(candidates)).tuples())
    counts = [TopicCount(topic, labels.get(topic, ""), int(k or 0)) for topic, k in zip(candidates, row, strict=True)]
    return sorted((c for c in counts if c.comments), key=lambda c: (-c.comments, c.id))[:limit]


def attribute_counts(filters: BrowseFilters, limit: int = 10) -> dict[str, list[tuple[str, int]]]:
    """ATTRIBUTES' name -> (value, comments), the ``limit`` most frequent first: one statement
    (a grouped count per attribute, joined by UNION ALL; each has a few hundred values at most:
    states, countries, a docket's subtypes and categories)."""
    n = fn.COUNT(Item.key)
    alone = bool(filters.campaign)
    parts = [_filtered(_joined(Value(name).alias("name"), column.alias("value"), n.alias("n"), campaigns=alone), filters)
             .where(column.is_null(False) & (column != "")).group_by(column)
             for name, column in ATTRIBUTES.items()]
    union = parts[0]
    for part in parts[1:]:
        union = union + part  # UNION ALL
    found: dict[str, list[tuple[str, int]]] = {name: [] for name in ATTRIBUTES}
    for name, value, k in union.tuples():
        found[name].append((value, k))
    return {name: sorted(values, key=lambda vk: (-vk[1], vk[0]))[:limit] for name, values in found.items()}


def organisation_counts(filters: BrowseFilters, names: list[str]) -> list[tuple[str, int]]:
    """(name, comments the ``org`` filter matches with it added to ``filters``), the most
    first (one statement: a conditional count per name)."""
    if not names:
        return []
    matched = [fn.SUM(Case(None, [(organisation_filter.matches(name), 1)], 0)) for name in names]
    row = _filtered(_joined(*matched, campaigns=bool(filters.campaign)), filters).tuples().first()
    counts = [(name, int(k or 0)) for name, k in zip(names, row or [0] * len(names), strict=True)]
    return sorted(counts, key=lambda nk: (-nk[1], nk[0]))


# --- the home page ---------------------------------------------------------------------------


@dataclass(frozen=True)
class DocketSummary:
    docket: Docket
    comments: int
    last_update: str | None  # the latest change to any of its comments' rows
    per_hour: dict[str, int]  # 'YYYY-MM-DDTHH' (UTC) -> comments posted


def docket_count() -> int:
    return reports.docket_count()


def docket_summaries(offset: int = 0, limit: int = 100) -> list[DocketSummary]:
    """One page of dockets (in id order) with each one's comment count, latest change and
    posting hours: three statements whatever the number of dockets."""
    dockets = reports.docket_page(offset, limit)
    ids = [d.id for d in dockets]
    if not ids:
        return []
    n = fn.COUNT(Item.key)
    comments_of = (Item.kind == "comment") & Item.docket.in_(ids)
    totals = {d: (k, last) for d, k, last in Item.select(Item.docket, n, fn.MAX(Item.updated_at))
              .where(comments_of).group_by(Item.docket).tuples()}
    hour = fn.SUBSTR(Item.posted_date, 1, 13)
    hours: dict[str, dict[str, int]] = {}
    for docket, at, k in (Item.select(Item.docket, hour, n)
                          .where(comments_of & Item.posted_date.is_null(False))
                          .group_by(Item.docket, hour).tuples()):
        hours.setdefault(docket, {})[at] = k
    return [DocketSummary(d, totals.get(d.id, (0, None))[0], totals.get(d.id, (0, None))[1], hours.get(d.id, {}))
            for d in dockets]


# --- an organisation ----------------------------------------------------------------------------


def resolved_organisation(name_or_id: str) -> tuple[str, str] | None:
    """(id, canonical name) of the organisation an id or a name in any spelling it was seen
    with stands for; None when the organisations stage has not met it."""
    from pipeline.organisations.names import normalise

    found = Organisation.get_or_none(Organisation.id == name_or_id)
    if found is None:
        variant = OrganisationVariant.get_or_none(OrganisationVariant.normalised == normalise(name_or_id))
        found = Organisation.get_or_none(Organisation.id == variant.organisation) if variant else None
    return (found.id, found.name) if found else None


def resolved_organisation_dockets(organisation: str) -> list[tuple[str, int]]:
    """(docket, comments) of one resolved organisation, dockets in id order."""
    n = fn.COUNT(OrganisationMember.item.distinct())
    return list(OrganisationMember.select(OrganisationMember.docket, n)
                .where(OrganisationMember.organisation == organisation)
                .group_by(OrganisationMember.docket).order_by(OrganisationMember.docket).tuples())


def organisation_variants(organisation: str) -> list[tuple[str, int]]:
    """(as written, comments) of one resolved organisation, commonest first."""
    n = fn.COUNT(OrganisationMember.item.distinct())
    rows = (OrganisationMember.select(OrganisationMember.written, n)
            .where(OrganisationMember.organisation == organisation)
            .group_by(OrganisationMember.written).tuples())
    return sorted(rows, key=lambda r: (-r[1], r[0]))


def organisation_dockets(name: str) -> list[tuple[str, int]]:
    """(docket, comments) of one organisation (exact name), dockets in id order."""
    n = fn.COUNT(Item.key)
    return list(Item.select(Item.docket, n)
                .where((Item.kind == "comment") & (Item.organization == name))
                .group_by(Item.docket).order_by(Item.docket).tuples())


# --- a campaign ----------------------------------------------------------------------------------


@dataclass(frozen=True)
class CampaignMemberRow:
    key: str
    posted_date: str | None
    submitter: str | None
    organization: str | None
    withdrawn: bool
    added_sentences: str | None  # JSON list, as stored


def campaign_members(campaign_id: str, *, offset: int, limit: int) -> list[CampaignMemberRow]:
    """One page of a campaign's members, earliest first (one statement)."""
    query = (CampaignMember.select(CampaignMember.item, CampaignMember.posted_date, Item.submitter,
                                   Item.organization, Item.withdrawn, CampaignMember.added_sentences)
             .join(Item, JOIN.LEFT_OUTER, on=(Item.key == CampaignMember.item))
             .where(CampaignMember.campaign == campaign_id)
             .order_by(CampaignMember.order_key).offset(offset).limit(limit).tuples())
    return [CampaignMemberRow(key, posted, who, org, bool(withdrawn), added)
            for key, posted, who, org, withdrawn, added in query]


# --- feeds and the digest ---------------------------------------------------------------------


def rows_of_keys(keys: list[str], *, limit: int) -> list[CommentRow]:
    """Of these items (a search's hits: comments, documents or both, as it searched), the
    ``limit`` added or changed last (a search's feed), latest first."""
    rows: list[CommentRow] = []
    every_kind = BrowseFilters(kinds=("comment", "document"))
    for start in range(0, len(keys), IN_CHUNK):
        chunk = keys[start:start + IN_CHUNK]
        rows += comments(every_kind, sort="updated", limit=limit, keys=chunk)
    return sorted(rows, key=lambda r: (r.updated_at, r.key), reverse=True)[:limit]


def changed_counts(since: str, dockets: list[str] | None) -> list[tuple[str, int]]:
    """(docket, comments added or changed at or after ``since``), dockets with any, in id order."""
    n = fn.COUNT(Item.key)
    query = Item.select(Item.docket, n).where((Item.kind == "comment") & (Item.updated_at >= since))
    if dockets:
        query = query.where(Item.docket.in_(dockets))
    return list(query.group_by(Item.docket).order_by(Item.docket).tuples())


# --- failures and waiting work -------------------------------------------------------------------

# States that end an item's stage without its result (permanent until Redrive or a version
# bump), and states in which it waits for later work.
FAILED_STATES = ("failed", "gone", "too_large", "unsupported")
WAITING_STATES = ("retry", "pending", "stale", "ocr_needed")


@dataclass(frozen=True)
class ProblemGroup:
    docket: str
    stage: str
    state: str
    reason: str
    count: int
    example: str  # one of its items (the first by key): the page links it
    next_attempt_at: str | None


def problems(docket_id: str | None = None, limit: int = 200, dockets: list[str] | None = None) -> list[ProblemGroup]:
    """Rows that failed or wait, per docket, stage, state and reason, with a count and an
    example (one grouped statement, and one for the scans; the most frequent first, at most
    ``limit`` groups), of one docket, of these (a page of them), or of all."""
    if docket_id is not None:
        dockets = [docket_id]
    from pipeline.store.models import ItemState

    reason = fn.COALESCE(ItemState.reason, "")
    n = fn.COUNT(ItemState.item)
    others = tuple(state for state in FAILED_STATES + WAITING_STATES if state != reports.OCR_NEEDED)
    query = (ItemState.select(ItemState.docket, ItemState.stage, ItemState.state, reason, n, fn.MIN(ItemState.item),
                              fn.MIN(ItemState.next_attempt_at))
             .where(ItemState.state.in_(others)))
    if dockets is not None:
        query = query.where(ItemState.docket.in_(list(dockets)))
    query = (query.group_by(ItemState.docket, ItemState.stage, ItemState.state, reason)
             .order_by(ItemState.docket, n.desc(), ItemState.stage, ItemState.state, reason).limit(limit))
    groups = [ProblemGroup(*row) for row in query.tuples()] + _waiting_for_ocr(dockets)
    return sorted(groups, key=lambda g: (g.docket, -g.count, g.stage, g.state, g.reason))[:limit]


def _waiting_for_ocr(dockets: list[str] | None) -> list[ProblemGroup]:
    """The ``ocr_needed`` groups: extract rows left so whose scans OCR has not read yet (a scan
    OCR read waits no more, ``reports.read_by_ocr``)."""
    from pipeline.store.models import ItemState

    read = reports.read_by_ocr(dockets=dockets)
    query = ItemState.select(ItemState.docket, ItemState.stage, ItemState.item, ItemState.reason).where(
        ItemState.state == reports.OCR_NEEDED)
    if dockets is not None:
        query = query.where(ItemState.docket.in_(list(dockets)))
    groups: dict[tuple[str, str, str], list[str]] = {}
    for docket, stage, item, why in query.tuples():
        if (stage, item) not in read:
            groups.setdefault((docket, stage, why or ""), []).append(item)
    return [ProblemGroup(docket, stage, reports.OCR_NEEDED, why, len(items), min(items), None)
            for (docket, stage, why), items in groups.items()]
