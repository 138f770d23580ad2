"""A docket's topic map as people read it, from the topics stage's rows: its topics, largest
first, each comment's topic and each topic's comments (the docket page, ``docketeer topics``,
the export). The map's own row (``map_of``: its message when it has no topics) is the
stage's query."""

from __future__ import annotations

import json
from collections.abc import Iterable
from dataclasses import dataclass

from peewee import fn

from pipeline.store.in_lists import in_chunks as _chunks
from pipeline.store.models import Topic, TopicMember
from pipeline.topics.queries import map_of

__all__ = ["TopicSummary", "docket_topic_of", "map_of", "member_count", "members_of", "topic_of_items",
           "topics_of", "topics_of_item"]


@dataclass(frozen=True)
class TopicSummary:
    id: str
    label: str
    terms: list[tuple[str, float]]
    representatives: list[dict]
    comments: int
    submissions: int
    organisations: int
    first_seen: str | None
    last_seen: str | None
    share: float


def _summary(row: Topic) -> TopicSummary:
    return TopicSummary(row.id, row.label, [tuple(t) for t in json.loads(row.terms)],
                        json.loads(row.representatives), row.comments, row.submissions,
                        row.organisations, row.first_seen, row.last_seen, row.share)


def topics_of(docket_id: str) -> list[TopicSummary]:
    """The docket's topics, largest first."""
    query = Topic.select().where(Topic.docket == docket_id).order_by(Topic.submissions.desc(), Topic.id)
    return [_summary(row) for row in query]


def topic_of_items(keys: Iterable[str]) -> dict[str, str | None]:
    """item -> its main topic (None: unplaced), for the items on a topic map."""
    found = {}
    for chunk in _chunks(keys):
        found.update(TopicMember.select(TopicMember.item, TopicMember.topic)
                     .where(TopicMember.item.in_(chunk)).tuples())
    return found


def topics_of_item(key: str) -> list[str]:
    row = TopicMember.get_or_none(TopicMember.item == key)
    return json.loads(row.topics) if row else []


def members_of(topic_id: str) -> list[str]:
    return [k for (k,) in TopicMember.select(TopicMember.item).where(TopicMember.topic == topic_id)
            .order_by(TopicMember.similarity.desc(), TopicMember.item).tuples()]


def member_count(docket_id: str) -> int:
    return TopicMember.select(fn.COUNT(TopicMember.item)).where(TopicMember.docket == docket_id).scalar() or 0


def docket_topic_of(docket_id: str) -> dict[str, str | None]:
    """item -> its main topic (None: unplaced), for a docket's comments on its map (one query)."""
    return dict(TopicMember.select(TopicMember.item, TopicMember.topic)
                .where(TopicMember.docket == docket_id).tuples())
