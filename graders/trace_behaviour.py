"""Behaviour evidence for TRACE: paired changes against identical reruns of the baseline arm,
and what the grader did where the agent did exactly the same.

A pair's behaviour changed when its actions (tool names mapped back) or its final state differ
(``trace.behaviour_diff``). Per task, the *paired disagreement* is the share of its pairs whose
behaviour changed, and the *rerun disagreement* the share of the baseline arm's identical-rerun
pairs that changed (the noise floor). For an agent that draws its behaviour in a task from P under
the baseline and Q under the treatment, paired disagreement has expectation 1 - sum p_i q_i and
the baseline rerun one 1 - sum p_i^2, so the excess is sum p_i (p_i - q_i): exactly 0 when the
behaviour distribution did not change, and it grows when the treatment spreads the behaviour over
other routes (the treatment's own rerun variation is not pooled into the floor, where a treatment
that makes the agent noisier would absorb its own effect). It cannot see a treatment that only
concentrates a baseline spread evenly over its routes (then sum p_i q_i = sum p_i^2). Only tasks
with baseline reruns enter that excess; the others are left out and counted (a task without
reruns has no noise floor, not a floor of 0).

Reruns that never differ anywhere while the pairs differ in both score directions look like
reruns that repeat one random draw (a shared seed): the floor is then 0 without being measured,
``shared_seed`` flags it, and the verdict rests no behaviour conclusion on that floor.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from itertools import combinations
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory

from .trace import PASS_THRESHOLD, Pair, behaviour_diff, record_score, rerun_groups
from .trace_effects import Part, task_part


def _scipy_stats() -> Any:
    """scipy.stats, imported on first use (most of the import cost of the package that imports this)."""
    from scipy import stats

    return stats

__all__ = ["Unit", "ArmReruns", "arm_reruns", "BehaviourRate", "behaviour_rate", "GraderFlips", "grader_flips"]

Counts = dict[str, tuple[int, int]]  # task -> (changed rerun pairs, rerun pairs)


@dataclass(frozen=True)
class Unit:
    """One pair's evidence: the original grader's scores, the regrade's, and whether the agent's
    behaviour changed. ``imputed`` marks a unit filled in for a missing or infra-error record."""

    task_id: str
    base: float | None
    treat: float | None
    base_regrade: float | None = None
    treat_regrade: float | None = None
    changed: bool = False
    imputed: bool = False


@dataclass(frozen=True)
class ArmReruns:
    """Identical reruns of one arm: behaviour changes per task, and the grader on reruns whose
    behaviour was identical (a grader that scores one behaviour two ways is noisy by itself)."""

    behaviour: Counts
    changed: int = 0  # rerun pairs whose behaviour changed
    identical_scored: int = 0  # rerun pairs with identical behaviour, both graded
    score_disagreements: int = 0  # ... of which the grader scored differently


def arm_reruns(records: Sequence[Trajectory], grader: str) -> ArmReruns:
    """``ArmReruns`` of the records of one arm (one agent, one condition)."""
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    changed = scored = disagree = 0
    for group in rerun_groups(records):
        for a, b in combinations(group, 2):
            diff = behaviour_diff(Pair(a, b)).changed
            tally = counts[str(a.env.task_id)]
            tally[0] += diff
            tally[1] += 1
            changed += diff
            x, y = record_score(a, grader), record_score(b, grader)
            if not diff and x is not None and y is not None:
                scored += 1
                disagree += x != y
    return ArmReruns({t: (c, n) for t, (c, n) in sorted(counts.items())}, changed, scored, disagree)


@dataclass(frozen=True)
class BehaviourRate:
    """Paired behaviour changes per task against identical reruns of the baseline arm (description,
    and the behaviour-level test ``excess``)."""

    rate: float  # mean over tasks of the share of changed pairs
    noise: float  # mean over referenced tasks of the baseline arm's rerun disagreement; nan if none
    excess: Part  # per referenced task: paired disagreement - baseline rerun disagreement
    reference: bool  # whether any task has baseline reruns
    any_changed: bool  # some pair's behaviour changed
    tasks: int = 0  # tasks with pairs
    referenced: int = 0  # tasks with baseline reruns (the excess's tasks)
    reruns_changed: bool = False  # some rerun pair of either arm changed
    rerun_pairs: tuple[int, int, int, int] = (0, 0, 0, 0)  # changed / all rerun pairs: baseline, treatment
    shared_seed: bool = False  # reruns never differ while pairs differ at random: floor not measured

    @property
    def identical_everywhere(self) -> bool:
        """Behaviour identical in every pair and every rerun of both arms."""
        return not self.any_changed and not self.reruns_changed

    def reruns_text(self) -> str:
        """Whether the agent's reruns differ at all, per arm."""
        bc, bn, tc, tn = self.rerun_pairs
        if not bn + tn:
            return "no reruns"
        text = f"reruns differ in {bc} of {bn} baseline and {tc} of {tn} treatment rerun pairs"
        if self.shared_seed:
            text += (" (reruns may share a seed: noise floor not measured; the pairs differ in both score "
                     "directions, so no behaviour verdict rests on a floor of 0)")
        return text

    def text(self) -> str:
        head = f"behaviour changed in {self.rate:.0%} of pairs (mean over {self.tasks} tasks); {self.reruns_text()}"
        if self.shared_seed:
            return head
        if not self.reference:
            return head + "; no task has identical baseline reruns, so no rerun reference: the rate is description only"
        left = self.tasks - self.referenced
        return (f"{head}; {self.noise:.0%} between identical baseline reruns ({self.referenced} tasks with baseline "
                f"reruns, {left} without left out), excess {self.excess.text()}")


def _random_pairs(units: Sequence[Unit]) -> bool:
    """Some changed pair scores higher under the treatment and some lower: the arms differ in both
    directions, as two independent draws of a noisy agent do."""
    moves = {(u.treat > u.base) - (u.treat < u.base) for u in units
             if u.changed and u.base is not None and u.treat is not None}
    return {1, -1} <= moves


def behaviour_rate(units: Sequence[Unit], base: Counts, treat: Counts, *, reruns_changed: bool = False,
                   confidence: float = 0.95, seed: int = 0) -> BehaviourRate:
    """The behaviour-change rate of ``units`` per task, against the baseline arm's rerun
    disagreement (``treat`` is counted, never pooled into the floor)."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for unit in units:
        by_task[unit.task_id].append(unit.changed)
    rates = {t: float(np.mean(v)) for t, v in sorted(by_task.items())}
    floor = {t: base[t][0] / base[t][1] for t in rates if base.get(t, (0, 0))[1]}
    pairs = (sum(c for c, _ in base.values()), sum(n for _, n in base.values()),
             sum(c for c, _ in treat.values()), sum(n for _, n in treat.values()))
    any_changed = any(any(v) for v in by_task.values())
    shared = bool(pairs[1] + pairs[3]) and not (pairs[0] or pairs[2]) and _random_pairs(units)
    excess = task_part("behaviour excess", [rates[t] - floor[t] for t in sorted(floor)], confidence, seed)
    mean = (lambda v: float(np.mean(list(v))) if v else math.nan)
    return BehaviourRate(mean(rates.values()), mean(floor.values()), excess, bool(floor), any_changed,
                         len(rates), len(floor), reruns_changed, pairs, shared)


@dataclass(frozen=True)
class GraderFlips:
    """What the original grader did on pairs whose behaviour was identical: every score change
    there is the grader's. ``flipped`` tasks have such a pair whose pass/fail (score >= 0.5)
    differs (``down``: passes under the baseline only, ``up``: under the treatment only; a task
    can be both); ``share`` = flipped / tasks
    with an exact (Clopper-Pearson) interval; ``mean_abs`` = mean over tasks of the mean
    |treatment - baseline| of their scored pairs (the absolute disagreement, both directions)."""

    tasks: int
    flipped: int
    down: int
    up: int
    share: float
    share_low: float
    share_high: float
    mean_abs: float

    def text(self) -> str:
        if not self.tasks:
            return "no scored pairs"
        return (f"the grader flips pass/fail of identical behaviour in {self.flipped} of {self.tasks} tasks "
                f"({self.down} down, {self.up} up; share {self.share:.2f} [{self.share_low:.2f}, "
                f"{self.share_high:.2f}]), mean absolute disagreement {self.mean_abs:.3f}")


def grader_flips(units: Sequence[Unit], confidence: float = 0.95) -> GraderFlips:
    """``GraderFlips`` of the scored units (original grader)."""
    by_task: dict[str, list[Unit]] = defaultdict(list)
    for unit in units:
        if unit.base is not None and unit.treat is not None:
            by_task[unit.task_id].append(unit)
    def passes(score: float | None) -> bool:
        return score is not None and score >= PASS_THRESHOLD

    same = {t: [u for u in v if not u.changed] for t, v in by_task.items()}
    down = sum(any(passes(u.base) and not passes(u.treat) for u in v) for v in same.values())
    up = sum(any(passes(u.treat) and not passes(u.base) for u in v) for v in same.values())
    flipped = sum(any(passes(u.base) != passes(u.treat) for u in v) for v in same.values())
    n = len(by_task)
    if n == 0:
        return GraderFlips(0, 0, 0, 0, math.nan, math.nan, math.nan, math.nan)
    ci = _scipy_stats().binomtest(flipped, n).proportion_ci(confidence, method="exact")
    mean_abs = float(np.mean([np.mean([abs(u.treat - u.base) for u in v])  # type: ignore[operator]
                              for v in by_task.values()]))
    return GraderFlips(n, flipped, down, up, flipped / n, float(ci.low), float(ci.high), mean_abs)
