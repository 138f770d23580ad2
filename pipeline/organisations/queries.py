"""Every query of the organisation tables (``organisation``, ``organisation_variant``,
``organisation_member``, ``organisation_acronym``) that the stage reads and writes. What
people read of them is ``pipeline/reading/organisations.py``."""

from __future__ import annotations

from collections.abc import Iterable

from pipeline.counters import ROWS_WRITTEN, counters
from pipeline.organisations.matching import Known
from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import (
    Item,
    Organisation,
    OrganisationAcronym,
    OrganisationMember,
    OrganisationVariant,
    database,
)

# --- what the stage reads ----------------------------------------------------------------------

def member_variants(docket_id: str) -> dict[str, tuple[str, list[str]]]:
    """item -> (its whole field in normal form, the names it was split into in normal form),
    for the docket's resolved comments."""
    found: dict[str, tuple[str, list[str]]] = {}
    query = (OrganisationMember.select(OrganisationMember.item, OrganisationMember.whole, OrganisationMember.variant)
             .where(OrganisationMember.docket == docket_id)
             .order_by(OrganisationMember.item, OrganisationMember.position).tuples())
    for item, whole, variant in query:
        found.setdefault(item, (whole, []))[1].append(variant)
    return found


def members(keys: Iterable[str]) -> dict[str, list[tuple]]:
    """item -> [(organisation, variant, written, source, whole, evidence), ...] in field
    order, for those of ``keys`` that have one."""
    found: dict[str, list[tuple]] = {}
    for chunk in _chunks(sorted(set(keys))):
        for item, *rest in (OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation,
                                                      OrganisationMember.variant, OrganisationMember.written,
                                                      OrganisationMember.source, OrganisationMember.whole,
                                                      OrganisationMember.evidence)
                            .where(OrganisationMember.item.in_(chunk))
                            .order_by(OrganisationMember.item, OrganisationMember.position).tuples()):
            found.setdefault(item, []).append(tuple(rest))
    return found


def known_variants() -> dict[str, tuple[Known, str]]:
    """normalised name -> (its organisation, how it was learnt), every docket's."""
    query = (OrganisationVariant.select(OrganisationVariant.normalised, OrganisationVariant.organisation,
                                        Organisation.name, OrganisationVariant.source)
             .join(Organisation, on=(Organisation.id == OrganisationVariant.organisation)).tuples())
    return {normalised: (Known(org, name), source) for normalised, org, name, source in query}


def acronyms_of(docket_id: str) -> dict[str, str]:
    return dict(OrganisationAcronym.select(OrganisationAcronym.acronym, OrganisationAcronym.normalised)
                .where(OrganisationAcronym.docket == docket_id).tuples())


def comment_fields(keys: Iterable[str]) -> dict[str, tuple]:
    """item -> (organization, title, body, submitter)."""
    found = {}
    for chunk in _chunks(sorted(set(keys))):
        for key, *rest in (Item.select(Item.key, Item.organization, Item.title, Item.body, Item.submitter)
                           .where(Item.key.in_(chunk)).tuples()):
            found[key] = tuple(rest)
    return found


def item_facts(docket_id: str) -> dict[str, tuple]:
    """item -> (kind, summary hash, detail hash): what a comment's fingerprint is made of."""
    return {key: (kind, summary, detail) for key, kind, summary, detail in
            Item.select(Item.key, Item.kind, Item.summary_hash, Item.detail_hash)
            .where(Item.docket == docket_id).tuples()}


# --- what the stage writes ---------------------------------------------------------------------

def forget_variants(names: Iterable[str]) -> None:
    for chunk in _chunks(sorted(set(names))):
        OrganisationVariant.delete().where(OrganisationVariant.normalised.in_(chunk)).execute()
        counters.incr(ROWS_WRITTEN)


def save_organisations(found: Iterable[tuple[str, str, str]]) -> None:
    """(id, canonical name, normal form): new ones inserted, a renamed one (the alias file
    says another name) updated."""
    rows = sorted(set(found))
    for chunk in _chunks(rows, 300):
        stored = {o.id: o.name for o in Organisation.select().where(Organisation.id.in_([r[0] for r in chunk]))}
        for org, name, normalised in chunk:
            if org not in stored:
                Organisation.insert(id=org, name=name, normalised=normalised).on_conflict_ignore().execute()
                counters.incr(ROWS_WRITTEN)
            elif stored[org] != name:
                Organisation.update(name=name).where(Organisation.id == org).execute()
                counters.incr(ROWS_WRITTEN)


def save_variants(found: dict[str, tuple[str, str]]) -> None:
    """normalised -> (organisation, source): written where new or changed."""
    for chunk in _chunks(sorted(found)):
        stored = dict(OrganisationVariant.select(OrganisationVariant.normalised, OrganisationVariant.organisation)
                      .where(OrganisationVariant.normalised.in_(chunk)).tuples())
        for name in chunk:
            org, source = found[name]
            if name not in stored:
                OrganisationVariant.insert(normalised=name, organisation=org, source=source) \
                    .on_conflict_ignore().execute()
                counters.incr(ROWS_WRITTEN)
            elif stored[name] != org and source == "alias":  # the alias file wins
                OrganisationVariant.update(organisation=org, source=source) \
                    .where(OrganisationVariant.normalised == name).execute()
                counters.incr(ROWS_WRITTEN)


def save_acronyms(docket_id: str, pairs: dict[str, str]) -> None:
    for acronym, normalised in sorted(pairs.items()):
        (OrganisationAcronym.insert(docket=docket_id, acronym=acronym, normalised=normalised)
         .on_conflict(conflict_target=[OrganisationAcronym.docket, OrganisationAcronym.acronym],
                      update={OrganisationAcronym.normalised: normalised}).execute())
        counters.incr(ROWS_WRITTEN)


def save_members(docket_id: str, rows: dict[str, list[tuple]], leaving: Iterable[str]) -> None:
    """item -> [(organisation, variant, written, source, whole, evidence), ...] in field order: an
    item's rows rewritten where they changed; the ``leaving`` items (they name no
    organisation now) lose theirs."""
    stored = members([*rows, *leaving])
    with database.atomic():
        gone = sorted({k for k in leaving if k in stored} | {k for k in rows if k in stored and stored[k] != rows[k]})
        for chunk in _chunks(gone):
            OrganisationMember.delete().where(OrganisationMember.item.in_(chunk)).execute()
            counters.incr(ROWS_WRITTEN)
        for item in sorted(rows):
            if stored.get(item) == rows[item]:
                continue
            for position, (org, variant, written, source, whole, evidence) in enumerate(rows[item]):
                OrganisationMember.insert(item=item, position=position, docket=docket_id, organisation=org,
                                          variant=variant, written=written, source=source, whole=whole,
                                          evidence=evidence).execute()
                counters.incr(ROWS_WRITTEN)
