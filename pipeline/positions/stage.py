"""Positions: who supports the rule, who opposes it, and how sure we are.

Runs after campaigns (IndexAll runs it with topics, last). An analyst's codes (``pipeline.positions.codes``) are the
ground truth: a coded comment keeps its code, and a campaign with a coded member gives its
other members that code. Every other comment with text gets the classifier's position and
probability (``pipeline.positions.classifier``: a logistic regression over the mean passage
vector the index holds), a campaign judged once through its letter. The classifier learns
from the docket's codes (``positions_scope`` = rule: every docket of its RIN's); with fewer
than ``positions_min_codes`` codes, or fewer than two positions with three codes each, the
docket's positions are "not estimated yet: code N more" and nothing is guessed.

With ``llm_url`` set (``pipeline.positions.judge``), a language model judges every unit with
text instead of the classifier, once per distinct text, with a quoted evidence; the analyst's
code still wins, and the model-based shares are corrected by the judge's confusion against the
codes. Without it nothing is sent and nothing of the judge is in any fingerprint.

Incremental: a comment's fingerprint is its index fingerprint, its campaign and the model's
fingerprint (the training codes, the settings, the embedder, the judge); new comments are predicted with
the stored model, a changed set of codes fits it again and predicts every comment, and a run
with nothing new does nothing. The docket's prevalence figures (``estimates``) are made again
whenever anything was.
"""

from __future__ import annotations

import json
from collections import Counter
from dataclasses import dataclass

from pipeline.clock import iso, utcnow
from pipeline.engine.stage import Stage, StageContext, StageResult
from pipeline.failures import TRANSIENT, RetryPolicy
from pipeline.fingerprints import digest
from pipeline.positions import classifier, codes, consistency, estimates, judge, queries
from pipeline.store import item_states
from pipeline.store.models import Docket

STAGE = "positions"
COLLECTION = classifier.COLLECTION
VERSION = "positions-1"
NOT_ESTIMATED = "not estimated yet"
NO_TEXT = "no text to judge"


def terms(settings) -> str:
    return f"{VERSION}:{settings.positions_min_codes}:{settings.positions_scope}{judge.terms(settings)}"


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
    now = iso(utcnow())
    todo = {}
    for key, row in indexed.items():
        fingerprint = digest(model, row.fingerprint or "", campaigns.get(key) or "")
        done = mine.get(key)
        if done is not None and done.waits(now) and not force:
            continue  # the judge did not answer: a later run asks again
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
    wanted = sorted({units.unit_of[k] for k in found.todo if k in units.unit_of})
    # None: no judge set. The answers were asked before the run's transaction (``ask_judge``)
    # when the engine runs it; a direct call asks here.
    verdicts = ctx.prepared if ctx.prepared is not None else _judged(ctx, index_db, docket.id, wanted)
    _count_judge(result, verdicts)
    predicted = _predicted(index_db, docket.id, fitted, [u for u in wanted if u not in by_unit]
                           if verdicts is None else [])
    members, reasons, failed = {}, {}, {}
    for key in sorted(found.todo):
        unit = units.unit_of.get(key, key)
        weight = units.submissions.get(key, 1)
        # The precedence: the analyst's code, its campaign's code, the judge's, the classifier's.
        if key in found.own:
            members[key] = (found.own[key], "coded", 1.0, unit, weight)
        elif unit in by_unit:
            members[key] = (by_unit[unit], "campaign", 1.0, unit, weight)
        elif verdicts is not None and unit in verdicts.found:
            members[key] = (verdicts.found[unit].position, "llm", 1.0, unit, weight)
        elif verdicts is not None and unit in verdicts.failed:
            failed[key] = verdicts.failed[unit]
        elif unit in predicted:
            members[key] = (predicted[unit][0], "model", predicted[unit][1], unit, weight)
        else:
            reasons[key] = NO_TEXT if key not in units.unit_of else (message or NO_TEXT)
    queries.save_members(docket.id, members, set(reasons) | set(failed), verdicts.found if verdicts else None)
    _count(result, members, reasons, failed)
    _record_states(ctx, docket.id, found.todo, reasons, failed)
    queries.save_model(docket.id, estimates=_figures(ctx.settings, docket.id, fitted, verdicts is not None))
    ctx.progress.advance("judged", len(found.todo))
    result.message = message
    return result


def _predicted(index_db, docket_id: str, fitted, judged: list[str]) -> dict[str, tuple[str, float]]:
    """unit -> the classifier's (position, probability), for those of ``judged`` with vectors."""
    if fitted is None or not judged:
        return {}
    import numpy as np

    vectors = classifier.mean_vectors(index_db, docket_id, judged)
    with_vectors = [u for u in judged if u in vectors]
    if not with_vectors:
        return {}
    return dict(zip(with_vectors, fitted.predict(np.vstack([vectors[u] for u in with_vectors])), strict=True))


def ask_judge(ctx: StageContext, docket: Docket) -> None:
    """The stage's ``prepare``: the judge's answers for the units the run will place, asked
    before its transaction (a slow model would hold the state DB's write lock for as long,
    and an error after the answers would roll back what was paid for), left in
    ``ctx.prepared``. Nothing without a judge, or with nothing to do."""
    if judge.judge_of(ctx.settings) is None:
        return
    index_db = ctx.runtime.existing_index_db()
    found = plan(index_db, docket.id, ctx.settings, ctx.force)
    if found.todo:
        units = queries.docket_units(docket.id, found.chunks, found.campaigns)
        ctx.prepared = _judged(ctx, index_db, docket.id,
                               sorted({units.unit_of[k] for k in found.todo if k in units.unit_of}))


def _judged(ctx: StageContext, index_db, docket_id: str, wanted: list[str]):
    """The judge's answers for the units ``wanted`` (None when no judge is set: nothing sent)."""
    found = judge.judge_of(ctx.settings)
    if found is None:
        return None
    texts = queries.unit_texts(index_db, COLLECTION, docket_id, wanted)
    return judge.judge_units(
        found, texts, queries.kept_judgements(docket_id, found),
        lambda text, unit, answer: queries.save_judgement(docket_id, found, text, unit, answer, iso(ctx.clock())),
        ctx.check_time)


def _count_judge(result: StageResult, verdicts) -> None:
    for name, n in (("judge_asked", verdicts.asked if verdicts else 0), ("judge_kept", verdicts.kept if verdicts else 0)):
        if n:
            result.add(name, n)


def _record_states(ctx: StageContext, docket_id: str, todo: dict[str, str], reasons: dict[str, str],
                   failed: dict) -> None:
    """Each judged comment's state: ok, skipped (with why), failed for good (the judge's answer
    unusable), or waiting to retry (the judge did not answer)."""
    waiting = {k for k, f in failed.items() if f.kind == TRANSIENT}
    item_states.transition_many(
        {"stage": STAGE, "item": k, "docket": docket_id, "run_id": ctx.run_id, "fingerprint": f,
         "state": "skipped" if k in reasons else failed[k].state if k in failed else "ok",
         "reason": reasons[k] if k in reasons else failed[k].reason if k in failed else None,
         **({"detail": "permanent"} if k in failed else {})}
        for k, f in sorted(todo.items()) if k not in waiting)
    policy = RetryPolicy.from_settings(ctx.settings)
    for key in sorted(waiting):
        item_states.retry_later(STAGE, key, docket_id, failed[key].reason, run_id=ctx.run_id, policy=policy)


def _figures(settings, docket_id: str, fitted, judged: bool) -> dict:
    """The docket's prevalence figures: with the judge, its labels corrected by its confusion
    against the codes (once the codes it answered for are enough); else the classifier's."""
    members = queries.members_of(docket_id)
    if judged:
        pairs = judge.pairs_of(members)
        if classifier.codes_needed(Counter(c for c, _ in pairs), settings.positions_min_codes):
            return {}
        return estimates.docket_estimates(members, pairs, list(codes.POSITIONS), method=estimates.JUDGE)
    return estimates.docket_estimates(members, fitted.pairs, fitted.classes) if fitted is not None else {}


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


def _count(result: StageResult, members: dict, reasons: dict[str, str], failed: dict) -> None:
    for source, n in sorted(Counter(m[1] for m in members.values()).items()):
        result.add({"model": "predicted", "llm": "judged"}.get(source, source), n)
    for kind, n in sorted(Counter(f.kind for f in failed.values()).items()):
        result.add("judge_waiting" if kind == TRANSIENT else "judge_failed", n)
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
    terms=terms, atomic=True, rows_agree=consistency.problems, prepare=ask_judge,
    # Campaigns' letters and the index's vectors: its marker is written only while the index,
    # too, says it is done. It reads nothing of topics (the by-topic counts are read when
    # shown), so a docket with topics off is not mapped for it.
    reads=("index",),
)
