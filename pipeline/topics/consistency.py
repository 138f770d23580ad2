"""What a docket's topic map must agree on while its topics marker says done (``docketeer
verify`` asks): a member row for each comment whose topics state is ``ok`` and none for
another, each member's topic stored, and each topic's counts those of its members as stored
(comments; submissions and share above 0 exactly when it has comments; as many
organisations as its members name at most, and some when they name any)."""

from __future__ import annotations

from collections import defaultdict

from pipeline.store import item_states
from pipeline.store.models import OrganisationMember, Topic, TopicMember

STAGE = "topics"


def problems(docket_id: str) -> list[str]:
    """One line per disagreement between the docket's topic rows and its item states."""
    members = dict(TopicMember.select(TopicMember.item, TopicMember.topic)
                   .where(TopicMember.docket == docket_id).tuples())
    found = item_states.ok_without_rows(STAGE, docket_id, set(members), "topics state ok but no topic member row",
                                        "a topic member row without a topics state ok")
    by_topic: dict[str, list[str]] = defaultdict(list)
    for item, topic in members.items():
        if topic is not None:
            by_topic[topic].append(item)
    topics = {t.id: t for t in Topic.select().where(Topic.docket == docket_id)}
    found += [f"topic {t}: {len(keys)} member(s) but no topic row" for t, keys in sorted(by_topic.items())
              if t not in topics]
    organisations = defaultdict(set)
    for item, org in OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation).where(
            OrganisationMember.docket == docket_id).tuples():
        organisations[item].add(org)
    for topic_id, topic in sorted(topics.items()):
        found += [f"topic {topic_id}: {p}" for p in _count_problems(topic, by_topic.get(topic_id, []), organisations)]
    return found


def _count_problems(topic: Topic, keys: list[str], organisations: dict[str, set[str]]) -> list[str]:
    found = []
    if topic.comments != len(keys):
        found.append(f"{topic.comments} comment(s) counted, {len(keys)} member(s)")
    if (topic.submissions > 0) != bool(keys) or (topic.share > 0) != bool(keys):
        found.append(f"{topic.submissions} submission(s), share {topic.share:g} for {len(keys)} member(s)")
    named = set().union(*(organisations.get(k, set()) for k in keys))
    if topic.organisations > len(named) or (named and not topic.organisations):
        found.append(f"{topic.organisations} organisation(s) counted, its members name {len(named)}")
    return found
