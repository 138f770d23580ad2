"""The one place the pages ask about campaigns (form-letter groups): the CampaignGroups
stage's rows, read through ``pipeline/campaigns/queries.py``. A store whose campaigns stage
has not run yet answers nothing, and the pages show no campaign parts."""

from __future__ import annotations

from pipeline.campaigns import queries as campaign_rows


def available() -> bool:
    """Whether this store has campaigns (the search page then offers the campaign filters)."""
    return campaign_rows.any_campaign()


def campaign_info(item_keys: list[str]) -> dict[str, dict]:
    """item key -> {"id", "size", "added"} of the campaign it belongs to (groups of one are
    not campaigns: such a comment has no entry)."""
    found = campaign_rows.memberships(item_keys)
    return {item: {"id": campaign, "size": size, "added": added}
            for item, (campaign, size, added) in found.items() if size > 1}


def campaign_members(campaign_id: str) -> list[str] | None:
    """The item keys of one campaign (the search page's campaign filter); None when unknown."""
    members = campaign_rows.members_of(campaign_id)
    return [m.item for m in members] or None


def largest_campaigns(docket_id: str, limit: int) -> list[dict]:
    """The docket's largest campaigns, largest first ({"id", "size", "representative"}: the
    representative's text)."""
    return [{"id": c.id, "size": c.size, "representative": c.representative_text}
            for c in campaign_rows.campaigns_of(docket_id, limit)]
