"""Every query of the topic maps (``topic``, ``topic_member``, ``topic_map``) that the
TopicMap stage reads and writes. What people read of the maps is ``pipeline/reading/topics.py``.
"""

from __future__ import annotations

import json

from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import (
    CampaignMember,
    Item,
    OrganisationMember,
    Topic,
    TopicMap,
    TopicMember,
    database,
)

# --- what the stage reads ----------------------------------------------------------------------

def campaigns_of_docket(docket_id: str) -> dict[str, str]:
    """item -> its campaign group, for a docket (one query)."""
    query = CampaignMember.select(CampaignMember.item, CampaignMember.campaign).where(
        CampaignMember.docket == docket_id).tuples()
    return dict(query)


def represented_of_docket(docket_id: str) -> dict[str, int]:
    """item -> the submissions its record stands for (1 + ``duplicateComments``), for the
    docket's comments that stand for more than one (one query)."""
    query = Item.select(Item.key, 1 + Item.duplicate_comments).where(
        (Item.docket == docket_id) & (Item.duplicate_comments > 0)).tuples()
    return dict(query)


def stored_centres(docket_id: str) -> dict[str, list[float]]:
    return {tid: json.loads(c) for tid, c in
            Topic.select(Topic.id, Topic.centroid).where(Topic.docket == docket_id).tuples()}


def unplaced_count(docket_id: str) -> int:
    return TopicMember.select().where((TopicMember.docket == docket_id) & TopicMember.topic.is_null()).count()


def map_of(docket_id: str) -> TopicMap | None:
    return TopicMap.get_or_none(TopicMap.docket == docket_id)


# --- what the stage writes ---------------------------------------------------------------------

def save_map(docket_id: str, *, message: str, clustered_at: str | None = None, units: int | None = None,
             next_number: int | None = None) -> None:
    current = map_of(docket_id)
    values = {"message": message}
    if clustered_at is not None:
        values.update(clustered_at=clustered_at, clustered_units=units or 0)
    if next_number is not None:
        values["next_number"] = next_number
    if current is None:
        TopicMap.insert(docket=docket_id, **values).execute()
    elif any(getattr(current, k) != v for k, v in values.items()):
        TopicMap.update(**values).where(TopicMap.docket == docket_id).execute()


def replace_topics(docket_id: str, topics: list[dict]) -> None:
    """The docket's topics, all of them, in place of those stored."""
    with database.atomic():
        Topic.delete().where(Topic.docket == docket_id).execute()
        for chunk in _chunks(topics, 50):
            Topic.insert_many(chunk).execute()


def clear_docket(docket_id: str) -> None:
    with database.atomic():
        Topic.delete().where(Topic.docket == docket_id).execute()
        TopicMember.delete().where(TopicMember.docket == docket_id).execute()


def save_members(docket_id: str, members: dict[str, tuple[str | None, float, list[str], bool]],
                 replace_all: bool = False) -> None:
    """item -> (main topic or None, similarity, its topics, placed later)."""
    rows = [{"item": k, "docket": docket_id, "topic": t, "similarity": round(float(s), 6),
             "topics": json.dumps(ts), "placed": placed} for k, (t, s, ts, placed) in sorted(members.items())]
    with database.atomic():
        if replace_all:
            TopicMember.delete().where(TopicMember.docket == docket_id).execute()
        else:
            for chunk in _chunks([r["item"] for r in rows]):
                TopicMember.delete().where(TopicMember.item.in_(chunk)).execute()
        for chunk in _chunks(rows, 200):
            TopicMember.insert_many(chunk).execute()


def refresh_counts(docket_id: str, weights: dict[str, int]) -> None:
    """Each topic's comments, submissions, organisations, first and last seen and share,
    from its members as stored now."""
    members = list(TopicMember.select(TopicMember.item, TopicMember.topic)
                   .where(TopicMember.docket == docket_id).tuples())
    posted = dict(Item.select(Item.key, Item.posted_date).where(Item.docket == docket_id).tuples())
    orgs = dict(OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation)
                .where(OrganisationMember.docket == docket_id).tuples())
    total = sum(weights.get(k, 1) for k, _ in members) or 1
    by_topic: dict[str, list[str]] = {}
    for item, topic in members:
        if topic is not None:
            by_topic.setdefault(topic, []).append(item)
    with database.atomic():
        for topic in Topic.select().where(Topic.docket == docket_id):
            keys = by_topic.get(topic.id, [])
            dates = sorted(posted[k] for k in keys if posted.get(k))
            submissions = sum(weights.get(k, 1) for k in keys)
            values = {"comments": len(keys), "submissions": submissions,
                      "organisations": len({orgs[k] for k in keys if k in orgs}),
                      "first_seen": dates[0] if dates else None, "last_seen": dates[-1] if dates else None,
                      "share": round(submissions / total, 6)}
            if any(getattr(topic, k) != v for k, v in values.items()):
                Topic.update(**values).where(Topic.id == topic.id).execute()
