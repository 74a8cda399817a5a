"""Pairs of episodes for the viewer: the same task, agent, seed and repetition under the unmodified
env and under another condition, with the steps where the agent acted differently.

A view, not a verdict: ``rsigym.graders.trace`` owns the TRACE analysis (with its controls). The
kernel may not import it, so the few lines that map renamed tool names back live here as well.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import asdict
from typing import Any, Sequence

from ..records import Trajectory, canonical_json
from ..report import condition_label

__all__ = ["paired_episodes", "renamed_to_original", "BASELINE_NAMES"]

BASELINE_NAMES = frozenset({"identity", "none"})  # both mean the unmodified env


def _is_baseline(record: Trajectory) -> bool:
    condition = record.env.condition
    return condition is None or condition.get("name") in BASELINE_NAMES


def _join_key(record: Trajectory) -> str:
    env = record.env
    return canonical_json([env.id, env.kwargs, env.task_id, asdict(record.agent), record.seed, record.rep])


def renamed_to_original(record: Trajectory) -> dict[str, str]:
    """{renamed: original} tool names of a record: its condition's mapping, else its snapshot's."""
    params = (record.env.condition or {}).get("params") or {}
    mapping = params.get("mapping")
    if not mapping and record.final is not None and isinstance(record.final.state, dict):
        mapping = record.final.state.get("tool_names")
    if not isinstance(mapping, dict):
        return {}
    return {str(renamed): str(original) for original, renamed in mapping.items() if original != renamed}


def _actions(record: Trajectory) -> list[str]:
    reverse = renamed_to_original(record)
    out = []
    for step in record.steps:
        action = step.action
        if isinstance(action, dict) and isinstance(action.get("tool"), str):
            action = {**action, "tool": reverse.get(action["tool"], action["tool"])}
        out.append(canonical_json(action))
    return out


def _state(record: Trajectory) -> str | None:
    if record.final is None:
        return None
    state = record.final.state
    if isinstance(state, dict) and "db_sha256" in state:
        return str(state["db_sha256"])
    return record.final.sha256


def paired_episodes(records: Sequence[Trajectory]) -> list[dict[str, Any]]:
    """Every (baseline, treatment) pair of record indices, with the step indices whose actions
    differ (tool names mapped back to the originals) and whether the end state differs."""
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
            steps = max(len(base_actions), len(treat_actions))
            differing = [t for t in range(steps)
                         if t >= len(base_actions) or t >= len(treat_actions) or base_actions[t] != treat_actions[t]]
            state_changed = _state(base) != _state(treat)
            pairs.append({
                "baseline": base_index, "treatment": treat_index,
                "condition": condition_label(treat.env.condition), "agent": base.agent.id,
                "task": str(base.env.task_id), "seed": base.seed, "rep": base.rep,
                "diff_steps": differing, "state_changed": state_changed,
                "changed": bool(differing) or state_changed,
            })
    return pairs
