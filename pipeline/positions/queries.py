"""Every query of the positions tables the stage and the commands use: a docket's units (a
comment, or a campaign judged once through its letter) and their texts, its members, its
classifier row, the language-model judge's kept answers, and the coding sample drawn from the
uncoded units."""

from __future__ import annotations

import json
import random
from collections import Counter, defaultdict
from dataclasses import dataclass, field

from pipeline.positions.judge import Judge, Judgement
from pipeline.store.in_lists import in_chunks
from pipeline.store.models import (
    Campaign,
    CampaignMember,
    Docket,
    Item,
    PositionCode,
    PositionJudgement,
    PositionMember,
    PositionModel,
    database,
)


@dataclass
class Units:
    """What is judged: each comment with text stands for itself, except a campaign's members,
    which its letter (the campaign's representative, or its first member with text) stands
    for: a campaign is judged once and counted by its members' submissions."""

    unit_of: dict[str, str]  # comment with text -> the comment judged for it
    submissions: dict[str, int]  # comment -> what its record stands for (1 + duplicateComments)
    no_text: set[str] = field(default_factory=set)  # indexed comments without passages

    def members(self) -> dict[str, list[str]]:
        found: dict[str, list[str]] = defaultdict(list)
        for key, unit in sorted(self.unit_of.items()):
            found[unit].append(key)
        return dict(found)

    def weight(self, unit_members: list[str]) -> int:
        return sum(self.submissions.get(k, 1) for k in unit_members)


def campaigns_of_docket(docket_id: str) -> dict[str, str]:
    """comment -> its campaign, for a docket (one query)."""
    return dict(CampaignMember.select(CampaignMember.item, CampaignMember.campaign)
                .where(CampaignMember.docket == docket_id).tuples())


def docket_units(docket_id: str, chunks: dict[str, int], campaigns: dict[str, str]) -> Units:
    """The docket's units from the index's chunk counts (comment -> chunks) and its campaigns."""
    with_text = {k for k, n in chunks.items() if n > 0}
    letters = dict(Campaign.select(Campaign.id, Campaign.representative).where(Campaign.docket == docket_id).tuples())
    by_campaign: dict[str, list[str]] = defaultdict(list)
    for key in sorted(with_text):
        if key in campaigns:
            by_campaign[campaigns[key]].append(key)
    letter_of = {c: (letters[c] if letters.get(c) in with_text else members[0]) for c, members in by_campaign.items()}
    unit_of = {k: letter_of[campaigns[k]] if k in campaigns else k for k in with_text}
    represented = dict(Item.select(Item.key, 1 + Item.duplicate_comments).where(
        (Item.docket == docket_id) & (Item.duplicate_comments > 0)).tuples())
    return Units(unit_of, {k: represented.get(k, 1) for k in chunks}, set(chunks) - with_text)


def unit_codes(units: Units, codes: dict[str, str]) -> dict[str, str]:
    """unit -> the position its coded members give it: the letter's own code, else the one
    most of its coded members have (ties: the first position in key order)."""
    found: dict[str, str] = {}
    for unit, members in units.members().items():
        if unit in codes:
            found[unit] = codes[unit]
            continue
        coded = [codes[k] for k in members if k in codes]
        if coded:
            found[unit] = Counter(coded).most_common(1)[0][0]
    return found


def training_dockets(docket_id: str, scope: str) -> list[str]:
    """The dockets whose codes teach this docket's model: itself, or with ``scope`` = rule
    every docket of its RIN too."""
    rin = Docket.select(Docket.rin).where(Docket.id == docket_id).scalar()
    if scope != "rule" or not rin:
        return [docket_id]
    return sorted({docket_id, *(d for (d,) in Docket.select(Docket.id).where(Docket.rin == rin).tuples())})


# --- what the stage writes ---------------------------------------------------------------------

def save_members(docket_id: str, members: dict[str, tuple[str, str, float, str, int]], cleared: set[str],
                 judged: dict[str, Judgement] | None = None) -> None:
    """comment -> (position, source, probability, unit, submissions) in place of the stored
    rows of those comments, each with the judge's answer for its unit (``judged``: unit ->
    answer) when there is one; the rows of ``cleared`` deleted."""
    judged = judged or {}
    rows = [{"item": k, "docket": docket_id, "position": p, "source": s, "probability": round(float(pr), 6),
             "unit": u, "submissions": n, **_judged_columns(judged.get(u))}
            for k, (p, s, pr, u, n) in sorted(members.items())]
    with database.atomic():
        for chunk in in_chunks(sorted(set(members) | cleared)):
            PositionMember.delete().where(PositionMember.item.in_(chunk)).execute()
        for chunk in in_chunks(rows, 200):
            PositionMember.insert_many(chunk).execute()


def _judged_columns(answer: Judgement | None) -> dict[str, str]:
    if answer is None:
        return {"judged": "", "evidence": "", "quote": ""}
    return {"judged": answer.position, "evidence": answer.evidence, "quote": answer.quote}


def unit_texts(index_db, collection: str, docket_id: str, units) -> dict[str, str]:
    """unit -> its text, its passages as the index holds them (one query)."""
    texts: dict[str, list[str]] = defaultdict(list)
    wanted = sorted(units)
    for key, _, text, _ in index_db.passage_vectors(collection, docket_id, wanted) if wanted else ():
        texts[key].append(text)
    return {k: "\n\n".join(parts) for k, parts in texts.items()}


def kept_judgements(docket_id: str, judge: Judge) -> dict[str, Judgement]:
    """text fingerprint -> the judge's kept answer, for the docket's texts this judge answered."""
    return {text: Judgement(position, evidence, quote) for text, position, evidence, quote in
            PositionJudgement.select(PositionJudgement.text, PositionJudgement.position,
                                     PositionJudgement.evidence, PositionJudgement.quote)
            .where((PositionJudgement.docket == docket_id) & (PositionJudgement.judge == judge.fingerprint)).tuples()}


def save_judgement(docket_id: str, judge: Judge, text: str, unit: str, answer: Judgement, judged_at: str) -> None:
    """Keep the judge's answer for one text (the model's name with it; never the key)."""
    values = {"unit": unit, "position": answer.position, "evidence": answer.evidence, "quote": answer.quote,
              "model": judge.model, "judged_at": judged_at}
    PositionJudgement.insert(docket=docket_id, text=text, judge=judge.fingerprint, **values).on_conflict(
        conflict_target=[PositionJudgement.docket, PositionJudgement.text, PositionJudgement.judge],
        update=values).execute()


def model_of(docket_id: str) -> PositionModel | None:
    return PositionModel.get_or_none(PositionModel.docket == docket_id)


def save_model(docket_id: str, **values) -> None:
    if "cross_validated" in values and not isinstance(values["cross_validated"], str):
        values["cross_validated"] = json.dumps(values["cross_validated"])
    if "estimates" in values and not isinstance(values["estimates"], str):
        values["estimates"] = json.dumps(values["estimates"])
    if model_of(docket_id) is None:
        PositionModel.insert(docket=docket_id, **values).execute()
    else:
        PositionModel.update(**values).where(PositionModel.docket == docket_id).execute()


def members_of(docket_id: str) -> list[PositionMember]:
    return list(PositionMember.select().where(PositionMember.docket == docket_id).order_by(PositionMember.item))


def coded_items(docket_id: str) -> set[str]:
    return {k for (k,) in PositionCode.select(PositionCode.item).where(PositionCode.docket == docket_id).tuples()}


# --- the coding sample -------------------------------------------------------------------------

def draw_sample(units: Units, coded: set[str], n: int, seed: int) -> list[str]:
    """``n`` uncoded units (no member coded), drawn without replacement with probability in
    proportion to their submissions (Efraimidis-Spirakis keys, seeded: the same store and
    seed draw the same sample), in the order drawn."""
    rng = random.Random(seed)
    keyed = []
    for unit, members in sorted(units.members().items()):
        if any(k in coded for k in members):
            continue
        keyed.append((rng.random() ** (1.0 / units.weight(members)), unit))
    keyed.sort(reverse=True)
    return [unit for _, unit in keyed[:n]]
