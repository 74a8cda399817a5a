"""Pairs of episodes for the viewer: the same task, agent, seed and repetition under the unmodified
env and under another condition, with the steps where the agent acted differently.

A view, not a verdict: ``rsigym.graders.trace`` owns the TRACE analysis (with its controls). The
kernel may not import it, so the few lines that map renamed tool names back live here as well.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Any, Sequence

from ..records.tool_names import NO_SUCH_TOOL, renamed_away, renamed_to_original
from ..records.trajectory import Trajectory, canonical_json
from ..report.report import condition_label

__all__ = ["paired_episodes", "renamed_to_original", "renamed_away", "NO_SUCH_TOOL", "BASELINE_NAMES"]

BASELINE_NAMES = frozenset({"identity", "none"})  # both mean the unmodified env


def _is_baseline(record: Trajectory) -> bool:
    condition = record.env.condition
    return condition is None or condition.get("name") in BASELINE_NAMES


def _join_key(record: Trajectory) -> str:
    env = record.env
    return canonical_json([env.id, env.kwargs, env.task_id, asdict(record.agent), record.seed, record.rep])


def _actions(record: Trajectory) -> list[Any]:
    """Each step's action with renamed tool names mapped back to the originals."""
    reverse, gone = renamed_to_original(record), renamed_away(record)
    out = []
    for step in record.steps:
        action = step.action
        if isinstance(action, dict) and isinstance(action.get("tool"), str):
            tool = action["tool"]
            action = {**action, "tool": f"{NO_SUCH_TOOL} {tool}" if tool in gone else reverse.get(tool, tool)}
        out.append(action)
    return out


def _difference(base: Any, treat: Any) -> str | None:
    """What differs between two mapped-back actions: None, or tool, arguments, message, action."""
    if canonical_json(base) == canonical_json(treat):
        return None
    if isinstance(base, dict) and isinstance(treat, dict):
        if "tool" in base and "tool" in treat:
            return "tool" if base["tool"] != treat["tool"] else "arguments"
        if "message" in base and "message" in treat and len(base) == len(treat) == 1:
            return "message"
    return "action"


def _state(record: Trajectory) -> str | None:
    if record.final is None:
        return None
    state = record.final.state
    if isinstance(state, dict) and "db_sha256" in state:
        return str(state["db_sha256"])
    return record.final.sha256


def paired_episodes(records: Sequence[Trajectory]) -> list[dict[str, Any]]:
    """Every (baseline, treatment) pair of record indices, with the step indices whose actions
    differ (tool names mapped back to the originals), what differs at each (``diff_kinds``: tool,
    arguments, message, action, or missing where one side has no such step) and whether the end
    state differs. A step where only the name the agent saw differs is no difference."""
    baselines: dict[str, int] = {}
    treatments: dict[str, list[int]] = defaultdict(list)
    for index, record in enumerate(records):
        if record.termination == "infra_error":
            continue
        if _is_baseline(record):
            baselines.setdefault(_join_key(record), index)
        else:
            treatments[_join_key(record)].append(index)
    pairs = []
    for key, base_index in baselines.items():
        base = records[base_index]
        base_actions = _actions(base)
        for treat_index in treatments.get(key, []):
            treat = records[treat_index]
            treat_actions = _actions(treat)
            kinds: dict[int, str] = {}
            for t in range(max(len(base_actions), len(treat_actions))):
                if t >= len(base_actions) or t >= len(treat_actions):
                    kinds[t] = "missing"
                elif (kind := _difference(base_actions[t], treat_actions[t])) is not None:
                    kinds[t] = kind
            differing = sorted(kinds)
            state_changed = _state(base) != _state(treat)
            pairs.append({
                "baseline": base_index, "treatment": treat_index,
                "condition": condition_label(treat.env.condition), "agent": base.agent.id,
                "task": str(base.env.task_id), "seed": base.seed, "rep": base.rep,
                "diff_steps": differing, "diff_kinds": [kinds[t] for t in differing], "state_changed": state_changed,
                "changed": bool(differing) or state_changed,
            })
    return pairs
