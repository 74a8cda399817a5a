"""ExperimentForecast-v0 gives the agent nothing derived from an outcome it must predict.

The conformance test moves the true outcome of every hidden record (in the pool, never executed,
never shown) and requires the whole agent-facing stream to stay byte-identical. On the env before
this test existed it failed: ``info["round_metrics"]`` carried the round's best true gain.
"""

from __future__ import annotations

import json

import pytest

from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv
from rsigym.envs.forecast.leakcheck import hash_policy, hidden_truth_differences
from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS
from rsigym.envs.forecast.transfer import BUDGET_DESIGN, logo_condition

CONDITIONS = [{"name": name, "params": {"observed": observed}}
              for name in ("in_env", "shuffled_gains", "cross_env", "no_experience")
              for observed in ("mean", "single_seed")]
# every research environment is a target in some condition (three per condition: 24 slots for 23 targets)
TARGETS = sorted(RESEARCH_ENVIRONMENTS)


@pytest.mark.parametrize("condition", CONDITIONS, ids=lambda c: f"{c['name']}-{c['params']['observed']}")
def test_nothing_derived_from_unexecuted_candidates_true_gains_reaches_the_agent(condition):
    archive = load_archive()
    index = CONDITIONS.index(condition)
    extra = [(TARGETS[(3 * index + k) % len(TARGETS)], index + k) for k in (0, 1, 2)]
    for task, seed in (("digits-mlp", 3), ("tabular-bc", 8), *extra):
        # the scenarios' design (4 rounds, pool 36) leaves hidden records in the 42-record catalogues
        # under shuffled_gains too, where most of a small target's records are shown
        design = {} if (task, seed) in (("digits-mlp", 3), ("tabular-bc", 8)) else {"rounds": 4, "pool": 36}
        differences, hidden = hidden_truth_differences(
            lambda a: ExperimentForecastEnv(condition=condition, archive=a, **design), archive, task=task, seed=seed)
        assert hidden >= 3, "the check must move some hidden truths to mean anything"
        assert differences == [], f"{task}: {differences[:3]}"


@pytest.mark.parametrize("condition", CONDITIONS, ids=lambda c: f"{c['name']}-{c['params']['observed']}")
def test_best_gain_and_reward_follow_the_shown_gains(condition):
    env = ExperimentForecastEnv(condition=condition)
    observation, _ = env.reset(seed=4, options={"task_id": "charlm-pydoc"})
    rewards = []
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step({"predictions": hash_policy(json.loads(observation["data"]))})
        rewards.append(reward)
        shown = [row["gain"] for row in json.loads(observation["data"])["experience"] if row["source"] == "executed"]
        assert float(observation["best_gain"]) == pytest.approx(max(shown))
        assert "round_metrics" not in info and "best_gain" not in info
    assert sum(rewards) == pytest.approx(max(0.0, max(shown)))
    state = env.snapshot()  # the truth stays in the final state, for graders
    assert state["best_gain"] == max(state["executed_gains"]) and len(state["shown_gains"]) == len(state["executed"])


@pytest.mark.parametrize("target", TARGETS)
def test_leave_one_group_out_at_the_24_choice_budget_leaks_nothing(target):
    archive = load_archive()
    condition = logo_condition(target)
    differences, hidden = hidden_truth_differences(
        lambda a: ExperimentForecastEnv(condition=condition, archive=a, **BUDGET_DESIGN), archive, task=target, seed=2)
    assert hidden >= 3 and differences == [], f"{target}: {differences[:3]}"
