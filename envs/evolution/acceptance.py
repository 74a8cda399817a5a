"""EvoAlloc's acceptance rule: when does a challenger policy replace the incumbent?

On the trial candidates where the two policies disagree: fewer *expected* missed new bests (an
unobserved counterfactual outcome is not "no miss"), else a lower cost, and by more than an
equivalent challenger shows by chance (a role-swap test over the disagreements). Also the
run's inverse-propensity-weighted new-best rate (the rule's prior) and the "missed new bests"
estimate of the ``evolution`` analysis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["Case", "Verdict", "accept_challenger", "path_cost", "evaluates_fully", "prior_new_best_rate",
           "missed_new_bests_estimate"]


def path_cost(path: str, partial_cost: float) -> float:
    return {"discard": 0.0, "partial": partial_cost, "full": 1.0, "partial+full": 1.0}[path]


def evaluates_fully(path: str) -> bool:
    return path in ("full", "partial+full")


@dataclass(frozen=True)
class Case:
    """One decided candidate: each policy's path and the shared real outcome.

    ``new_best`` is True/False when a full result is known (the agent's, or counterfactual),
    None when nobody evaluated the candidate fully.
    """

    incumbent: str
    challenger: str
    new_best: bool | None
    score: float | None = None
    best_before: float | None = None
    counterfactual: bool = False


@dataclass(frozen=True)
class Verdict:
    """The acceptance rule's verdict on one trial (see ``accept_challenger``)."""

    accepted: bool
    disagreements: int
    misses_incumbent: float      # expected new bests the incumbent misses on the disagreements
    misses_challenger: float     # expected new bests the challenger misses on the disagreements
    cost_incumbent: float
    cost_challenger: float
    reason: str
    only_incumbent_full: int = 0   # disagreements only the incumbent evaluates fully (outcomes observed)
    only_challenger_full: int = 0  # disagreements only the challenger would evaluate fully
    observed_only_challenger_full: int = 0  # ... of which exploration revealed the outcome
    new_bests_seen: tuple[int, int] = (0, 0)  # new bests observed in those two classes
    p_value: float = 1.0  # role-swap test: chance of so large an advantage from an equivalent challenger
    prefers_challenger: bool = False  # the point estimates favour the challenger (before the noise test)


def prior_new_best_rate(cases: list[Case], explore_p: float) -> float:
    """The run's new-best rate per decided candidate, counterfactual outcomes weighted by 1/``explore_p``.

    A turned-away candidate's outcome is seen only when exploration (probability ``explore_p``)
    evaluated it, so each explored new best stands for 1/``explore_p`` turned-away candidates
    (inverse-propensity weighting). Laplace-smoothed, so it is never 0 or 1.
    """
    weight = 1.0 / explore_p if explore_p > 0 else 0.0
    found = sum(bool(c.new_best) * (1.0 if evaluates_fully(c.incumbent) else weight * c.counterfactual)
                for c in cases)
    return min((found + 1.0) / (len(cases) + 2.0), 1.0)


def _advantage(inc_full: np.ndarray, ch_full: np.ndarray, known: np.ndarray, new_best: np.ndarray,
               cost_inc: np.ndarray, cost_ch: np.ndarray, prior_rate: float, prior_strength: float,
               miss_tolerance: float) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The rule's quantities for each row of role assignments: arrays of shape (S, D), S role
    swaps of D disagreements (True: incumbent and challenger swapped on that candidate).

    Returns (miss key, cost key, expected misses challenger, incumbent, cost challenger,
    incumbent), each of shape (S,); the keys order the challenger's advantage lexicographically:
    fewer expected misses beyond ``miss_tolerance`` first, then lower cost.
    """
    only_inc = inc_full & ~ch_full  # (S, D)
    only_ch = ch_full & ~inc_full

    def misses(cls: np.ndarray) -> np.ndarray:
        size, seen, found = cls.sum(1), (cls & known).sum(1), (cls & new_best).sum(1)
        return size * (found + prior_strength * prior_rate) / (seen + prior_strength)

    misses_new, misses_old = misses(only_inc), misses(only_ch)
    cost_new, cost_old = cost_ch.sum(1), cost_inc.sum(1)
    diff = misses_old - misses_new
    beyond = np.abs(diff) > miss_tolerance
    return (np.where(beyond, diff, 0.0), np.where(beyond, 0.0, cost_old - cost_new), misses_new, misses_old,
            cost_new, cost_old)


def accept_challenger(cases: list[Case], partial_cost: float, *, explore_p: float = 0.1, prior_rate: float = 0.1,
                      prior_strength: float = 10.0, miss_tolerance: float = 0.25, alpha: float = 0.05,
                      seed: int = 0) -> Verdict:
    """The acceptance rule: fewer expected missed new bests on the disagreements, then lower cost,
    by more than an equivalent challenger would show by chance.

    Only disagreements where exactly one policy evaluates fully can differ in misses. Where only
    the incumbent evaluates fully the outcome is observed; where only the challenger would, the
    outcome is seen only when exploration evaluated the turned-away candidate (probability
    ``explore_p``): an unobserved outcome is *not* "no miss". Each class's new-best rate is
    estimated by its posterior mean (explored outcomes stand for the whole class: 1/``explore_p``
    weighting; a Beta prior of mean ``prior_rate``, the run's weighted rate, and strength
    ``prior_strength``), and a policy's expected misses are the class size times that rate.
    Expected misses decide when they differ by more than ``miss_tolerance``; otherwise the
    cheaper policy (full-evaluation equivalents) is preferred, and a tie keeps the incumbent.

    A challenger that follows the same policy with other sampling noise disagrees at random, and
    the rule above prefers it about half the time. So the preference must also survive the
    role-swap test: if the two policies were equivalent, swapping which one made each
    disagreeing decision would be as likely as the trial seen; ``p_value`` is the share of the
    2^D swaps (D disagreements; 4,096 seeded draws beyond 12) whose advantage is at least the
    observed one. Accepted only when the challenger is preferred and ``p_value < alpha``; a
    trial with fewer than five disagreements can never reach 0.05 (1/16 at four).
    """
    if (not 0.0 <= explore_p <= 1.0 or not 0.0 <= prior_rate <= 1.0 or prior_strength <= 0 or miss_tolerance < 0
            or not 0.0 < alpha <= 1.0):
        raise ValueError(f"bad acceptance-rule parameters: explore_p={explore_p}, prior_rate={prior_rate}, "
                         f"prior_strength={prior_strength}, miss_tolerance={miss_tolerance}, alpha={alpha}")
    split = [c for c in cases if c.incumbent != c.challenger]
    inc_full = np.array([evaluates_fully(c.incumbent) for c in split], dtype=bool)
    ch_full = np.array([evaluates_fully(c.challenger) for c in split], dtype=bool)
    known = np.array([c.new_best is not None for c in split], dtype=bool)
    found = np.array([bool(c.new_best) for c in split], dtype=bool)
    cost_inc = np.array([path_cost(c.incumbent, partial_cost) for c in split], dtype=float)
    cost_ch = np.array([path_cost(c.challenger, partial_cost) for c in split], dtype=float)
    d = len(split)
    if d <= 12:  # every swap: (2^d, d)
        swaps = ((np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1).astype(bool)
    else:
        swaps = np.random.default_rng(seed).random((4096, d)) < 0.5
        swaps[0] = False
    keys = _advantage(np.where(swaps, ch_full, inc_full), np.where(swaps, inc_full, ch_full), known[None, :],
                      found[None, :], np.where(swaps, cost_ch, cost_inc), np.where(swaps, cost_inc, cost_ch),
                      prior_rate, prior_strength, miss_tolerance)
    miss_key, cost_key, misses_new_all, misses_old_all, cost_new_all, cost_old_all = keys
    misses_new, misses_old = float(misses_new_all[0]), float(misses_old_all[0])
    cost_new, cost_old = float(cost_new_all[0]), float(cost_old_all[0])
    eps = 1e-9
    at_least = (miss_key > miss_key[0] + eps) | ((np.abs(miss_key - miss_key[0]) <= eps) & (cost_key >= cost_key[0] - eps))
    p_value = float(at_least.mean()) if d else 1.0
    only_inc, only_ch = inc_full & ~ch_full, ch_full & ~inc_full
    k_inc, k_ch = int((only_inc & found).sum()), int((only_ch & found).sum())
    seen_ch = int((only_ch & known).sum())
    if not split:
        prefers, reason = False, "the policies never disagreed"
    elif abs(misses_new - misses_old) > miss_tolerance:
        prefers = misses_new < misses_old
        reason = (f"expected misses {misses_new:.2f} vs {misses_old:.2f} (challenger vs incumbent; "
                  f"{int(only_inc.sum())} candidates only the incumbent evaluates, {k_inc} new bests; "
                  f"{int(only_ch.sum())} only the challenger would, {seen_ch} explored, {k_ch} new bests)")
    else:
        prefers = cost_new < cost_old - 1e-12
        reason = (f"expected misses {misses_new:.2f} vs {misses_old:.2f} within {miss_tolerance:g}; "
                  f"cost {cost_new:.3g} vs {cost_old:.3g}")
    accepted = prefers and p_value < alpha
    if split:
        reason += f"; role-swap p={p_value:.3g} over {d} disagreements" + (
            f" (not below {alpha:g}: within what an equivalent challenger shows)" if prefers and not accepted else "")
    return Verdict(accepted, d, misses_old, misses_new, cost_old, cost_new, reason, int(only_inc.sum()),
                   int(only_ch.sum()), seen_ch, (k_inc, k_ch), p_value, prefers)


def missed_new_bests_estimate(turned_away: int, explored: int, found: int,
                              confidence: float = 0.95) -> tuple[float, float, float]:
    """New bests among ``turned_away`` candidates, from ``found`` of ``explored`` counterfactual ones.

    Exploration evaluates a uniform random subset of the turned-away candidates, so the count is
    ``turned_away * found / explored`` (each explored candidate stands for 1/``explore_p``), with a
    Clopper-Pearson interval on the rate. With nothing explored the interval is [0, turned_away].
    """
    if not 0 <= found <= explored <= turned_away:
        raise ValueError(f"need 0 <= found <= explored <= turned_away, got {found}, {explored}, {turned_away}")
    if explored == 0:
        return (0.0 if turned_away == 0 else math.nan), 0.0, float(turned_away)
    from scipy.stats import beta

    alpha = 1.0 - confidence
    low = 0.0 if found == 0 else float(beta.ppf(alpha / 2, found, explored - found + 1))
    high = 1.0 if found == explored else float(beta.ppf(1 - alpha / 2, found + 1, explored - found))
    return turned_away * found / explored, turned_away * low, turned_away * high
