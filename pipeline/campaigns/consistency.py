"""What a docket's campaign rows must agree on while its campaigns marker says done
(``docketeer verify`` asks, the stage named on a mismatch): a member row for each comment
whose campaigns state is ``ok`` and none for another, each campaign's size its member
count, and each compared member's band rows as many as its banding has bands."""

from __future__ import annotations

from collections import Counter

from pipeline.store import item_states
from pipeline.store.models import Campaign, CampaignBand, CampaignMember

STAGE = "campaigns"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's campaign rows and its item states."""
    members = dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign)
                   .where(CampaignMember.docket == docket_id).tuples())
    found = item_states.ok_without_rows(STAGE, docket_id, set(members), "campaigns state ok but no campaign membership",
                                        "a campaign membership without a campaigns state ok")
    sizes = Counter(members.values())
    campaigns = dict(Campaign.select(Campaign.id, Campaign.size).where(Campaign.docket == docket_id).tuples())
    found += [f"campaign {c}: size {campaigns[c]} but {sizes.get(c, 0)} member(s)"
              for c in sorted(campaigns) if campaigns[c] != sizes.get(c, 0)]
    found += [f"campaign {c}: {n} member(s) but no campaign row" for c, n in sorted(sizes.items()) if c not in campaigns]
    found += _band_problems(docket_id)
    return found


def _band_problems(docket_id: str) -> list[str]:
    banded = dict(CampaignMember.select(CampaignMember.item, CampaignMember.banding)
                  .where((CampaignMember.docket == docket_id) & CampaignMember.banding.is_null(False)).tuples())
    rows = Counter(item for (item,) in CampaignBand.select(CampaignBand.item)
                   .where(CampaignBand.docket == docket_id).tuples())
    found = [f"{item}: {rows.get(item, 0)} band row(s), its banding {made_with} has {_bands(made_with)}"
             for item, made_with in sorted(banded.items()) if rows.get(item, 0) != _bands(made_with)]
    found += [f"{item}: {n} band row(s) but no compared member" for item, n in sorted(rows.items()) if item not in banded]
    return found


def _bands(made_with: str) -> int:
    return int(made_with.split("x", 1)[0])
