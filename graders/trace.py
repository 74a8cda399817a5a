"""TRACE: did a score change because the agent behaved differently, or because the ruler changed?

Records of a baseline and a treatment condition are paired on everything else (env, task,
agent, seed, rep). Per pair the behaviour diff compares actions (tool names mapped back through
the condition's rename mapping) and the final database; ``rerun_behaviour`` applies the same
diff to identical reruns, the noise reference for behaviour. Task-level effects live in
``trace_effects``, the verdict in ``trace_verdict``, rerun noise in ``reruns``, the ``trace``
report section in ``trace_report``; everything reads records only.
"""

from __future__ import annotations

import re
from collections import defaultdict
from dataclasses import asdict, dataclass
from itertools import combinations
from typing import Any, Iterable, Sequence

from rsigym.records import Trajectory, canonical_json
from rsigym.report import condition_label

__all__ = [
    "BASELINE_NAMES", "PASS_THRESHOLD", "Pair", "Pairs", "BehaviourDiff", "pair_records",
    "behaviour_diff", "rerun_behaviour", "rerun_groups", "matches_condition", "record_score", "join_key",
]

BASELINE_NAMES = frozenset({"identity", "none"})  # both mean the unmodified env
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
    """The pairs, plus what pairing left out: infra-error records and records with no partner
    (both kept in ``left_out``, so an analysis can ask what they could have said), and records
    seen twice under one episode key (``duplicates``, counted once)."""

    def __init__(self, pairs: Iterable[Pair] = (), *, infra_excluded: int = 0, unpaired: int = 0,
                 duplicates: int = 0, left_out: Sequence[Trajectory] = ()):
        super().__init__(pairs)
        self.infra_excluded = infra_excluded
        self.unpaired = unpaired
        self.duplicates = duplicates
        self.left_out = list(left_out)


def join_key(record: Trajectory) -> str:
    """What a baseline and a treatment record share: env id, kwargs, task, agent, seed and rep."""
    env = record.env
    return canonical_json([env.id, env.kwargs, env.task_id, asdict(record.agent), record.seed, record.rep])


def pair_records(records: Sequence[Trajectory], baseline: str, treatment: str) -> Pairs:
    """Join baseline and treatment records on (env id, env kwargs, task, agent spec, seed, rep).

    Conditions match by name or label (see ``matches_condition``). Records that ended in
    ``infra_error`` are left out (a broken sandbox says nothing about the agent) and counted in
    ``infra_excluded``; records whose partner is missing are counted in ``unpaired``; both are
    kept in ``left_out``. A record whose episode key was already seen (the same episode written
    twice) is counted in ``duplicates`` and the first copy kept. Two different records with the
    same join key on one side (a condition name that covers two parameter settings) is a
    ValueError: name the condition by its full label instead.
    """
    sides: dict[str, dict[str, Trajectory]] = {"baseline": {}, "treatment": {}}
    infra: list[Trajectory] = []
    seen: set[str] = set()
    duplicates = 0
    for record in records:
        for side, wanted in (("baseline", baseline), ("treatment", treatment)):
            if not matches_condition(record.env.condition, wanted):
                continue
            if record.episode_key in seen:
                duplicates += 1
                continue
            seen.add(record.episode_key)
            if record.termination == "infra_error":
                infra.append(record)
                continue
            key = join_key(record)
            if key in sides[side]:
                raise ValueError(f"two {side} records match {wanted!r} for task "
                                 f"{record.env.task_id!r}, agent {record.agent.id!r}, seed "
                                 f"{record.seed}, rep {record.rep}; name the condition by its full label")
            sides[side][key] = record
    base, treat = sides["baseline"], sides["treatment"]
    pairs = [Pair(base[k], treat[k]) for k in base if k in treat]
    alone = [r for k, r in base.items() if k not in treat] + [r for k, r in treat.items() if k not in base]
    return Pairs(pairs, infra_excluded=len(infra), unpaired=len(alone), duplicates=duplicates,
                 left_out=infra + alone)


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


def rerun_groups(records: Sequence[Trajectory]) -> list[list[Trajectory]]:
    """Groups of identical reruns: records that differ only in ``rep`` (one record per rep, the
    first kept), in a stable order; infra-error records are left out, single runs too."""
    groups: dict[str, dict[int, Trajectory]] = defaultdict(dict)
    for record in records:
        if record.termination == "infra_error":
            continue
        env = record.env
        key = canonical_json([env.id, env.kwargs, env.task_id, env.condition, asdict(record.agent), record.seed])
        groups[key].setdefault(record.rep, record)
    return [[g[rep] for rep in sorted(g)] for _, g in sorted(groups.items()) if len(g) >= 2]


def rerun_behaviour(records: Sequence[Trajectory], condition: str, agent: str) -> dict[str, tuple[int, int]]:
    """Behaviour noise between identical reruns: per task, (changed rerun pairs, rerun pairs).

    Records of ``condition`` and agent id ``agent`` that differ only in ``rep`` are reruns of one
    configuration; every unordered pair of them is compared with ``behaviour_diff``. Infra-error
    records are left out. Tasks without two reruns do not appear.
    """
    mine = [r for r in records if r.agent.id == agent and matches_condition(r.env.condition, condition)]
    counts: dict[str, list[int]] = defaultdict(lambda: [0, 0])
    for group in rerun_groups(mine):
        for a, b in combinations(group, 2):
            tally = counts[str(a.env.task_id)]
            tally[0] += behaviour_diff(Pair(a, b)).changed
            tally[1] += 1
    return {task: (c, n) for task, (c, n) in sorted(counts.items())}
