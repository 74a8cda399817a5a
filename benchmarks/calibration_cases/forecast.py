"""Calibration cases of the ``forecast`` analysis: constructed forecasters whose truth is known.

Each plays real ExperimentForecast-v0 episodes (every target, 3 seeds each: the target is the unit
of inference, so the verdicts need at least 3 of them) on the shipped archive; the analysis pairs
it with ``zero``.

* ``anti`` ranks candidates backwards (predicts minus the true gain): must be "worse than the reference".
* ``oracle`` predicts the true gains: must "beat the reference", and since it never needs the
  feedback, the shuffled_gains control must say NOT removed (the control can fail).
* ``feedback_user`` is the oracle under in_env and random under shuffled_gains: "removed".
* ``random`` is blind: the blind control must pass; ``random`` that secretly reads the truth must fail it.

Experience (the same agent under ``no_experience``) and leaks:

* ``round1_learner`` is the oracle on round 1 when it has experience, zero otherwise: the
  within-agent round-1 reading must say "helps" (the 8-round mean dilutes it 8-fold).
* ``one_target`` is the oracle with experience on digits-mlp only: the pooled verdict, the target
  being the unit, must say "no detectable effect" (one target of five carries it), while the
  per-target row shows it and an episode-unit test would call it an effect.
* ``leak_user`` reads a leak a broken env puts in ``info`` (the next round's true gains); the
  conformance check (``leakcheck``) must report the leaky env, and must pass the real one.
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

TASKS = ("charlm-pydoc", "charlm-stdlib", "digits-mlp", "digits-cnn", "tabular-bc")
SEEDS = range(3)
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


def _experience_case(agent: str, predict: Predict, needle: str, expected: str) -> Case:
    start = time.perf_counter()
    records = [r for condition in ("in_env", "no_experience") for r in _records(agent, predict, (condition,))]
    with tempfile.TemporaryDirectory() as folder:
        verdict = forecast_analysis(records, Path(folder)).verdict
    observed = next((part for part in verdict.split("; ") if part.startswith(needle)), "missing")
    return Case("forecast", f"{agent} (experience)", expected, observed[:90], f": {expected} " in observed,
                "forecast", time.perf_counter() - start)


def _round1_learner(data: dict[str, Any], condition: str, rng: np.random.Generator) -> list[float]:
    return _truth(data) if condition != "no_experience" and data["round"] == 0 else [0.0] * len(data["candidates"])


def _one_target(data: dict[str, Any], condition: str, rng: np.random.Generator) -> list[float]:
    useful = condition != "no_experience" and data["target"] == "digits-mlp"
    return _truth(data) if useful else [0.0] * len(data["candidates"])


class _LeakyEnv(ExperimentForecastEnv):
    """The env with a leak on purpose: the next round's true gains in ``info``."""

    def step(self, action: Any):  # type: ignore[no-untyped-def]
        observation, reward, terminated, truncated, info = super().step(action)
        info["candidate_gains"] = [r.gain for r in self._current]
        return observation, reward, terminated, truncated, info


def _leak_case(leaky: bool) -> Case:
    from rsigym.envs.forecast.leakcheck import hidden_truth_differences

    start = time.perf_counter()
    env_class = _LeakyEnv if leaky else ExperimentForecastEnv
    found = []
    for task in ("digits-mlp", "tabular-bc"):
        differences, _ = hidden_truth_differences(lambda a: env_class(condition="in_env", archive=a), load_archive(),
                                                  task=task, seed=1)
        found += differences
    observed = f"{len(found)} steps differ" + (f" ({found[0]})" if found else "")
    expected = "leak caught" if leaky else "no leak"
    ok = bool(found) == leaky
    return Case("forecast", "leak_user (leaky env)" if leaky else "any agent (real env)", expected,
                observed[:90], ok, "forecast", time.perf_counter() - start)


CASES += [
    lambda: _experience_case("round1_learner", _round1_learner, "round1_learner in_env round1", "helps"),
    lambda: _experience_case("one_target", _one_target, "one_target in_env round1", "no detectable effect"),
    lambda: _experience_case("zero", AGENTS["zero"], "zero floor in in_env", "passes"),
    lambda: _leak_case(leaky=True),
    lambda: _leak_case(leaky=False),
]
