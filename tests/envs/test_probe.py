import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rsigym.envs  # noqa: F401
from rsigym.envs import JsonActions, text_space
from rsigym.envs.probe import make_task, task_ids
from rsigym.envs.probe.env import ProbeEnv
from rsigym.sandbox import LocalSandbox


def test_check_env_passes():
    env = gym.make("rsigym/Probe-v0", sandbox="local")
    check_env(env.unwrapped, skip_render_check=True)
    env.close()


def test_tasks_are_deterministic_and_splits_disjoint():
    assert make_task("probe-007") == make_task("probe-007")
    assert set(task_ids("train")).isdisjoint(task_ids("test"))
    assert len(task_ids("all")) == 150
    secrets = {make_task(t).secret for t in task_ids("test")}
    assert len(secrets) > 20 and all(0 <= s <= 100 for s in secrets)
    with pytest.raises(ValueError, match="not a probe task id"):
        make_task("task-1")


def test_oracle_runs_in_the_sandbox_and_matches_secret():
    task = make_task("probe-101", 0, 100)
    env = gym.make("rsigym/Probe-v0", sandbox="local").unwrapped
    env.reset(seed=0, options={"task_id": "probe-101"})
    _, reward, terminated, _, info = env.step({"guess": task.secret})
    assert (reward, terminated, info["termination"]) == (1.0, True, "agent_stop")
    env.reset(seed=0, options={"task_id": "probe-101"})
    obs, reward, terminated, _, info = env.step({"guess": min(task.secret + 1, 100)})
    assert reward == 0.0 and not terminated and obs["feedback"] in (1, 2)
    assert info["budget"] == {"guesses_used": 1, "guesses_left": 9}
    env.close()


def test_sandbox_instance_is_injected_and_not_closed():
    with LocalSandbox() as sandbox:
        env = gym.make("rsigym/Probe-v0", sandbox=sandbox).unwrapped
        env.reset(seed=1)
        env.step({"guess": 3})
        env.close()
        assert sandbox.exec(["python3", "-c", "print(1)"]).stdout.strip() == "1"


def test_budget_and_reverse_condition():
    env = gym.make("rsigym/Probe-v0", sandbox="local", max_guesses=2, condition="reverse_hints").unwrapped
    task = make_task("probe-102")
    env.reset(seed=0, options={"task_id": "probe-102"})
    low_guess = 0 if task.secret > 0 else 100
    obs, _, terminated, _, _ = env.step({"guess": low_guess})
    truth = "higher" if low_guess < task.secret else "lower"
    assert ("none", "higher", "lower", "correct")[obs["feedback"]] != truth  # reversed
    _, _, terminated, _, info = env.step({"guess": low_guess})
    assert terminated and info["termination"] == "budget_exhausted"
    env.close()


def test_json_actions_report_the_bad_value():
    actions = JsonActions({"type": "object", "properties": {"x": {"type": "integer", "maximum": 3}},
                           "required": ["x"], "additionalProperties": False})
    assert actions.parse({"x": 2}) == ({"x": 2}, None)
    assert actions.parse({"x": 9})[1] == "invalid action at x: 9 is greater than the maximum of 3"
    assert "'y' was unexpected" in actions.parse({"x": 1, "y": 0})[1]
    assert actions.parse(object())[1].startswith("invalid action: cannot store")


def test_text_space_holds_prompt_text():
    space = text_space(64)
    assert space.contains("Guess 1: 50 -> higher\nReply with {\"guess\": <integer>}.")
    assert isinstance(space.sample(), str)


@pytest.mark.parametrize("kwargs, message", [
    ({"max_guesses": -3}, "max_guesses must be >= 1, got -3"),
    ({"max_guesses": 0}, "max_guesses must be >= 1, got 0"),
    ({"max_invalid_actions": -1}, "max_invalid_actions must be >= 0, got -1"),
    ({"max_guesses": 2.5}, "max_guesses must be an integer, got 2.5"),
    ({"low": "0"}, "low must be an integer, got '0'"),
    ({"low": 5, "high": 5}, "need low < high, got low=5, high=5"),
])
def test_bad_kwargs_are_refused_with_the_envs_own_message(kwargs, message):
    with pytest.raises(ValueError) as caught:
        ProbeEnv(sandbox="local", **kwargs)
    assert str(caught.value) == message


@pytest.mark.docker
def test_checks_in_a_docker_sandbox_go_through_its_exec_server(docker_client, sandbox_image):
    from rsigym.envs.probe import run_oracle
    from rsigym.sandbox import DockerSandbox, SandboxLimits

    sandbox = DockerSandbox(sandbox_image, SandboxLimits(memory_mb=128, pids=64), client=docker_client)
    try:
        env = ProbeEnv(sandbox=sandbox, max_guesses=6)
        task = make_task("probe-101", 0, 100)
        env.reset(seed=0, options={"task_id": "probe-101"})
        guesses = [0, 100, 50, task.secret]
        for guess in guesses:
            env.step({"guess": guess})
        shown = env.snapshot()["feedback"]
        assert shown[-1] == "correct" and env.snapshot()["solved"]
        assert sandbox._server is not None and sandbox._server.starts == 1  # one server, every check through it
        # the plain exec path answers the same
        assert run_oracle(sandbox, guesses) == shown
        env.close()
    finally:
        sandbox.remove()
