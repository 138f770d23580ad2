"""The organisations as people read them, from the organisations stage's rows: every
organisation with its comments, spellings and where its name came from (``docketeer orgs``),
the form-letter campaigns its comments joined, and each comment's resolved organisations
(the export)."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from peewee import fn

from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import Organisation, OrganisationMember


@dataclass(frozen=True)
class OrganisationSummary:
    id: str
    name: str
    comments: int
    dockets: list[str]
    variants: list[tuple[str, int]]  # (as written, comments), commonest first
    # (source: organization | title | signature, the line read as written, comments): where
    # the name came from, the record's field first, then the commonest guess.
    origins: list[tuple[str, str | None, int]] = ()


SOURCE_ORDER = {"organization": 0, "title": 1, "signature": 2}


def organisations_summary(docket_id: str | None = None) -> list[OrganisationSummary]:
    """Every organisation with comments (in ``docket_id`` alone when given), most comments first."""
    query = (OrganisationMember.select(OrganisationMember.organisation, OrganisationMember.docket,
                                       OrganisationMember.written, OrganisationMember.source,
                                       OrganisationMember.evidence, fn.COUNT(OrganisationMember.item.distinct()))
             .group_by(OrganisationMember.organisation, OrganisationMember.docket, OrganisationMember.written,
                       OrganisationMember.source, OrganisationMember.evidence))
    if docket_id:
        query = query.where(OrganisationMember.docket == docket_id)
    counts: dict[str, dict] = {}
    for org, docket, written, source, evidence, n in query.tuples():
        entry = counts.setdefault(org, {"comments": 0, "dockets": set(), "variants": {}, "origins": {}})
        entry["comments"] += n
        entry["dockets"].add(docket)
        entry["variants"][written] = entry["variants"].get(written, 0) + n
        entry["origins"][(source, evidence)] = entry["origins"].get((source, evidence), 0) + n
    names = organisation_names(counts)
    found = [OrganisationSummary(org, names.get(org, org), e["comments"], sorted(e["dockets"]),
                                 sorted(e["variants"].items(), key=lambda v: (-v[1], v[0])),
                                 [(source, evidence, n) for (source, evidence), n in sorted(
                                     e["origins"].items(),
                                     key=lambda o: (SOURCE_ORDER.get(o[0][0], 3), -o[1], o[0][1] or ""))])
             for org, e in counts.items()]
    return sorted(found, key=lambda s: (-s.comments, s.name.lower(), s.id))


def organisation_names(organisations: Iterable[str]) -> dict[str, str]:
    found: dict[str, str] = {}
    for chunk in _chunks(sorted(set(organisations))):
        found.update(Organisation.select(Organisation.id, Organisation.name).where(Organisation.id.in_(chunk)).tuples())
    return found


def campaigns_joined(organisations: Iterable[str]) -> dict[str, int]:
    """organisation -> the form-letter campaigns (groups of two or more) its comments are in."""
    from pipeline.store.models import Campaign, CampaignMember

    found: dict[str, int] = {}
    for chunk in _chunks(sorted(set(organisations))):
        query = (OrganisationMember.select(OrganisationMember.organisation, fn.COUNT(Campaign.id.distinct()))
                 .join(CampaignMember, on=(CampaignMember.item == OrganisationMember.item))
                 .join(Campaign, on=(Campaign.id == CampaignMember.campaign))
                 .where(OrganisationMember.organisation.in_(chunk) & (Campaign.size >= 2))
                 .group_by(OrganisationMember.organisation).tuples())
        found.update(query)
    return found


def docket_organisations(docket_id: str) -> dict[str, list[tuple[str, str]]]:
    """item -> [(organisation id, canonical name), ...] in field order, for the docket's
    resolved comments (export)."""
    query = (OrganisationMember.select(OrganisationMember.item, Organisation.id, Organisation.name)
             .join(Organisation, on=(Organisation.id == OrganisationMember.organisation))
             .where(OrganisationMember.docket == docket_id)
             .order_by(OrganisationMember.item, OrganisationMember.position).tuples())
    found: dict[str, list[tuple[str, str]]] = {}
    for item, org, name in query:
        found.setdefault(item, []).append((org, name))
    return found
