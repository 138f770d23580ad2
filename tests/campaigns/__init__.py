"""The campaign tests: the text rules, grouping, placement, and the CampaignGroups task (also on the real dockets)."""
