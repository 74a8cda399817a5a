"""Calibration cases of EvoAlloc's acceptance rule and its "missed new bests" column.

Simulated trials with a known truth (the issue's setting): a challenger shadows the incumbent
and they disagree on 10 candidates; new bests among them are Binomial(10, rate) (one expected
at the 10% rate); exploration fully evaluates a turned-away candidate with probability
``explore_p`` = 0.1. The run's experience before the trial (60 candidates, half evaluated fully,
half turned away and explored at ``explore_p``) gives the rule its prior rate, as in a real run.

* looser challenger: it would fully evaluate candidates the incumbent discards, and these hold
  new bests: it must be accepted at a high rate;
* stingier challenger: it would discard candidates the incumbent evaluates fully, and these hold
  new bests: it must be rejected at a high rate;
* the controls that make the rule able to fail the other way: in a run whose new-best rate is 1%,
  a thriftier challenger whose discards truly hold no new best must be accepted; in a run on a
  plateau (no new best in its experience), a looser one whose extra evaluations find nothing must
  be rejected. (With exploration at 0.1 a trial sees about one of the looser challenger's extra
  candidates, so the run's own rate is what the rule can go on: in a run at 1% a looser challenger
  that finds nothing is accepted about a quarter of the time, the price of catching real misses.)
* an equivalent challenger (the incumbent's policy with its own sampling noise, so it disagrees
  at random) must be accepted in at most 10% of trials: the point-estimate preference alone
  takes it about half the time;
* "missed new bests" over 40 turned-away candidates holding 4 new bests must not read 0 when
  exploration saw none of them, and its interval must cover the truth.

Each row also shows the pre-issue rule (an unobserved outcome counted as "no miss"; raw counts).
"""

from __future__ import annotations

from typing import Callable

import numpy as np

from calibration_cases.common import Case
from rsigym.envs.evolution.evoalloc import Case as Decided
from rsigym.envs.evolution.evoalloc import accept_challenger, evaluates_fully, missed_new_bests_estimate, path_cost
from rsigym.envs.evolution.evoalloc import prior_new_best_rate

TRIALS = 2000
DISAGREEMENTS = 10
EXPLORE_P = 0.1
PARTIAL_COST = 8 / 30


def legacy_accept(cases: list[Decided], partial_cost: float) -> bool:
    """The rule before issue 17: observed misses only (unknown = no miss), then cost."""
    split = [c for c in cases if c.incumbent != c.challenger]
    misses_old = sum(bool(c.new_best) and not evaluates_fully(c.incumbent) for c in split)
    misses_new = sum(bool(c.new_best) and not evaluates_fully(c.challenger) for c in split)
    if not split:
        return False
    if misses_new != misses_old:
        return misses_new < misses_old
    return sum(path_cost(c.challenger, partial_cost) for c in split) < sum(path_cost(c.incumbent, partial_cost)
                                                                            for c in split) - 1e-12


def _outcome(rng: np.random.Generator, new_best: bool) -> tuple[bool | None, bool]:
    """(recorded new_best, counterfactual) of a candidate the agent turned away."""
    explored = rng.random() < EXPLORE_P
    return (new_best if explored else None), explored


def _history(rng: np.random.Generator, run_rate: float, n: int = 60) -> list[Decided]:
    cases = []
    for _ in range(n):
        new_best = bool(rng.random() < run_rate)
        if rng.random() < 0.5:
            cases.append(Decided("full", "full", new_best))
        else:
            recorded, explored = _outcome(rng, new_best)
            cases.append(Decided("discard", "discard", recorded, counterfactual=explored))
    return cases


def _trial(rng: np.random.Generator, kind: str, rate: float) -> list[Decided]:
    cases = []
    for _ in range(DISAGREEMENTS):
        new_best = bool(rng.random() < rate)
        if kind == "looser":      # the incumbent discards, the challenger would evaluate fully
            recorded, explored = _outcome(rng, new_best)
            cases.append(Decided("discard", "full", recorded, counterfactual=explored))
        else:                     # stingier: the incumbent evaluates fully, the challenger would discard
            cases.append(Decided("full", "discard", new_best))
    return cases


def _acceptance(kind: str, rate: float, run_rate: float, seed: int) -> tuple[float, float, float]:
    rng = np.random.default_rng(seed)
    new = old = mid = 0
    for _ in range(TRIALS):
        prior = prior_new_best_rate(_history(rng, run_rate), EXPLORE_P)
        trial = _trial(rng, kind, rate)
        verdict = accept_challenger(trial, PARTIAL_COST, explore_p=EXPLORE_P, prior_rate=prior)
        new += verdict.accepted
        old += legacy_accept(trial, PARTIAL_COST)
        mid += verdict.prefers_challenger
    return new / TRIALS, old / TRIALS, mid / TRIALS


def _acceptance_case(name: str, kind: str, rate: float, run_rate: float, want_accept: bool,
                     seed: int, floor: float = 0.8) -> Callable[[], Case]:
    """``floor`` < 0.8: a challenger accepted on the counterfactual estimate alone, which must clear
    its own 95% interval; then the point-estimate rule is no reference."""
    def run() -> Case:
        accepted, before, points = _acceptance(kind, rate, run_rate, seed)
        near = floor < 0.8 or abs(accepted - points) <= 0.10
        ok = (accepted >= floor if want_accept else accepted <= 0.2) and near
        expected = (f"accepted >= {floor:.0%} (an interval on an unobserved counterfactual)" if floor < 0.8 else
                    f"{'accepted' if want_accept else 'rejected'} >= 80%, within 10 points of the point-estimate rule")
        return Case("evoalloc acceptance", name, expected,
                    f"accepted {accepted:.0%} (point estimates alone {points:.0%}; pre-issue-17 rule {before:.0%})", ok)
    run.__name__ = f"acceptance_{name.replace(' ', '_')}"
    return run


def _equivalent_trial(rng: np.random.Generator, three_way: bool) -> list[Decided]:
    """One trial of a challenger with the incumbent's policy and its own sampling noise: per
    candidate a latent quality u ~ U(0, 1), a new best when u > 0.9 (the 10% rate), and each
    policy independently evaluates fully with probability u (``three_way``: partial first with
    probability 0.3, then full with probability u)."""
    cases = []
    for _ in range(DISAGREEMENTS):
        u = float(rng.random())
        new_best = u > 0.9

        def path() -> str:
            if three_way and rng.random() < 0.3:
                return "partial+full" if rng.random() < u else "partial"
            return "full" if rng.random() < u else "discard"

        incumbent, challenger = path(), path()
        recorded: bool | None = new_best
        explored = False
        if not evaluates_fully(incumbent):
            recorded, explored = _outcome(rng, new_best)
        cases.append(Decided(incumbent, challenger, recorded, counterfactual=explored))
    return cases


def _equivalent_case(name: str, three_way: bool, seed: int) -> Callable[[], Case]:
    def run() -> Case:
        rng = np.random.default_rng(seed)
        new = old = 0
        for _ in range(TRIALS):
            prior = prior_new_best_rate(_history(rng, 0.1), EXPLORE_P)
            trial = _equivalent_trial(rng, three_way)
            new += accept_challenger(trial, PARTIAL_COST, explore_p=EXPLORE_P, prior_rate=prior).accepted
            old += point_estimate_accept(trial, prior)
        accepted, before = new / TRIALS, old / TRIALS
        return Case("evoalloc acceptance", name, "accepted <= 10%",
                    f"accepted {accepted:.0%} (point estimates alone {before:.0%})", accepted <= 0.10)
    run.__name__ = f"acceptance_{name.replace(' ', '_')}"
    return run


def point_estimate_accept(cases: list[Decided], prior: float) -> bool:
    """The rule before issue 35: the point-estimate preference, no role-swap test."""
    return accept_challenger(cases, PARTIAL_COST, explore_p=EXPLORE_P, prior_rate=prior).prefers_challenger


def missed_new_bests_case() -> Case:
    """40 turned-away candidates, 4 of them new bests, explored at 0.1."""
    rng = np.random.default_rng(7)
    away, truth = 40, 4
    zero_reads = legacy_zero = covered = 0
    for _ in range(TRIALS):
        explored_mask = rng.random(away) < EXPLORE_P
        explored = int(explored_mask.sum())
        found = int(explored_mask[:truth].sum())  # the first `truth` candidates are the new bests
        estimate, low, high = missed_new_bests_estimate(away, explored, found)
        zero_reads += bool(high == 0)  # an estimate whose whole interval is 0 reads "0 missed"
        legacy_zero += found == 0
        covered += low <= truth <= high
    coverage = covered / TRIALS
    ok = zero_reads == 0 and coverage >= 0.9
    return Case("evolution missed new bests", "40 turned away, 4 new bests",
                "never reads 0; 95% CI covers 4 in >= 90%",
                f"reads 0 in {zero_reads / TRIALS:.0%} (pre-issue {legacy_zero / TRIALS:.0%}); coverage {coverage:.0%}", ok)


CASES: list[Callable[[], Case]] = [
    # issue 39: the looser challenger's extra new bests are seen only through exploration (about
    # one of its ten extra candidates); its expected catch must clear a 95% posterior interval,
    # which the run's prior alone rarely does: accepted in about a quarter of 10-candidate trials
    _acceptance_case("looser, finds 1 more new best", "looser", 0.1, 0.1, True, 1, floor=0.2),
    _acceptance_case("stingier, misses 1 new best", "stingier", 0.1, 0.1, False, 2),
    _acceptance_case("thriftier, misses none (run rate 1%)", "stingier", 0.0, 0.01, True, 3),
    _acceptance_case("looser, finds none (run on a plateau)", "looser", 0.0, 0.0, False, 4),
    _equivalent_case("equivalent (same policy, other noise)", False, 5),
    _equivalent_case("equivalent, with partial evaluations", True, 6),
    missed_new_bests_case,
]
