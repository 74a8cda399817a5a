"""The TRACE verdict: why did a score change, judged from intervals over tasks.

``attribute`` takes one agent's pairs of a baseline and a treatment and returns an
``Attribution``: the task-level effect, the regrade with the change split into a grader part
and a behaviour part (each with its CI), the behaviour-change rate against identical reruns of
both arms, what the grader did where the agent did exactly the same, what was missing, and the
``Verdict``. "Established" = the bootstrap CI over tasks excludes 0 and the exact sign-flip test
rejects 0 at the same level (a constant sample: the sign-flip test alone); "equivalent" = TOST
within the margin; "exactly 0" = every task's value is 0. The parts that can attribute a verdict
(the behaviour part, the grader part and the behaviour-level excess) are one family: each is
established at its Holm level (``trace_effects.holm``; a part that cannot reach p < 0.05, such as
one exactly 0, is not counted), so a verdict without any true part attributes at most 5% of the
time, not 5% per part. The rules, first match wins:

1. ``insufficient data``: fewer than ``min_tasks`` scored tasks.
2. ``withheld``: filling the missing grades, infra-error and unpaired records at an extreme (the
   original grader at its worst or best, the regrade at its worst, best or equal on both sides,
   unknown behaviour changed or identical; ``trace_units.fillings``) gives another label.
3. positive control: ``detected`` when the CI lies beyond +-margin, or ``|delta| > margin`` and
   the effect is established; else ``not detected``.
4. ``measurement artifact`` (certain): behaviour identical in every pair and every rerun of both
   arms, the grader scoring identical reruns alike, and some pair's pass/fail flipped (or the
   delta established): every score change is the grader's, whatever the mean (flips in both
   directions count; the share of tasks the grader flips is given).
5. With a regrade (the fixed ruler): behaviour part = regrade delta, grader part = original
   minus regrade delta per task. Both "null" (exactly 0 or equivalent) and the delta equivalent:
   ``no effect``; both established: ``mixed``; behaviour part established and grader part null:
   ``behaviour change``; grader part established and behaviour part null: ``measurement
   artifact``.
6. Without a regrade: a moved delta is ``behaviour change`` when behaviour changes beyond
   identical reruns (the behaviour-level test: per task, paired disagreement minus the mean
   rerun disagreement of both arms, established above 0; tasks without reruns in both arms left
   out; no such task: no conclusion on that basis).
7. An equivalent delta is ``no effect``, or ``behaviour change`` at equal score when the
   behaviour-level test is established; a moved delta with no attribution is ``inconclusive``;
   else ``indistinguishable from noise``.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Sequence

from rsigym.stats import TostResult, tost_paired

from .trace import Pairs
from .trace_behaviour import ArmReruns, BehaviourRate, GraderFlips, Unit, arm_reruns, behaviour_rate, grader_flips
from .trace_effects import Effect, Part, RegradeEffect, holm, regrade_flips, task_effect, task_part
from .trace_units import Missing, fill, fillings, holes, pair_units

__all__ = ["MIN_TASKS", "VERDICT_LABELS", "ATTRIBUTIONS", "Missing", "BehaviourRate", "Verdict", "Attribution",
           "Evidence", "attribute", "evidence", "decide"]

FAMILY = ("behaviour part", "grader part", "behaviour excess")  # the parts that can attribute, one family
MIN_TASKS = 10  # the sign-flip test cannot reach p < 0.05 below 6 tasks; 10 leaves room
VERDICT_LABELS = ("no effect", "behaviour change", "measurement artifact", "mixed", "inconclusive",
                  "indistinguishable from noise", "insufficient data", "withheld", "detected",
                  "not detected")
ATTRIBUTIONS = ("behaviour change", "measurement artifact", "mixed")  # labels that say why a score moved


@dataclass(frozen=True)
class Verdict:
    label: str
    sentence: str
    rule: str = ""  # what held for the rule that decided the label (the report's table shows it)


@dataclass(frozen=True)
class Evidence:
    """Everything a label is decided from, for one set of units (observed, or filled)."""

    effect: Effect
    regraded: Effect | None
    grader_part: Part | None
    grader_part_tost: TostResult | None
    behaviour: BehaviourRate
    flips: GraderFlips
    judged: dict[str, Part] = field(default_factory=dict)  # ``FAMILY`` parts at their Holm levels

    def part(self, name: str) -> Part | None:
        """The part ``name`` of ``FAMILY`` as judged (at its Holm level), None when not tested."""
        return self.judged.get(name)


@dataclass(frozen=True)
class Attribution:
    effect: Effect
    regrade: RegradeEffect | None
    behaviour: BehaviourRate
    missing: Missing
    verdict: Verdict
    positive_control: bool = False
    flips: GraderFlips | None = None

    @property
    def grader_part(self) -> Part | None:
        return self.regrade.grader_part if self.regrade else None

    @property
    def behaviour_part(self) -> Part | None:
        return self.regrade.regraded.part if self.regrade else None


def evidence(units: Sequence[Unit], base: ArmReruns, treat: ArmReruns, *, grader: str, regrade: str | None,
             margin: float = 0.10, confidence: float = 0.95, seed: int = 0) -> Evidence:
    """The effect, regrade parts, behaviour rate and grader flips of ``units``."""
    scored = [(u.task_id, u.base, u.treat) for u in units if u.base is not None and u.treat is not None]
    effect = task_effect(grader, scored, ungraded=len(units) - len(scored), margin=margin,
                         confidence=confidence, seed=seed)
    regraded = part = tost = None
    new = [(u.task_id, u.base_regrade, u.treat_regrade) for u in units
           if u.base_regrade is not None and u.treat_regrade is not None]
    if regrade and new:
        regraded = task_effect(regrade, new, ungraded=len(units) - len(new), margin=margin,
                               confidence=confidence, seed=seed)
        by_task = {t.task_id: t.delta for t in regraded.per_task}
        values = [t.delta - by_task[t.task_id] for t in effect.per_task if t.task_id in by_task]
        part = task_part("grader part", values, confidence, seed)
        spread = [v for _, x, y in scored + new for v in (x, y)]
        bound = 2 * max(1.0, max(spread) - min(spread))  # a grader part spans two score ranges
        tost = tost_paired(values, margin, alpha=1 - confidence, bound=bound)
    behaviour = behaviour_rate(units, base.behaviour, treat.behaviour, reruns_changed=bool(base.changed or treat.changed),
                               confidence=confidence, seed=seed)
    tested = {"behaviour excess": behaviour.excess} if behaviour.reference else {}
    if regraded is not None and part is not None:
        tested.update({"behaviour part": regraded.part, "grader part": part})
    return Evidence(effect, regraded, part, tost, behaviour, grader_flips(units, confidence),
                    holm(tested, confidence, seed))


def decide(ev: Evidence, *, margin: float, positive_control: bool = False,
           grader_consistent: bool = True) -> tuple[str, str]:
    """(label, what holds) by rules 3-7 of the module docstring."""
    e, b = ev.effect, ev.behaviour
    if positive_control:
        beyond = e.ci_low > margin or e.ci_high < -margin
        detected = beyond or (abs(e.delta) > margin and e.moved)
        return ("detected" if detected else "not detected"), ""
    if b.identical_everywhere and (ev.flips.flipped or e.moved) and grader_consistent:
        return "measurement artifact", ("behaviour is identical in every pair and every rerun of both arms, so every "
                                        "score change is the grader's, whatever the mean delta")
    equivalent = f"the score is equivalent within +-{margin:.2f} (90% CI {e.tost.ci90_low:+.3f} to {e.tost.ci90_high:+.3f})"
    excess = ev.part("behaviour excess")
    at_equal = excess is not None and excess.established(+1)
    excess_text = f"excess {b.excess.text()}, {_level(excess)}" if excess is not None else ""
    at_equal_text = f"behaviour changed beyond identical-rerun variation at equal score ({equivalent}; {excess_text})"
    if ev.regraded is not None and ev.grader_part is not None and ev.grader_part_tost is not None:
        r, g = ev.regraded.part, ev.grader_part  # shown at 95%; decided at their Holm levels
        r_at, g_at = ev.part("behaviour part") or r, ev.part("grader part") or g
        r_null = r.zero or ev.regraded.tost.equivalent
        g_null = g.zero or ev.grader_part_tost.equivalent
        r_word = "exactly 0" if r.zero else f"equivalent to 0 within +-{margin:.2f}"
        g_word = "exactly 0" if g.zero else f"equivalent to 0 within +-{margin:.2f}"
        if e.tost.equivalent and r_null and g_null:
            if at_equal:
                return "behaviour change", at_equal_text
            return "no effect", equivalent + f"; behaviour part {r_word}, grader part {g_word}" + _small(e, r)
        if r_at.established() and g_at.established():
            return "mixed", ("both the behaviour part (the fixed ruler) and the grader part are established "
                             f"({_level(r_at)}, {_level(g_at)})")
        if r_at.established() and g_null:
            return "behaviour change", (f"the fixed ruler moved {r.text()} ({_level(r_at)}) and the grader part "
                                        f"is {g_word}")
        if g_at.established() and r_null:
            return "measurement artifact", (f"the grader part {g.text()} is established ({_level(g_at)}) and the "
                                            f"fixed ruler is {r_word}")
        def state(name: str, part: Part, judged: Part, null: bool, word: str) -> str:
            shown = "established" if judged.established() else "not established"
            return (f"{name} {part.text()} {shown} ({_level(judged)}) and "
                    f"{word if null else f'not equivalent to 0 within +-{margin:.2f}'}")

        parts = (f"{state('behaviour part', r, r_at, r_null, r_word)}; "
                 f"{state('grader part', g, g_at, g_null, g_word)}")
    else:
        if e.moved and at_equal:
            return "behaviour change", (f"behaviour changes beyond identical-rerun variation ({excess_text}); "
                                        "without a regrade the grader's share is not measured")
        parts = ("no task has identical reruns in both arms, so behaviour cannot be told from run-to-run variation"
                 if not b.reference else "behaviour changes no more than between identical reruns")
    if e.tost.equivalent:
        return ("behaviour change", at_equal_text) if at_equal else ("no effect", equivalent + _small(e, None))
    if e.moved:
        return "inconclusive", f"the score moved but cannot be attributed: {parts}"
    return "indistinguishable from noise", ""


def _level(part: Part) -> str:
    """The sign-flip p of a judged part next to the level it was judged at (and why it cannot
    reach that level, when its few non-zero tasks cannot)."""
    alpha = 1 - part.confidence
    text = f"sign-flip p={part.p_value:.3g}, Holm level {alpha:.3g}"
    if part.n and not part.can_reject(alpha):
        text += f"; its {sum(v != 0 for v in part.values)} non-zero tasks cannot reach it"
    return text


def _small(e: Effect, r: Part | None) -> str:
    """Say so when an interval excludes 0 inside the margin: a shift smaller than the margin."""
    notes = [f"{name} CI excludes 0: a shift smaller than the margin" for name, part in
             (("the score's", e.part), ("the fixed ruler's", r)) if part is not None and part.established()]
    return ("; " + "; ".join(notes)) if notes else ""


def attribute(pairs: Pairs, grader: str, *, agent: str | None = None, baseline: str = "identity",
              regrade_grader: str | None = None, noise: dict[str, tuple[int, int]] | None = None,
              treatment_noise: dict[str, tuple[int, int]] | None = None, margin: float = 0.10,
              confidence: float = 0.95, positive_control: bool = False, min_tasks: int = MIN_TASKS,
              seed: int = 0) -> Attribution:
    """Attribute the treatment effect of ``grader`` on the ``pairs`` of one agent (see the module
    docstring for the rules). ``pairs`` come from ``pair_records`` and may hold several agents:
    ``agent`` picks one (its left-out records too). Rerun behaviour of each arm comes from the
    pairs' own records unless ``noise`` (baseline) or ``treatment_noise`` gives it
    ({task: (changed, rerun pairs)}, see ``trace.rerun_behaviour``)."""
    mine = Pairs([p for p in pairs if agent is None or p.agent_id == agent], left_out=pairs.left_out,
                 duplicates=pairs.duplicates)
    base, treat = arm_reruns([p.baseline for p in mine], grader), arm_reruns([p.treatment for p in mine], grader)
    for given, arm in ((noise, "base"), (treatment_noise, "treat")):
        if given is not None:
            counts = dict(sorted(given.items()))
            changed = sum(c for c, _ in counts.values())
            base, treat = ((replace(base, behaviour=counts, changed=changed), treat) if arm == "base"
                           else (base, replace(treat, behaviour=counts, changed=changed)))
    units = pair_units(mine, grader, regrade_grader)
    observed = evidence(units, base, treat, grader=grader, regrade=regrade_grader, margin=margin,
                        confidence=confidence, seed=seed)
    notes = ""
    if regrade_grader and observed.regraded is None:
        regrade_grader, notes = None, "; no regrade grades found"
        units = pair_units(mine, grader, None)
    left = [r for r in pairs.left_out if agent is None or r.agent.id == agent]
    effect = observed.effect
    missing = Missing(effect.ungraded, sum(r.termination == "infra_error" for r in left),
                      sum(r.termination != "infra_error" for r in left), pairs.duplicates,
                      observed.regraded.ungraded if observed.regraded else 0)
    consistent = not (base.score_disagreements or treat.score_disagreements)
    label, holds = _label(units, mine, base, treat, observed, grader, regrade_grader, agent, baseline, margin,
                          confidence, positive_control, min_tasks, consistent, seed)
    regrade = None
    if regrade_grader and observed.regraded is not None and observed.grader_part is not None:
        regrade = RegradeEffect(effect, observed.regraded, observed.grader_part,
                                regrade_flips(mine, grader, regrade_grader))
        notes = (f"; grader part {observed.grader_part.text()}, behaviour part (regrade {regrade_grader}) "
                 f"{observed.regraded.part.text()}")
    if not consistent:
        notes += (f"; the grader scores identical reruns differently in {base.score_disagreements + treat.score_disagreements}"
                  f" of {base.identical_scored + treat.identical_scored} rerun pairs with identical behaviour")
    sentence = (f"delta {effect.delta:+.3f} ({confidence:.0%} CI {effect.ci_low:+.3f} to {effect.ci_high:+.3f}, "
                f"n={effect.n} tasks ({effect.n_pairs} pairs), sign-flip p={effect.p_value:.3g}, "
                f"McNemar p={effect.mcnemar_p:.3g} on task majority, TOST p={effect.tost.p_value:.3g}, "
                f"margin {margin:.2f}); {observed.behaviour.text()}; {observed.flips.text()}; {missing.text()}"
                + notes + (f"; {holds}" if holds else ""))
    return Attribution(effect, regrade, observed.behaviour, missing, Verdict(label, sentence, holds), positive_control,
                       observed.flips)


def _label(units: list[Unit], pairs: Pairs, base: ArmReruns, treat: ArmReruns, observed: Evidence, grader: str,
           regrade: str | None, agent: str | None, baseline: str, margin: float, confidence: float,
           positive_control: bool, min_tasks: int, consistent: bool, seed: int) -> tuple[str, str]:
    """Rules 1 and 2 here, the rest in ``decide``, on the observed units and on every filling."""
    effect = observed.effect
    if effect.n < min_tasks:
        return "insufficient data", f"fewer than {min_tasks} tasks"
    label, holds = decide(observed, margin=margin, positive_control=positive_control, grader_consistent=consistent)
    gaps = holes(units, pairs, grader, regrade, agent, baseline)
    if gaps:
        whole = [u for u in units if u not in gaps]
        values = [v for u in units for v in (u.base, u.treat, u.base_regrade, u.treat_regrade) if v is not None]
        low, high = min([0.0, *values]), max([1.0, *values])
        for how in fillings(regrade is not None):
            filled = whole + [fill(u, how, low, high) for u in gaps]
            ev = evidence(filled, base, treat, grader=grader, regrade=regrade, margin=margin,
                          confidence=confidence, seed=seed)
            other, _ = decide(ev, margin=margin, positive_control=positive_control, grader_consistent=consistent)
            if other != label:
                return "withheld", (f"{len(gaps)} incomplete pairs filled as the {how.text()} give delta "
                                    f"{ev.effect.delta:+.3f} and the label {other!r}: {label!r} could change")
    if label == "indistinguishable from noise" and effect.part.constant and effect.n:
        m = abs(effect.delta)
        if m < margin:  # how many equal tasks the distribution-free TOST would need
            needed = math.ceil(math.log(1 - confidence) / math.log(1 - (margin - m) / (1 + m)))
            holds = (f"every task has the same delta, and {effect.n} equal tasks cannot bound an effect within "
                     f"{margin:.2f} without assumptions ({needed} can)")
    return label, holds
