"""TRACE: did a score change because the agent behaved differently, or because the ruler changed?

Records of a baseline and a treatment condition are paired on everything else (env, task,
agent, seed, rep). Per pair the behaviour diff compares actions (tool names mapped back through
the condition's rename mapping) and the final database; the paired effect gives the score delta
with a bootstrap CI, exact McNemar and TOST equivalence; a regrade with a fixed ruler
completes the picture, and ``verdict`` names the attribution. Rerun noise lives in ``reruns``,
the ``trace`` report section in ``trace_report``; everything reads records only.
"""

from __future__ import annotations

import math
import re
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from typing import Any, Iterable, Sequence

import numpy as np

from rsigym.records import Trajectory, canonical_json
from rsigym.report import condition_label

from rsigym.stats import TostResult, mcnemar_exact, paired_bootstrap_ci, tost_paired

__all__ = [
    "BASELINE_NAMES", "Pair", "Pairs", "BehaviourDiff", "TaskDelta", "Effect", "RegradeEffect",
    "Verdict", "VERDICT_LABELS", "pair_records", "behaviour_diff", "paired_effect",
    "regrade_effect", "verdict", "matches_condition", "record_score",
]

BASELINE_NAMES = frozenset({"identity", "none"})  # both mean the unmodified env
VERDICT_LABELS = ("no effect", "behaviour change", "measurement artifact",
                  "indistinguishable from noise", "detected", "not detected")
PASS_THRESHOLD = 0.5  # scores are binarised here for McNemar and flip tables


def matches_condition(condition: dict[str, Any] | None, wanted: str) -> bool:
    """Whether a record's condition is ``wanted``, by name or by full ``condition_label``.

    ``None``, ``{"name": "identity"}`` and ``{"name": "none"}`` are all the unmodified env, and
    match either of the names "identity" and "none".
    """
    name = "identity" if condition is None or condition["name"] in BASELINE_NAMES else condition["name"]
    want = "identity" if wanted in BASELINE_NAMES else wanted
    return name == want or condition_label(condition) == wanted


def record_score(record: Trajectory, grader: str, source: str | None = None) -> float | None:
    """Latest score of ``grader`` (of that ``source`` if given), else None.

    The name "reward" falls back to the episode's total env reward when no grade has that name,
    so the default analyses work on records graded by the env alone.
    """
    for grade in reversed(record.grades):
        if grade.grader == grader and (source is None or grade.source == source):
            return None if grade.score is None else float(grade.score)
    if grader == "reward" and source is None:
        return record.total_reward
    return None


@dataclass(frozen=True)
class Pair:
    baseline: Trajectory
    treatment: Trajectory

    @property
    def task_id(self) -> str:
        return str(self.baseline.env.task_id)

    @property
    def agent_id(self) -> str:
        return self.baseline.agent.id


class Pairs(list[Pair]):
    """The pairs, plus what pairing left out: infra-error records and records with no partner."""

    def __init__(self, pairs: Iterable[Pair] = (), *, infra_excluded: int = 0, unpaired: int = 0,
                 duplicates: int = 0):
        super().__init__(pairs)
        self.infra_excluded = infra_excluded
        self.unpaired = unpaired
        self.duplicates = duplicates  # records left out: same episode key as one already paired


def _join_key(record: Trajectory) -> str:
    env = record.env
    return canonical_json([env.id, env.kwargs, env.task_id, asdict(record.agent), record.seed, record.rep])


def pair_records(records: Sequence[Trajectory], baseline: str, treatment: str) -> Pairs:
    """Join baseline and treatment records on (env id, env kwargs, task, agent spec, seed, rep).

    Conditions match by name or label (see ``matches_condition``). Records that ended in
    ``infra_error`` are left out (a broken sandbox says nothing about the agent) and counted in
    ``infra_excluded``; records whose partner is missing are counted in ``unpaired``. A record
    that repeats the episode key of one already on its side (the same episode twice in a file)
    is left out and counted in ``duplicates``. Two records with the same join key but different
    episodes on one side (a condition name that covers two parameter settings) is a ValueError:
    name the condition by its full label instead.
    """
    sides: dict[str, dict[str, Trajectory]] = {"baseline": {}, "treatment": {}}
    infra = duplicates = 0
    for record in records:
        for side, wanted in (("baseline", baseline), ("treatment", treatment)):
            if not matches_condition(record.env.condition, wanted):
                continue
            if record.termination == "infra_error":
                infra += 1
                continue
            key = _join_key(record)
            if key in sides[side] and sides[side][key].episode_key == record.episode_key:
                duplicates += 1  # the first copy is paired
                continue
            if key in sides[side]:
                raise ValueError(f"two {side} records match {wanted!r} for task "
                                 f"{record.env.task_id!r}, agent {record.agent.id!r}, seed "
                                 f"{record.seed}, rep {record.rep}; name the condition by its full label")
            sides[side][key] = record
    base, treat = sides["baseline"], sides["treatment"]
    pairs = [Pair(base[k], treat[k]) for k in base if k in treat]
    return Pairs(pairs, infra_excluded=infra, unpaired=len(base) + len(treat) - 2 * len(pairs),
                 duplicates=duplicates)


@dataclass(frozen=True)
class BehaviourDiff:
    actions_changed: bool
    observations_changed: bool
    final_state_changed: bool
    changed: bool  # actions or final state; observations are reported only
    detail: str


def _reverse_names(text: str, reverse: dict[str, str]) -> str:
    if not reverse:
        return text
    # One pass, longest name first, whole identifiers only: a swap mapping (a->b, b->a) or a
    # name that prefixes another (get_order, get_order_status) maps back correctly.
    pattern = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, sorted(reverse, key=len, reverse=True)))
                         + r")(?![\w])")
    return pattern.sub(lambda m: reverse[m.group(1)], text)


def _unmap_action(action: Any, reverse: dict[str, str]) -> Any:
    if isinstance(action, dict) and isinstance(action.get("tool"), str):
        return {**action, "tool": reverse.get(action["tool"], action["tool"])}
    return action


def _state_hash(record: Trajectory) -> tuple[str, str | None]:
    """(which hash, value): ``db_sha256`` inside the state when present, else the snapshot hash."""
    final = record.final
    if final is None:
        return "none", None
    if isinstance(final.state, dict) and "db_sha256" in final.state:
        return "db_sha256", str(final.state["db_sha256"])
    return "sha256", final.sha256


def _mapping_of(record: Trajectory) -> dict[str, str]:
    """{original: renamed} of a record: the condition's ``params["mapping"]``, else the
    ``tool_names`` the env put in its snapshot (a rename condition may use a default mapping)."""
    params = (record.env.condition or {}).get("params") or {}
    if params.get("mapping"):
        return dict(params["mapping"])
    state = record.final.state if record.final else None
    if isinstance(state, dict) and isinstance(state.get("tool_names"), dict):
        return {k: v for k, v in state["tool_names"].items() if k != v}
    return {}


def behaviour_diff(pair: Pair, name_mapping: dict[str, str] | None = None) -> BehaviourDiff:
    """Compare what the agent did under baseline and treatment.

    Actions are compared after mapping tool names back to the originals: treatment names through
    ``name_mapping`` ({original: renamed}; by default the treatment condition's
    ``params["mapping"]``, else the snapshot's ``tool_names``), baseline names through its own
    (none for the unmodified env). The final state is compared by ``db_sha256`` inside the
    snapshot when both have it, since the rest of a snapshot may legitimately record the
    condition; else by the snapshot hash. Observations are compared as canonical JSON with
    renamed names replaced by the originals, and reported, but do not decide ``changed``: tool
    listings and env messages quote the renamed names, and a condition may change what the env
    says without the agent doing anything differently.
    """
    if name_mapping is None:
        name_mapping = _mapping_of(pair.treatment)
    reverse = {renamed: original for original, renamed in name_mapping.items()}
    base_reverse = {renamed: original for original, renamed in _mapping_of(pair.baseline).items()}
    base_actions = [canonical_json(_unmap_action(s.action, base_reverse)) for s in pair.baseline.steps]
    treat_actions = [canonical_json(_unmap_action(s.action, reverse)) for s in pair.treatment.steps]
    base_obs = [_reverse_names(canonical_json(s.observation), base_reverse) for s in pair.baseline.steps]
    treat_obs = [_reverse_names(canonical_json(s.observation), reverse) for s in pair.treatment.steps]
    state_key, base_state = _state_hash(pair.baseline)
    _, treat_state = _state_hash(pair.treatment)

    notes = []
    actions_changed = base_actions != treat_actions
    if actions_changed:
        first = next((i for i, (a, b) in enumerate(zip(base_actions, treat_actions)) if a != b),
                     min(len(base_actions), len(treat_actions)))
        notes.append(f"actions differ from step {first} ({len(base_actions)} vs {len(treat_actions)} steps)")
    final_changed = base_state != treat_state
    if final_changed:
        notes.append(f"final state differs ({state_key})")
    observations_changed = base_obs != treat_obs
    if observations_changed:
        notes.append("observations differ")
    return BehaviourDiff(actions_changed, observations_changed, final_changed,
                         actions_changed or final_changed, "; ".join(notes) or "identical")


@dataclass(frozen=True)
class TaskDelta:
    task_id: str
    n: int
    mean_baseline: float
    mean_treatment: float
    delta: float


@dataclass(frozen=True)
class Effect:
    """Paired effect of a treatment on one grader's score. ``delta`` = treatment - baseline."""

    grader: str
    n: int
    mean_baseline: float
    mean_treatment: float
    delta: float
    ci_low: float
    ci_high: float
    mcnemar_p: float
    b: int  # pairs passing under baseline, failing under treatment (score >= 0.5 passes)
    c: int  # pairs failing under baseline, passing under treatment
    tost: TostResult
    confidence: float = 0.95
    ungraded: int = 0  # pairs left out because a side lacks the grade or its grader failed
    deltas: tuple[float, ...] = ()
    per_task: tuple[TaskDelta, ...] = ()


def _effect(grader: str, scored: list[tuple[str, float, float]], ungraded: int, margin: float,
            confidence: float, seed: int) -> Effect:
    base = np.array([s[1] for s in scored], dtype=float)
    treat = np.array([s[2] for s in scored], dtype=float)
    deltas = treat - base
    low, high = paired_bootstrap_ci(deltas.tolist(), confidence=confidence, seed=seed)
    b = int(np.sum((base >= PASS_THRESHOLD) & (treat < PASS_THRESHOLD)))
    c = int(np.sum((base < PASS_THRESHOLD) & (treat >= PASS_THRESHOLD)))
    by_task: dict[str, list[tuple[float, float]]] = defaultdict(list)
    for task, x, y in scored:
        by_task[task].append((x, y))
    per_task = tuple(
        TaskDelta(t, len(v), float(np.mean([x for x, _ in v])), float(np.mean([y for _, y in v])),
                  float(np.mean([y - x for x, y in v])))
        for t, v in sorted(by_task.items()))
    mean = (lambda a: float(a.mean()) if a.size else math.nan)
    return Effect(grader, len(scored), mean(base), mean(treat), mean(deltas), low, high,
                  mcnemar_exact(b, c), b, c, tost_paired(deltas.tolist(), margin), confidence, ungraded,
                  tuple(deltas.tolist()), per_task)


def paired_effect(pairs: Sequence[Pair], grader: str, *, margin: float = 0.10,
                  confidence: float = 0.95, seed: int = 0) -> Effect:
    """Mean paired delta of ``grader`` (latest grade of each record), CI, McNemar, TOST."""
    scored, ungraded = [], 0
    for pair in pairs:
        x, y = record_score(pair.baseline, grader), record_score(pair.treatment, grader)
        if x is None or y is None:
            ungraded += 1
        else:
            scored.append((pair.task_id, x, y))
    return _effect(grader, scored, ungraded, margin, confidence, seed)


@dataclass(frozen=True)
class RegradeEffect:
    """The treatment effect under the regrade ruler, and how the regrade moved each record."""

    original: Effect
    regraded: Effect
    flips: dict[str, dict[str, int]] = field(default_factory=dict)  # side -> "pass->fail" -> count

    @property
    def delta(self) -> float:
        return self.regraded.delta


def _pass_word(score: float) -> str:
    return "pass" if score >= PASS_THRESHOLD else "fail"


def regrade_effect(pairs: Sequence[Pair], original_grader: str, regrade_grader: str, *,
                   margin: float = 0.10, confidence: float = 0.95, seed: int = 0) -> RegradeEffect:
    """Paired effect under ``regrade_grader`` next to ``original_grader``, with a flip table.

    Reads grades already in the records (``rsigym.graders.regrade`` or live grading writes
    them). When both names are the same, the original is the latest live grade and the regrade
    the latest ``source="regrade"`` grade. ``flips[side]["pass->fail"]`` counts records of that
    side (baseline, treatment) passing under the original and failing under the regrade.
    """
    same = original_grader == regrade_grader
    src_old, src_new = ("live", "regrade") if same else (None, None)
    flips: dict[str, dict[str, int]] = {
        side: {f"{a}->{b}": 0 for a in ("pass", "fail") for b in ("pass", "fail")}
        for side in ("baseline", "treatment")}
    old, new, ungraded_old, ungraded_new = [], [], 0, 0
    for pair in pairs:
        scores = {}
        for side, record in (("baseline", pair.baseline), ("treatment", pair.treatment)):
            before = record_score(record, original_grader, src_old)
            after = record_score(record, regrade_grader, src_new)
            scores[side] = (before, after)
            if before is not None and after is not None:
                flips[side][f"{_pass_word(before)}->{_pass_word(after)}"] += 1
        (b0, b1), (t0, t1) = scores["baseline"], scores["treatment"]
        if b0 is None or t0 is None:
            ungraded_old += 1
        else:
            old.append((pair.task_id, b0, t0))
        if b1 is None or t1 is None:
            ungraded_new += 1
        else:
            new.append((pair.task_id, b1, t1))
    return RegradeEffect(_effect(original_grader, old, ungraded_old, margin, confidence, seed),
                         _effect(regrade_grader, new, ungraded_new, margin, confidence, seed), flips)


@dataclass(frozen=True)
class Verdict:
    label: str
    sentence: str


def verdict(effect: Effect, diffs: Sequence[BehaviourDiff], regrade: RegradeEffect | None = None,
            margin: float = 0.10, positive_control: bool = False) -> Verdict:
    """Name the attribution of one treatment effect; the sentence carries its numbers.

    Rules, first match wins ("moved" = the CI of the delta excludes 0):

    - positive control: ``detected`` when the CI lies entirely beyond +-margin, or
      ``|delta| > margin`` and McNemar p < 0.05 (binary scores with a wide bootstrap CI);
      else ``not detected``.
    - ``no effect``: TOST-equivalent within the margin. Behaviour may still differ (an agent
      can take another, equally good path); the sentence reports the share.
    - ``measurement artifact``: moved, and the regrade delta is within the margin
      (``|delta| <= margin``), or, with no regrade, behaviour unchanged in every pair.
    - ``behaviour change``: moved, and behaviour changed in some pair, or the regrade still sees
      the delta (the trajectories differ in something the grader reads).
    - ``indistinguishable from noise``: not equivalent and not moved.
    """
    share = float(np.mean([d.changed for d in diffs])) if diffs else math.nan
    sentence = (f"delta {effect.delta:+.3f} ({effect.confidence:.0%} CI {effect.ci_low:+.3f} to "
                f"{effect.ci_high:+.3f}, n={effect.n}, McNemar p={effect.mcnemar_p:.3g}, "
                f"TOST p={effect.tost.p_value:.3g}, margin {margin:.2f}); "
                f"behaviour changed in {share:.0%} of pairs")
    if regrade is not None and regrade.regraded.n == 0:
        regrade = None  # no record carries the regrade grader: judge as if none was asked for
        sentence += "; no regrade grades found"
    elif regrade is not None:
        sentence += f"; regrade delta {regrade.delta:+.3f} ({regrade.regraded.grader})"
    if effect.n == 0:
        return Verdict("not detected" if positive_control else "indistinguishable from noise",
                       "no scored pairs")
    if positive_control:
        beyond = effect.ci_low > margin or effect.ci_high < -margin
        detected = beyond or (abs(effect.delta) > margin and effect.mcnemar_p < 0.05)
        return Verdict("detected" if detected else "not detected", sentence)
    moved = effect.ci_low > 0 or effect.ci_high < 0
    if effect.tost.equivalent:
        label = "no effect"
    elif not moved:
        label = "indistinguishable from noise"
    elif regrade is not None:
        label = "measurement artifact" if abs(regrade.delta) <= margin else "behaviour change"
    else:
        label = "behaviour change" if share > 0 else "measurement artifact"
    return Verdict(label, sentence)
