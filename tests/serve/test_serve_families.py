"""Every bundled family, served: OpenEnv's own client and ``rsigym.remote.make`` reset, step and
read state, and the served episodes' records regrade to the grades of the same episode run
in-process by the runner (``run_episode``), step for step.

Each family runs in the small settings its conformance tests use (``tests/security/env_fuzz_support``:
local sandbox, tiny pools, an analytic trial runner for HyperparamSearch). Both sides get the
same JSON actions: the env's first example action, then seeded samples of its action space,
valid or not (an invalid one is an error observation on both sides). ``test_sandbox_stays_docker``
serves the code-executing families with the Docker sandbox and checks the records say so.
"""

from __future__ import annotations

import asyncio

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

from openenv.core.generic_client import GenericEnvClient  # noqa: E402

import rsigym.remote as remote  # noqa: E402
from rsigym.grader import get_grader  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.records import AgentSpec, EnvRef, episode_key, to_jsonable  # noqa: E402
from rsigym.regrade import regrade  # noqa: E402
from rsigym.runner import run_episode  # noqa: E402
from rsigym.scenario import EpisodeSpec  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402
from rsigym.serve.recorder import recordable_kwargs  # noqa: E402
from tests.security.env_fuzz_support import env_kwargs, make_env, registered_env_ids  # noqa: E402
from tests.serve.support import family_graders, replay_actions  # noqa: E402

MAX_STEPS = 3
SEED = 11
FAMILIES = [env_id for env_id in registered_env_ids() if env_id.startswith("rsigym/")]


def _variant(env_id: str) -> tuple[str, dict]:
    label, factory = env_kwargs(env_id)[0]
    return label, factory()


def _in_process(env_id: str, kwargs: dict, actions: list, task_id: str | None):
    env = EnvRef(env_id, kwargs, task_id)
    agent = AgentSpec("replay", "serve_replay", params={"actions": actions})
    key = episode_key(EnvRef(env_id, recordable_kwargs(kwargs), task_id), agent, SEED, 0)  # kwargs may hold a stand-in
    return run_episode(EpisodeSpec(key, env, agent, SEED, 0, MAX_STEPS))


def _drive_openenv_client(url: str, actions: list, task_id: str | None) -> dict:
    with GenericEnvClient(base_url=url).sync() as client:
        result = client.reset(seed=SEED, task_id=task_id, agent_id="openenv")
        assert result.done is False and "text" in result.observation
        for action in actions[:MAX_STEPS]:
            payload = {"rsigym_text_action": action} if isinstance(action, str) else action
            result = client.step(payload)
            if result.done:
                break
        return client.state()


def _drive_remote(url: str, actions: list, task_id: str | None) -> tuple[list, dict]:
    env = remote.make(url, agent_id="remote-gym")
    try:
        observation, info = env.reset(seed=SEED, options={"task_id": task_id})
        assert env.observation_space.contains(observation) or "text" in observation
        seen = [observation]
        for action in actions[:MAX_STEPS]:
            observation, reward, terminated, truncated, info = env.step(action)
            seen.append(observation)
            if terminated or truncated:
                break
        return seen, env.state()
    finally:
        env.close()


@pytest.mark.parametrize("env_id", FAMILIES, ids=[e.split("/")[-1] for e in FAMILIES])
def test_served_family_matches_in_process(env_id, tmp_path):
    label, kwargs = _variant(env_id)
    local = make_env(env_id, label)
    try:
        actions = replay_actions(local, MAX_STEPS, SEED)
        first_task = kwargs.get("task") or (local.unwrapped.list_tasks()[0]
                                            if hasattr(local.unwrapped, "list_tasks") else None)
    finally:
        local.close()
    baseline = _in_process(env_id, kwargs, actions, first_task)
    assert baseline.termination != "infra_error", baseline.error

    config = ServeConfig(env_id, kwargs, max_steps=MAX_STEPS, run_dir=tmp_path / "served", port=0, max_sessions=4)
    with ServerThread(config) as server:
        state = _drive_openenv_client(server.url, actions, first_task)
        observations, remote_state = _drive_remote(server.url, actions, first_task)
    for seen in (state, remote_state):  # state says where the session stands, and nothing graders read
        assert seen["done"] is True and seen["step_count"] == len(baseline.steps)
        assert seen["task_id"] == baseline.env.task_id and seen["seed"] == SEED
        assert len(seen["episode_id"]) == 32

    served = read_records(tmp_path / "served" / "records.jsonl").records
    assert [r.agent.id for r in served] == ["openenv", "remote-gym"]
    for record in served:
        assert record.termination == baseline.termination and record.env.task_id == baseline.env.task_id
        assert [s.action for s in record.steps] == [s.action for s in baseline.steps]
        assert [s.observation for s in record.steps] == [s.observation for s in baseline.steps]
        assert [(s.reward, s.terminated, s.truncated, s.info) for s in record.steps] == \
            [(s.reward, s.terminated, s.truncated, s.info) for s in baseline.steps]
        assert record.final is not None
        if record.final.sha256 != baseline.final.sha256:  # equal but for what differs between two in-process runs
            again = _in_process(env_id, kwargs, actions, first_task)
            noisy = {k for k in baseline.final.state if baseline.final.state[k] != again.final.state.get(k)}
            assert noisy, "the served snapshot differs where two in-process runs agree"
            assert {k: v for k, v in record.final.state.items() if k not in noisy} == \
                {k: v for k, v in baseline.final.state.items() if k not in noisy}
    assert to_jsonable(observations[-1]) == to_jsonable(_last_observation(env_id, label, actions, first_task))

    graders = [name for name in family_graders(env_id) if "judge" not in name]
    assert graders, f"no family grader for {env_id}"
    for name in graders:
        grader = get_grader(name)
        expected = regrade([baseline], grader)[0].grades[-1]
        for record in regrade(served, grader):
            grade = record.grades[-1]
            assert (grade.score, grade.error) == (expected.score, expected.error), name


def _last_observation(env_id: str, label: str, actions: list, task_id: str | None):
    import gymnasium as gym

    env = make_env(env_id, label)
    env = gym.wrappers.TimeLimit(env.unwrapped, MAX_STEPS)
    try:
        observation, _ = env.reset(seed=SEED, options={"task_id": task_id})
        for action in actions[:MAX_STEPS]:
            observation, _, terminated, truncated, _ = env.step(action)
            if terminated or truncated:
                break
        return observation
    finally:
        env.close()


def test_async_remote_env_runs_an_episode(tmp_path):
    config = ServeConfig("rsigym/Probe-v0", {"sandbox": "local"}, run_dir=tmp_path / "served", port=0)

    async def bisect(url: str) -> tuple[float, bool]:
        env = await remote.make_async(url, agent_id="async")
        try:
            low, high = 0, 100
            await env.reset(seed=3, options={"task_id": "probe-000"})
            while True:
                guess = (low + high) // 2
                observation, reward, terminated, truncated, _ = await env.step({"guess": guess})
                low, high = (guess + 1, high) if observation["feedback"] == 1 else (low, guess - 1)
                if terminated or truncated:
                    return reward, terminated
        finally:
            await env.close()

    with ServerThread(config) as server:
        assert asyncio.run(bisect(server.url)) == (1.0, True)
    record, = read_records(tmp_path / "served" / "records.jsonl").records
    assert record.termination == "agent_stop" and record.agent.id == "async"


@pytest.mark.docker
@pytest.mark.parametrize("env_id,kwargs", [
    ("rsigym/Probe-v0", {"sandbox": "docker"}),
    ("rsigym/CodeRepair-v0", {"sandbox": "docker", "problems": 2, "rounds": 2}),
])
def test_sandbox_stays_docker(env_id, kwargs, tmp_path):
    config = ServeConfig(env_id, kwargs, max_steps=2, run_dir=tmp_path / "served", port=0)
    with ServerThread(config) as server:
        env = remote.make(server.url)
        try:
            env.reset(seed=1)
            for action in env.example_actions[:1] * 2:
                _, _, terminated, truncated, _ = env.step(action)
                if terminated or truncated:
                    break
        finally:
            env.close()
    record, = read_records(tmp_path / "served" / "records.jsonl").records
    assert record.sandbox is not None and record.sandbox.get("provider") == "docker", record.sandbox
    assert not record.sandbox.get("fallback_reason")


def test_llm_agent_runs_unchanged_against_a_served_env(tmp_path):
    from rsigym.agent import task_info
    from rsigym.agents import LLMAgent

    agent = LLMAgent("openai/gpt-4o-mini", api_key="sk-not-used", tool_mode="json",
                     litellm_kwargs={"mock_response": '{"guess": 50}'})
    config = ServeConfig("rsigym/Probe-v0", {"sandbox": "local"}, max_steps=3, run_dir=tmp_path / "served", port=0)
    with ServerThread(config) as server, remote.make(server.url, agent_id="llm") as env:
        observation, info = env.reset(seed=0, options={"task_id": "probe-100"})
        about = task_info(env, info=info, task_id="probe-100")
        assert about["env_id"] == "rsigym/Probe-v0" and about["action_schema"]["required"] == ["guess"]
        agent.reset(about, seed=0)
        while True:
            observation, reward, terminated, truncated, info = env.step(agent.act(observation))
            if terminated or truncated:
                break
    record, = read_records(tmp_path / "served" / "records.jsonl").records
    assert [s.action for s in record.steps] == [{"guess": 50}] * 3 and record.termination == "max_steps"
