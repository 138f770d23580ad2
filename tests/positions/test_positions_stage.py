"""The Positions stage over a generated docket of planted support and oppose comments and one
support letter sent by 30 (hashing vectors): too few codes is "not estimated yet", never a
guess; enough codes predict every other comment, the campaign once and counted by its
submissions, coded comments keeping their code; a run with nothing new does nothing; new
comments are predicted with the stored model; a new code fits it again."""

from __future__ import annotations

import pytest

from devtools.position_corpus import position_comments, seed_positions
from pipeline.positions import codes, queries
from pipeline.positions.stage import NOT_ESTIMATED
from pipeline.runtime import set_runtime
from pipeline.store import item_states
from pipeline.store.models import Item, PositionMember
from tests.fixtures.position_fixtures import EMBEDDER, D, code_first, position_runtime, run
from tests.fixtures.state_fixtures import make_runtime


@pytest.fixture
def rt(tmp_path, pg_url):
    with position_runtime(tmp_path, pg_url) as runtime:
        yield runtime


def members() -> dict[str, PositionMember]:
    return {m.item: m for m in PositionMember.select().where(PositionMember.docket == D)}


def test_too_few_codes_is_not_estimated_and_no_guess(rt):
    planted = position_comments(D, 40, letter_copies=10)
    seed_positions(rt, D, planted, EMBEDDER)
    coded = code_first(planted, 5)
    result = run(rt)
    assert result.counts.get("not_estimated") == 1 and "predicted" not in result.counts
    assert result.message.startswith(f"{NOT_ESTIMATED}: code 15 more")
    found = members()
    assert set(found) == set(coded) and {m.source for m in found.values()} == {"coded"}
    states = item_states.states_for_docket("positions", D)
    assert {s.reason for k, s in states.items() if k not in coded} == {result.message}
    assert queries.model_of(D).model == "" and queries.model_of(D).estimates == "{}"
    assert run(rt).counts == {}  # nothing new: nothing done


def test_enough_codes_predict_every_comment_and_count_the_campaign_by_submissions(rt):
    planted = position_comments(D, 60, support_share=0.4, letter_copies=30)
    seed_positions(rt, D, planted, EMBEDDER)
    letter = sorted(c.key for c in planted if c.campaign)
    Item.update(duplicate_comments=4).where(Item.key == letter[0]).execute()  # stands for 5
    coded = code_first(planted, 24)
    result = run(rt)
    assert result.counts["refit"] == 1 and result.counts["coded"] == 24
    assert result.counts["predicted"] == 90 - 24
    found = members()
    assert len(found) == 90
    assert all(found[k].position == p and found[k].source == "coded" for k, p in coded.items())
    # the campaign is judged once (its letter) and all 30 members get that judgement
    assert len({found[k].unit for k in letter}) == 1
    assert {(found[k].position, found[k].probability) for k in letter} == {(found[letter[0]].position,
                                                                           found[letter[0]].probability)}
    truth = {c.key: c.position for c in planted}
    predicted = [k for k, m in found.items() if m.source == "model"]
    right = sum(found[k].position == truth[k] for k in predicted)
    assert right / len(predicted) >= 0.9
    figures = queries.model_of(D).estimates
    import json

    shares = json.loads(figures)
    assert shares["submissions"]["total"] == 94  # 60 + 29 copies + the one standing for 5
    assert shares["comments"]["total"] == 90
    support = shares["submissions"]["model"]["support"]
    true_support = (sum(1 for c in planted if c.position == "support") + 4) / 94
    assert support["low"] <= true_support <= support["high"]
    assert run(rt).counts == {}  # a run with nothing new does nothing


def test_new_comments_are_predicted_with_the_stored_model_and_a_new_code_refits(rt):
    planted = position_comments(D, 50, support_share=0.5)
    seed_positions(rt, D, planted, EMBEDDER)
    code_first(planted, 20)
    assert run(rt).counts["refit"] == 1
    fitted_at = queries.model_of(D).fitted_at
    more = position_comments(D, 12, support_share=0.5, seed=9, start=51)
    seed_positions(rt, D, planted + more, EMBEDDER)
    result = run(rt)
    assert "refit" not in result.counts and result.counts == {"predicted": 12}
    assert queries.model_of(D).fitted_at == fitted_at
    newly = more[0]
    codes.record([(newly.key, newly.position)], "tester")
    result = run(rt)
    assert result.counts["refit"] == 1 and result.counts["coded"] == 21
    assert members()[newly.key].source == "coded"
    assert run(rt).counts == {}
    before = {k: (m.position, m.source, m.probability) for k, m in members().items()}
    forced = run(rt, force=True)
    assert forced.counts["refit"] == 1 and forced.counts["predicted"] == 62 - 21
    assert {k: (m.position, m.source, m.probability) for k, m in members().items()} == before


def test_with_scope_rule_a_docket_learns_from_the_codes_of_its_rules_other_dockets(tmp_path, pg_url):
    from pipeline.store.models import Docket

    sibling = "EPA-2026-0312"
    for scope, expected in (("docket", None), ("rule", "predicted")):
        runtime = make_runtime(tmp_path / scope, index_url=pg_url, positions_scope=scope)
        runtime.state  # noqa: B018
        previous = set_runtime(runtime)
        try:
            seed_positions(runtime, D, position_comments(D, 20), EMBEDDER)
            other = position_comments(sibling, 30, seed=5)
            seed_positions(runtime, sibling, other, EMBEDDER)
            Docket.update(rin="2060-AV99").where(Docket.id.in_([D, sibling])).execute()
            codes.record([(c.key, c.position) for c in other[:24]], "tester")
            result = run(runtime)
            if expected is None:
                assert "predicted" not in result.counts and result.message.startswith(NOT_ESTIMATED)
            else:
                assert result.counts["predicted"] == 20 and result.counts["refit"] == 1
        finally:
            set_runtime(previous)
            for docket in (D, sibling):
                runtime.index_db().purge_docket(docket)
            runtime.close()
