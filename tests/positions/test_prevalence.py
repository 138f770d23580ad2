"""The intervals: Wilson's on a hand-worked example, the design-based shares under weights,
and the adjusted classify-and-count correcting a model that confuses one way."""

from __future__ import annotations

import pytest

from pipeline.positions import classifier, prevalence


def test_wilson_on_a_hand_example():
    # 8 of 20: p = 0.4, z = 1.96; centre (0.4 + 0.09604) / 1.19208 = 0.41611,
    # half 1.96 * sqrt(0.012 + 0.0024010) / 1.19208 = 0.19733
    low, high = prevalence.wilson(8, 20)
    assert low == pytest.approx(0.2188, abs=1e-4) and high == pytest.approx(0.6134, abs=1e-4)
    assert prevalence.wilson(0, 10)[0] == 0.0 and prevalence.wilson(10, 10)[1] == pytest.approx(1.0)
    assert prevalence.wilson(0, 0) == (0.0, 1.0)


def test_design_shares_weigh_by_target_over_draw():
    labels = ["support", "oppose", "oppose", "oppose"]
    # drawn in proportion to submissions: the share of submissions is the plain share ...
    plain = prevalence.design_shares(labels, [10, 1, 1, 1], [10, 1, 1, 1], ["support", "oppose"])
    assert plain["support"].share == pytest.approx(0.25)
    assert (plain["support"].low, plain["support"].high) == pytest.approx(prevalence.wilson(1, 4))
    # ... and of comments the letter standing for 10 submissions counts as one comment of ten draws
    comments = prevalence.design_shares(labels, [1, 1, 1, 1], [10, 1, 1, 1], ["support", "oppose"])
    assert comments["support"].share == pytest.approx(0.1 / 3.1)


def test_adjusted_shares_undo_a_known_confusion():
    # the model calls a fifth of oppose support, and support always support
    pairs = [("support", "support")] * 50 + [("oppose", "support")] * 10 + [("oppose", "oppose")] * 40
    # 1000 uncoded comments, truly 300 support and 700 oppose: predicted 300 + 140 support
    found = prevalence.adjusted_shares({}, {"support": 440, "oppose": 560}, pairs, ["oppose", "support"],
                                       ["support", "oppose"])
    assert found["support"].share == pytest.approx(0.3, abs=1e-6)
    assert found["support"].low < 0.3 < found["support"].high < 0.4


def test_codes_needed():
    assert classifier.codes_needed({}, 20) == 20
    assert classifier.codes_needed({"support": 18, "oppose": 1}, 20) == 2
    assert classifier.codes_needed({"support": 30}, 20) == 3
    assert classifier.codes_needed({"support": 17, "oppose": 3}, 20) == 0


def test_the_design_based_interval_covers_the_true_share_in_at_least_93_of_100_trials():
    """Planted dockets of 3,000 comments (a third support, a half oppose, the rest no
    position), 100 seeded random samples of 60 coded: Wilson's 95 % interval holds each true
    share in at least 93 of them."""
    import random

    positions = ["support", "oppose", "no_position"]
    rng = random.Random(11)
    population = ["support"] * 1000 + ["oppose"] * 1500 + ["no_position"] * 500
    covered = dict.fromkeys(positions, 0)
    for _ in range(100):
        sample = rng.sample(population, 60)
        shares = prevalence.design_shares(sample, [1] * 60, [1] * 60, positions)
        for p in positions:
            truth = population.count(p) / len(population)
            covered[p] += shares[p].low <= truth <= shares[p].high
    assert min(covered.values()) >= 93, covered
