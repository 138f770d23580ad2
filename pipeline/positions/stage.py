"""Positions: who supports the rule, who opposes it, and how sure we are.

Runs after campaigns (IndexAll runs it with topics, last). An analyst's codes (``pipeline.positions.codes``) are the
ground truth: a coded comment keeps its code, and a campaign with a coded member gives its
other members that code. Every other comment with text gets the classifier's position and
probability (``pipeline.positions.classifier``: a logistic regression over the mean passage
vector the index holds), a campaign judged once through its letter. The classifier learns
from the docket's codes (``positions_scope`` = rule: every docket of its RIN's); with fewer
than ``positions_min_codes`` codes, or fewer than two positions with three codes each, the
docket's positions are "not estimated yet: code N more" and nothing is guessed.

Incremental: a comment's fingerprint is its index fingerprint, its campaign and the model's
fingerprint (the training codes, the settings, the embedder); new comments are predicted with
the stored model, a changed set of codes fits it again and predicts every comment, and a run
with nothing new does nothing. The docket's prevalence figures (``estimates``) are made again
whenever anything was.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.fingerprints import digest
from pipeline.positions import classifier, codes, consistency, estimates, queries
from pipeline.store import item_states
from pipeline.store.models import Docket

STAGE = "positions"
COLLECTION = classifier.COLLECTION
VERSION = "positions-1"
NOT_ESTIMATED = "not estimated yet"
NO_TEXT = "no text to judge"


def terms(settings) -> str:
    return f"{VERSION}:{settings.positions_min_codes}:{settings.positions_scope}"


@dataclass
class Plan:
    chunks: dict[str, int]  # every indexed comment -> its chunk count
    campaigns: dict[str, str]
    training: dict[str, str]  # comment -> code, of every docket the model learns from
    own: dict[str, str]  # this docket's codes
    model_fingerprint: str
    todo: dict[str, str]  # comment -> fingerprint, of those to judge


def plan(index_db, docket_id: str, settings, force: bool) -> Plan:
    indexed = index_db.state_for_docket(COLLECTION, docket_id) if index_db is not None else {}
    campaigns = queries.campaigns_of_docket(docket_id)
    training = codes.codes_of(queries.training_dockets(docket_id, settings.positions_scope))
    own = codes.codes_of([docket_id])
    embedders = sorted({r.embedder_id or "" for r in indexed.values()})
    model = digest(terms(settings), ",".join(embedders), *(f"{k}={p}" for k, p in sorted(training.items())))
    mine = item_states.states_for_docket(STAGE, docket_id)
    todo = {}
    for key, row in indexed.items():
        fingerprint = digest(model, row.fingerprint or "", campaigns.get(key) or "")
        done = mine.get(key)
        if force or done is None or done.fingerprint != fingerprint or done.state == "stale":
            todo[key] = fingerprint
    return Plan({k: r.chunk_count for k, r in indexed.items()}, campaigns, training, own, model, todo)


def unfinished(runtime, docket_id: str) -> int:
    return len(plan(runtime.existing_index_db(), docket_id, runtime.settings, False).todo)


def estimate_docket(ctx: StageContext, docket: Docket) -> StageResult:
    result = StageResult()
    index_db = ctx.runtime.existing_index_db()
    found = plan(index_db, docket.id, ctx.settings, ctx.force)
    if not found.todo:
        return result
    ctx.check_time()
    ctx.progress.start(len(found.todo))
    units = queries.docket_units(docket.id, found.chunks, found.campaigns)
    fitted, message = _model(ctx, index_db, docket.id, found, result)
    by_unit = queries.unit_codes(units, found.own)
    judged = sorted({units.unit_of[k] for k in found.todo if k in units.unit_of and units.unit_of[k] not in by_unit})
    predicted = {}
    if fitted is not None and judged:
        vectors = classifier.mean_vectors(index_db, docket.id, judged)
        import numpy as np

        with_vectors = [u for u in judged if u in vectors]
        if with_vectors:
            predicted = dict(zip(with_vectors, fitted.predict(np.vstack([vectors[u] for u in with_vectors])),
                                 strict=True))
    members, reasons = {}, {}
    for key in sorted(found.todo):
        unit = units.unit_of.get(key, key)
        weight = units.submissions.get(key, 1)
        if key in found.own:
            members[key] = (found.own[key], "coded", 1.0, unit, weight)
        elif unit in by_unit:
            members[key] = (by_unit[unit], "campaign", 1.0, unit, weight)
        elif unit in predicted:
            members[key] = (predicted[unit][0], "model", predicted[unit][1], unit, weight)
        else:
            reasons[key] = NO_TEXT if key not in units.unit_of else message
    queries.save_members(docket.id, members, set(reasons))
    _count(result, members, reasons)
    item_states.transition_many(
        {"stage": STAGE, "item": k, "docket": docket.id, "run_id": ctx.run_id, "fingerprint": f,
         "state": "skipped" if k in reasons else "ok", "reason": reasons.get(k)} for k, f in sorted(found.todo.items()))
    figures = (estimates.docket_estimates(queries.members_of(docket.id), fitted.pairs, fitted.classes)
               if fitted is not None else {})
    queries.save_model(docket.id, estimates=figures)
    ctx.progress.advance("judged", len(found.todo))
    result.message = message
    return result


def _model(ctx: StageContext, index_db, docket_id: str, found: Plan, result: StageResult):
    """(the classifier, "") when the docket has enough codes: the stored one when its codes,
    settings and embedder are those it was fitted on, else fitted now; (None, why) when not."""
    stored = queries.model_of(docket_id)
    refit = ctx.force or stored is None or stored.fingerprint != found.model_fingerprint or not stored.model
    if not refit:
        if stored.message:
            return None, stored.message
        pairs = [tuple(p) for p in json.loads(stored.cross_validated or "[]")]
        return classifier.Fitted.from_json(stored.model, pairs), ""
    vectors = _training_vectors(index_db, found.training)
    counts = Counter(p for k, p in found.training.items() if k in vectors)
    needed = classifier.codes_needed(counts, ctx.settings.positions_min_codes)
    if needed:
        message = (f"{NOT_ESTIMATED}: code {needed} more ({sum(counts.values())} coded comment(s) with text; "
                   f"positions_min_codes {ctx.settings.positions_min_codes}, and two positions with "
                   f"{classifier.MIN_PER_CLASS} codes each)")
        queries.save_model(docket_id, fingerprint=found.model_fingerprint, message=message, model="",
                           cross_validated="[]", codes=sum(counts.values()))
        result.add("not_estimated")
        return None, message
    fitted = classifier.learn(found.training, vectors)
    queries.save_model(docket_id, fingerprint=found.model_fingerprint, message="", model=fitted.to_json(),
                       cross_validated=[list(p) for p in fitted.pairs], codes=len(fitted.pairs),
                       fitted_at=ctx.clock().isoformat())
    result.add("refit")
    return fitted, ""


def _training_vectors(index_db, training: dict[str, str]) -> dict:
    """comment -> mean vector of the training codes' comments, docket by docket; a vector of
    another width than this docket's (another embedder) is left out."""
    from pipeline.store.in_lists import in_chunks
    from pipeline.store.models import PositionCode

    by_docket: dict[str, list[str]] = {}
    for chunk in in_chunks(sorted(training)):
        for key, docket in PositionCode.select(PositionCode.item, PositionCode.docket).where(
                PositionCode.item.in_(chunk)).tuples():
            by_docket.setdefault(docket, []).append(key)
    vectors = {}
    for docket, keys in sorted(by_docket.items()):
        vectors.update(classifier.mean_vectors(index_db, docket, keys))
    widths = Counter(len(v) for v in vectors.values())
    width = widths.most_common(1)[0][0] if widths else 0
    return {k: v for k, v in vectors.items() if len(v) == width}


def _count(result: StageResult, members: dict, reasons: dict[str, str]) -> None:
    for source, n in sorted(Counter(m[1] for m in members.values()).items()):
        result.add({"model": "predicted"}.get(source, source), n)
    if reasons:
        no_text = sum(1 for r in reasons.values() if r == NO_TEXT)
        if no_text:
            result.add("no_text", no_text)
        if len(reasons) - no_text:
            result.add("not_estimated_comments", len(reasons) - no_text)


# --- the declaration ---------------------------------------------------------------------------

DECLARATION = Stage(
    name=STAGE, upstream="campaigns", run=estimate_docket, task="Positions", wrapper="PositionsAll",
    doc="The docket's positions: coded comments kept, every other comment predicted, shares with intervals.",
    unfinished=lambda runtime, docket_id, now: unfinished(runtime, docket_id),
    terms=terms, atomic=True, rows_agree=consistency.problems,
    # Campaigns' letters and the index's vectors: its marker is written only while the index,
    # too, says it is done. It reads nothing of topics (the by-topic counts are read when
    # shown), so a docket with topics off is not mapped for it.
    reads=("index",),
)
