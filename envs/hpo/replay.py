"""Feedback attribution by replay: ask the agent again at recorded decision points.

No trial is run here: the agent is rebuilt from the record's spec and shown re-rendered
observations, so a replay costs agent calls only and never trains a model.

* ``permute_scores``: the validation scores are deranged among the evaluated configurations;
* ``notation``: the same scores in scientific notation (the control);
* ``cold_start``: the step-0 observation with the target equation's description swapped.

Feedback sensitivity at a decision point = mean distance(original, permuted) - mean
distance(original, notation) over K proposals each (``space.config_distance``).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory

from .render import observation_text
from .space import ACTION_SCHEMA, Config, action_space, config_distance

__all__ = ["derangement", "propose", "DecisionReplay", "replay_decision_points", "cold_start_shift"]


def derangement(n: int, rng: np.random.Generator) -> list[int]:
    """A permutation of range(n) with no fixed point (n >= 2), uniformly by rejection."""
    if n < 2:
        raise ValueError("a derangement needs at least two items")
    while True:
        order = [int(i) for i in rng.permutation(n)]
        if all(i != j for i, j in enumerate(order)):
            return order


def propose(agent_spec: Any, task_id: str, text: str, seed: int) -> Config | None:
    """One proposal of a freshly built agent shown ``text`` (None when it gives no valid config)."""
    from rsigym.agents import make_agent

    agent = make_agent(agent_spec)
    agent.reset({"env_id": "rsigym/HyperparamSearch-v0", "task_id": task_id, "condition": None,
                 "action_space": action_space(), "observation_space": None, "action_schema": ACTION_SCHEMA,
                 "info": {}, "tools": None, "rep": 0}, seed)
    action = agent.act({"text": text})
    try:
        return Config(float(action["learning_rate"]), str(action["optimizer"]), str(action["loss"]))
    except (KeyError, TypeError, ValueError):
        return None


@dataclass(frozen=True)
class DecisionReplay:
    """Distances at one decision point (after ``evaluated`` trials) of one record."""

    episode_key: str
    evaluated: int
    permuted_distance: float
    notation_distance: float

    @property
    def sensitivity(self) -> float:
        return self.permuted_distance - self.notation_distance


def _trials(record: Trajectory) -> list[tuple[Config, float]]:
    state = record.final.state if record.final else {}
    return [(Config(t["learning_rate"], t["optimizer"], t["loss"]), float(t["val_nrmse"]))
            for t in (state or {}).get("trials", [])]


def _mean_distance(a: Sequence[Config | None], b: Sequence[Config | None]) -> float:
    pairs = [(x, y) for x, y in zip(a, b) if x is not None and y is not None]
    return float(np.mean([config_distance(x, y) for x, y in pairs])) if pairs else float("nan")


def replay_decision_points(record: Trajectory, *, k: int = 3, max_points: int = 4,
                           seed: int = 0) -> list[DecisionReplay]:
    """Replays at up to ``max_points`` decision points (>= 2 evaluated trials) of one record."""
    state = record.final.state if record.final else None
    trials = _trials(record)
    if not state or len(trials) < 3:
        return []
    rng = np.random.default_rng([seed, int(record.episode_key[:8], 16)])
    points = np.unique(np.linspace(2, len(trials) - 1, num=min(max_points, len(trials) - 2)).astype(int))
    out = []
    for evaluated in points:
        shown = trials[:evaluated]
        order = derangement(len(shown), rng)
        permuted = [(c, shown[j][1]) for (c, _), j in zip(shown, order)]
        variants = {name: observation_text(state["description"], state["budget"], history, notation)
                    for name, history, notation in (("original", shown, "decimal"), ("permuted", permuted, "decimal"),
                                                    ("notation", shown, "scientific"))}
        proposals = {name: [propose(record.agent, state["task_id"], text, seed + i) for i in range(k)]
                     for name, text in variants.items()}
        out.append(DecisionReplay(record.episode_key, int(evaluated),
                                  _mean_distance(proposals["original"], proposals["permuted"]),
                                  _mean_distance(proposals["original"], proposals["notation"])))
    return out


def cold_start_shift(record: Trajectory, swapped_description: str, *, k: int = 3, seed: int = 0) -> float:
    """Mean |log10 change| of the first proposed learning rate when the description is swapped."""
    state = record.final.state if record.final else None
    if not state:
        return float("nan")
    texts = [observation_text(d, state["budget"], []) for d in (state["description"], swapped_description)]
    first = [[propose(record.agent, state["task_id"], t, seed + i) for i in range(k)] for t in texts]
    shifts = [abs(np.log10(a.learning_rate) - np.log10(b.learning_rate))
              for a, b in zip(*first) if a is not None and b is not None]
    return float(np.mean(shifts)) if shifts else float("nan")
