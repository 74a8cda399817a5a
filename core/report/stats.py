"""Statistics for attribution analyses: paired effects, equivalence, rerun noise, rankings.

scipy does the work wherever it has the test (bootstrap, binomial, t, normal, Spearman); the
rest (flip rate, one-way ICC, NDCG, regret) is a few lines of numpy written out here, with the
definition in each docstring. Every resampling takes a seed and uses a numpy ``Generator``, and
sorts its units by a stable key first (the value itself for one number per unit; the cluster key,
then the values, for clusters), so the order records arrive in changes no interval or p-value.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from types import ModuleType
from typing import Any, Mapping, Sequence

import numpy as np


def _st() -> ModuleType:
    """scipy.stats, imported on first use: it is most of the import cost of ``rsigym.graders``."""
    from scipy import stats

    return stats


__all__ = [
    "TostResult", "bootstrap_ci", "cluster_bootstrap_ci", "cluster_means", "cluster_t_ci",
    "paired_bootstrap_ci", "mcnemar_exact", "sign_flip_test", "tost_paired",
    "flip_rate", "task_flip_share", "pass_hat_k",
    "icc_oneway", "single_run_difference_sd", "minimum_detectable_difference", "spearman",
    "ndcg_at_k", "regret_at_k",
]


def bootstrap_ci(values: Sequence[float], *, confidence: float = 0.95, resamples: int = 2000,
                 seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean (scipy), seeded.

    A single value or a constant sample has no resampling spread, so its interval is exactly
    ``(x, x)``; an empty sample gives ``(nan, nan)``. Reports and graders both use this one.
    The values are sorted before resampling: the same multiset in any order gives the same CI.
    """
    data = np.sort(np.asarray(values, dtype=float))
    if data.size == 0:
        return (math.nan, math.nan)
    if data.size == 1 or np.all(data == data[0]):
        return (float(data[0]), float(data[0]))
    result = _st().bootstrap((data,), np.mean, confidence_level=confidence, n_resamples=resamples,
                           method="percentile", rng=np.random.default_rng(seed))
    return (float(result.confidence_interval.low), float(result.confidence_interval.high))


def paired_bootstrap_ci(deltas: Sequence[float], confidence: float = 0.95, resamples: int = 5000,
                        seed: int = 0) -> tuple[float, float]:
    """Percentile bootstrap CI of the mean paired difference (``bootstrap_ci`` of the deltas).

    Resampling whole pairs keeps the pairing: ``deltas[i]`` is treatment minus baseline of pair i.
    """
    return bootstrap_ci(deltas, confidence=confidence, resamples=resamples, seed=seed)


def cluster_bootstrap_ci(values: Sequence[float], clusters: Sequence[Any], *, confidence: float = 0.95,
                         resamples: int = 5000, seed: int = 0) -> tuple[float, float, int]:
    """Percentile bootstrap CI of the mean over clusters: whole clusters are resampled.

    ``values[i]`` belongs to cluster ``clusters[i]`` (a target, a task); each cluster contributes
    the mean of its values, and the CI is ``bootstrap_ci`` of those cluster means, so the
    interval is as wide as the disagreement between clusters, not between the units inside one.
    NaN values are dropped first. Cluster means are sorted before resampling, so neither the order
    of the values nor of the clusters changes the result. Returns ``(low, high, clusters)``.
    """
    means = list(cluster_means(values, clusters).values())
    low, high = bootstrap_ci(means, confidence=confidence, resamples=resamples, seed=seed)
    return low, high, len(means)


def cluster_means(values: Sequence[float], clusters: Sequence[Any]) -> dict[str, float]:
    """Mean of the non-NaN values of each cluster, keyed by ``str(cluster)`` in sorted order
    (an exact sum of the sorted values, so the order of the input changes no bit)."""
    if len(values) != len(clusters):
        raise ValueError(f"values and clusters differ in length: {len(values)} vs {len(clusters)}")
    members: dict[str, list[float]] = {}
    for value, cluster in zip(values, clusters):
        if not math.isnan(float(value)):
            members.setdefault(str(cluster), []).append(float(value))
    return {key: math.fsum(sorted(members[key])) / len(members[key]) for key in sorted(members)}


def cluster_t_ci(values: Sequence[float], clusters: Sequence[Any], *,
                 confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Mean of the cluster means with a t interval over clusters (n - 1 degrees of freedom).

    For a handful of clusters (5 targets) a percentile bootstrap of 5 means covers too rarely;
    the t interval is the honest choice there. Returns ``(mean, low, high, clusters)``: nan
    bounds under two clusters, ``(m, m)`` when every cluster mean is equal.
    """
    means = np.array(list(cluster_means(values, clusters).values()), dtype=float)
    if means.size == 0:
        return (math.nan, math.nan, math.nan, 0)
    mean = math.fsum(means.tolist()) / means.size
    if means.size < 2:
        return (mean, math.nan, math.nan, 1)
    if np.all(means == means[0]):
        return (mean, mean, mean, int(means.size))
    ci = _st().ttest_1samp(means, popmean=0.0).confidence_interval(confidence_level=confidence)
    return (mean, float(ci.low), float(ci.high), int(means.size))


def mcnemar_exact(b: int, c: int) -> float:
    """Exact two-sided McNemar p-value: a binomial test of ``b`` out of ``b + c`` discordant pairs.

    ``b`` counts pairs that pass under baseline and fail under treatment, ``c`` the reverse;
    concordant pairs carry no information. With no discordant pair the p-value is 1.
    """
    if b < 0 or c < 0:
        raise ValueError(f"discordant counts must be >= 0, got b={b}, c={c}")
    if b + c == 0:
        return 1.0
    return float(_st().binomtest(b, b + c, 0.5, alternative="two-sided").pvalue)


@dataclass(frozen=True)
class TostResult:
    """Two one-sided t-tests. ``p_value`` is the larger of the two one-sided p-values."""

    p_value: float
    equivalent: bool
    ci90_low: float   # the (1 - 2 alpha) CI of the mean: 90% at alpha = 0.05
    ci90_high: float


def sign_flip_test(deltas: Sequence[float], resamples: int = 20000, seed: int = 0) -> float:
    """Two-sided permutation p-value of a mean paired difference of 0 (the sign-flip test).

    Under H0 each difference is as likely to have either sign; scipy's ``permutation_test``
    flips signs, exactly (all 2^n flips) when ``2^n <= resamples``, else by Monte Carlo. It needs
    no variance, so it also decides a constant sample: n equal non-zero differences give
    p = 2 / 2^n. Zero differences carry no sign; fewer than two non-zero differences give p = 1.
    """
    data = np.sort(np.asarray(deltas, dtype=float))  # sorted: the input order changes nothing
    data = data[data != 0]
    if data.size <= 1:  # one sign out of two equally likely: p = 1
        return 1.0
    result = _st().permutation_test((data,), np.mean, permutation_type="samples", vectorized=True,
                                  n_resamples=resamples, alternative="two-sided",
                                  rng=np.random.default_rng(seed))
    return float(min(1.0, result.pvalue))


def tost_paired(deltas: Sequence[float], margin: float = 0.10, alpha: float = 0.05,
                bound: float | None = None) -> TostResult:
    """Equivalence of a mean paired difference to 0 within ``(-margin, +margin)`` (TOST).

    Tests H0: mean <= -margin and H0: mean >= +margin with one-sided one-sample t-tests on the
    differences; equivalence is declared when both reject at ``alpha``, which is the same as the
    (1 - 2 alpha) t interval lying inside the margin.

    Degenerate samples: with fewer than two differences no variance can be estimated, so
    equivalence is never declared (p = 1, CI = (-inf, inf); empty gives nan bounds). A constant
    sample (zero variance) has no t interval. With ``bound`` (the largest possible ``|delta|``,
    1 for scores in [0, 1]) it is judged distribution-free: n equal differences are what one
    sees with probability ``(1 - q)^n`` when a share q of the population differs, by at most
    ``bound + |mean|``; the mean is within the margin unless ``q >= (margin - |mean|) /
    (bound + |mean|)``, so ``p = (1 - that q)^n`` (3 equal differences: p = 0.73 at margin 0.1;
    300: p < 1e-13) and the CI is the mean widened by ``(1 - alpha^(1/n)) (bound + |mean|)``.
    Without ``bound`` a constant sample is equivalent iff ``|mean| < margin`` (p = 0 or 1, CI
    ``(mean, mean)``): only right when the scores truly cannot vary.
    """
    if margin <= 0:
        raise ValueError(f"margin must be > 0, got {margin}")
    data = np.asarray(deltas, dtype=float)
    if data.size == 0:
        return TostResult(1.0, False, math.nan, math.nan)
    if data.size == 1:
        return TostResult(1.0, False, -math.inf, math.inf)
    mean = float(data.mean())
    if np.all(data == data[0]):
        if bound is None:
            equivalent = abs(mean) < margin
            return TostResult(0.0 if equivalent else 1.0, equivalent, mean, mean)
        if abs(mean) >= margin:
            return TostResult(1.0, False, mean, mean)
        spread = bound + abs(mean)
        p_value = (1.0 - (margin - abs(mean)) / spread) ** data.size
        half = (1.0 - alpha ** (1.0 / data.size)) * spread
        return TostResult(float(p_value), p_value < alpha, mean - half, mean + half)
    above_lower = _st().ttest_1samp(data, popmean=-margin, alternative="greater")
    below_upper = _st().ttest_1samp(data, popmean=margin, alternative="less")
    p_value = float(max(above_lower.pvalue, below_upper.pvalue))
    ci = _st().ttest_1samp(data, popmean=0.0).confidence_interval(confidence_level=1 - 2 * alpha)
    return TostResult(p_value, p_value < alpha, float(ci.low), float(ci.high))


def flip_rate(outcomes_by_task: Mapping[Any, Sequence[bool | float]], threshold: float = 0.5,
              confidence: float = 0.95) -> tuple[float, float, float]:
    """Share of rerun pairs whose pass/fail outcomes disagree, with a Wilson CI.

    Definition: within each task, every unordered pair of its reruns is one comparison (k reruns
    give k(k-1)/2 pairs; a task with p passes and f fails has p*f disagreeing pairs); the rate is
    disagreeing pairs over all pairs, pooled over tasks. Outcomes are booleans or scores; a
    score passes when ``>= threshold``.

    The CI is the Wilson score interval (scipy) on the pooled pair counts. It treats pairs as
    independent, which they are not when they share a rerun, so it is narrower than the truth
    when flips concentrate in a few tasks; it is chosen over a bootstrap across tasks because
    that collapses to (0, 0) whenever no task flips, claiming certainty from a handful of reruns.
    Returns ``(nan, nan, nan)`` when no task has two reruns.
    """
    disagreeing = pairs = 0
    for outcomes in outcomes_by_task.values():
        passes = sum(1 for o in outcomes if float(o) >= threshold)
        fails = len(outcomes) - passes
        disagreeing += passes * fails
        pairs += len(outcomes) * (len(outcomes) - 1) // 2
    if pairs == 0:
        return (math.nan, math.nan, math.nan)
    ci = _st().binomtest(disagreeing, pairs).proportion_ci(confidence_level=confidence, method="wilson")
    return (disagreeing / pairs, float(ci.low), float(ci.high))


def task_flip_share(outcomes_by_task: Mapping[Any, Sequence[bool | float]], threshold: float = 0.5,
                    confidence: float = 0.95) -> tuple[float, float, float, int]:
    """Share of tasks whose pass/fail result flips across their reruns, with a Wilson CI.

    The per-task reading of rerun noise (a task flips when its reruns do not all agree), next
    to ``flip_rate``'s per-pair one. Tasks with fewer than two reruns are left out. Returns
    ``(share, low, high, tasks)``; nan bounds when no task has two reruns.
    """
    rows = [list(v) for v in outcomes_by_task.values() if len(v) >= 2]
    if not rows:
        return (math.nan, math.nan, math.nan, 0)
    flipped = sum(len({float(o) >= threshold for o in row}) > 1 for row in rows)
    ci = _st().binomtest(flipped, len(rows)).proportion_ci(confidence_level=confidence, method="wilson")
    return (flipped / len(rows), float(ci.low), float(ci.high), len(rows))


def pass_hat_k(outcomes_by_task: Mapping[Any, Sequence[bool | float]], k: int,
               threshold: float = 0.5) -> float:
    """tau-bench's pass^k: the chance that k reruns of a task, drawn without replacement from
    its n reruns, all pass, averaged over tasks: ``mean_t C(c_t, k) / C(n_t, k)`` with c_t
    passes. Tasks with fewer than k reruns are left out; nan when none is left."""
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    values = []
    for outcomes in outcomes_by_task.values():
        if len(outcomes) < k:
            continue
        passes = sum(1 for o in outcomes if float(o) >= threshold)
        values.append(math.comb(passes, k) / math.comb(len(outcomes), k))
    return float(np.mean(values)) if values else math.nan


def _oneway_anova(matrix: Sequence[Sequence[float]]) -> tuple[float, float, float]:
    """(MSB, MSW, k0) of a one-way layout: rows are groups (tasks), entries are reruns.

    Rows may differ in length; ``k0 = (N - sum n_i^2 / N) / (a - 1)`` is the usual effective
    group size, equal to k when every row has k entries. Empty rows are dropped.
    """
    rows = [np.asarray(r, dtype=float) for r in matrix if len(r) > 0]
    a = len(rows)
    sizes = np.array([len(r) for r in rows], dtype=float)
    total = float(sizes.sum())
    if a < 2 or total <= a:
        raise ValueError(f"need >= 2 tasks and one task with >= 2 reruns, got row sizes {sizes.tolist()}")
    grand = float(np.concatenate(rows).mean())
    msb = float(sum(len(r) * (r.mean() - grand) ** 2 for r in rows)) / (a - 1)
    msw = float(sum(((r - r.mean()) ** 2).sum() for r in rows)) / (total - a)
    k0 = (total - float((sizes ** 2).sum()) / total) / (a - 1)
    return msb, msw, k0


def icc_oneway(matrix: Sequence[Sequence[float]]) -> float:
    """ICC(1,1), one-way random effects: the share of score variance that is between tasks.

    ``(MSB - MSW) / (MSB + (k - 1) MSW)`` for a tasks x reruns table (rows may be ragged; k is
    then the effective group size k0). Near 1: reruns of a task agree, tasks differ; near 0 or
    negative: rerun noise is as large as the task differences. Degenerate cases: nan with fewer
    than two tasks or no task rerun; 1.0 when every score is identical (reruns agree perfectly,
    the ratio itself being 0/0).
    """
    try:
        msb, msw, k0 = _oneway_anova(matrix)
    except ValueError:
        return math.nan
    denominator = msb + (k0 - 1) * msw
    if denominator == 0:
        return 1.0
    return (msb - msw) / denominator


def single_run_difference_sd(matrix: Sequence[Sequence[float]]) -> float:
    """SD of the difference between two reruns of one task, pooled over tasks: ``sqrt(2 MSW)``.

    Under ``score = task effect + rerun noise`` two reruns differ by the difference of two noise
    draws, whose variance is twice the within-task variance MSW. nan when no task is rerun.
    """
    rows = [r for r in matrix if len(r) > 0]
    within = [float(((np.asarray(r, float) - np.mean(r)) ** 2).sum()) for r in rows]
    dof = sum(len(r) - 1 for r in rows)
    if dof == 0:
        return math.nan
    return math.sqrt(2 * sum(within) / dof)


def minimum_detectable_difference(sd_of_single_run_differences: float, n: int, alpha: float = 0.05,
                                  power: float = 0.8) -> float:
    """Smallest true mean difference between two single runs over ``n`` tasks that a two-sided
    paired test at ``alpha`` detects with probability ``power``.

    ``MDD = (z_{1 - alpha/2} + z_{power}) * sd_d / sqrt(n)``, normal quantiles from scipy, where
    ``sd_d`` is the SD of one task's difference between two runs that differ only by noise
    (see ``single_run_difference_sd``). At alpha 0.05 and power 0.8 the factor is 2.80.
    """
    if n < 1:
        raise ValueError(f"n must be >= 1, got {n}")
    z = _st().norm.ppf(1 - alpha / 2) + _st().norm.ppf(power)
    return float(z * sd_of_single_run_differences / math.sqrt(n))


def spearman(x: Sequence[float], y: Sequence[float]) -> float:
    """Spearman rank correlation (scipy); nan when either side is constant or shorter than 2."""
    if len(x) != len(y):
        raise ValueError(f"x and y differ in length: {len(x)} vs {len(y)}")
    if len(x) < 2 or len(set(x)) < 2 or len(set(y)) < 2:
        return math.nan
    return float(_st().spearmanr(x, y).statistic)


def ndcg_at_k(relevances_in_predicted_order: Sequence[float], k: int) -> float:
    """NDCG@k with linear gains: ``sum_{i<=k} rel_i / log2(i + 1)`` over its ideal ordering.

    ``relevances_in_predicted_order[i]`` is the true relevance (>= 0) of the item ranked i+1.
    The ideal DCG sorts the same relevances; 0.0 when every relevance is 0.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    rel = np.asarray(relevances_in_predicted_order, dtype=float)
    if np.any(rel < 0):
        raise ValueError(f"relevances must be >= 0, got {rel.tolist()}")
    discounts = 1.0 / np.log2(np.arange(2, min(k, rel.size) + 2))
    dcg = float((rel[:k] * discounts).sum())
    ideal = float((np.sort(rel)[::-1][:k] * discounts).sum())
    return dcg / ideal if ideal > 0 else 0.0


def regret_at_k(true_values: Sequence[float], predicted_order: Sequence[int], k: int) -> float:
    """Simple regret of picking the top ``k`` predicted items: best true value minus best picked.

    ``predicted_order`` lists indices into ``true_values``, predicted best first. 0 when the
    truly best item is among the first k picks.
    """
    if k < 1:
        raise ValueError(f"k must be >= 1, got {k}")
    values = np.asarray(true_values, dtype=float)
    picks = list(predicted_order)[:k]
    if not picks:
        raise ValueError("predicted_order is empty")
    return float(values.max() - values[picks].max())
