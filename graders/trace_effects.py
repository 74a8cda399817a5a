"""TRACE effects with the task as the unit of inference.

Identical reruns of one task are not independent evidence: 12 tasks x 3 reruns are 12 tasks, not
36 pairs. Every effect here first averages the scored pairs of each task (over seeds and reruns),
then tests the per-task deltas: a percentile bootstrap CI over tasks, the exact sign-flip
permutation test (which needs no variance, so it also decides a constant sample), McNemar on the
per-task majority (a task passes when its mean score is >= 0.5) and TOST with the
distribution-free bound for constant samples. ``Part`` is any such per-task quantity with its CI:
the grader part and behaviour part of a drop, the behaviour-change rate above rerun noise.
``holm`` judges the parts that can attribute one verdict as one family (Holm's step-down), so
that a verdict with two or three routes to an attribution still errs at most at the stated level.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Mapping, Sequence

import numpy as np

from rsigym.report.stats import TostResult, mcnemar_exact, paired_bootstrap_ci, sign_flip_test, tost_paired
from .trace import PASS_THRESHOLD, Pair, record_score

__all__ = ["UNIT", "TaskDelta", "Part", "Effect", "RegradeEffect", "task_part", "task_effect",
           "paired_effect", "regrade_effect", "regrade_flips", "holm"]

UNIT = "task"
Scored = list[tuple[str, float, float]]  # (task id, baseline score, treatment score), one per pair


@dataclass(frozen=True)
class TaskDelta:
    task_id: str
    n: int  # scored pairs of this task (seeds x reruns)
    mean_baseline: float
    mean_treatment: float
    delta: float


@dataclass(frozen=True)
class Part:
    """A mean over tasks with its CI: ``established`` when the CI excludes 0 (in the direction
    asked for) and the exact sign-flip test agrees (p < 1 - confidence); a constant sample,
    whose bootstrap CI has no width, is decided by the sign-flip test alone. The percentile
    bootstrap is too narrow for sparse deltas (4 of 25 tasks at -1 give [-0.32, -0.04] while
    the four signs alone give p = 2/16): the exact test keeps the level."""

    name: str
    estimate: float
    ci_low: float
    ci_high: float
    n: int  # tasks
    p_value: float  # sign-flip, two-sided
    constant: bool
    confidence: float = 0.95
    values: tuple[float, ...] = field(default=(), repr=False, compare=False)  # per task, for ``at``

    def at(self, confidence: float, seed: int = 0) -> Part:
        """The same part judged at another ``confidence`` (the bootstrap CI recomputed at that
        level; the sign-flip p does not depend on it)."""
        if confidence == self.confidence or not self.values:
            return replace(self, confidence=confidence)
        low, high = paired_bootstrap_ci(list(self.values), confidence=confidence, seed=seed)
        return replace(self, ci_low=low, ci_high=high, confidence=confidence)

    def can_reject(self, alpha: float) -> bool:
        """Whether the sign-flip test can reach p < ``alpha`` whatever the signs: k non-zero task
        values give p >= 2 / 2^k, so fewer than 6 at 0.05 (a part exactly 0 everywhere) never can."""
        k = sum(v != 0 for v in self.values)
        return k >= 2 and 2.0 ** (1 - k) < alpha

    def established(self, direction: int = 0) -> bool:
        """The CI excludes 0 (``direction`` +1: lies above 0; -1: below; 0: either side) and the
        sign-flip test rejects 0."""
        if self.n == 0 or math.isnan(self.estimate):
            return False
        beyond = self.p_value < 1 - self.confidence
        if self.constant:
            return beyond and (direction == 0 or math.copysign(1, self.estimate) == direction)
        above, below = self.ci_low > 0, self.ci_high < 0
        return beyond and {1: above, -1: below}.get(direction, above or below)

    @property
    def zero(self) -> bool:
        """Every task's value is exactly 0 (nothing to attribute, not an estimate near 0)."""
        return self.n > 0 and self.constant and self.estimate == 0

    def text(self) -> str:
        return (f"{self.estimate:+.3f} [{self.ci_low:+.3f}, {self.ci_high:+.3f}]" if self.n
                else "n/a")


def task_part(name: str, values: Sequence[float], confidence: float = 0.95, seed: int = 0) -> Part:
    """``Part`` of per-task ``values``: mean, percentile bootstrap CI over tasks, sign-flip p."""
    data = np.asarray(values, dtype=float)
    if data.size == 0:
        return Part(name, math.nan, math.nan, math.nan, 0, 1.0, True, confidence)
    low, high = paired_bootstrap_ci(data.tolist(), confidence=confidence, seed=seed)
    return Part(name, float(data.mean()), low, high, int(data.size), sign_flip_test(data.tolist(), seed=seed),
                bool(np.all(data == data[0])), confidence, tuple(float(v) for v in data))


def holm(parts: Mapping[str, Part], confidence: float = 0.95, seed: int = 0) -> dict[str, Part]:
    """``parts`` judged as one family at level ``1 - confidence`` (Holm's step-down on the
    sign-flip p-values): the one with the smallest p is judged at alpha/m, the next at
    alpha/(m-1), ..., each with its CI at that level; after the first p that misses its level,
    every later part is judged at that same level (and misses it too). Parts whose test cannot
    reach p < alpha whatever the signs (``Part.can_reject``, e.g. a part exactly 0 on every task)
    are not counted in m (Tarone: the sign-flip test conditions on the absolute values) and are
    returned as they are. The chance that any part of a family of true nulls is established is
    then at most alpha, whatever their dependence. Ties in p are broken by name (order-free)."""
    alpha = 1 - confidence
    family = sorted(((p.p_value, name) for name, p in parts.items() if p.can_reject(alpha)))
    judged = dict(parts)
    stop: float | None = None
    for step, (p_value, name) in enumerate(family):
        judged[name] = parts[name].at(1 - (stop if stop is not None else alpha / (len(family) - step)), seed)
        if stop is None and p_value >= 1 - judged[name].confidence:  # the level ``established`` uses
            stop = 1 - judged[name].confidence
    return judged


@dataclass(frozen=True)
class Effect:
    """Paired effect of a treatment on one grader's score, task as the unit.

    ``delta`` = mean over tasks of (treatment - baseline), each task's pairs averaged first.
    ``n`` counts tasks, ``n_pairs`` the scored pairs behind them.
    """

    grader: str
    n: int
    n_pairs: int
    mean_baseline: float
    mean_treatment: float
    delta: float
    ci_low: float
    ci_high: float
    p_value: float  # exact / permutation sign-flip test over task deltas
    mcnemar_p: float  # on per-task majority pass/fail
    b: int  # tasks passing under baseline, failing under treatment
    c: int  # tasks failing under baseline, passing under treatment
    tost: TostResult
    confidence: float = 0.95
    ungraded: int = 0  # pairs left out because a side lacks the grade or its grader failed
    per_task: tuple[TaskDelta, ...] = ()
    unit: str = UNIT

    @property
    def deltas(self) -> tuple[float, ...]:
        return tuple(t.delta for t in self.per_task)

    @property
    def part(self) -> Part:
        constant = len(set(self.deltas)) <= 1
        return Part(self.grader, self.delta, self.ci_low, self.ci_high, self.n, self.p_value, constant,
                    self.confidence, self.deltas)

    @property
    def moved(self) -> bool:
        """The CI over tasks excludes 0 and the sign-flip test rejects 0 (see ``Part``)."""
        return self.part.established()


def per_task(scored: Scored) -> tuple[TaskDelta, ...]:
    by_task: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task, x, y in scored:
        by_task[task].append((x, y))
    return tuple(TaskDelta(t, len(v), float(np.mean([x for x, _ in v])), float(np.mean([y for _, y in v])),
                           float(np.mean([y - x for x, y in v])))
                 for t, v in sorted(by_task.items()))


def task_effect(grader: str, scored: Scored, *, ungraded: int = 0, margin: float = 0.10,
                confidence: float = 0.95, seed: int = 0) -> Effect:
    """The ``Effect`` of scored pairs, aggregated to tasks first. A task delta is bounded by the
    score range for the constant-sample TOST: 1 for scores in [0, 1], the observed range when
    scores spread wider."""
    tasks = per_task(scored)
    deltas = [t.delta for t in tasks]
    low, high = paired_bootstrap_ci(deltas, confidence=confidence, seed=seed)
    b = sum(t.mean_baseline >= PASS_THRESHOLD > t.mean_treatment for t in tasks)
    c = sum(t.mean_treatment >= PASS_THRESHOLD > t.mean_baseline for t in tasks)
    mean = (lambda v: float(np.mean(v)) if v else math.nan)
    alpha = 1 - confidence  # TOST at alpha 0.05 is the usual 90% interval inside the margin
    values = [v for _, x, y in scored for v in (x, y)]
    bound = max(1.0, max(values) - min(values)) if values else 1.0
    return Effect(grader, len(tasks), len(scored), mean([t.mean_baseline for t in tasks]),
                  mean([t.mean_treatment for t in tasks]), mean(deltas), low, high,
                  sign_flip_test(deltas, seed=seed), mcnemar_exact(b, c), b, c,
                  tost_paired(deltas, margin, alpha=alpha, bound=bound), confidence, ungraded, tasks)


def paired_effect(pairs: Sequence[Pair], grader: str, *, margin: float = 0.10,
                  confidence: float = 0.95, seed: int = 0) -> Effect:
    """Task-level paired effect of ``grader`` (latest grade of each record): CI, tests, TOST."""
    scored, ungraded = [], 0
    for pair in pairs:
        x, y = record_score(pair.baseline, grader), record_score(pair.treatment, grader)
        if x is None or y is None:
            ungraded += 1
        else:
            scored.append((pair.task_id, x, y))
    return task_effect(grader, scored, ungraded=ungraded, margin=margin, confidence=confidence, seed=seed)


@dataclass(frozen=True)
class RegradeEffect:
    """The treatment effect under the regrade ruler next to the original, and how the regrade
    moved each record. ``grader_part`` is, per task, original delta minus regrade delta (over
    tasks scored by both): the share of the drop the ruler alone explains."""

    original: Effect
    regraded: Effect
    grader_part: Part
    flips: dict[str, dict[str, int]] = field(default_factory=dict)  # side -> "pass->fail" -> count

    @property
    def delta(self) -> float:
        return self.regraded.delta


def _pass_word(score: float) -> str:
    return "pass" if score >= PASS_THRESHOLD else "fail"


def regrade_flips(pairs: Sequence[Pair], original_grader: str, regrade_grader: str) -> dict[str, dict[str, int]]:
    """``flips[side]["pass->fail"]``: records of that side (baseline, treatment) passing under the
    original grader and failing under the regrade (same name: live grade, then regrade grade)."""
    same = original_grader == regrade_grader
    src_old, src_new = ("live", "regrade") if same else (None, None)
    flips = {side: {f"{a}->{b}": 0 for a in ("pass", "fail") for b in ("pass", "fail")}
             for side in ("baseline", "treatment")}
    for pair in pairs:
        for side, record in (("baseline", pair.baseline), ("treatment", pair.treatment)):
            before = record_score(record, original_grader, src_old)
            after = record_score(record, regrade_grader, src_new)
            if before is not None and after is not None:
                flips[side][f"{_pass_word(before)}->{_pass_word(after)}"] += 1
    return flips


def regrade_effect(pairs: Sequence[Pair], original_grader: str, regrade_grader: str, *,
                   margin: float = 0.10, confidence: float = 0.95, seed: int = 0) -> RegradeEffect:
    """Task-level effect under ``regrade_grader`` next to ``original_grader``, the grader part,
    and a flip table.

    Reads grades already in the records (``rsigym.regrade`` or live grading writes
    them). When both names are the same, the original is the latest live grade and the regrade
    the latest ``source="regrade"`` grade. ``flips[side]["pass->fail"]`` counts records of that
    side (baseline, treatment) passing under the original and failing under the regrade.
    """
    same = original_grader == regrade_grader
    src_old, src_new = ("live", "regrade") if same else (None, None)
    flips = regrade_flips(pairs, original_grader, regrade_grader)
    old: Scored = []
    new: Scored = []
    ungraded_old = ungraded_new = 0
    for pair in pairs:
        scores = {}
        for side, record in (("baseline", pair.baseline), ("treatment", pair.treatment)):
            before = record_score(record, original_grader, src_old)
            after = record_score(record, regrade_grader, src_new)
            scores[side] = (before, after)
        (b0, b1), (t0, t1) = scores["baseline"], scores["treatment"]
        if b0 is None or t0 is None:
            ungraded_old += 1
        else:
            old.append((pair.task_id, b0, t0))
        if b1 is None or t1 is None:
            ungraded_new += 1
        else:
            new.append((pair.task_id, b1, t1))
    original = task_effect(original_grader, old, ungraded=ungraded_old, margin=margin,
                           confidence=confidence, seed=seed)
    regraded = task_effect(regrade_grader, new, ungraded=ungraded_new, margin=margin,
                           confidence=confidence, seed=seed)
    new_by_task = {t.task_id: t.delta for t in regraded.per_task}
    grader_part = task_part("grader part", [t.delta - new_by_task[t.task_id] for t in original.per_task
                                            if t.task_id in new_by_task], confidence, seed)
    return RegradeEffect(original, regraded, grader_part, flips)
