"""The TRACE verdict: why did a score change, judged from intervals over tasks.

``attribute`` takes one agent's pairs of a baseline and a treatment and returns an
``Attribution``: the task-level effect, the regrade with the change split into a grader part
and a behaviour part (each with its CI), the behaviour-change rate against identical reruns of
the baseline arm, what the grader did where the agent did exactly the same, what was missing,
and the ``Verdict``. "Established" = the bootstrap CI over tasks excludes 0 and the exact
sign-flip test rejects 0 at the same level (a constant sample: the sign-flip test alone);
"equivalent" = TOST within the margin; "exactly 0" = every task's value is 0. The parts that can
attribute a verdict (the behaviour part, the grader part and the behaviour-level excess) are one
family: each is established at its Holm level (``trace_effects.holm``; a part that cannot reach
p < 0.05, such as one exactly 0, is not counted), so a verdict without any true part attributes
at most 5% of the time, not 5% per part. The rules, first match wins:

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
5. With a regrade (the fixed ruler), or without one the *implicit regrade* (pairs whose actions
   and end state are identical: a score change there is the ruler's; ``implicit_regrade``; only
   when at least ``min_tasks`` tasks have such a pair): behaviour part = regrade delta, grader
   part = original minus regrade delta per task. The delta equivalent and both parts null
   (exactly 0 or equivalent): ``no effect``. Otherwise one rule for both parts, each either
   established at its Holm level or not: behaviour shown (the behaviour part, or the excess
   above the baseline's reruns) and grader part established: ``mixed``; behaviour only:
   ``behaviour change``; grader part only: ``measurement artifact`` (the behaviour part's CI is
   printed with "behaviour not shown to change"). The cost: a true mixed case whose behaviour
   part is too small to establish reads as an artifact.
6. Without either regrade: a moved delta is ``behaviour change`` when behaviour changes beyond
   identical reruns (the behaviour-level test: per task, paired disagreement minus the baseline
   arm's rerun disagreement, established above 0; tasks without baseline reruns left out; no such
   task, or reruns that may share a seed (``BehaviourRate.shared_seed``): not tested).
7. An equivalent delta is ``no effect``, or ``behaviour change`` at equal score when the
   behaviour-level test is established; a moved delta with no attribution is ``inconclusive``;
   else ``indistinguishable from noise``.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field, replace
from typing import Sequence

import numpy as np

from rsigym.report.stats import TostResult, tost_paired

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
    implicit: str = ""  # without a regrade: whether identical-behaviour pairs served as one, and why not

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


IMPLICIT = "identical-behaviour pairs"  # the regrade name of the implicit regrade


def implicit_regrade(units: Sequence[Unit]) -> tuple[dict[str, float], list[tuple[str, float, float]]]:
    """The regrade the records already hold: on a pair whose behaviour (actions and end state) is
    identical, every score change is the ruler's. Returns (per task with such pairs, the mean
    treatment - baseline score over them: the ruler's shift there; the scored pairs with the
    treatment score less that shift, the task's own or, for a task without identical pairs, the
    mean over the tasks that have them). Identical pairs are a selected sample (concordant
    outcomes): where the ruler acts on some outcomes only (it fails passing runs), their shift
    overstates the ruler's share in the changed pairs of that task."""
    same: dict[str, list[float]] = defaultdict(list)
    for u in units:
        if not u.changed and u.base is not None and u.treat is not None:
            same[u.task_id].append(u.treat - u.base)
    shift = {t: float(np.mean(v)) for t, v in sorted(same.items())}
    pooled = float(np.mean(list(shift.values()))) if shift else 0.0
    regraded = [(u.task_id, u.base, u.treat - shift.get(u.task_id, pooled)) for u in units
                if u.base is not None and u.treat is not None]
    return shift, regraded


def evidence(units: Sequence[Unit], base: ArmReruns, treat: ArmReruns, *, grader: str, regrade: str | None,
             margin: float = 0.10, confidence: float = 0.95, seed: int = 0, min_tasks: int = MIN_TASKS) -> Evidence:
    """The effect, regrade parts, behaviour rate and grader flips of ``units``. Without a
    ``regrade`` the identical-behaviour pairs are the regrade (``implicit_regrade``) when at least
    ``min_tasks`` tasks have one; with fewer there are no parts."""
    scored = [(u.task_id, u.base, u.treat) for u in units if u.base is not None and u.treat is not None]
    effect = task_effect(grader, scored, ungraded=len(units) - len(scored), margin=margin,
                         confidence=confidence, seed=seed)
    regraded = part = tost = None
    implicit = ""
    spread = [v for _, x, y in scored for v in (x, y)]
    if regrade:
        new = [(u.task_id, u.base_regrade, u.treat_regrade) for u in units
               if u.base_regrade is not None and u.treat_regrade is not None]
        if new:
            regraded = task_effect(regrade, new, ungraded=len(units) - len(new), margin=margin,
                                   confidence=confidence, seed=seed)
            by_task = {t.task_id: t.delta for t in regraded.per_task}
            values = [t.delta - by_task[t.task_id] for t in effect.per_task if t.task_id in by_task]
            spread += [v for _, x, y in new for v in (x, y)]
    else:
        shift, new_scored = implicit_regrade(units)
        if len(shift) >= min_tasks:
            regraded = task_effect(IMPLICIT, new_scored, ungraded=len(units) - len(new_scored), margin=margin,
                                   confidence=confidence, seed=seed)
            values = list(shift.values())  # the ruler's part where the data show it, not imputed
        implicit = (f"no regrade: the {len(shift)} tasks with identical-behaviour pairs are the regrade "
                    "(a score change there is the ruler's; other tasks take their mean shift)"
                    if regraded is not None else
                    f"no regrade, and only {len(shift)} tasks have identical-behaviour pairs (fewer than "
                    f"{min_tasks}): no implicit regrade")
    if regraded is not None:
        part = task_part("grader part", values, confidence, seed)
        bound = 2 * max(1.0, max(spread) - min(spread)) if spread else 2.0  # a grader part spans two score ranges
        tost = tost_paired(values, margin, alpha=1 - confidence, bound=bound)
    behaviour = behaviour_rate(units, base.behaviour, treat.behaviour, reruns_changed=bool(base.changed or treat.changed),
                               confidence=confidence, seed=seed)
    tested = {"behaviour excess": behaviour.excess} if behaviour.reference and not behaviour.shared_seed else {}
    if regraded is not None and part is not None:
        tested.update({"behaviour part": regraded.part, "grader part": part})
    return Evidence(effect, regraded, part, tost, behaviour, grader_flips(units, confidence),
                    holm(tested, confidence, seed), implicit)


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
    ruler = ("the fixed ruler" if ev.regraded is None or ev.regraded.grader != IMPLICIT
             else "the implicit regrade (identical-behaviour pairs)")
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
        # one rule for both parts: each is established at its Holm level, or it is not. Where the
        # identical pairs show the ruler moving, they are a selected sample (concordant outcomes), so
        # the implicit regrade's behaviour part is no evidence: only the behaviour-level test is.
        biased = ev.regraded.grader == IMPLICIT and g_at.established()
        by_part = r_at.established() and not biased
        behaviour_shown = by_part or at_equal
        via = (f"the behaviour part {r.text()} via {ruler} ({_level(r_at)})" if by_part
               else f"behaviour beyond identical-rerun variation ({excess_text})")
        if behaviour_shown and g_at.established():
            return "mixed", (f"both {via} and the grader part {g.text()} ({_level(g_at)}) are established")
        if behaviour_shown:
            return "behaviour change", (f"{via} is established and the grader part {g.text()} is not "
                                        f"({_level(g_at)}{'; ' + g_word if g_null else ''})")
        if g_at.established():
            note = f"; {r_word}" if r_null else ""
            shown = ("is not used: the ruler moved on the identical pairs, which hold concordant outcomes only"
                     if biased else f"is not ({_level(r_at)}{note}")
            return "measurement artifact", (f"the grader part {g.text()} is established ({_level(g_at)}) via {ruler}; "
                                            f"the behaviour part {r.text()} (95% CI) {shown}"
                                            + (f"; {excess_text}" if excess is not None else "")
                                            + "): behaviour not shown to change")

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
        if b.shared_seed:
            parts = "the reruns may share a seed, so behaviour cannot be told from run-to-run variation"
        elif not b.reference:
            parts = "no task has identical baseline reruns, so behaviour cannot be told from run-to-run variation"
        else:
            parts = "behaviour changes no more than between identical baseline reruns"
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
                        confidence=confidence, seed=seed, min_tasks=min_tasks)
    notes = ""
    if regrade_grader and observed.regraded is None:
        regrade_grader, notes = None, "; no regrade grades found"
        units = pair_units(mine, grader, None)
        observed = evidence(units, base, treat, grader=grader, regrade=None, margin=margin,
                            confidence=confidence, seed=seed, min_tasks=min_tasks)
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
    elif observed.regraded is not None and observed.grader_part is not None:
        regrade = RegradeEffect(effect, observed.regraded, observed.grader_part)
        notes += (f"; {observed.implicit}: grader part {observed.grader_part.text()} over those tasks, behaviour "
                  f"part {observed.regraded.part.text()}")
    elif observed.implicit:
        notes += f"; {observed.implicit}"
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
                          confidence=confidence, seed=seed, min_tasks=min_tasks)
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
