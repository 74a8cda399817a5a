"""The forecast analysis: its verdicts and controls fail where they should, on constructed agents."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np

from rsigym.envs.forecast.analyses import forecast_analysis
from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Trajectory

SEEDS = range(2)
TASKS = ("digits-mlp", "digits-cnn", "tabular-bc", "charlm-pydoc", "charlm-stdlib")


def _record(agent: str, condition: str, seed: int, predict, task: str = "digits-mlp") -> Trajectory:
    env = ExperimentForecastEnv(condition=condition)
    observation, _ = env.reset(seed=seed, options={"task_id": task})
    rng = np.random.default_rng(seed)
    terminated = False
    while not terminated:
        data = json.loads(observation["data"])
        observation, _, terminated, _, _ = env.step({"predictions": predict(data, condition, rng)})
    return Trajectory(episode_key=f"{agent}-{condition}-{task}-{seed}",
                      env=EnvRef("rsigym/ExperimentForecast-v0", {}, task, {"name": condition, "params": {}}),
                      agent=AgentSpec(agent, "test"), seed=seed, rep=0, final=FinalSnapshot.of(env.snapshot()),
                      termination="budget_exhausted")


def _truth(data):
    truth = load_archive().by_id()
    return [truth[c["intervention"]].gain for c in data["candidates"]]


AGENTS = {
    "zero": lambda data, condition, rng: [0.0] * 16,
    "random": lambda data, condition, rng: list(rng.normal(0, 1, 16)),
    "anti": lambda data, condition, rng: [-g for g in _truth(data)],                  # broken: ranks backwards
    "oracle": lambda data, condition, rng: _truth(data),                              # never needs the feedback
    "feedback_user": lambda data, condition, rng: (_truth(data) if condition == "in_env"
                                                   else list(rng.normal(0, 1, 16))),  # loses it when shuffled
}


def test_verdicts_and_both_controls_on_constructed_agents(tmp_path: Path):
    records = [_record(agent, condition, seed, predict, task) for agent, predict in AGENTS.items()
               for condition in ("in_env", "shuffled_gains") for seed in SEEDS for task in TASKS]
    records.append(Trajectory(episode_key="crashed", env=records[0].env, agent=AgentSpec("zero", "test"), seed=99,
                              rep=0, final=None, termination="infra_error"))
    section = forecast_analysis(records, tmp_path)
    text = section.markdown
    assert "unscored (agent error, infra error, early stop): 1" in text
    assert "| in_env | anti | 10 | 5 |" in text and "worse than the reference" in text
    assert "blind control random in in_env: passes" in section.verdict
    assert "oracle in in_env: beats the reference" in section.verdict
    # the feedback-use control fails for the oracle (its advantage survives shuffling) and passes for the other
    assert "shuffled_gains control for oracle (in_env): NOT removed" in section.verdict
    assert "shuffled_gains control for feedback_user (in_env): removed" in section.verdict
    assert (tmp_path / section.plots[0]).stat().st_size > 1000


def test_a_blind_agent_that_beats_zero_fails_the_blind_control(tmp_path: Path):
    # a "random" agent that secretly reads the truth must be flagged, not waved through
    cheat = lambda data, condition, rng: _truth(data)
    records = [_record(agent, "in_env", seed, predict, task) for agent, predict in
               (("zero", AGENTS["zero"]), ("random", cheat)) for seed in SEEDS for task in TASKS]
    section = forecast_analysis(records, tmp_path)
    assert "blind control random in in_env: FAILS" in section.verdict


def test_too_few_pairs_is_insufficient_data(tmp_path: Path):
    records = [_record(agent, "in_env", 0, AGENTS[agent]) for agent in ("zero", "oracle")]
    assert "insufficient data" in forecast_analysis(records, tmp_path).verdict


def test_two_targets_are_insufficient_data_however_many_episodes(tmp_path: Path):
    records = [_record(agent, "in_env", seed, AGENTS[agent], task) for agent in ("zero", "oracle")
               for seed in range(4) for task in TASKS[:2]]
    assert "oracle in in_env: insufficient data" in forecast_analysis(records, tmp_path).verdict


def _experienced_round1(data, condition, rng):
    """The oracle on round 1 when it has experience, zero otherwise: an effect on round 1 only."""
    return _truth(data) if condition != "no_experience" and data["round"] == 0 else [0.0] * 16


def test_within_agent_experience_sees_a_round1_effect_and_zero_is_the_floor(tmp_path: Path):
    from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS
    # every target: with uniform pools, 5 targets x 2 seeds no longer resolve this effect
    records = [_record(agent, condition, seed, predict, task)
               for agent, predict in (("zero", AGENTS["zero"]), ("learner", _experienced_round1))
               for condition in ("in_env", "no_experience") for seed in SEEDS for task in sorted(RESEARCH_ENVIRONMENTS)]
    section = forecast_analysis(records, tmp_path)
    assert "learner in_env round1: helps" in section.verdict
    assert "zero floor in in_env: passes (+0.000)" in section.verdict
    targets = len(RESEARCH_ENVIRONMENTS)
    assert f"| learner | in_env | round1 | {targets * len(SEEDS)} (0) | {targets} |" in section.markdown
    assert "Per target" in section.markdown and "Regret@3 per round" in section.markdown


def test_the_experience_mdd_is_the_t_tests_and_a_true_effect_of_that_size_is_found_four_times_in_five():
    from scipy import stats

    from rsigym.envs.forecast.experience_effect import cluster_mdd
    from rsigym.report.stats import minimum_detectable_difference
    assert np.isnan(cluster_mdd(1.0, 1))
    for targets in (5, 22, 32):
        mdd = cluster_mdd(1.0, targets)
        assert mdd > minimum_detectable_difference(1.0, targets)       # n - 1 df: wider than the normal factor
        # power of the two-sided t test over targets at a true effect of one MDD (noncentral t)
        critical = stats.t.ppf(0.975, targets - 1)
        power = stats.nct.sf(critical, targets - 1, mdd * np.sqrt(targets))
        assert 0.78 <= power <= 0.82, (targets, power)
    assert cluster_mdd(1.0, 5) / minimum_detectable_difference(1.0, 5) > 1.25   # the 5-target archive's understatement
