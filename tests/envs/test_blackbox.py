import itertools

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rsigym.envs  # noqa: F401
from rsigym.agents import register_agent
from rsigym.envs import JsonActions
from rsigym.envs.blackbox import VALUE_BOUND, BlackBoxTask, make_task, task_ids
from rsigym.graders import get_grader, grade_record
from rsigym.records import AgentSpec, EnvRef, Usage
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec, NamedSpec


def make_env(**kwargs):
    return gym.make("rsigym/BlackBox-v0", **kwargs).unwrapped


def config(lr=1e-3, momentum=0.5, layers=3, optimizer=1):
    return {"learning_rate": lr, "momentum": momentum, "layers": layers, "optimizer": optimizer}


def test_check_env_passes():
    check_env(make_env(), skip_render_check=True)
    check_env(make_env(noise_std=0.1, max_trials=5), skip_render_check=True)


def test_objective_matches_hand_computed_value():
    task = BlackBoxTask("bb-hand", log10_lr_target=-2.5, momentum_target=0.6, layers_target=4,
                        best_optimizer=0, optimizer_penalty=(0.0, 0.1, 0.2))
    # momentum error -0.1, layers error -1; lr target -2.5 - 1.0 (adam) + 0.15 = -3.35;
    # lr error -3 + 0.8 * -0.1 + 3.35 = 0.27; 1 - 0.6 * 0.0729 - 3 * 0.01 - 0.05 - 0.1 = 0.77626
    assert task.value(config(1e-3, 0.5, 3, 1)) == pytest.approx(0.77626)
    assert task.value(task.optimum_config()) == pytest.approx(1.0)
    assert task.optimum_config() == {"learning_rate": pytest.approx(10**-2.5), "momentum": 0.6,
                                     "layers": 4, "optimizer": 0}


def test_tasks_are_deterministic_distinct_and_their_optimum_and_worst_are_exact():
    assert make_task("bb-007") == make_task("bb-007")
    assert set(task_ids("train")).isdisjoint(task_ids("test"))
    assert task_ids("all") == [f"bb-{i:03d}" for i in range(50)] and len(task_ids("test")) == 20
    tasks = [make_task(t) for t in task_ids()]
    assert len({t.optimum_config()["learning_rate"] for t in tasks}) == 50
    assert len({t.best_optimizer for t in tasks}) == 3 and len({t.layers_target for t in tasks}) == 4
    grid = list(itertools.product(np.logspace(-5, -1, 41), np.linspace(0, 0.99, 23), range(1, 7), range(3)))
    for task in tasks[:3]:
        values = [task.value(config(*point)) for point in grid]
        assert max(values) <= 1.0 and max(values) > 0.99  # the grid comes close to the optimum
        assert min(values) == pytest.approx(task.worst)   # the grid holds the corners
        assert task.normalised(task.worst) == 0.0 and task.normalised(1.0) == 1.0
    for bad in ("bb-050", "probe-001", "bb-x"):
        with pytest.raises(ValueError, match="not a blackbox task id"):
            make_task(bad)


def test_steps_report_the_objective_deterministically_per_task():
    env, other = make_env(), make_env()
    for task_id in ("bb-001", "bb-031"):
        env.reset(seed=0, options={"task_id": task_id})
        other.reset(seed=99, options={"task_id": task_id})
        obs, reward, terminated, truncated, info = env.step(config())
        assert reward == info["objective"] == make_task(task_id).value(config())
        assert other.step(config())[1] == reward  # no noise: the seed does not matter
        assert float(obs["last_value"]) == float(obs["best_value"]) == reward
        assert (terminated, truncated, info["budget"]) == (False, False, {"trials_used": 1, "trials_left": 19})
        assert f"Trial 1: learning_rate=0.001, momentum=0.5, layers=3, optimizer=adam -> {reward:.6g}" in obs["text"]
    assert make_task("bb-001").value(config()) != make_task("bb-031").value(config())


def test_noise_comes_from_the_env_rng_and_the_snapshot_keeps_the_true_value():
    def observed(seed):
        env = make_env(noise_std=0.5)
        env.reset(seed=seed, options={"task_id": "bb-002"})
        values = [env.step(config())[1] for _ in range(3)]
        return values, env.snapshot()

    values, snapshot = observed(1)
    truth = make_task("bb-002").value(config())
    assert observed(1)[0] == values and observed(2)[0] != values
    assert len(set(values)) == 3 and all(v != truth for v in values)
    assert [t["true_value"] for t in snapshot["trials"]] == [truth] * 3
    assert snapshot["best_value"] == max(values) and snapshot["best_true_value"] == truth


def test_invalid_actions_cost_no_trial_until_the_limit():
    env = make_env(max_invalid_actions=2)
    env.reset(seed=0, options={"task_id": "bb-003"})
    bad_actions = [(config(lr=0.5), "learning_rate"), ({**config(), "layers": 2.5}, "layers")]
    for i, (bad, key) in enumerate(bad_actions, start=1):
        obs, reward, terminated, _, info = env.step(bad)
        assert (reward, terminated, info["invalid_actions"]) == (0.0, False, i)
        assert info["error"].startswith(f"invalid action at {key}:")
        assert info["budget"]["trials_used"] == 0 and "objective" not in info
        assert f"Error: invalid action at {key}" in obs["text"] and env.observation_space.contains(obs)
    obs, _, terminated, _, info = env.step(config(lr="\U0001f600"))  # the error quotes it
    assert terminated and info["termination"] == "agent_error"
    assert "\U0001f600" not in obs["text"] and env.observation_space.contains(obs)  # quoted output, sanitised
    assert env.snapshot()["trials"] == []


def test_budget_ends_the_episode_and_typed_actions_are_accepted():
    env = make_env(max_trials=3)
    env.reset(seed=0, options={"task_id": "bb-004"})
    env.action_space.seed(0)
    for i in range(3):
        obs, reward, terminated, _, info = env.step(env.action_space.sample())
        assert "error" not in info and terminated == (i == 2)
    assert info["termination"] == "budget_exhausted" and int(obs["trials_left"]) == 0
    assert float(obs["best_value"]) == max(t["value"] for t in env.snapshot()["trials"])
    with pytest.raises(RuntimeError, match="budget is spent"):
        env.step(config())


def test_sampled_actions_satisfy_the_schema():
    env = make_env()
    actions = JsonActions(env.action_schema)
    env.action_space.seed(3)
    for _ in range(200):
        assert actions.parse(env.action_space.sample())[1] is None


def test_long_histories_drop_the_oldest_trials_not_the_instructions():
    env = make_env(max_trials=200)
    env.reset(seed=0, options={"task_id": "bb-005"})
    for _ in range(150):
        obs, *_ = env.step(config())
    assert env.observation_space.contains(obs)
    assert "earlier trials not shown" in obs["text"] and "Trial 150:" in obs["text"]
    assert obs["text"].endswith('"optimizer": <integer>}.')
    first = make_env()
    assert float(first.reset(seed=0)[0]["best_value"]) == -VALUE_BOUND


class OptimumAgent:
    """Plays a fixed schedule: a poor config, then the task's optimum."""

    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info, seed):
        self.plan = [config(lr=1e-5, momentum=0.0, layers=6, optimizer=0),
                     make_task(task_info["task_id"]).optimum_config()]

    def act(self, observation):
        return self.plan.pop(0) if len(self.plan) > 1 else self.plan[0]


register_agent("test-bb-optimum")(OptimumAgent)


def play(kind, task="bb-030", noise_std=0.0, max_trials=2):
    env = EnvRef("rsigym/BlackBox-v0", {"max_trials": max_trials, "noise_std": noise_std}, task, None)
    spec = EpisodeSpec("0" * 32, env, AgentSpec(kind, kind), 0, 0, None, (NamedSpec("blackbox_best"),))
    return run_episode(spec)


def test_grader_scores_the_best_trial_from_the_recorded_configs():
    record = play("test-bb-optimum")
    assert record.termination == "budget_exhausted" and len(record.steps) == 2
    grade = record.grade("blackbox_best")
    assert grade.score == pytest.approx(1.0) and grade.details["best_trial"] == 2
    one = play("test-bb-optimum", max_trials=1)  # only the poor config: a hand-checkable score
    task = make_task("bb-030")
    poor = task.value(config(lr=1e-5, momentum=0.0, layers=6, optimizer=0))
    expected = (poor - task.worst) / (1.0 - task.worst)
    assert 0.0 < expected < 1.0 and one.grade("blackbox_best").score == pytest.approx(expected)
    # The grader recomputes values from the configs: tampering with reported values changes nothing.
    one.final.state["trials"][0]["value"] = 1.0
    again = grade_record(get_grader("blackbox_best"), one, source="regrade")
    assert again.score == pytest.approx(expected)


def test_grader_ignores_observation_noise_and_scores_empty_runs_zero():
    noisy = play("test-bb-optimum", noise_std=2.0)
    assert noisy.steps[1].reward != pytest.approx(1.0)
    assert noisy.grade("blackbox_best").score == pytest.approx(1.0)
    empty = play("test-bb-optimum")
    empty.final.state["trials"] = []
    assert grade_record(get_grader("blackbox_best"), empty).score == 0.0
