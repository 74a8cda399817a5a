"""The forecasting metrics of one round: MAE, Spearman, NDCG@k with its chance-corrected lift, Regret@k.

Conventions (the ones the published protocol uses, made exact):

* **Spearman** is NaN when the predictions (or the true gains) are constant; callers count NaNs
  instead of dropping them silently.
* **NDCG@k** uses the shifted relevance ``g - min(g)`` over the round's candidates, linear gains
  and ``1 / log2(rank + 1)`` discounts; tied predictions share the average gain of their tie
  group, as scikit-learn's ``ndcg_score`` does (a test checks equality). All-equal true gains
  give 0, also as scikit-learn does.
* **Chance-corrected lift** is ``(NDCG - E[NDCG]) / (1 - E[NDCG])``, where ``E[NDCG]`` is the
  expectation under a uniformly random ranking: every position then holds the mean relevance.
* **Regret@k** of a chosen set: best true gain of the round minus the best (primary) or the mean
  (secondary) true gain of the chosen candidates.

scikit-learn does NDCG; it is written here too because the env needs the chance term and one
pass per round without building 2-D arrays, and the test pins it to scikit-learn.
"""

from __future__ import annotations

import math
import warnings
from typing import Sequence

import numpy as np

__all__ = ["mae", "spearman", "ndcg_at_k", "ndcg_chance", "ndcg_lift", "regret_best", "regret_mean",
           "top_k", "round_metrics"]


def mae(predicted: Sequence[float], true: Sequence[float]) -> float:
    """Mean absolute error of predicted against true gains."""
    p, t = np.asarray(predicted, float), np.asarray(true, float)
    return float(np.abs(p - t).mean())


def spearman(predicted: Sequence[float], true: Sequence[float]) -> float:
    """Spearman's rank correlation (average ranks for ties); NaN for a constant input."""
    from scipy import stats

    p, t = np.asarray(predicted, float), np.asarray(true, float)
    if np.ptp(p) == 0 or np.ptp(t) == 0:
        return math.nan
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        return float(stats.spearmanr(p, t).statistic)


def _discounts(k: int) -> np.ndarray:
    return 1.0 / np.log2(np.arange(2, k + 2))


def _dcg(relevance: np.ndarray, scores: np.ndarray, k: int) -> float:
    discounts = _discounts(len(relevance))
    order_values = np.unique(scores)[::-1]        # distinct predicted values, best first
    dcg, position = 0.0, 0
    for value in order_values:
        members = relevance[scores == value]
        span = discounts[position:min(position + len(members), k)]
        dcg += float(members.mean()) * float(span.sum())   # a tie group shares its mean relevance
        position += len(members)
        if position >= k:
            break
    return dcg


def ndcg_at_k(true: Sequence[float], predicted: Sequence[float], k: int = 3) -> float:
    """NDCG@k of ``predicted`` on the shifted relevance ``true - min(true)`` (see the module doc)."""
    relevance = np.asarray(true, float) - float(np.min(true))
    ideal = float((np.sort(relevance)[::-1][:k] * _discounts(k)[:min(k, len(relevance))]).sum())
    if ideal == 0.0:
        return 0.0
    return _dcg(relevance, np.asarray(predicted, float), k) / ideal


def ndcg_chance(true: Sequence[float], k: int = 3) -> float:
    """E[NDCG@k] under a uniformly random ranking of the candidates."""
    relevance = np.asarray(true, float) - float(np.min(true))
    ideal = float((np.sort(relevance)[::-1][:k] * _discounts(k)[:min(k, len(relevance))]).sum())
    if ideal == 0.0:
        return 0.0
    return float(relevance.mean() * _discounts(k)[:min(k, len(relevance))].sum()) / ideal


def ndcg_lift(true: Sequence[float], predicted: Sequence[float], k: int = 3) -> float:
    """``(NDCG - chance) / (1 - chance)``: 0 for a random ranking on average, 1 for a perfect one."""
    chance = ndcg_chance(true, k)
    if chance >= 1.0:
        return math.nan
    return (ndcg_at_k(true, predicted, k) - chance) / (1.0 - chance)


def top_k(predicted: Sequence[float], k: int, rng: np.random.Generator | None = None) -> list[int]:
    """Indices of the ``k`` highest predictions; ties broken by ``rng`` (by index when None)."""
    p = np.asarray(predicted, float)
    tiebreak = rng.random(len(p)) if rng is not None else -np.arange(len(p), dtype=float)
    order = np.lexsort((-tiebreak, -p))            # by prediction descending, then tiebreak descending
    return [int(i) for i in order[:k]]


def regret_best(true: Sequence[float], chosen: Sequence[int]) -> float:
    """Best true gain of the round minus the best true gain among ``chosen`` (Regret@k, primary)."""
    t = np.asarray(true, float)
    return float(t.max() - t[list(chosen)].max())


def regret_mean(true: Sequence[float], chosen: Sequence[int]) -> float:
    """Best true gain of the round minus the mean true gain of ``chosen`` (Regret@k, secondary)."""
    t = np.asarray(true, float)
    return float(t.max() - t[list(chosen)].mean())


def round_metrics(true: Sequence[float], predicted: Sequence[float], chosen: Sequence[int], k: int = 3) -> dict[str, float]:
    """Every metric of one round, keyed as the env's ``info`` and the analyses name them."""
    return {
        "mae": mae(predicted, true), "spearman": spearman(predicted, true),
        "ndcg": ndcg_at_k(true, predicted, k), "ndcg_chance": ndcg_chance(true, k),
        "ndcg_lift": ndcg_lift(true, predicted, k),
        "regret_best": regret_best(true, chosen), "regret_mean": regret_mean(true, chosen),
    }
