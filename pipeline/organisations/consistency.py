"""What a docket's organisation rows must agree on while its organisations marker says done
(``docketeer verify`` asks): member rows for each comment whose organisations state is
``ok`` and none for another, each naming a stored organisation."""

from __future__ import annotations

from pipeline.store import item_states
from pipeline.store.models import Organisation, OrganisationMember

STAGE = "organisations"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's organisation rows and its item states."""
    rows = list(OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation)
                .where(OrganisationMember.docket == docket_id).tuples())
    found = item_states.ok_without_rows(STAGE, docket_id, {item for item, _ in rows},
                                        "organisations state ok but no organisation row",
                                        "organisation rows without an organisations state ok")
    wanted = sorted({org for _, org in rows})
    known = {org for (org,) in Organisation.select(Organisation.id).where(Organisation.id.in_(wanted)).tuples()}
    found += [f"organisation {org}: named by a member, not stored" for org in wanted if org not in known]
    return found
