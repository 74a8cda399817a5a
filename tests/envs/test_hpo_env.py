"""HyperparamSearch-v0 and its feedback-attribution replays, with a fast analytic trial runner.

The real runner fine-tunes an FNO (tests/envs/test_hpo_training.py); here a deterministic
stand-in maps configs to errors, so the env protocol and the replays are tested in seconds.
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rsigym.envs  # noqa: F401
from rsigym.envs.hpo.env import HyperparamSearchEnv
from rsigym.envs.hpo.render import history_text, parse_history
from rsigym.envs.hpo.replay import derangement, replay_decision_points
from rsigym.envs.hpo.space import Config, config_distance
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec


@dataclass(frozen=True)
class Result:
    val_nrmse: float
    checkpoint_sha256: str = "f" * 64


class AnalyticTrials:
    """Error = a bowl in log10(lr) around 1e-3 plus optimizer and loss offsets; counts calls."""

    def __init__(self) -> None:
        self.calls = self.tests = 0

    def run(self, condition: str, seed: int, config: Config) -> Result:
        self.calls += 1
        return Result(self.error(config) + 0.001 * seed)

    @staticmethod
    def error(config: Config) -> float:
        bowl = 0.02 + 0.05 * (math.log10(config.learning_rate) + 3.0) ** 2
        offset = {"adam": 0.0, "adamw": 0.002, "sgd_momentum": 0.03, "rmsprop": 0.01}[config.optimizer]
        return bowl + offset + {"mse": 0.0, "relative_l2": 0.001, "l1": 0.004, "huber": 0.002}[config.loss]

    def test(self, condition: str, seed: int, config: Config) -> float:
        self.tests += 1
        return 1.1 * self.error(config)


def make(**kwargs):
    return HyperparamSearchEnv(trials=AnalyticTrials(), **kwargs)


def test_check_env_passes():
    check_env(make(budget=5), skip_render_check=True)


def test_episode_reports_test_error_of_best_validation_config_once():
    env = make(budget=3)
    obs, info = env.reset(seed=1, options={"task_id": "adv0.4->adv1.0"})
    assert "Target: advection(beta=1)" in obs["text"] and "No trials yet." in obs["text"]
    configs = [{"learning_rate": 1e-2, "optimizer": "adam", "loss": "mse"},
               {"learning_rate": 1e-3, "optimizer": "adam", "loss": "mse"},
               {"learning_rate": 1e-4, "optimizer": "rmsprop", "loss": "l1"}]
    for i, config in enumerate(configs):
        obs, reward, terminated, _, info = env.step(config)
        assert ("test_nrmse" in info) == terminated == (i == 2)
        assert env.trials.tests == (1 if terminated else 0)       # the test set is read once, at the end
    assert info["termination"] == "budget_exhausted"
    assert info["test_nrmse"] == pytest.approx(1.1 * 0.02)  # the 1e-3 config, the best on validation
    assert env.snapshot()["best"]["learning_rate"] == 1e-3
    assert [c for c, _ in parse_history(obs["text"])] == [Config(**c) for c in configs]


def test_invalid_and_typed_actions():
    env = make(budget=3)
    env.reset(seed=0, options={"task_id": "adv0.4->adv1.0"})
    obs, reward, terminated, _, info = env.step({"learning_rate": 1.0, "optimizer": "adam", "loss": "mse"})
    assert "greater than the maximum" in info["error"] and info["budget"]["trials_used"] == 0
    obs, reward, *_ = env.step({"learning_rate": np.float64(1e-3), "optimizer": 1, "loss": 2})
    assert "optimizer=adamw, loss=relative_l2" in obs["text"] and reward < 0


def test_history_notations_parse_to_the_same_values():
    trials = [(Config(1e-3, "adam", "mse"), 0.0123456), (Config(3e-4, "adamw", "huber"), 0.5)]
    decimal, scientific = history_text(trials), history_text(trials, "scientific")
    assert decimal != scientific and "1.235e-02" in scientific
    assert [round(v, 4) for _, v in parse_history(decimal)] == [round(v, 4) for _, v in parse_history(scientific)]


def test_distance_and_derangement():
    a, b = Config(1e-5, "adam", "mse"), Config(1e-1, "sgd_momentum", "mse")
    assert config_distance(a, b) == pytest.approx((1.0 + 1.0 + 0.0) / 3)
    rng = np.random.default_rng(0)
    for n in (2, 3, 7):
        order = derangement(n, rng)
        assert sorted(order) == list(range(n)) and all(i != j for i, j in enumerate(order))


TRIALS = AnalyticTrials()
if "rsigym-test/HPOAnalytic-v0" not in gym.registry:  # the env with the analytic runner injected
    gym.register("rsigym-test/HPOAnalytic-v0", entry_point=lambda **kw: HyperparamSearchEnv(trials=TRIALS, **kw))


def _episode(model: str, seed: int, budget: int = 8):
    env = EnvRef("rsigym-test/HPOAnalytic-v0", {"budget": budget}, "adv0.4->adv1.0", None)
    return run_episode(EpisodeSpec("0" * 32, env, AgentSpec(model, "llm", model, {}), seed, 0, 50))


def test_heuristic_uses_feedback_and_blind_control_does_not():
    from rsigym.report.stats import paired_bootstrap_ci

    sensitivity = {}
    for model in ("rsigym/hpo_heuristic", "rsigym/hpo_blind"):
        records = [_episode(model, seed) for seed in range(3)]
        assert all(r.termination == "budget_exhausted" for r in records), [r.error for r in records]
        calls_before = TRIALS.calls
        points = [p for r in records for p in replay_decision_points(r, k=2, max_points=4)]
        assert TRIALS.calls == calls_before  # replays never run a trial
        values = [p.sensitivity for p in points]
        sensitivity[model] = (float(np.mean(values)), *paired_bootstrap_ci(values))
    print(f"\nfeedback sensitivity (mean, 95% CI): {sensitivity}")
    mean, low, high = sensitivity["rsigym/hpo_heuristic"]
    assert mean > 0 and low > 0, sensitivity
    mean, low, high = sensitivity["rsigym/hpo_blind"]
    assert low <= 0 <= high, sensitivity


def test_replays_of_a_real_tiny_episode_never_train(monkeypatch):
    """With the real FNO trial runner: a replay queries the agent only; training would raise."""
    from rsigym.envs.hpo import training

    env = EnvRef("rsigym/HyperparamSearch-v0", {"preset": "tiny", "budget": 4}, "adv0.4->adv1.0", None)
    agent = AgentSpec("heuristic", "llm", "rsigym/hpo_heuristic", {})
    record = run_episode(EpisodeSpec("0" * 32, env, agent, 0, 0, 20))
    assert record.termination == "budget_exhausted", record.error
    cache = record.final.state["trial_cache"]
    assert cache["train_calls"] <= cache["misses"] and cache["hits"] + cache["misses"] >= 4

    def no_training(*args, **kwargs):
        raise AssertionError("a replay tried to run a trial")

    monkeypatch.setattr(training.TrialRunner, "run", no_training)
    points = replay_decision_points(record, k=2, max_points=2)
    # a point whose tied scores (diverged trials) admit no score-changing permutation is skipped
    scores = [f"{t['val_nrmse']:.6f}" for t in record.final.state["trials"]]
    expected = [n for n in (2, 3) if max(scores[:n].count(v) for v in scores[:n]) <= n // 2]
    assert [p.evaluated for p in points] == expected and all(math.isfinite(p.sensitivity) for p in points)
