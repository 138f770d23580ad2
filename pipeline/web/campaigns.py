"""The one place the pages ask about campaigns (form-letter groups).

The CampaignGroups stage (``pipeline/store/campaigns.py``) is built on another branch; until
it is merged, or in a store where its table does not exist yet, these answer nothing and the
pages show no campaign column. After the merge, these two functions are the only wiring.
"""

from __future__ import annotations


def campaign_info(item_keys: list[str]) -> dict[str, dict]:
    """item key -> {"id", "size", ...} of the campaign it belongs to; {} without campaigns."""
    return {}


def largest_campaigns(docket_id: str, limit: int) -> list[dict]:
    """The docket's largest campaigns ({"id", "size", "representative"}); [] without campaigns."""
    return []
