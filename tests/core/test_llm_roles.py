"""A provider fault in each of the five LLM roles, through the runner, against a real HTTP server.

Each role (the LLM agent, EvoAlloc, the tool-use user simulator, the evolution candidate source,
the LLM judge) meets a 429 then a good answer (retried, calls and retries counted in the record),
and a persistent 500 (the episode ends as ``infra_error``, never ``agent_error``, and the failed
attempts are counted in the record's usage).
"""

from __future__ import annotations

import pytest

from rsigym.envs.evolution import make_task as evolution_task
from rsigym.envs.probe import make_task as probe_task
from rsigym.records import AgentSpec, EnvRef, Trajectory
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec, NamedSpec

from ..agents.fake_openai import Behaviour, FakeOpenAI, tool_call
from ..envs import toy_domain  # noqa: F401  (registers the toy tool-use domain)

FAST = {"max_retries": 2, "backoff_base_s": 0.01}
RATE_LIMITED = Behaviour(status=429, headers={"Retry-After": "0"})
ALWAYS_500 = (lambda request: Behaviour(status=500))
KEY = "0" * 32


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")


def assert_retried_once(record: Trajectory, role: str) -> None:
    usage = record.usage_by_role[role]
    assert usage.provider_retries == 1 and usage.model_calls >= 2
    assert usage.prompt_tokens > 0 and record.usage.model_calls >= usage.model_calls


def assert_infra_error_counted(record: Trajectory, role: str, attempts: int = 3) -> None:
    assert record.termination == "infra_error", (record.termination, record.error)
    assert f"provider error after {attempts} attempts" in (record.error or "")
    failed = record.usage_by_role[role]
    assert failed.model_calls >= attempts and failed.provider_retries >= attempts - 1
    assert record.usage.model_calls >= failed.model_calls  # the record counts the failed calls


# -- the agent ------------------------------------------------------------------------------
def agent_episode(server: FakeOpenAI) -> EpisodeSpec:
    params = {"api_base": server.api_base, "tool_mode": "tools", "timeout_s": 5.0, **FAST}
    env = EnvRef("rsigym/Probe-v0", {"sandbox": "local", "max_guesses": 4}, "probe-100", None)
    return EpisodeSpec(KEY, env, AgentSpec("fake", "llm", "openai/fake-model", params), 0, 0, 20)


def test_agent_rate_limit_is_retried_and_counted_per_step():
    with FakeOpenAI() as server:
        server.script(RATE_LIMITED, tool_call("act", {"guess": probe_task("probe-100").secret}))
        record = run_episode(agent_episode(server))
    assert record.termination == "agent_stop", record.error
    assert (record.steps[0].usage.model_calls, record.steps[0].usage.provider_retries) == (2, 1)
    assert_retried_once(record, "agent")


def test_agent_persistent_500_is_infra_error_with_its_calls_counted():
    with FakeOpenAI(default=ALWAYS_500) as server:
        record = run_episode(agent_episode(server))
        assert len(server.requests) == 3
    assert_infra_error_counted(record, "agent")
    assert record.steps == [] and record.usage.model_calls == 3  # before: 0 calls counted


# -- EvoAlloc -------------------------------------------------------------------------------
def evoalloc_episode(server: FakeOpenAI) -> EpisodeSpec:
    params = {"api_base": server.api_base, "revise_after_full": 2, "trial_candidates": 2, **FAST}
    env = EnvRef("rsigym/ProgramEvolution-v0", {
        "task": "bin_packing_online", "sandbox": "local", "budget": 2,
        "task_params": {"bin_packing_online": {"instances": 3, "partial_instances": 1, "items": 20}}}, None, None)
    return EpisodeSpec(KEY, env, AgentSpec("evo", "evoalloc", "openai/fake-model", params), 0, 0, 50)


def test_evoalloc_rate_limit_is_retried_and_counted():
    with FakeOpenAI(default=lambda request: Behaviour(content='{"decision": "full"}')) as server:
        server.script(RATE_LIMITED)
        record = run_episode(evoalloc_episode(server))
    assert record.termination == "budget_exhausted", record.error
    assert (record.steps[0].usage.model_calls, record.steps[0].usage.provider_retries) == (2, 1)
    assert_retried_once(record, "agent")


def test_evoalloc_persistent_500_is_infra_error_not_agent_error():
    with FakeOpenAI(default=ALWAYS_500) as server:
        record = run_episode(evoalloc_episode(server))
    assert_infra_error_counted(record, "agent")  # a rate limit there used to be agent_error


# -- the tool-use user simulator ------------------------------------------------------------
def user_episode(server: FakeOpenAI) -> EpisodeSpec:
    user = {"kind": "llm", "model": "openai/fake-user", "api_base": server.api_base, **FAST}
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "toy", "user": user}, "toy-001", None)
    return EpisodeSpec(KEY, env, AgentSpec("role_binding", "role_binding"), 3, 0, 30)


def test_user_simulator_rate_limit_is_retried_and_counted():
    with FakeOpenAI() as server:
        server.script(RATE_LIMITED, Behaviour(content="Yes, cancel it please."), Behaviour(content="Thanks! ###STOP###"))
        record = run_episode(user_episode(server))
    assert record.termination == "user_stop", record.error
    assert_retried_once(record, "user")
    assert "agent" not in record.usage_by_role  # a scripted agent calls no model


def test_user_simulator_persistent_500_is_infra_error():
    with FakeOpenAI(default=ALWAYS_500) as server:
        record = run_episode(user_episode(server))
    assert_infra_error_counted(record, "user")


# -- the evolution candidate source ---------------------------------------------------------
def source_episode(server: FakeOpenAI) -> EpisodeSpec:
    source = {"kind": "llm", "model": "openai/fake-coder", "api_base": server.api_base, **FAST}
    env = EnvRef("rsigym/ProgramEvolution-v0", {"task": "circle_packing_26", "sandbox": "local", "budget": 1,
                                                 "source": source}, None, None)
    return EpisodeSpec(KEY, env, AgentSpec("always_full", "always_full"), 0, 0, 20)


def test_candidate_source_rate_limit_is_retried_and_counted():
    program = evolution_task("circle_packing_26").library["hex"]
    with FakeOpenAI(default=lambda request: Behaviour(content=f"```python\n{program}```")) as server:
        server.script(RATE_LIMITED)
        record = run_episode(source_episode(server))
    assert record.termination == "budget_exhausted", record.error
    assert_retried_once(record, "candidate_source")


def test_candidate_source_persistent_500_is_infra_error():
    with FakeOpenAI(default=ALWAYS_500) as server:
        record = run_episode(source_episode(server))
    assert_infra_error_counted(record, "candidate_source")


# -- the LLM judge --------------------------------------------------------------------------
def judged_episode(server: FakeOpenAI) -> EpisodeSpec:
    judge = NamedSpec("llm_judge", {"model": "openai/fake-judge", "api_base": server.api_base, **FAST})
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "toy"}, "toy-001", None)
    return EpisodeSpec(KEY, env, AgentSpec("role_binding", "role_binding"), 0, 0, 30, (judge,))


def test_judge_rate_limit_is_retried_and_its_usage_is_in_the_grade():
    with FakeOpenAI() as server:
        server.script(RATE_LIMITED, Behaviour(content='{"score": 1, "reason": "done"}'))
        record = run_episode(judged_episode(server))
    grade = record.grade("llm_judge/outcome/openai/fake-judge")  # the grade is named for its judge
    assert grade is not None and grade.score == 1.0 and grade.error is None
    assert (grade.details["usage"]["model_calls"], grade.details["usage"]["provider_retries"]) == (2, 1)


def test_judge_persistent_500_is_an_infra_error_grade_with_its_calls():
    with FakeOpenAI(default=ALWAYS_500) as server:
        record = run_episode(judged_episode(server))
    assert record.termination == "user_stop"  # the episode itself was fine
    grade = record.grade("llm_judge/outcome/openai/fake-judge")
    assert grade is not None and grade.score is None
    assert grade.error is not None and grade.error.startswith("infra_error: LLMError: judge model openai/fake-judge")
    assert grade.details["usage"]["model_calls"] == 3 and grade.details["usage"]["provider_retries"] == 2


# -- the command line -----------------------------------------------------------------------
def test_user_and_judge_model_flags_reach_the_user_and_the_judge(tmp_path, capsys):
    from rsigym.cli import main
    from rsigym.records.jsonl import read_records

    from ..conftest import write_scenario

    with FakeOpenAI() as server:
        server.default = lambda request: Behaviour(
            content='{"score": 0.5, "reason": "ok"}' if request["model"] == "cli-judge" else "Thanks. ###STOP###")
        user = {"kind": "llm", "model": "openai/in-file", "api_base": server.api_base, **FAST}
        judge = {"name": "llm_judge", "params": {"api_base": server.api_base, **FAST}}  # the default model
        path = write_scenario(tmp_path / "s.yaml", env={"id": "rsigym/ToolUse-v0", "kwargs": {"domain": "toy", "user": user}},
                              tasks=["toy-001"], conditions=["none"], seeds=[0], max_steps=30,
                              agents=[{"id": "role_binding", "kind": "role_binding"}], graders=["db_state", judge])
        argv = ["run", str(path), "--out", str(tmp_path / "out"), "--workers", "0", "--no-progress",
                "--user-model", "openai/cli-user", "--judge-model", "openai/cli-judge"]
        assert main(argv) == 0, capsys.readouterr().err
        models = [r["model"] for r in server.requests]
    [record] = read_records(tmp_path / "out" / "records.jsonl").records
    assert set(models) == {"cli-user", "cli-judge"}
    assert models[:2] == ["cli-user", "cli-judge"]  # the endpoint check reached both flags' models first
    assert record.usage_by_role["user"].model_calls == models.count("cli-user") - 1 > 0
    grade = record.grade("llm_judge/outcome/openai/cli-judge")  # the flag's model names the judge
    assert grade is not None and grade.score == 0.5 and grade.params["model"] == "openai/cli-judge"
    assert "openai/cli-user" in (tmp_path / "out" / "scenario.yaml").read_text()  # the run says what ran


def test_user_and_judge_model_flags_refuse_scenarios_without_a_user_or_judge(tmp_path, capsys):
    from rsigym.cli import main

    from ..conftest import write_scenario

    path = write_scenario(tmp_path / "s.yaml")  # Probe-v0: no user, no judge
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--user-model", "openai/x"]) == 2
    assert "--user-model: scenario 'probe-test' names no simulated user" in capsys.readouterr().err
    assert main(["run", str(path), "--out", str(tmp_path / "o"), "--judge-model", "openai/x"]) == 2
    assert "--judge-model: scenario 'probe-test' has no grader that uses a model" in capsys.readouterr().err
    assert not (tmp_path / "o").exists()


def test_a_scripted_user_becomes_an_llm_user_keeping_its_reply_limit(tmp_path):
    from rsigym.cli.run_command import _override_user_model
    from rsigym.scenario import load_scenario

    from ..conftest import write_scenario

    path = write_scenario(tmp_path / "s.yaml", env={"id": "rsigym/ToolUse-v0", "kwargs": {
        "domain": "toy", "user": {"kind": "scripted", "max_replies": 4}}}, tasks=["toy-001"], conditions=["none"],
        agents=[{"id": "role_binding", "kind": "role_binding"}], graders=["db_state"])
    scenario = _override_user_model(load_scenario(path), "openai/u")
    assert scenario.env_kwargs["user"] == {"kind": "llm", "model": "openai/u", "max_replies": 4}
