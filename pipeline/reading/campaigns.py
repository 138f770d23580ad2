"""The one place the pages and the export ask about campaigns (form-letter groups): the
CampaignGroups stage's rows, read through ``pipeline/campaigns/queries.py``. A store whose
campaigns stage has not run yet answers nothing, and the pages show no campaign parts."""

from __future__ import annotations

from pipeline.campaigns import queries
from pipeline.campaigns.queries import (
    campaign_rows,
    campaigns_of,
    docket_campaigns,
    docket_membership,
    group_facts,
    members,
    submissions,
)

__all__ = ["available", "campaign_exists", "campaign_info", "campaign_members", "campaign_rows", "campaigns_of",
           "docket_campaigns", "docket_membership", "group_facts", "largest_campaigns", "members", "opening", "submissions"]


def available() -> bool:
    """Whether this store has campaigns (the search page then offers the campaign filters)."""
    return queries.any_campaign()


def campaign_info(item_keys: list[str]) -> dict[str, dict]:
    """item key -> {"id", "size", "submissions", "added"} of the campaign it belongs to
    (groups of one are not campaigns: such a comment has no entry)."""
    found = {item: row for item, row in queries.memberships(item_keys).items() if row[1] > 1}
    represented = queries.submissions(campaign for campaign, _, _ in found.values())
    return {item: {"id": campaign, "size": size, "submissions": represented.get(campaign, size), "added": added}
            for item, (campaign, size, added) in found.items()}


def campaign_exists(campaign_id: str) -> bool:
    """Whether this store holds the campaign (a filter by an unknown one is said, with 400)."""
    return campaign_id in queries.campaign_rows([campaign_id])


def campaign_members(campaign_id: str) -> list[str] | None:
    """The item keys of one campaign (the search page's campaign filter); None when unknown."""
    return [m.item for m in queries.members_of(campaign_id)] or None


def largest_campaigns(docket_id: str, limit: int) -> list[dict]:
    """The docket's largest campaigns, largest first ({"id", "size", "submissions",
    "first_seen", "last_seen", "opening"}: the start of the representative's text, page markers
    taken out: the campaign's own page shows it whole)."""
    found = queries.campaigns_of(docket_id, limit)
    represented = queries.submissions(c.id for c in found)
    return [{"id": c.id, "size": c.size, "submissions": represented.get(c.id, c.size), "first_seen": c.first_seen,
             "last_seen": c.last_seen, "opening": opening(c.representative_text)} for c in found]


OPENING_CHARS = 240


def opening(text: str) -> str:
    """The first words of a text, its page markers and line breaks folded into spaces."""
    from pipeline.index.chunking import PAGE_MARKER

    flat = " ".join(PAGE_MARKER.sub(" ", text or "").split())
    return flat if len(flat) <= OPENING_CHARS else flat[:OPENING_CHARS].rsplit(" ", 1)[0] + " …"
