"""Calibration cases of the ``forecast`` analysis: constructed forecasters whose truth is known.

Each plays real ExperimentForecast-v0 episodes (digits-mlp and tabular-bc, 6 seeds each) on the
shipped archive; the analysis pairs it with ``zero``.

* ``anti`` ranks candidates backwards (predicts minus the true gain): must be "worse than the reference".
* ``oracle`` predicts the true gains: must "beat the reference", and since it never needs the
  feedback, the shuffled_gains control must say NOT removed (the control can fail).
* ``feedback_user`` is the oracle under in_env and random under shuffled_gains: "removed".
* ``random`` is blind: the blind control must pass; ``random`` that secretly reads the truth must fail it.
"""

from __future__ import annotations

import json
import tempfile
import time
from pathlib import Path
from typing import Any, Callable

import numpy as np

from calibration_cases.common import Case
from rsigym.envs.forecast.analyses import forecast_analysis
from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Trajectory

TASKS = ("digits-mlp", "tabular-bc")
SEEDS = range(6)
Predict = Callable[[dict[str, Any], str, np.random.Generator], list[float]]


def _truth(data: dict[str, Any]) -> list[float]:
    truth = load_archive().by_id()
    return [truth[c["intervention"]].gain for c in data["candidates"]]


def _records(agent: str, predict: Predict, conditions: tuple[str, ...]) -> list[Trajectory]:
    out = []
    for condition in conditions:
        for task in TASKS:
            for seed in SEEDS:
                env = ExperimentForecastEnv(condition=condition)
                observation, _ = env.reset(seed=seed, options={"task_id": task})
                rng = np.random.default_rng(seed)
                terminated = False
                while not terminated:
                    action = {"predictions": predict(json.loads(observation["data"]), condition, rng)}
                    observation, _, terminated, _, _ = env.step(action)
                out.append(Trajectory(episode_key=f"{agent}-{condition}-{task}-{seed}",
                                      env=EnvRef("rsigym/ExperimentForecast-v0", {}, task, {"name": condition}),
                                      agent=AgentSpec(agent, "constructed"), seed=seed, rep=0,
                                      final=FinalSnapshot.of(env.snapshot()), termination="budget_exhausted"))
    return out


AGENTS: dict[str, Predict] = {
    "zero": lambda data, condition, rng: [0.0] * len(data["candidates"]),
    "random": lambda data, condition, rng: list(rng.normal(0, 1, len(data["candidates"]))),
    "anti": lambda data, condition, rng: [-g for g in _truth(data)],
    "oracle": lambda data, condition, rng: _truth(data),
    "feedback_user": lambda data, condition, rng: (_truth(data) if condition == "in_env"
                                                   else list(rng.normal(0, 1, len(data["candidates"])))),
}


def _case(agents: dict[str, Predict], needle: str, agent: str, expected: str) -> Case:
    start = time.perf_counter()
    records = [r for name, predict in agents.items() for r in _records(name, predict, ("in_env", "shuffled_gains"))]
    with tempfile.TemporaryDirectory() as folder:
        verdict = forecast_analysis(records, Path(folder)).verdict
    observed = next((part for part in verdict.split("; ") if part.startswith(needle)), "missing")
    return Case("forecast", agent, expected, observed[:90], f": {expected}" in observed, "forecast",
                time.perf_counter() - start)


CASES = [
    lambda: _case({"zero": AGENTS["zero"], "anti": AGENTS["anti"]}, "anti in in_env", "anti", "worse than the reference"),
    lambda: _case({"zero": AGENTS["zero"], "oracle": AGENTS["oracle"]}, "oracle in in_env", "oracle", "beats the reference"),
    lambda: _case({"zero": AGENTS["zero"], "oracle": AGENTS["oracle"]}, "shuffled_gains control for oracle", "oracle",
                  "NOT removed"),
    lambda: _case({"zero": AGENTS["zero"], "feedback_user": AGENTS["feedback_user"]},
                  "shuffled_gains control for feedback_user", "feedback_user", "removed"),
    lambda: _case({"zero": AGENTS["zero"], "random": AGENTS["random"]}, "blind control random in in_env", "random",
                  "passes"),
    lambda: _case({"zero": AGENTS["zero"], "random": AGENTS["oracle"]}, "blind control random in in_env",
                  "random (reads the truth)", "FAILS"),
]
