"""Every query of the campaign groups (``campaign_member``, ``campaign_band``, ``campaign``):
what the CampaignGroups stage reads and writes, and the read side others call —
``campaigns_of(docket, limit)``, ``campaign_of_item(item_id)``, ``members_of(campaign_id)``
(the pages and the export through ``pipeline/reading/campaigns.py``).

Reads are by docket, by band key or by item, each one indexed query (chunked ``IN`` lists),
so a run with 40 new comments reads what those 40 need, not the docket.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass
from itertools import repeat
from typing import NamedTuple

import peewee
from peewee import fn

from pipeline.store import prepared
from pipeline.store.campaign_bands import stored_keys
from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import Campaign, CampaignBand, CampaignMember, database


@dataclass(frozen=True)
class Member:
    item: str
    campaign: str
    order_key: str
    posted_date: str | None
    text: str
    normalised: str
    signature: str
    added_sentences: list[str]


def _member(row: CampaignMember) -> Member:
    return Member(row.item, row.campaign, row.order_key, row.posted_date, row.text,
                  row.normalised, row.signature, json.loads(row.added_sentences or "[]"))


# --- what the stage reads ----------------------------------------------------------------------

def count_members(docket_id: str) -> int:
    return CampaignMember.select().where(CampaignMember.docket == docket_id).count()


def campaigns_by_exact_hash(docket_id: str, hashes: Iterable[str]) -> dict[str, str]:
    """exact hash -> the campaign of a stored member with that normalised text."""
    found: dict[str, str] = {}
    for chunk in _chunks(sorted(set(hashes))):
        query = (CampaignMember.select(CampaignMember.exact_hash, CampaignMember.campaign)
                 .where((CampaignMember.docket == docket_id) & CampaignMember.exact_hash.in_(chunk))
                 .order_by(CampaignMember.order_key).tuples())
        for exact, campaign in query:
            found.setdefault(exact, campaign)
    return found


def members_by_band(docket_id: str, keys: Iterable[int]) -> dict[int, list[tuple[str, str, str]]]:
    """band key -> the stored members with that key, as (item, campaign, signature hex)."""
    found: dict[int, list[tuple[str, str, str]]] = {}
    for chunk in _chunks(sorted(set(keys))):
        query = (CampaignBand.select(CampaignBand.key, CampaignBand.item, CampaignMember.campaign,
                                     CampaignMember.signature)
                 .join(CampaignMember, on=(CampaignMember.item == CampaignBand.item))
                 .where((CampaignBand.docket == docket_id) & CampaignBand.key.in_(chunk)))
        for key, item, campaign, signature in prepared.raw_rows(query):
            found.setdefault(key, []).append((item, campaign, signature))
    return found


def banded_count(campaign_id: str) -> int:
    """How many of a group's members have band keys stored: the members later comments are
    compared with (one indexed read)."""
    return (CampaignMember.select(fn.COUNT(CampaignMember.item))
            .where((CampaignMember.campaign == campaign_id) & CampaignMember.banding.is_null(False))
            .scalar() or 0)


def normalised_texts(items: Iterable[str]) -> dict[str, str]:
    found = {}
    for chunk in _chunks(sorted(set(items))):
        found.update(CampaignMember.select(CampaignMember.item, CampaignMember.normalised)
                     .where(CampaignMember.item.in_(chunk)).tuples())
    return found


def members(items: Iterable[str]) -> dict[str, Member]:
    found = {}
    for chunk in _chunks(sorted(set(items))):
        for row in CampaignMember.select().where(CampaignMember.item.in_(chunk)):
            found[row.item] = _member(row)
    return found


def member_texts(campaign_id: str) -> list[tuple[str, str]]:
    """(item, text) of every member: what its added sentences are computed from (the rest
    of a row, its signature above all, is not read)."""
    return list(CampaignMember.select(CampaignMember.item, CampaignMember.text)
                .where(CampaignMember.campaign == campaign_id).tuples())


def earliest_members(campaign_id: str, limit: int) -> list[Member]:
    query = (CampaignMember.select().where(CampaignMember.campaign == campaign_id)
             .order_by(CampaignMember.order_key).limit(limit))
    return [_member(row) for row in query]


def letter_members(docket_id: str) -> list[tuple[str, str]]:
    """(campaign id, its second earliest member) of the docket's groups of two or more
    comments, whose two earliest members make the letters a comment may hold (a group's id
    is its earliest member's): the second found by the (campaign, order key) index."""
    Second = CampaignMember.alias()
    second = (Second.select(Second.item)
              .where((Second.campaign == Campaign.id) & (Second.item != Campaign.id))
              .order_by(Second.order_key).limit(1))
    query = (Campaign.select(Campaign.id, second.alias("second"))
             .where((Campaign.docket == docket_id) & (Campaign.size >= 2)).order_by(Campaign.id).tuples())
    return [(campaign, item) for campaign, item in query if item]


def campaign_rows(campaign_ids: Iterable[str]) -> dict[str, Campaign]:
    found = {}
    for chunk in _chunks(sorted(set(campaign_ids))):
        found.update({c.id: c for c in Campaign.select().where(Campaign.id.in_(chunk))})
    return found


# --- what the stage writes ---------------------------------------------------------------------

def remove_members(items: Iterable[str]) -> set[str]:
    """Take items out of their groups (a changed comment is placed again): the campaigns
    they were in."""
    left: set[str] = set()
    for chunk in _chunks(sorted(set(items))):
        bands = []
        for item, docket, campaign, signature, banding in (CampaignMember.select(
                CampaignMember.item, CampaignMember.docket, CampaignMember.campaign, CampaignMember.signature,
                CampaignMember.banding).where(CampaignMember.item.in_(chunk)).tuples()):
            left.add(campaign)
            if banding:
                bands += [(docket, key, item) for key in stored_keys([signature], banding)[0].tolist()]
        # each by its primary key, made again as they were made
        prepared.run_many("campaign_band.delete", _band_row_delete, bands)
        CampaignMember.delete().where(CampaignMember.item.in_(chunk)).execute()
    return left


def _band_row_delete(row: tuple[str, int, str]):
    docket, key, item = row
    return CampaignBand.delete().where((CampaignBand.docket == docket) & (CampaignBand.key == key)
                                       & (CampaignBand.item == item))


class MemberRow(NamedTuple):
    """A member row as the stage writes it (its added sentences come once its group's
    representative is known)."""

    item: str
    campaign: str
    order_key: str
    posted_date: str | None
    exact_hash: str
    text: str
    normalised: str
    signature: str  # MinHash hash values, hex
    banding: str | None = None  # the bands its keys are made with (``bands.banding``), when compared with


def add_members(docket_id: str, rows: list[MemberRow], bands: tuple[list[int], list[str]]) -> None:
    """Member rows and their band keys (keys and items, two lists in key order: the index
    then grows in order rather than at 20 random places per member), each table in one
    prepared statement run for every row."""
    fields = [CampaignMember.docket, CampaignMember.item, CampaignMember.campaign,
              CampaignMember.order_key, CampaignMember.posted_date, CampaignMember.exact_hash,
              CampaignMember.text, CampaignMember.normalised, CampaignMember.signature,
              CampaignMember.banding, CampaignMember.added_sentences]
    with database.atomic():
        prepared.run_many("campaign_member.insert", lambda row: CampaignMember.insert_many([row], fields=fields),
                          [(docket_id, *r, "[]") for r in rows])
        if bands and bands[0]:  # none: no member is compared with
            prepared.run_many("campaign_band.insert", _band_insert, list(zip(repeat(docket_id), *bands, strict=False)))


def set_added_sentences(added: dict[str, list[str]]) -> None:
    if not added:
        return
    prepared.run_many("campaign_member.added_sentences", _added_sentences_update,
                      [(json.dumps(s), item) for item, s in sorted(added.items())])


def _added_sentences_update(row: tuple):
    return CampaignMember.update(added_sentences=row[0]).where(CampaignMember.item == row[1])


def _band_insert(row: tuple):
    return CampaignBand.insert_many([row], fields=[CampaignBand.docket, CampaignBand.key, CampaignBand.item])


def group_facts(campaign_id: str) -> tuple[int, str | None, str | None]:
    """(size, first seen, last seen) from the members."""
    return (CampaignMember.select(fn.COUNT(CampaignMember.item), fn.MIN(CampaignMember.posted_date),
                                  fn.MAX(CampaignMember.posted_date))
            .where(CampaignMember.campaign == campaign_id).tuples().first())


def save_campaign(campaign_id: str, docket_id: str, *, size: int, representative: str,
                  first_seen: str | None, last_seen: str | None) -> None:
    values = {Campaign.docket: docket_id, Campaign.size: size, Campaign.representative: representative,
              Campaign.first_seen: first_seen, Campaign.last_seen: last_seen}
    Campaign.insert({Campaign.id: campaign_id, **values}).on_conflict(
        conflict_target=[Campaign.id], update=values).execute()


def rename_campaign(old: str, new: str) -> None:
    """A group's id is its earliest member's: it changes when that member left or an earlier
    one joined."""
    with database.atomic():
        CampaignMember.update(campaign=new).where(CampaignMember.campaign == old).execute()
        Campaign.update(id=new).where(Campaign.id == old).execute()


def save_singletons(docket_id: str, founders: list[tuple[str, str | None]]) -> None:
    """New groups of one comment each ((its id, posted date)): the comment is the group's
    id and representative, and its dates are the group's."""
    prepared.run_many("campaign.insert_singleton", _singleton_insert,
                      [(key, docket_id, 1, key, posted, posted) for key, posted in founders])


def _singleton_insert(row: tuple):
    return Campaign.insert_many([row], fields=[Campaign.id, Campaign.docket, Campaign.size, Campaign.representative,
                                               Campaign.first_seen, Campaign.last_seen])


def merge_campaign(other: str, into: str) -> None:
    """A comment similar to members of two groups joins them: ``other``'s members move."""
    with database.atomic():
        CampaignMember.update(campaign=into).where(CampaignMember.campaign == other).execute()
        Campaign.delete().where(Campaign.id == other).execute()


def delete_campaign(campaign_id: str) -> None:
    Campaign.delete().where(Campaign.id == campaign_id).execute()


# --- the read side: docketeer export, docketeer serve --------------------------------------------

@dataclass(frozen=True)
class CampaignSummary:
    id: str
    docket: str
    size: int
    representative: str
    representative_text: str
    first_seen: str | None
    last_seen: str | None


def campaigns_of(docket_id: str, limit: int | None = None, min_size: int = 2) -> list[CampaignSummary]:
    """The docket's groups of at least ``min_size`` comments, largest first."""
    query = (Campaign.select(Campaign, CampaignMember.text)
             .join(CampaignMember, on=(CampaignMember.item == Campaign.representative))
             .where((Campaign.docket == docket_id) & (Campaign.size >= min_size))
             .order_by(Campaign.size.desc(), Campaign.id))
    if limit is not None:
        query = query.limit(limit)
    return [CampaignSummary(c.id, c.docket, c.size, c.representative, c.campaignmember.text,
                            c.first_seen, c.last_seen) for c in query]


def campaign_of_item(item_id: str) -> CampaignSummary | None:
    row = CampaignMember.get_or_none(CampaignMember.item == item_id)
    if row is None:
        return None
    found = campaign_rows([row.campaign]).get(row.campaign)
    if found is None:
        return None
    rep = CampaignMember.get_or_none(CampaignMember.item == found.representative)
    return CampaignSummary(found.id, found.docket, found.size, found.representative,
                           rep.text if rep else "", found.first_seen, found.last_seen)


def members_of(campaign_id: str) -> list[Member]:
    """Every member, earliest first, with the sentences each adds to the representative."""
    query = (CampaignMember.select().where(CampaignMember.campaign == campaign_id)
             .order_by(CampaignMember.order_key))
    return [_member(row) for row in query]


def docket_membership(docket_id: str) -> dict[str, tuple[str, int]]:
    """item -> (campaign id, group size), for every grouped comment of the docket (export)."""
    query = (CampaignMember.select(CampaignMember.item, Campaign.id, Campaign.size)
             .join(Campaign, on=(Campaign.id == CampaignMember.campaign))
             .where(CampaignMember.docket == docket_id).tuples())
    return {item: (campaign, size) for item, campaign, size in query}


def docket_campaigns(docket_id: str) -> list[Campaign]:
    return list(Campaign.select().where(Campaign.docket == docket_id).order_by(Campaign.id))


def memberships(items: Iterable[str]) -> dict[str, tuple[str, int, list[str]]]:
    """item -> (campaign id, group size, sentences it adds), for the grouped ones among
    ``items`` (the web pages' campaign column), a bounded IN list per query."""
    found: dict[str, tuple[str, int, list[str]]] = {}
    for chunk in _chunks(items):
        query = (CampaignMember.select(CampaignMember.item, CampaignMember.added_sentences,
                                       Campaign.id, Campaign.size)
                 .join(Campaign, on=(Campaign.id == CampaignMember.campaign))
                 .where(CampaignMember.item.in_(chunk)).tuples())
        for item, added, campaign, size in query:
            found[item] = (campaign, size, json.loads(added or "[]"))
    return found


def any_campaign() -> bool:
    return Campaign.select().exists()


def submissions(campaign_ids: Iterable[str]) -> dict[str, int]:
    """campaign id -> the submissions its members stand for: each member one, plus its
    record's ``duplicateComments`` (what the export's ``campaign_submissions`` counts), one
    grouped statement per chunk of ids."""
    from pipeline.store.models import Item

    represented = fn.SUM(1 + fn.COALESCE(Item.duplicate_comments, 0))
    found: dict[str, int] = {}
    for chunk in _chunks(sorted(set(campaign_ids))):
        found.update((c, int(k or 0)) for c, k in
                     CampaignMember.select(CampaignMember.campaign, represented)
                     .join(Item, peewee.JOIN.LEFT_OUTER, on=(Item.key == CampaignMember.item))
                     .where(CampaignMember.campaign.in_(chunk)).group_by(CampaignMember.campaign).tuples())
    return found
