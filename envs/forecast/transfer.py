"""Multi-round research at a fixed budget, and leave-one-group-out transfer (the paper's two experiments).

``play`` runs one in-process episode and returns the row the analyses read (the same keys as
``analyses.episode_rows`` plus the pool's best gain). Two tables read those rows, **the
environment (target) as the unit** in both: each target's mean over its seeds is one value, and
intervals are t intervals over targets (``cluster_t_ci``) or, for ratios of means, a percentile
bootstrap that resamples whole targets (sorted by name, so record order changes nothing).

* ``budget_table``: a fixed budget of 24 experiment choices (8 rounds x 3 executed); the final best
  gain found, in units of the target's gain SD (gains differ 50x between targets), under
  ``in_env`` (same-environment experience), ``cross_env`` (every other environment) and
  ``no_experience``; the difference to ``no_experience`` with its interval, and the relative change
  of the mean (the paper reports +15.8% and +11.6%).
* ``transfer_table``: pre-training experience from every group of environments but the target's
  (``cross_env`` with ``sources`` = the environments outside ``group_of(target)``), against
  ``no_experience``: the selection regret (Regret@3 of the one-shot round-1 pick, and its mean over
  the rounds) divided by the blind picker's (``zero``'s) regret on the target, and the cut
  ``1 - regret(C) / regret(none)`` with a target-resampling interval (the paper reports 78%).
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from rsigym.agent import make_agent
from rsigym.report.stats import cluster_means, cluster_t_ci

from .archive import Archive
from .env import ExperimentForecastEnv
from .experience_effect import target_scales
from .research import ENVIRONMENT_GROUPS, RESEARCH_ENVIRONMENTS, group_of

__all__ = ["BUDGET_DESIGN", "play", "logo_condition", "budget_table", "transfer_table", "ratio_ci"]

# 24 experiment choices: 8 rounds, 3 executed of 8 candidates each; pool = 8 + 3 * 7 = 29, which
# leaves every target (42-56 interventions) an in-environment archive of 13-27 records
BUDGET_DESIGN: dict[str, int] = {"rounds": 8, "candidates": 8, "select": 3}


def logo_condition(target: str, observed: str = "mean") -> dict[str, Any]:
    """``cross_env`` whose sources are every environment outside the target's group."""
    held_out = set(ENVIRONMENT_GROUPS[group_of(target)])
    sources = sorted(env for env in RESEARCH_ENVIRONMENTS if env not in held_out)
    return {"name": "cross_env", "params": {"observed": observed, "sources": sources}}


def play(agent: dict[str, Any], task: str, condition: dict[str, Any], seed: int, *, archive: Archive,
         label: str | None = None, design: dict[str, int] | None = None) -> dict[str, Any]:
    """One episode of ``agent`` (an agent spec dict: id, kind, model, params) on ``task``; its row."""
    shape = design or BUDGET_DESIGN
    env = ExperimentForecastEnv(condition=condition, archive=archive, rounds=shape["rounds"],
                                candidates=shape["candidates"], select=shape["select"])
    forecaster = make_agent({"params": {}, "model": None, **agent})
    observation, info = env.reset(seed=seed, options={"task_id": task})
    forecaster.reset({"env_id": "rsigym/ExperimentForecast-v0", "task_id": task, "condition": condition,
                      "action_space": env.action_space, "observation_space": env.observation_space,
                      "action_schema": env.action_schema, "tools": None, "rep": 0, "info": info}, seed)
    terminated = False
    while not terminated:
        observation, _, terminated, truncated, info = env.step(forecaster.act(observation))
        if truncated or info.get("termination") == "agent_error":
            raise RuntimeError(f"{agent['id']} failed on {task}: {info.get('error')}")
    state = env.snapshot()
    return {"agent": agent["id"], "condition": label or condition["name"], "condition_name": condition["name"],
            "observed": condition.get("params", {}).get("observed", "mean"), "task": task, "seed": seed, "rep": 0,
            "best_gain": state["best_gain"], "pool_best_gain": state["pool_best_gain"],
            "gain_sd": state["target_gain_sd"], "regret_best": float(np.mean(
                [r["metrics"]["regret_best"] for r in state["rounds"]])),
            "round_regret": [r["metrics"]["regret_best"] for r in state["rounds"]],
            "round_noise": [bool(r["best_is_noise"]) for r in state["rounds"]]}


def ratio_ci(numerator: dict[str, float], denominator: dict[str, float], *, resamples: int = 4000,
             seed: int = 0) -> tuple[float, float, float]:
    """``mean(numerator) / mean(denominator) - 1`` over shared targets and a percentile CI resampling targets."""
    targets = sorted(set(numerator) & set(denominator))
    if len(targets) < 2:
        return math.nan, math.nan, math.nan
    top = np.array([numerator[t] for t in targets])
    bottom = np.array([denominator[t] for t in targets])
    if bottom.mean() == 0:          # no regret (or no gain) to cut or raise: the ratio is undefined
        return math.nan, math.nan, math.nan
    point = float(top.mean() / bottom.mean() - 1)
    rng = np.random.default_rng(seed)
    draws = rng.integers(0, len(targets), size=(resamples, len(targets)))       # (B, targets)
    denominators = bottom[draws].mean(1)
    ratios = top[draws].mean(1) / np.where(denominators == 0, np.nan, denominators) - 1
    ratios = ratios[np.isfinite(ratios)]
    if ratios.size < resamples * 0.9:   # too many resamples without a denominator to trust the interval
        return point, math.nan, math.nan
    return point, float(np.quantile(ratios, 0.025)), float(np.quantile(ratios, 0.975))


def _per_target(rows: Sequence[dict[str, Any]], agent: str, condition: str, value: Any) -> dict[str, list[tuple[int, float]]]:
    out: dict[str, list[tuple[int, float]]] = {}
    for row in rows:
        if row["agent"] == agent and row["condition"] == condition:
            out.setdefault(row["task"], []).append((row["seed"], float(value(row))))
    return out


def _paired(rows: Sequence[dict[str, Any]], agent: str, condition: str, reference: str,
            value: Any) -> tuple[list[float], list[str], dict[str, float], dict[str, float]]:
    """Per-seed differences (condition - reference) with their targets, and each side's per-target means."""
    with_c = _per_target(rows, agent, condition, value)
    without = _per_target(rows, agent, reference, value)
    deltas, tasks, a, b = [], [], [], []
    for task in sorted(set(with_c) & set(without)):
        base = dict(without[task])
        for seed, v in sorted(with_c[task]):
            if seed in base:
                deltas.append(v - base[seed])
                tasks.append(task)
                a.append(v)
                b.append(base[seed])
    return deltas, tasks, cluster_means(a, tasks), cluster_means(b, tasks)


def budget_table(rows: Sequence[dict[str, Any]], *, conditions: Sequence[str] = ("in_env", "cross_env"),
                 reference: str = "no_experience") -> list[dict[str, Any]]:
    """Final best gain / target gain SD at the fixed budget: per agent and condition, vs ``reference``."""
    out = []
    def normalised(row: dict[str, Any]) -> float:
        return row["best_gain"] / row["gain_sd"]
    for agent in sorted({r["agent"] for r in rows}):
        for condition in conditions:
            deltas, tasks, mean_c, mean_ref = _paired(rows, agent, condition, reference, normalised)
            if not deltas:
                continue
            mean, low, high, targets = cluster_t_ci(deltas, tasks)
            relative, rel_low, rel_high = ratio_ci(mean_c, mean_ref)
            out.append({"agent": agent, "condition": condition, "pairs": len(deltas), "targets": targets,
                        "best": float(np.mean(list(mean_c.values()))), "best_reference": float(np.mean(list(mean_ref.values()))),
                        "delta": mean, "low": low, "high": high,
                        "relative": relative, "relative_low": rel_low, "relative_high": rel_high})
    return out


def transfer_table(rows: Sequence[dict[str, Any]], *, condition: str = "logo", reference: str = "no_experience",
                   blind: str = "zero") -> list[dict[str, Any]]:
    """Selection regret under ``condition`` vs ``reference``, per held-out group and pooled, per agent.

    Regrets are divided by ``blind``'s mean Regret@3 on the target (``target_scales``); the cut is
    ``1 - mean regret(condition) / mean regret(reference)`` over the group's targets.
    """
    scale = target_scales(list(rows), blind)
    readings = {"round1": lambda r: r["round_regret"][0] / scale[r["task"]],
                "curve": lambda r: math.fsum(r["round_regret"]) / len(r["round_regret"]) / scale[r["task"]]}
    out = []
    for agent in sorted({r["agent"] for r in rows} - {blind}):
        for group in [*ENVIRONMENT_GROUPS, "all"]:
            members = [r for r in rows if group == "all" or group_of(r["task"]) == group]
            for reading, value in readings.items():
                deltas, tasks, mean_c, mean_ref = _paired(members, agent, condition, reference, value)
                if not deltas:
                    continue
                mean, low, high, targets = cluster_t_ci(deltas, tasks)
                ratio, ratio_low, ratio_high = ratio_ci(mean_c, mean_ref)
                out.append({"agent": agent, "group": group, "reading": reading, "pairs": len(deltas),
                            "targets": targets, "regret": float(np.mean(list(mean_c.values()))),
                            "regret_reference": float(np.mean(list(mean_ref.values()))),
                            "delta": mean, "low": low, "high": high,
                            "cut": -ratio, "cut_low": -ratio_high, "cut_high": -ratio_low})
    return out
