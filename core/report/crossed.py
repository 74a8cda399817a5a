"""Inference for crossed designs: every (seed stream, problem) cell measured once, paired.

A world model learns along one seed's stream, so cells that share a seed are correlated (one
model, one history), and cells that share a problem are correlated (one difficulty). Resampling
problems with seeds averaged treats the seeds as fixed and the CI too narrow when seed streams
differ; resampling (seed, problem) pairs ignores both correlations. The **two-way (pigeonhole)
bootstrap** (Owen 2007, "The pigeonhole bootstrap") resamples seeds and problems independently,
each with replacement, and recomputes the mean over the crossed cells with their multiplicities;
it is the unit this module uses for the CI, the paired test and the minimum detectable
difference alike. Written here because no kept library offers the crossed resampling.

Units are sorted by a stable key (``repr`` of the seed, the problem id) before resampling, so the
result does not depend on the order of the input.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, Mapping

import numpy as np


def _scipy_stats() -> Any:
    """scipy.stats, imported on first use (most of the import cost of the package that imports this)."""
    from scipy import stats

    return stats

__all__ = ["CrossedResult", "crossed_bootstrap", "crossed_matrix"]


@dataclass(frozen=True)
class CrossedResult:
    """Mean over the cells, its two-way bootstrap CI, SE, two-sided p-value against 0, and MDD."""

    estimate: float
    ci: tuple[float, float]
    se: float
    p_value: float
    mdd: float            # 80%-power minimum detectable difference at the test's alpha
    n_seeds: int
    n_problems: int
    n_cells: int

    def to_json(self) -> dict[str, Any]:
        return {"estimate": self.estimate, "ci": list(self.ci), "se": self.se, "p_value": self.p_value,
                "mdd": self.mdd, "n_seeds": self.n_seeds, "n_problems": self.n_problems, "n_cells": self.n_cells}


def crossed_matrix(cells: Mapping[tuple[Any, str], float]) -> tuple[np.ndarray, list[Any], list[str]]:
    """``(S, P)`` matrix of cell values (NaN where a cell is missing), seeds and problems sorted."""
    seeds = sorted({k[0] for k in cells}, key=repr)
    problems = sorted({k[1] for k in cells})
    row = {s: i for i, s in enumerate(seeds)}
    col = {p: j for j, p in enumerate(problems)}
    matrix = np.full((len(seeds), len(problems)), np.nan)
    for (seed, problem), value in cells.items():
        matrix[row[seed], col[problem]] = float(value)
    return matrix, seeds, problems


def crossed_bootstrap(cells: Mapping[tuple[Any, str], float], *, confidence: float = 0.95, resamples: int = 4000,
                      power: float = 0.8, seed: int = 0, resample_seeds: bool = True) -> CrossedResult:
    """Two-way bootstrap of the mean of ``cells`` ({(seed, problem id): value}, e.g. paired deltas).

    Args:
        cells: One value per (seed, problem) cell; missing cells are allowed (the mean is over the
            cells present in each resample).
        confidence: CI level; the test's alpha is ``1 - confidence``.
        resamples: Bootstrap draws.
        power: Power at which the minimum detectable difference is computed:
            ``MDD = (z_{1 - alpha/2} + z_{power}) * SE``, SE the bootstrap SD of the mean.
        seed: Seed of the resampling Generator.
        resample_seeds: False resamples problems only (seeds fixed): the narrower, one-way interval
            this module exists to replace, kept for comparison.

    Returns:
        The estimate, percentile CI, SE, a two-sided percentile p-value (twice the share of draws on
        the far side of 0, floored at 1 / resamples) and the MDD. With one seed and one problem
        there is no spread: the CI is the point and the p-value 1.
    """
    if not cells:
        raise ValueError("crossed_bootstrap needs at least one (seed, problem) cell")
    matrix, seeds, problems = crossed_matrix(cells)
    values = np.asarray(list(cells.values()), dtype=float)
    if not np.all(np.isfinite(values)):
        raise ValueError("crossed_bootstrap: every cell value must be finite")
    present = np.isfinite(matrix).astype(float)                       # (S, P)
    filled = np.nan_to_num(matrix)                                    # (S, P)
    S, P = matrix.shape
    estimate = float(np.sum(filled) / np.sum(present))
    alpha = 1.0 - confidence
    if len(values) == 1:
        return CrossedResult(estimate, (estimate, estimate), 0.0, 1.0, math.nan, S, P, len(values))
    rng = np.random.default_rng(seed)
    draws = _pigeonhole(filled, present, rng, resamples, resample_seeds)
    se = float(np.std(draws, ddof=1)) if draws.size > 1 else 0.0
    if resample_seeds and S > 1 and P > 1 and se > 0:
        # The pigeonhole bootstrap counts the cell-level noise twice (once through the seed draws,
        # once through the problem draws; Owen 2007). Remove one copy: var = V_seed + V_problem -
        # V_cell, each from a one-way resampling of the same cells, floored at the larger one-way
        # variance; the draws are rescaled about the estimate to that SE.
        # (the bootstrap's variance of a mean is the plug-in one, (n - 1) / n of the unbiased one)
        v_seed = np.var(_pigeonhole(filled, present, rng, resamples, True, resample_problems=False), ddof=1) * S / (S - 1)
        v_problem = np.var(_pigeonhole(filled, present, rng, resamples, False), ddof=1) * P / (P - 1)
        cell_values = filled[present > 0]
        v_cell = np.var(cell_values, ddof=1) / cell_values.size
        corrected = math.sqrt(max(v_seed + v_problem - v_cell, v_seed, v_problem))
        # Few seeds estimate the seed component poorly: Satterthwaite's degrees of freedom for the
        # two components, and the draws widened by t / z at that df.
        df = (v_seed + v_problem) ** 2 / (v_seed ** 2 / (S - 1) + v_problem ** 2 / (P - 1)) if v_seed + v_problem > 0 else math.inf
        widen = float(_scipy_stats().t.ppf(1 - alpha / 2, df) / _scipy_stats().norm.ppf(1 - alpha / 2)) if math.isfinite(df) else 1.0
        draws = estimate + (draws - np.mean(draws)) * (corrected * widen / se)
        se = corrected * widen
    low, high = np.quantile(draws, [alpha / 2, 1 - alpha / 2])
    if se == 0.0:
        p_value = 1.0 if estimate == 0 else 0.0
    else:
        far = min(float(np.mean(draws <= 0)), float(np.mean(draws >= 0)))
        p_value = min(1.0, max(2 * far, 1.0 / draws.size))
    mdd = float((_scipy_stats().norm.ppf(1 - alpha / 2) + _scipy_stats().norm.ppf(power)) * se)
    return CrossedResult(estimate, (float(low), float(high)), se, p_value, mdd, S, P, len(values))


def _pigeonhole(filled: np.ndarray, present: np.ndarray, rng: np.random.Generator, resamples: int,
                resample_seeds: bool, resample_problems: bool = True) -> np.ndarray:
    """Means of ``resamples`` draws with seeds and/or problems resampled with replacement."""
    S, P = filled.shape
    seed_counts = rng.multinomial(S, np.full(S, 1.0 / S), size=resamples) if resample_seeds \
        else np.ones((resamples, S))                                  # (B, S)
    problem_counts = rng.multinomial(P, np.full(P, 1.0 / P), size=resamples) if resample_problems \
        else np.ones((resamples, P))                                  # (B, P)
    # sum_s sum_p c_bs x_sp d_bp as a matrix product (einsum's plain loop was most of an analysis'
    # time); counts and cell values are small integers, so the sums are exact either way
    numerator = np.sum((seed_counts @ filled) * problem_counts, axis=1)
    denominator = np.sum((seed_counts @ present) * problem_counts, axis=1)
    ok = denominator > 0                                              # a draw of only-missing cells is void
    return numerator[ok] / denominator[ok]
