"""The TRACE verdict: why did a score change, judged from intervals over tasks.

``attribute`` takes one agent's pairs of a baseline and a treatment and returns an
``Attribution``: the task-level effect, the regrade with the drop split into a grader part and a
behaviour part (each with its CI), the behaviour-change rate against the same rate between
identical reruns of the baseline, what was missing, and the ``Verdict``. The rules, first match
wins ("established" = the CI over tasks excludes 0; a constant sample is decided by the exact
sign-flip test):

1. ``insufficient data``: fewer than ``min_tasks`` scored tasks.
2. ``withheld``: missing grades, infra errors or unpaired records could change the verdict
   (imputing them all as the worst or the best case moves the effect into another class).
3. positive control: ``detected`` when the CI lies beyond +-margin, or ``|delta| > margin`` and
   the effect is established; else ``not detected``.
4. ``no effect``: TOST-equivalent within the margin over tasks.
5. ``indistinguishable from noise``: not equivalent and not established.
6. With a regrade: the grader part is original minus regrade delta per task; the behaviour part
   is the regrade delta. The regrade *closes* the drop when its delta is TOST-equivalent to 0, or
   exactly 0 because no pair's actions or end state changed. The behaviour part is *established*
   when the regrade delta is established and the behaviour-change rate exceeds the rerun noise.
   ``mixed``: both parts established; ``measurement artifact``: grader part established and the
   drop closed; ``behaviour change``: only the behaviour part; else ``inconclusive``.
7. Without a regrade: ``behaviour change`` when the behaviour-change rate exceeds rerun noise;
   ``measurement artifact`` when no pair's behaviour changed at all; else ``inconclusive``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass
from typing import Sequence

import numpy as np

from rsigym.records import Trajectory

from .trace import Pair, Pairs, behaviour_diff, join_key, matches_condition, record_score
from .trace_effects import Effect, Part, RegradeEffect, Scored, paired_effect, regrade_effect, task_effect, task_part

__all__ = ["MIN_TASKS", "VERDICT_LABELS", "Missing", "BehaviourRate", "Verdict", "Attribution",
           "attribute", "behaviour_rate"]

MIN_TASKS = 10  # the sign-flip test cannot reach p < 0.05 below 6 tasks; 10 leaves room
VERDICT_LABELS = ("no effect", "behaviour change", "measurement artifact", "mixed", "inconclusive",
                  "indistinguishable from noise", "insufficient data", "withheld", "detected",
                  "not detected")


@dataclass(frozen=True)
class Missing:
    """What pairing and grading left out, for one agent x treatment."""

    ungraded_pairs: int
    infra_records: int
    unpaired_records: int
    duplicates: int = 0

    def text(self) -> str:
        return (f"{self.ungraded_pairs} ungraded pairs, {self.infra_records} infra-error records, "
                f"{self.unpaired_records} unpaired records, {self.duplicates} duplicates")

    @property
    def any(self) -> bool:
        return bool(self.ungraded_pairs or self.infra_records or self.unpaired_records)


@dataclass(frozen=True)
class BehaviourRate:
    """Share of pairs whose behaviour changed, per task, against identical reruns of the baseline."""

    rate: float  # mean over tasks of the share of changed pairs
    noise: float  # mean over tasks of the share of changed baseline rerun pairs (0 without reruns)
    excess: Part  # per task: rate - noise
    reference: bool  # whether any baseline task had two reruns to measure noise on
    any_changed: bool

    def text(self) -> str:
        noise = f"{self.noise:.0%} between identical reruns" if self.reference else "no rerun reference"
        return (f"behaviour changed in {self.rate:.0%} of pairs (mean over tasks) vs {noise}, "
                f"excess {self.excess.text()}")


def behaviour_rate(pairs: Sequence[Pair], noise: dict[str, tuple[int, int]] | None = None,
                   confidence: float = 0.95, seed: int = 0) -> BehaviourRate:
    """The behaviour-change rate per task against ``noise`` ({task: (changed, rerun pairs)},
    see ``trace.rerun_behaviour``); a task without reruns has noise 0."""
    by_task: dict[str, list[bool]] = defaultdict(list)
    for pair in pairs:
        by_task[pair.task_id].append(behaviour_diff(pair).changed)
    noise = noise or {}
    rates = {t: float(np.mean(v)) for t, v in by_task.items()}
    floor = {t: (noise[t][0] / noise[t][1] if noise.get(t, (0, 0))[1] else 0.0) for t in rates}
    excess = task_part("behaviour excess", [rates[t] - floor[t] for t in sorted(rates)], confidence, seed)
    mean = (lambda v: float(np.mean(list(v))) if v else math.nan)
    return BehaviourRate(mean(rates.values()), mean(floor.values()), excess,
                         any(n for _, n in noise.values()), any(any(v) for v in by_task.values()))


@dataclass(frozen=True)
class Verdict:
    label: str
    sentence: str


@dataclass(frozen=True)
class Attribution:
    effect: Effect
    regrade: RegradeEffect | None
    behaviour: BehaviourRate
    missing: Missing
    verdict: Verdict
    positive_control: bool = False

    @property
    def grader_part(self) -> Part | None:
        return self.regrade.grader_part if self.regrade else None

    @property
    def behaviour_part(self) -> Part | None:
        return self.regrade.regraded.part if self.regrade else None


def _incomplete(pairs: Pairs, agent: str | None, grader: str, baseline: str) -> list[tuple[str, float | None, float | None]]:
    """Pairs with a missing score, and left-out records joined with their partner if any."""
    units = []
    for pair in pairs:
        x, y = record_score(pair.baseline, grader), record_score(pair.treatment, grader)
        if x is None or y is None:
            units.append((pair.task_id, x, y))
    joined: dict[str, dict[str, Trajectory]] = defaultdict(dict)
    for record in pairs.left_out:
        if agent is None or record.agent.id == agent:
            side = "baseline" if matches_condition(record.env.condition, baseline) else "treatment"
            joined[join_key(record)][side] = record
    for sides in joined.values():
        task = str(next(iter(sides.values())).env.task_id)
        score = {s: (record_score(r, grader) if r.termination != "infra_error" else None) for s, r in sides.items()}
        units.append((task, score.get("baseline"), score.get("treatment")))
    return units


def _klass(effect: Effect, margin: float, positive_control: bool) -> str:
    if positive_control:
        beyond = effect.ci_low > margin or effect.ci_high < -margin
        return "detected" if beyond or (abs(effect.delta) > margin and effect.moved) else "not detected"
    if effect.tost.equivalent:
        return "no effect"
    return "moved" if effect.moved else "indistinguishable from noise"


def attribute(pairs: Pairs, grader: str, *, agent: str | None = None, baseline: str = "identity",
              regrade_grader: str | None = None, noise: dict[str, tuple[int, int]] | None = None,
              margin: float = 0.10, confidence: float = 0.95, positive_control: bool = False,
              min_tasks: int = MIN_TASKS, seed: int = 0) -> Attribution:
    """Attribute the treatment effect of ``grader`` on the ``pairs`` of one agent (see the module
    docstring for the rules). ``pairs`` come from ``pair_records`` and may hold several agents:
    ``agent`` picks one (its left-out records too). ``noise`` is the baseline's
    ``rerun_behaviour`` for this agent."""
    mine = Pairs([p for p in pairs if agent is None or p.agent_id == agent], left_out=pairs.left_out,
                 duplicates=pairs.duplicates)
    effect = paired_effect(mine, grader, margin=margin, confidence=confidence, seed=seed)
    regrade = (regrade_effect(mine, grader, regrade_grader, margin=margin, confidence=confidence, seed=seed)
               if regrade_grader else None)
    behaviour = behaviour_rate(mine, noise, confidence, seed)
    left = [r for r in pairs.left_out if agent is None or r.agent.id == agent]
    missing = Missing(effect.ungraded, sum(r.termination == "infra_error" for r in left),
                      sum(r.termination != "infra_error" for r in left), pairs.duplicates)
    label, parts = _decide(mine, effect, regrade, behaviour, missing, grader, agent, baseline, margin,
                           confidence, positive_control, min_tasks, seed)
    sentence = (f"delta {effect.delta:+.3f} ({confidence:.0%} CI {effect.ci_low:+.3f} to {effect.ci_high:+.3f}, "
                f"n={effect.n} tasks ({effect.n_pairs} pairs), sign-flip p={effect.p_value:.3g}, "
                f"McNemar p={effect.mcnemar_p:.3g} on task majority, TOST p={effect.tost.p_value:.3g}, "
                f"margin {margin:.2f}); {behaviour.text()}; {missing.text()}" + parts)
    return Attribution(effect, regrade, behaviour, missing, Verdict(label, sentence), positive_control)


def _decide(pairs: Pairs, effect: Effect, regrade: RegradeEffect | None, behaviour: BehaviourRate,
            missing: Missing, grader: str, agent: str | None, baseline: str, margin: float,
            confidence: float, positive_control: bool, min_tasks: int, seed: int) -> tuple[str, str]:
    parts = ""
    if regrade is not None and regrade.regraded.n == 0:
        regrade, parts = None, "; no regrade grades found"
    elif regrade is not None:
        parts = (f"; grader part {regrade.grader_part.text()}, behaviour part (regrade "
                 f"{regrade.regraded.grader}) {regrade.regraded.part.text()}")
    if effect.n < min_tasks:
        return "insufficient data", parts + f"; fewer than {min_tasks} tasks"
    klass = _klass(effect, margin, positive_control)
    units = _incomplete(pairs, agent, grader, baseline)
    if units:
        scored: Scored = []
        for pair in pairs:
            x, y = record_score(pair.baseline, grader), record_score(pair.treatment, grader)
            if x is not None and y is not None:
                scored.append((pair.task_id, x, y))
        for worst in (True, False):
            fill = [(t, (1.0 if worst else 0.0) if x is None else x, (0.0 if worst else 1.0) if y is None else y)
                    for t, x, y in units]
            imputed = task_effect(grader, scored + fill, margin=margin, confidence=confidence, seed=seed)
            if _klass(imputed, margin, positive_control) != klass:
                case = "worst" if worst else "best"
                return "withheld", parts + (f"; {len(units)} incomplete pairs imputed as the {case} case "
                                            f"give delta {imputed.delta:+.3f}: {klass} could change")
    if klass == "indistinguishable from noise" and effect.part.constant and effect.n:
        m = abs(effect.delta)
        if m < margin:  # how many equal tasks the distribution-free TOST would need
            needed = math.ceil(math.log(1 - confidence) / math.log(1 - (margin - m) / (1 + m)))
            parts += (f"; every task has the same delta, and {effect.n} equal tasks cannot bound an "
                      f"effect within {margin:.2f} without assumptions ({needed} can)")
    if positive_control or klass != "moved":
        return klass, parts
    beyond_noise = behaviour.excess.established(+1)
    if regrade is not None:
        closed = regrade.regraded.tost.equivalent or not behaviour.any_changed
        grader_part = regrade.grader_part.established()
        behaviour_part = not closed and regrade.regraded.moved and beyond_noise
        if grader_part and behaviour_part:
            return "mixed", parts
        if grader_part and closed:
            return "measurement artifact", parts
        if behaviour_part and not grader_part:
            return "behaviour change", parts
        return "inconclusive", parts + ("; the regrade neither closes the drop nor shows a behaviour part "
                                        "beyond rerun noise")
    if beyond_noise:
        return "behaviour change", parts
    if not behaviour.any_changed:
        return "measurement artifact", parts
    return "inconclusive", parts + "; behaviour changes no more than between identical reruns"
