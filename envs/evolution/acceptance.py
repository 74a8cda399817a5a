"""EvoAlloc's acceptance rule: when does a challenger policy replace the incumbent?

On the trial candidates where the two policies disagree: fewer missed new bests beyond a
tolerance with posterior probability >= 1 - alpha (an unobserved counterfactual outcome is not
"no miss", and an unobserved partial evaluation is not a full one), else misses within the
tolerance and a lower cost that survives a role-swap test over the cost differences. Also the
run's inverse-propensity-weighted new-best rate (the rule's prior) and the "missed new bests"
estimate of the ``evolution`` analysis.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

__all__ = ["UNOBSERVED_PARTIAL", "Case", "Verdict", "accept_challenger", "path_cost", "evaluates_fully", "prior_new_best_rate",
           "missed_new_bests_estimate"]


UNOBSERVED_PARTIAL = "partial?"  # the challenger wanted a partial evaluation the incumbent never ran


def path_cost(path: str, partial_cost: float, carry_rate: float = 1.0) -> float:
    """Full-evaluation equivalents of a path; an unobserved partial costs the partial evaluation
    plus ``carry_rate`` times the rest (its next decision was never asked)."""
    if path == UNOBSERVED_PARTIAL:
        return partial_cost + carry_rate * (1.0 - partial_cost)
    return {"discard": 0.0, "partial": partial_cost, "full": 1.0, "partial+full": 1.0}[path]


def evaluates_fully(path: str) -> bool:
    """Whether a path ends in a full evaluation; an unobserved partial is not one."""
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


def _starts_partial(path: str) -> bool:
    return path in ("partial", "partial+full", UNOBSERVED_PARTIAL)


def _swap_p(diffs: np.ndarray, seed: int) -> float:
    """One-sided role-swap p of a cost advantage: the share of sign assignments of the per-candidate
    cost differences (challenger - incumbent) whose sum is at most the observed one (exact up to 12
    candidates, 4,096 seeded draws beyond). A candidate's cost under either policy is known whoever
    executes it, so swapping roles is exactly as likely as the trial seen when the two are equivalent."""
    d = len(diffs)
    if d == 0:
        return 1.0
    if d <= 12:
        signs = 1 - 2 * ((np.arange(2 ** d)[:, None] >> np.arange(d)[None, :]) & 1)
    else:
        signs = np.where(np.random.default_rng(seed).random((4096, d)) < 0.5, -1, 1)
        signs[0] = 1
    sums = (signs * diffs[None, :]).sum(1)
    return float((sums <= diffs.sum() + 1e-9).mean())


def accept_challenger(cases: list[Case], partial_cost: float, *, explore_p: float = 0.1, prior_rate: float = 0.1,
                      prior_strength: float = 10.0, miss_tolerance: float = 0.25, catch_tolerance: float = 0.05,
                      alpha: float = 0.05, draws: int = 4000, seed: int = 0) -> Verdict:
    """The acceptance rule, on the trial candidates where the two policies disagree.

    **Misses** are expected ones: the challenger misses the new bests among the candidates only
    the incumbent evaluates fully (outcomes observed), the incumbent those among the candidates
    only the challenger would evaluate fully (observed only where exploration, probability
    ``explore_p``, revealed them; an unobserved outcome is not "no miss"); each class's expected
    misses are its size times its new-best rate, drawn from a posterior (a Beta prior of mean
    ``prior_rate``, the run's weighted rate, and strength ``prior_strength``, updated by the
    class's observed outcomes). An unobserved partial (the challenger wanted a partial evaluation
    the incumbent never ran, so its next decision is unknown) is not a full evaluation, nor a
    turn-away, and its cost is not known; with the roles swapped the same holds for a partial only
    the incumbent ran. So the comparison (misses and cost) keeps only the candidates observed the
    same way under both policies: both or neither start with a partial evaluation (the number left
    out is in the reason). Charging it the challenger's average carry-on rate made an
    equivalent challenger look cheaper: it wants a partial where the incumbent went straight to a
    full evaluation, on candidates it would carry on far more often than on average. The tolerance is ``miss_tolerance`` new bests or ``catch_tolerance``
    of the new bests the trial is expected to hold (``prior_rate`` x candidates), the larger.

    Accepted when (1) the point estimates say the challenger misses fewer by more than the
    tolerance and it does so with posterior probability >= 1 - ``alpha`` (a counterfactual
    estimate with its own interval; ``p_value`` is 1 minus that probability), or (2) its extra
    misses are within the tolerance (posterior median) **and** its lower cost survives the
    role-swap test at ``alpha`` (``p_value``): cost is observed the same way whichever policy executes, so the
    swap is exact for it; misses are not (who evaluates decides what is seen), so they are never
    swapped. A trial with fewer than five disagreements can never pass (2) at 0.05.
    """
    if (not 0.0 < explore_p <= 1.0 or not 0.0 <= prior_rate <= 1.0 or prior_strength <= 0 or miss_tolerance < 0
            or catch_tolerance < 0 or not 0.0 < alpha <= 1.0):
        raise ValueError(f"bad acceptance-rule parameters: explore_p={explore_p}, prior_rate={prior_rate}, "
                         f"prior_strength={prior_strength}, miss_tolerance={miss_tolerance}, "
                         f"catch_tolerance={catch_tolerance}, alpha={alpha}")
    split = [c for c in cases if c.incumbent != c.challenger]
    inc_full = np.array([evaluates_fully(c.incumbent) for c in split], dtype=bool)
    ch_full = np.array([evaluates_fully(c.challenger) for c in split], dtype=bool)
    known = np.array([c.new_best is not None for c in split], dtype=bool)
    found = np.array([bool(c.new_best) for c in split], dtype=bool)
    cost_inc = np.array([path_cost(c.incumbent, partial_cost) for c in split], dtype=float)
    cost_ch = np.array([path_cost(c.challenger, partial_cost) for c in split], dtype=float)
    # an unobserved partial is neither a full evaluation nor a turn-away: whether the challenger
    # would have gone on is unknown, so it enters no miss class (its expected cost counts)
    # and under swapped roles the same holds for a partial only the incumbent ran: only candidates
    # where both or neither policy starts with a partial are observed the same way under both
    undecided = np.array([_starts_partial(c.incumbent) != _starts_partial(c.challenger) for c in split], dtype=bool)
    only_inc, only_ch = inc_full & ~ch_full & ~undecided, ch_full & ~inc_full
    rng = np.random.default_rng(seed)

    def misses(cls: np.ndarray) -> tuple[np.ndarray, int, int, int]:
        """Posterior draws of the expected new bests in class ``cls``: its size times its new-best
        rate (a policy's property, not this trial's luck: ten discards that happened to hold no new
        best in a run where one in five is one are still expected to miss about one)."""
        size, seen, hits = int(cls.sum()), int((cls & known).sum()), int((cls & found).sum())
        a = prior_strength * prior_rate + hits
        b = prior_strength * (1.0 - prior_rate) + seen - hits
        rate = rng.beta(max(a, 1e-9), max(b, 1e-9), draws)
        return size * rate, size, seen, hits

    misses_new, n_inc, _, k_inc = misses(only_inc)  # the challenger misses these
    misses_old, n_ch, seen_ch, k_ch = misses(only_ch)  # the incumbent misses these
    extra = misses_new - misses_old  # (draws,) the challenger's extra misses
    tolerance = max(miss_tolerance, catch_tolerance * prior_rate * len(cases))
    fewer, more = float((extra < -tolerance).mean()), float((extra > tolerance).mean())
    decided = ~undecided  # the unobserved partial's cost depends on the decision never asked: left out
    cost_new, cost_old = float(cost_ch[decided].sum()), float(cost_inc[decided].sum())
    p_cost = _swap_p((cost_ch - cost_inc)[decided], seed)
    m_new, m_old = float(misses_new.mean()), float(misses_old.mean())
    counts = (f"{n_inc} candidates only the incumbent evaluates fully, {k_inc} new bests; {n_ch} only the "
              f"challenger would, {seen_ch} explored, {k_ch} new bests; {int(undecided.sum())} where only one "
              "policy starts with a partial left out")
    if not split:
        prefers, accepted, p_value = False, False, 1.0
        reason = "the policies never disagreed"
    elif m_new - m_old < -tolerance:  # the point estimates prefer the challenger by misses
        prefers, p_value = True, 1.0 - fewer
        accepted = p_value < alpha
        reason = (f"expected misses {m_new:.2f} vs {m_old:.2f} (challenger vs incumbent; {counts}); fewer by more "
                  f"than {tolerance:.2g} with posterior probability {fewer:.3f}"
                  + ("" if accepted else f" (not above {1 - alpha:g}: the counterfactual estimate is too uncertain)"))
    elif more < 0.5:
        prefers = cost_new < cost_old - 1e-12
        accepted = prefers and p_cost < alpha
        p_value = p_cost
        reason = (f"expected misses {m_new:.2f} vs {m_old:.2f} within {tolerance:.2g} ({counts}); cost {cost_new:.3g} "
                  f"vs {cost_old:.3g}; role-swap p={p_cost:.3g} over {len(split)} disagreements"
                  + (f" (not below {alpha:g}: within what an equivalent challenger shows)" if prefers and not accepted
                     else ""))
    else:
        prefers = accepted = False
        p_value = 1.0
        reason = (f"expected misses {m_new:.2f} vs {m_old:.2f}: more than {tolerance:.2g} extra with posterior "
                  f"probability {more:.3f} ({counts})")
    return Verdict(accepted, len(split), m_old, m_new, cost_old, cost_new, reason, n_inc, n_ch, seen_ch,
                   (k_inc, k_ch), p_value, prefers)


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
