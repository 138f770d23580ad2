"""The one place the pages ask about campaigns (form-letter groups).

The CampaignGroups stage (``pipeline/store/campaigns.py``) is built on another branch; until
it is merged, or in a store where its table does not exist yet, these answer nothing and the
pages show no campaign column. After the merge, these four functions are the only wiring.
"""

from __future__ import annotations


def available() -> bool:
    """Whether this store has campaigns (the search page then offers the campaign filters)."""
    return False


def campaign_info(item_keys: list[str]) -> dict[str, dict]:
    """item key -> {"id", "size", ...} of the campaign it belongs to; {} without campaigns."""
    return {}


def campaign_members(campaign_id: str) -> list[str] | None:
    """The item keys of one campaign (the search page's campaign filter); None without campaigns."""
    return None


def largest_campaigns(docket_id: str, limit: int) -> list[dict]:
    """The docket's largest campaigns ({"id", "size", "representative"}); [] without campaigns."""
    return []
