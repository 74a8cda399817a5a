"""Submissions: parsing and validation, the penalty rule, and the metrics of a scored submission.

Metrics of one submission (``score_submission``):

* ``gain``: the top group's score (mean over student seeds) minus the random reference, the mean
  of ``n_random`` random subsets of the same size trained with the same student seeds; its 95%
  CI is a two-way bootstrap that resamples the student seeds and the random draws independently
  (``gain_ci``), so both the seed noise of the top group and the draw-to-draw spread of the
  reference count; ``percentile``: the share of random draws whose seed-mean lies below the top
  group's. The CI holds the submission fixed: the spread over selection runs is the analysis's.
* ``top_is_best``: the predicted top group has the highest actual score; ``top_tie``: it does not,
  but trails the best by at most 2 standard errors of the seed-paired difference (a near tie,
  reported; with one student seed there is no standard error and no tie).
* ``spearman`` between the predicted order and the actual scores, and ``spearman_ceiling``: the
  Spearman between the actual orders from two disjoint halves of the student seeds. Both are 0.0
  where Spearman is undefined (constant scores carry no order).

Penalty rule (``PENALTY``): a second invalid submission trains nothing and scores gain -1.0 (the
worst a difference of accuracies can be), spearman -1.0, top_is_best False.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["N_GROUPS", "PENALTY", "parse_csv", "validate_submission", "score_submission", "random_subsets", "gain_ci"]

N_GROUPS = 5
PENALTY = {"penalised": True, "gain": -1.0, "spearman": -1.0, "top_is_best": False, "top_tie": False}


def parse_csv(text: str) -> tuple[list[list[int]] | None, str | None]:
    """Groups from a CSV with header ``row,group`` (group in 0..4); an error message when malformed."""
    reader = csv.reader(io.StringIO(text.strip()))
    header = next(reader, None)
    if header is None or [h.strip().lower() for h in header] != ["row", "group"]:
        return None, f"the CSV must start with the header 'row,group', got {header!r}"
    groups: list[list[int]] = [[] for _ in range(N_GROUPS)]
    for number, line in enumerate(reader, start=2):
        try:
            row, group = int(line[0]), int(line[1])
        except (ValueError, IndexError):
            return None, f"CSV line {number} is not two integers: {line!r}"
        if not 0 <= group < N_GROUPS:
            return None, f"CSV line {number}: group {group} is not in 0..{N_GROUPS - 1}"
        groups[group].append(row)
    return groups, None


def validate_submission(groups: Any, order: Any, pool_size: int, group_size: int) -> list[str]:
    """Every error of a submission (empty when valid), each a clear one-line message."""
    errors: list[str] = []
    if not isinstance(groups, list) or not all(isinstance(g, list) for g in groups):
        return ["groups must be a list of lists of row numbers"]
    if len(groups) != N_GROUPS:
        errors.append(f"expected {N_GROUPS} groups, got {len(groups)}")
    seen: dict[int, int] = {}
    overlapping: set[int] = set()
    for index, group in enumerate(groups):
        if len(group) != group_size:
            errors.append(f"group {index} has {len(group)} rows; every group needs exactly {group_size}")
        unknown = [r for r in group if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < pool_size]
        if unknown:
            errors.append(f"group {index} holds unknown rows {unknown[:5]} (rows are 0..{pool_size - 1})")
        for row in group:
            if isinstance(row, int) and row in seen and seen[row] != index:
                overlapping.add(row)
            elif isinstance(row, int):
                seen[row] = index
        if len(set(r for r in group if isinstance(r, int))) != len(group):
            errors.append(f"group {index} repeats rows")
    if overlapping:
        errors.append(f"groups overlap: rows {sorted(overlapping)[:5]} appear in more than one group")
    if not isinstance(order, list) or sorted(order) != list(range(N_GROUPS)) or not all(isinstance(o, int) for o in order):
        errors.append(f"order must be a permutation of 0..{N_GROUPS - 1} (best group first), got {order!r}")
    return errors


def random_subsets(pool_size: int, group_size: int, count: int, seed: int) -> list[list[int]]:
    """``count`` random subsets of ``group_size`` rows: the random reference's draws."""
    rng = np.random.default_rng([seed, 0x5A4D])
    return [sorted(int(r) for r in rng.choice(pool_size, size=group_size, replace=False)) for _ in range(count)]


def _spearman(a: Sequence[float], b: Sequence[float]) -> float:
    """``rsigym.stats.spearman``, with 0.0 where it is undefined (a constant side)."""
    from rsigym.stats import spearman

    value = spearman(list(a), list(b))
    return value if math.isfinite(value) else 0.0


def gain_ci(top: np.ndarray, randoms: np.ndarray, seed: int = 0, resamples: int = 4000,
            confidence: float = 0.95) -> tuple[float, float]:
    """Percentile CI of ``mean(top) - mean(randoms)`` for ``top`` (S,) and ``randoms`` (R, S).

    Two-way bootstrap: each resample draws S student seeds and R random draws with replacement,
    independently, and keeps the seed pairing (the same resampled seeds on both sides). Resampling
    the R x S differences one by one would treat them as independent and shrink the interval.
    """
    rng = np.random.default_rng([seed, 0xC1])
    n_random, n_seeds = randoms.shape
    s = rng.integers(n_seeds, size=(resamples, n_seeds))                     # (B, S)
    j = rng.integers(n_random, size=(resamples, n_random))                    # (B, R)
    top_means = top[s].mean(1)                                                # (B,)
    random_means = randoms[j[:, :, None], s[:, None, :]].mean((1, 2))          # (B,)
    alpha = (1 - confidence) / 2
    low, high = np.quantile(top_means - random_means, [alpha, 1 - alpha])
    return float(low), float(high)


def score_submission(groups: Sequence[Sequence[int]], order: Sequence[int], seeds: Sequence[int],
                     randoms: Sequence[Sequence[int]], score: Callable[[Sequence[int], int], dict[str, float]],
                     ci_seed: int = 0,
                     prefetch: Callable[[list[tuple[Sequence[int], int]]], None] | None = None) -> dict[str, Any]:
    """Train every group and random draw with every student seed (through ``score``) and compare.

    ``prefetch``, when given, receives every (rows, seed) job first (to train them in parallel
    into the cache that ``score`` reads)."""
    if prefetch is not None:
        prefetch([(rows, s) for rows in [*groups, *randoms] for s in seeds])
    group_runs = [[score(g, s) for s in seeds] for g in groups]
    random_runs = [[score(r, s) for s in seeds] for r in randoms]
    group_scores = np.array([[run["score"] for run in runs] for runs in group_runs])     # (G, S)
    random_scores = np.array([[run["score"] for run in runs] for runs in random_runs])   # (R, S)
    means = group_scores.mean(1)
    top = int(order[0])
    random_mean = float(random_scores.mean())
    low, high = gain_ci(group_scores[top], random_scores, seed=ci_seed)
    best = int(np.argmax(means))
    n = len(seeds)
    # both groups were trained with the same seeds: the standard error of their seed-paired difference
    se = float(np.std(group_scores[top] - group_scores[best], ddof=1) / math.sqrt(n)) if n > 1 else 0.0
    top_is_best = top == best or bool(means[top] == means[best])
    predicted_rank = [-list(order).index(g) for g in range(len(groups))]  # higher = predicted better
    ceiling = None
    if n > 1:
        half = n // 2
        ceiling = _spearman(group_scores[:, :half].mean(1), group_scores[:, half:].mean(1))
    categories = [k for k in group_runs[0][0] if k != "score"]
    return {
        "penalised": False,
        "group_scores": means.tolist(),
        "group_scores_per_seed": group_scores.tolist(),
        "group_categories": [{c: float(np.mean([run[c] for run in runs])) for c in categories} for runs in group_runs],
        "order": [int(o) for o in order],
        "top_group": top,
        "top_score": float(means[top]),
        "random_mean": random_mean,
        "random_draw_means": random_scores.mean(1).tolist(),
        "gain": float(means[top] - random_mean),
        "gain_ci": [low, high],
        "percentile": float(100.0 * np.mean(random_scores.mean(1) < means[top])),
        "actual_best": best,
        "top_is_best": top_is_best,
        "top_tie": (not top_is_best) and bool(means[best] - means[top] <= 2 * se),
        "spearman": _spearman(predicted_rank, means),
        "spearman_ceiling": ceiling,
        "student_seeds": [int(s) for s in seeds],
    }
