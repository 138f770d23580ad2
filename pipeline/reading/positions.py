"""What people read of a docket's positions: its shares with their intervals, the classifier's
state and the language-model judge's (each scored against the codes), the positions by
campaign, organisation and topic; and the comments an analyst codes
next (the coding sample, in the order drawn), with their text as the index holds it."""

from __future__ import annotations

import json
from collections import Counter, defaultdict
from dataclasses import dataclass

from pipeline.ids import record_url
from pipeline.positions import classifier, judge, queries, scores
from pipeline.positions.codes import POSITIONS
from pipeline.store.models import (
    Campaign,
    Organisation,
    OrganisationMember,
    PositionCode,
    PositionJudgement,
    PositionMember,
    Topic,
    TopicMember,
)

SAMPLE_SEED = 1  # the coding sample's default seed: the same store draws the same sheet
BY_SHOWN = 10  # campaigns, organisations and topics listed; --json lists every one


@dataclass(frozen=True)
class Unit:
    key: str  # the comment judged (a campaign's letter stands for its members)
    link: str
    text: str
    members: int
    submissions: int


def coding_sample(index_db, docket_id: str, n: int, seed: int = SAMPLE_SEED) -> list[Unit]:
    """``n`` uncoded comments to code (a campaign once, through its letter), drawn in proportion
    to submissions, with their text (their passages as the index holds them)."""
    indexed = index_db.state_for_docket(classifier.COLLECTION, docket_id) if index_db is not None else {}
    units = queries.docket_units(docket_id, {k: r.chunk_count for k, r in indexed.items()},
                                 queries.campaigns_of_docket(docket_id))
    drawn = queries.draw_sample(units, queries.coded_items(docket_id), n, seed)
    texts: dict[str, list[str]] = defaultdict(list)
    for key, _, text, _ in index_db.passage_vectors(classifier.COLLECTION, docket_id, drawn) if drawn else ():
        texts[key].append(text)
    members = units.members()
    return [Unit(k, record_url("comment", k), "\n\n".join(texts.get(k, [])), len(members[k]),
                 units.weight(members[k])) for k in drawn]


def summary(docket_id: str) -> dict:
    """The docket's positions as one document: the classifier's state, the prevalence figures,
    the counts by source and position, and by campaign, organisation and topic."""
    model = queries.model_of(docket_id)
    members = queries.members_of(docket_id)
    codes = PositionCode.select().where(PositionCode.docket == docket_id)
    coders = Counter(c.coder for c in codes)
    found = {
        "docket": docket_id,
        "message": _message(model),
        "classifier": None if model is None else {
            "fitted": bool(model.model), "codes": model.codes, "fitted_at": model.fitted_at,
            "classes": json.loads(model.model)["classes"] if model.model else [],
            "cross_validated_accuracy": _accuracy(model),
            "scores": scores.score([tuple(p) for p in json.loads(model.cross_validated or "[]")])},
        "judge": _judge(docket_id, members),
        "codes": {"comments": sum(coders.values()), "coders": dict(sorted(coders.items()))},
        "estimates": _estimates(model),
        "comments": _by(members, lambda m: "all"),
        "by_source": _by(members, lambda m: m.source),
    }
    found.update(_breakdowns(docket_id, members))
    return found


def figures(docket_id: str) -> dict:
    """The docket's message and prevalence figures as ``positions D --json`` gives them
    (``estimates`` empty until a model is fitted), from one query; ``ran`` False when the
    stage has not run on the docket."""
    model = queries.model_of(docket_id)
    return {"message": _message(model), "ran": model is not None, "estimates": _estimates(model)}


def _estimates(model) -> dict:
    return json.loads(model.estimates) if model is not None and model.estimates else {}


def share_rows(estimates: dict) -> list[dict]:
    """The figures as rows, one per measure (comments, submissions), estimate (design, model)
    and position, each with its share, 95 % interval and the estimate's method: the export's
    ``positions`` table and the docket page's, read from the stored figures, never recomputed."""
    methods = estimates.get("methods", {})
    return [{"measure": measure, "estimate": estimate, "position": position, **found,
             "total": estimates[measure].get("total"), "method": methods.get(estimate, "")}
            for measure in ("comments", "submissions") if measure in estimates
            for estimate in ("design", "model")
            for position, found in estimates[measure].get(estimate, {}).items()]


def docket_positions(docket_id: str) -> dict[str, tuple[str, str, float | None, str | None, str | None]]:
    """comment -> (position, source, probability, evidence, quote) for a docket, one query: the
    probability None for the judge's (it gives none), the evidence and its quote check None
    where the judge gave none."""
    return {item: (position, source, None if source == "llm" else probability, evidence or None, quote or None)
            for item, position, source, probability, evidence, quote in
            PositionMember.select(PositionMember.item, PositionMember.position, PositionMember.source,
                                  PositionMember.probability, PositionMember.evidence, PositionMember.quote)
            .where(PositionMember.docket == docket_id).tuples()}


def _judge(docket_id: str, members) -> dict | None:
    """The judge's part of the summary (None: no member has the judge's answer): its model,
    the distinct texts it answered, its quotes checked and flagged, its scores against the codes."""
    quotes = {m.unit: m.quote for m in members if m.judged}  # one per distinct text
    if not quotes:
        return None
    model = (PositionJudgement.select(PositionJudgement.model).where(PositionJudgement.docket == docket_id)
             .order_by(PositionJudgement.judged_at.desc()).limit(1).scalar())
    counted = Counter(quotes.values())
    return {"model": model, "texts": len(quotes), "comments": sum(1 for m in members if m.source == "llm"),
            "quotes": {judge.CHECKED: counted[judge.CHECKED], judge.FLAGGED: counted[judge.FLAGGED]},
            "scores": scores.score(judge.pairs_of(members))}


def _message(model) -> str:
    if model is None:
        return "no positions yet (luigi --module pipeline PositionsAll estimates them)"
    return model.message


def _accuracy(model) -> float | None:
    pairs = json.loads(model.cross_validated or "[]")
    return round(sum(t == p for t, p in pairs) / len(pairs), 4) if pairs else None


def _by(members, key) -> dict[str, dict]:
    """group -> {position -> comments, "submissions": {position -> submissions}}."""
    found: dict[str, dict] = {}
    for m in members:
        group = found.setdefault(key(m), {"comments": dict.fromkeys(POSITIONS, 0),
                                          "submissions": dict.fromkeys(POSITIONS, 0)})
        group["comments"][m.position] += 1
        group["submissions"][m.position] += m.submissions
    return found


def _breakdowns(docket_id: str, members) -> dict:
    keys = [m.item for m in members]
    campaign_of = queries.campaigns_of_docket(docket_id)
    sizes = dict(Campaign.select(Campaign.id, Campaign.size).where(Campaign.docket == docket_id).tuples())
    org_of: dict[str, str] = {}
    for item, org in OrganisationMember.select(OrganisationMember.item, OrganisationMember.organisation).where(
            OrganisationMember.docket == docket_id).order_by(OrganisationMember.position).tuples():
        org_of.setdefault(item, org)
    names = dict(Organisation.select(Organisation.id, Organisation.name).where(
        Organisation.id.in_(sorted(set(org_of.values())))).tuples()) if org_of else {}
    topic_of = dict(TopicMember.select(TopicMember.item, TopicMember.topic).where(
        TopicMember.docket == docket_id).tuples())
    labels = dict(Topic.select(Topic.id, Topic.label).where(Topic.docket == docket_id).tuples())
    in_keys = set(keys)
    return {
        # a campaign of one comment (every comment has a group) is no campaign to show
        "by_campaign": _largest(_by([m for m in members if sizes.get(campaign_of.get(m.item), 0) > 1],
                                    lambda m: campaign_of[m.item]),
                                lambda c: f"{c} ({sizes.get(c, 0)} comments)"),
        "by_organisation": _largest(_by([m for m in members if m.item in org_of and m.item in in_keys],
                                        lambda m: org_of[m.item]), lambda o: names.get(o, o)),
        "by_topic": _largest(_by([m for m in members if topic_of.get(m.item)], lambda m: topic_of[m.item]),
                             lambda t: f"{t.rsplit(':', 1)[-1]} ({labels.get(t, '')})"),
    }


def _largest(groups: dict[str, dict], name) -> list[dict]:
    rows = [{"id": g, "name": name(g), **counts} for g, counts in groups.items()]
    return sorted(rows, key=lambda r: (-sum(r["submissions"].values()), r["id"]))


def member_of(key: str) -> PositionMember | None:
    return PositionMember.get_or_none(PositionMember.item == key)
