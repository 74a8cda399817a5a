"""Submissions: parsing and validation, the penalty rule, and the metrics of a scored submission.

Metrics of one submission (``score_submission``):

* ``gain``: the top group's score (mean over student seeds) minus the random reference, the mean
  of ``n_random`` random subsets of the same size trained with the same student seeds.
  ``gain_ci`` is a t interval that treats the top group as one more subset drawn next to the
  random ones (``gain_ci``): under "the selector is no better than random" the top group's seed
  mean is exchangeable with the random draws' seed means, so ``gain`` has the spread of one draw
  minus the mean of R draws, sd(draw means) * sqrt(1 + 1/R), with R - 1 degrees of freedom.
  Its coverage at a true gain of 0 is measured by simulation (``simulate_gain_ci_coverage``,
  tests and ``benchmarks/calibration_cases/dataselect.py``); the earlier two-way percentile
  bootstrap covered 0.84-0.88 at 3 seeds x 10 draws and 0.57 at 1 x 3. ``gain_verdict``:
  ``better``/``worse`` than random when the CI excludes 0, else ``indistinguishable``.
  ``percentile``: the share of random draws whose seed-mean lies below the top group's.
* ``top_verdict``: ``best`` when the predicted top group has the highest actual score and no other
  group lies within the tie margin of it; ``tie`` when the best score is shared within the margin
  by the top group and at least one other (``tied_groups``: every group within the margin of the
  best); ``not_best`` otherwise. The margin is 2 standard errors of the seed-paired difference
  (0 with one student seed: only exact ties). ``top_is_best`` / ``top_tie`` are its two flags, so
  a three-way tie at the floor is a tie, never "top is best".
* ``spearman`` between the predicted order and the actual scores, and ``spearman_ceiling``: the
  Spearman between the actual orders from two disjoint halves of the student seeds. Both are 0.0
  where Spearman is undefined (constant scores carry no order).
* ``floor_categories``: evaluation categories on which every group and every random draw scored
  at most ``FLOOR`` (the students learnt nothing there; the report warns).

Penalty rule (``PENALTY``): a second invalid submission trains nothing and scores gain -1.0 (the
worst a difference of accuracies can be), spearman -1.0, top_is_best False.
"""

from __future__ import annotations

import csv
import io
import math
from typing import Any, Callable, Sequence

import numpy as np

__all__ = ["N_GROUPS", "PENALTY", "FLOOR", "parse_csv", "validate_submission", "score_submission", "random_subsets",
           "gain_ci", "gain_verdict", "simulate_gain_ci_coverage"]

N_GROUPS = 5
FLOOR = 0.05
PENALTY = {"penalised": True, "gain": -1.0, "spearman": -1.0, "top_is_best": False, "top_tie": False,
           "top_verdict": "not_best", "gain_verdict": "penalised"}


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
    """``rsigym.report.stats.spearman``, with 0.0 where it is undefined (a constant side)."""
    from rsigym.report.stats import spearman

    value = spearman(list(a), list(b))
    return value if math.isfinite(value) else 0.0


def gain_ci(top: np.ndarray, randoms: np.ndarray, confidence: float = 0.95) -> tuple[float, float]:
    """t interval of ``mean(top) - mean(randoms)`` for ``top`` (S,) and ``randoms`` (R, S), R >= 2.

    The top group is treated as one subset drawn next to the R random ones, trained with the same
    student seeds: its seed mean minus the reference mean then has standard error
    ``sd(draw seed means) * sqrt(1 + 1/R)`` (the shared seed effects cancel), with R - 1 degrees of
    freedom. This is a prediction interval for a random subset's gain, so it covers 0 at the
    nominal rate when the selector is no better than random; for a fixed, non-random top group it
    is conservative (it also counts the spread between subsets).
    """
    from scipy import stats

    randoms = np.asarray(randoms, dtype=float)
    n_random = randoms.shape[0]
    if n_random < 2:
        raise ValueError(f"the gain CI needs at least 2 random draws, got {n_random}")
    draws = randoms.mean(1)
    gain = float(np.mean(top) - draws.mean())
    half = float(stats.t.ppf(0.5 + confidence / 2, n_random - 1) * draws.std(ddof=1) * math.sqrt(1 + 1 / n_random))
    return gain - half, gain + half


def gain_verdict(ci: Sequence[float]) -> str:
    """``better`` / ``worse`` than random when the CI excludes 0, else ``indistinguishable``."""
    low, high = float(ci[0]), float(ci[1])
    return "better" if low > 0 else "worse" if high < 0 else "indistinguishable"


def simulate_gain_ci_coverage(n_seeds: int, n_random: int, trials: int = 2000, seed: int = 0,
                              draw_sd: float = 0.02, seed_sd: float = 0.03, noise_sd: float = 0.02,
                              confidence: float = 0.95) -> float:
    """Share of ``trials`` simulated submissions with a true gain of 0 whose ``gain_ci`` covers 0.

    Each trial: a seed effect shared by every subset (``seed_sd``), a subset effect per subset
    (``draw_sd``; the top group is a subset like the others) and per-(subset, seed) noise
    (``noise_sd``).
    """
    rng = np.random.default_rng([seed, 0xC0F])
    covered = 0
    for _ in range(trials):
        seed_effect = rng.normal(0, seed_sd, n_seeds)
        scores = (0.5 + rng.normal(0, draw_sd, (n_random + 1, 1)) + seed_effect
                  + rng.normal(0, noise_sd, (n_random + 1, n_seeds)))
        low, high = gain_ci(scores[0], scores[1:], confidence)
        covered += low <= 0 <= high
    return covered / trials


def score_submission(groups: Sequence[Sequence[int]], order: Sequence[int], seeds: Sequence[int],
                     randoms: Sequence[Sequence[int]], score: Callable[[Sequence[int], int], dict[str, float]],
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
    low, high = gain_ci(group_scores[top], random_scores)
    best = int(np.argmax(means))
    n = len(seeds)

    def margin(g: int) -> float:
        """2 standard errors of the seed-paired difference between group g and the best (0 with one seed)."""
        if n < 2 or g == best:
            return 0.0
        return 2 * float(np.std(group_scores[best] - group_scores[g], ddof=1) / math.sqrt(n))

    tied = [g for g in range(len(groups)) if means[best] - means[g] <= margin(g)]
    if top not in tied:
        top_verdict = "not_best"
    else:
        top_verdict = "best" if tied == [top] else "tie"
    top_is_best, top_tie = top_verdict == "best", top_verdict == "tie"
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
        "top_tie": top_tie,
        "top_verdict": top_verdict,
        "tied_groups": tied,
        "gain_verdict": gain_verdict((low, high)),
        "floor_categories": [c for c in categories
                             if max(max(run[c] for run in runs) for runs in [*group_runs, *random_runs]) <= FLOOR],
        "spearman": _spearman(predicted_rank, means),
        "spearman_ceiling": ceiling,
        "student_seeds": [int(s) for s in seeds],
    }
