"""In-process episodes of ExperimentForecast-v0 for benchmarks and tests (no runner, no records).

``episode`` plays one agent through one episode and returns its round means and best gain;
``compare`` pairs agents with a reference over tasks and seeds and gives the mean Regret@3
difference with a paired bootstrap CI (the same statistic the ``forecast`` analysis reports).
"""

from __future__ import annotations

import statistics
from typing import Any, Sequence

from rsigym.agent import make_agent
from rsigym.report.stats import paired_bootstrap_ci

from .archive import Archive
from .env import ExperimentForecastEnv
from .graders import round_means

__all__ = ["episode", "compare"]


def episode(agent_kind: str, task: str, condition: Any, seed: int, *, archive: Archive | None = None,
            agent_params: dict[str, Any] | None = None, model: str | None = None) -> dict[str, Any]:
    """One full episode: round means of every metric, the best gain and the best-gain curve."""
    env = ExperimentForecastEnv(condition=condition, archive=archive)
    agent = make_agent({"id": agent_kind, "kind": agent_kind, "model": model, "params": agent_params or {}})
    observation, info = env.reset(seed=seed, options={"task_id": task})
    agent.reset({"env_id": "rsigym/ExperimentForecast-v0", "task_id": task, "condition": condition,
                 "action_space": env.action_space, "observation_space": env.observation_space,
                 "action_schema": env.action_schema, "tools": None, "rep": 0, "info": info}, seed)
    terminated = False
    while not terminated:
        observation, _, terminated, truncated, info = env.step(agent.act(observation))
        if truncated or info.get("termination") == "agent_error":
            raise RuntimeError(f"{agent_kind} failed on {task}: {info.get('error')}")
    state = env.snapshot()
    return {**round_means(state["rounds"]), "best_gain": state["best_gain"], "curve": state["best_gain_by_selection"]}


def compare(agents: Sequence[str], reference: str, tasks: Sequence[str], conditions: Sequence[Any],
            seeds: Sequence[int], *, archive: Archive | None = None, metric: str = "regret_best") -> list[dict[str, Any]]:
    """Per (condition, agent): mean metric, the mean paired difference to ``reference`` and its 95% CI."""
    rows = []
    for condition in conditions:
        results: dict[str, list[float]] = {}
        for agent in [reference, *[a for a in agents if a != reference]]:
            results[agent] = [episode(agent, task, condition, seed, archive=archive)[metric]
                              for task in tasks for seed in seeds]
        for agent in agents:
            deltas = [a - b for a, b in zip(results[agent], results[reference])]
            low, high = paired_bootstrap_ci(deltas)
            rows.append({"condition": condition if isinstance(condition, str) else condition["name"],
                         "agent": agent, "n": len(deltas), "mean": statistics.mean(results[agent]),
                         "diff": statistics.mean(deltas), "ci": (low, high)})
    return rows
