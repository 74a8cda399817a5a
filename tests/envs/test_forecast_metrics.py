"""The forecasting metrics against hand-computed values and against scikit-learn's ndcg_score."""

from __future__ import annotations

import math

import numpy as np
import pytest
from sklearn.metrics import ndcg_score

from rsigym.envs.forecast.metrics import (mae, ndcg_at_k, ndcg_chance, ndcg_lift, regret_best, regret_mean,
                                          round_metrics, spearman, top_k)

TRUE = [0.3, -0.2, 0.1, 0.0]
PRED = [0.1, 0.2, 0.0, -0.1]
LOG3 = math.log2(3)


def test_mae_and_spearman_match_the_hand_computation():
    assert mae(PRED, TRUE) == pytest.approx((0.2 + 0.4 + 0.1 + 0.1) / 4)
    # ranks true (4,1,3,2), predicted (3,4,2,1): sum d^2 = 12, rho = 1 - 6*12/(4*15)
    assert spearman(PRED, TRUE) == pytest.approx(-0.2)


def test_ndcg_on_shifted_relevance_matches_the_hand_computation_with_negative_gains():
    # relevance = true - min = (0.5, 0, 0.3, 0.2); predicted order 1, 0, 2
    dcg = 0.0 / 1 + 0.5 / LOG3 + 0.3 / 2
    ideal = 0.5 / 1 + 0.3 / LOG3 + 0.2 / 2
    assert ndcg_at_k(TRUE, PRED, 3) == pytest.approx(dcg / ideal)
    chance = 0.25 * (1 + 1 / LOG3 + 1 / 2) / ideal
    assert ndcg_chance(TRUE, 3) == pytest.approx(chance)
    assert ndcg_lift(TRUE, PRED, 3) == pytest.approx((dcg / ideal - chance) / (1 - chance))


def test_tied_predictions_share_their_groups_mean_relevance():
    # groups {0, 1} (mean relevance 0.25) on ranks 1-2 and {2, 3} (mean 0.25) on rank 3
    tied = [1.0, 1.0, 0.0, 0.0]
    ideal = 0.5 + 0.3 / LOG3 + 0.2 / 2
    assert ndcg_at_k(TRUE, tied, 3) == pytest.approx((0.25 * (1 + 1 / LOG3) + 0.25 / 2) / ideal)
    # a tie group cut by k contributes only the discounts inside the top k
    assert ndcg_at_k([0.0, 1.0, 2.0], [5.0, 5.0, 5.0], 1) == pytest.approx(1.0 / 2.0)


def test_a_constant_predictor_has_nan_spearman_chance_ndcg_and_zero_lift():
    constant = [0.0] * 4
    assert math.isnan(spearman(constant, TRUE))
    assert ndcg_at_k(TRUE, constant, 3) == pytest.approx(ndcg_chance(TRUE, 3))
    assert ndcg_lift(TRUE, constant, 3) == pytest.approx(0.0)
    metrics = round_metrics(TRUE, constant, [0, 1, 2])
    assert math.isnan(metrics["spearman"]) and metrics["mae"] == pytest.approx(0.15)


def test_all_equal_true_gains_give_ndcg_zero_as_scikit_learn_does():
    assert ndcg_at_k([0.1, 0.1, 0.1], [3.0, 2.0, 1.0], 3) == 0.0
    assert ndcg_score([[0.0, 0.0, 0.0]], [[3.0, 2.0, 1.0]], k=3) == 0.0


def test_ndcg_equals_scikit_learn_on_shifted_relevance_with_ties_and_negative_gains():
    rng = np.random.default_rng(0)
    for trial in range(200):
        n = int(rng.integers(2, 20))
        true = np.round(rng.normal(-0.1, 0.3, n), 2)      # negative gains, some true ties
        predicted = np.round(rng.normal(0, 1, n), int(rng.integers(0, 2)))   # coarse: many tied predictions
        k = int(rng.integers(1, n + 1))
        expected = ndcg_score([true - true.min()], [predicted], k=k)
        assert ndcg_at_k(true, predicted, k) == pytest.approx(expected, abs=1e-12), trial


def test_regret_best_of_three_and_mean_of_three():
    chosen = top_k(PRED, 3)
    assert chosen == [1, 0, 2]
    assert regret_best(TRUE, chosen) == pytest.approx(0.0)
    assert regret_mean(TRUE, chosen) == pytest.approx(0.3 - (0.3 - 0.2 + 0.1) / 3)
    assert regret_best(TRUE, [1, 2, 3]) == pytest.approx(0.3 - 0.1)
    assert regret_best([-0.5, -0.1, -0.9, -0.4], [0, 2, 3]) == pytest.approx(-0.1 - -0.4)


def test_top_k_breaks_ties_by_index_or_by_the_generator():
    assert top_k([1.0, 1.0, 0.0, 1.0], 2) == [0, 1]
    draws = {tuple(top_k([0.0] * 6, 3, np.random.default_rng(s))) for s in range(20)}
    assert len(draws) > 5                  # random tie-breaking: a constant predictor picks at random
    assert top_k([0.0, 2.0, 1.0], 2, np.random.default_rng(0)) == [1, 2]
