"""LLMAgent end to end through LiteLLM's openai/ provider against a real HTTP server on 127.0.0.1."""

import json

import pytest

from rsigym.agents import LLMAgent, make_agent
from rsigym.llm import LLMError
from rsigym.envs.probe import make_task
from rsigym.records.jsonl import read_records
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import RECORDS_FILE, run_episode, run_scenario
from rsigym.scenario import EpisodeSpec, NamedSpec, load_scenario

from ..conftest import write_scenario
from .fake_openai import USAGE, Behaviour, FakeOpenAI, tool_call

TASK = "probe-100"
SECRET = make_task(TASK).secret
FAST = {"backoff_base_s": 0.01, "backoff_max_s": 0.05, "timeout_s": 5.0}


def llm_episode(server, *, task=TASK, seed=0, **params):
    params = {"api_base": server.api_base, "api_key_env": "FAKE_OPENAI_KEY", **FAST, **params}
    agent = AgentSpec("fake", "llm", "openai/fake-model", params)
    env = EnvRef("rsigym/Probe-v0", {"sandbox": "local", "max_guesses": 4}, task, None)
    return EpisodeSpec("0" * 32, env, agent, seed, 0, 20, (NamedSpec("probe_answer", {"sandbox": "local"}),))


@pytest.fixture(autouse=True)
def fake_key(monkeypatch):
    monkeypatch.setenv("FAKE_OPENAI_KEY", "sk-test-not-a-secret")


def test_tool_calls_end_to_end_with_reported_usage():
    with FakeOpenAI() as server:
        server.script(tool_call("act", {"guess": 10}), tool_call("act", {"guess": SECRET}))
        record = run_episode(llm_episode(server, tool_mode="tools"))
    assert record.termination == "agent_stop", record.error
    assert [s.action for s in record.steps] == [{"guess": 10}, {"guess": SECRET}]
    assert record.grade("probe_answer").score == 1.0
    for step in record.steps:  # the token counts the server reported, per step
        assert (step.usage.prompt_tokens, step.usage.completion_tokens) == (17, 5)
        assert step.usage.model_calls == 1
    assert record.usage.prompt_tokens == 2 * USAGE["prompt_tokens"]
    first, second = server.requests
    assert first["tools"][0]["function"]["name"] == "act"
    assert first["tools"][0]["function"]["parameters"]["properties"]["guess"]["maximum"] == 100
    assert first["seed"] == 0 and first["temperature"] == 0.0
    # the second request answers the first tool call with the env's next observation
    tool_message = second["messages"][-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_1"
    assert "Guess 1: 10 ->" in tool_message["content"]
    assert "sk-test-not-a-secret" not in json.dumps(record.to_dict())


def test_json_mode_end_to_end():
    with FakeOpenAI() as server:
        server.script(Behaviour(content='```json\n{"guess": 7}\n```'), Behaviour(content=f'{{"guess": {SECRET}}}'))
        record = run_episode(llm_episode(server, tool_mode="json"))
    assert record.termination == "agent_stop", record.error
    assert [s.action for s in record.steps] == [{"guess": 7}, {"guess": SECRET}]
    request = server.requests[0]
    assert "tools" not in request
    assert '"maximum": 100' in request["messages"][0]["content"]  # the schema is in the prompt
    # and, as LiteLLM says a model of a local server takes it, in a structured-output response_format
    assert request["response_format"]["json_schema"]["schema"]["properties"]["guess"]["maximum"] == 100
    assert record.usage.completion_tokens == 10


def test_auto_mode_uses_litellm_capabilities():
    assert make_agent(AgentSpec("a", "llm", "openai/gpt-4o-mini")).tool_mode == "auto"
    agent = make_agent(AgentSpec("a", "llm", "openai/gpt-4o-mini"))
    agent.reset({"env_id": "x", "action_schema": {"type": "object"}}, 0)
    assert agent.mode == "tools"
    agent = make_agent(AgentSpec("a", "llm", "openai/some-local-model"))
    agent.reset({"env_id": "x", "action_schema": {"type": "object"}}, 0)
    assert agent.mode == "json"


@pytest.mark.parametrize("fault", [
    pytest.param(Behaviour(status=429, headers={"Retry-After": "0"}), id="429-retry-after"),
    pytest.param(Behaviour(status=500), id="500"),
    pytest.param(Behaviour(status=503), id="503"),
    pytest.param(Behaviour(hang_s=3.0), id="hang-past-timeout"),
    pytest.param(Behaviour(raw_body=b'{"choices": [{"mess'), id="malformed-body"),
])
def test_provider_faults_are_retried_then_succeed(fault):
    with FakeOpenAI() as server:
        server.script(fault, tool_call("act", {"guess": SECRET}))
        record = run_episode(llm_episode(server, tool_mode="tools", timeout_s=1.0))
    assert record.termination == "agent_stop", record.error
    assert record.steps[0].usage.provider_retries == 1 and record.steps[0].usage.model_calls == 2
    assert len(server.requests) == 2


def test_retry_after_header_sets_the_wait():
    with FakeOpenAI() as server:
        server.script(Behaviour(status=429, headers={"Retry-After": "1"}), tool_call("act", {"guess": SECRET}))
        agent = LLMAgent("openai/fake-model", api_base=server.api_base, api_key="sk-x", tool_mode="tools", **FAST)
        agent.reset({"env_id": "rsigym/Probe-v0", "action_schema": {"type": "object"}}, 0)
        assert agent.act({"text": "go"}) == {"guess": SECRET}
    [event] = agent.retry_log
    assert "RateLimitError" in event.error and event.delay_s >= 1.0  # the server's hint, not our 0.01 s


def test_provider_failure_after_retries_is_a_recorded_infra_error():
    with FakeOpenAI(default=lambda request: Behaviour(status=500)) as server:
        server.script(tool_call("act", {"guess": 3}))  # one good step, then the provider dies
        record = run_episode(llm_episode(server, tool_mode="tools", max_retries=2))
    assert record.termination == "infra_error"
    assert "provider error after 3 attempts" in record.error
    assert [s.action for s in record.steps] == [{"guess": 3}]  # the steps so far are kept
    assert record.grades == []


def test_non_retryable_error_is_not_retried():
    with FakeOpenAI(default=lambda request: Behaviour(status=401)) as server:
        record = run_episode(llm_episode(server, tool_mode="tools"))
        assert len(server.requests) == 1
    assert record.termination == "infra_error" and "not retried" in record.error


@pytest.mark.parametrize("bad", [
    pytest.param(Behaviour(content="I think 42 is a good guess."), id="not-json"),
    pytest.param(Behaviour(content='{"guess": "forty-two"}'), id="json-wrong-for-schema"),
    pytest.param(tool_call("act", {"guess": 1000}), id="tool-args-out-of-range"),
    pytest.param(tool_call("act", '{"guess": 4'), id="tool-args-not-json"),
    pytest.param(tool_call("search_web", {"q": "secret"}), id="unknown-tool"),
])
def test_invalid_reply_is_fed_back_and_corrected(bad):
    with FakeOpenAI() as server:
        server.script(bad, tool_call("act", {"guess": SECRET}))
        record = run_episode(llm_episode(server, tool_mode="tools"))
    assert record.termination == "agent_stop", record.error
    assert record.steps[0].usage.invalid_replies == 1
    feedback = server.requests[1]["messages"][-1]
    assert feedback["content"].startswith("Error: ")
    if bad.tool_call:  # a tool call is answered with a tool message, as the protocol requires
        assert feedback["role"] == "tool" and feedback["tool_call_id"] == "call_1"


def test_persistent_invalid_replies_become_an_invalid_action_the_env_records():
    with FakeOpenAI(default=lambda request: Behaviour(content="no idea")) as server:
        record = run_episode(llm_episode(server, tool_mode="json", max_invalid_retries=1))
    # each turn: 2 replies, both invalid -> explicit invalid action -> env error observation
    assert record.termination == "agent_error"  # the env's limit on invalid actions (3) was passed
    assert len(record.steps) == 4
    first = record.steps[0]
    assert first.action["rsigym_invalid_action"]["raw"] == "no idea"
    assert first.info["error"].startswith("the agent produced no valid action: the reply is not valid JSON")
    assert first.usage.invalid_replies == 2 and first.usage.model_calls == 2
    assert record.final.state["guesses"] == []


def test_battery_goes_on_through_faults_and_loses_no_record(tmp_path):
    """Scripted faults hit some episodes; every episode still has exactly one record."""
    with FakeOpenAI(default=lambda request: tool_call("act", {"guess": 50})) as server:
        server.script(Behaviour(status=500), Behaviour(status=500), Behaviour(status=500))  # kills one episode
        server.script(Behaviour(hang_s=2.0), Behaviour(content="junk"), tool_call("nope", {}))
        path = write_scenario(
            tmp_path / "s.yaml", tasks={"split": "test", "limit": 3}, conditions=["none"], seeds=[0, 1],
            env={"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "local", "max_guesses": 3}},
            agents=[{"id": "fake", "kind": "llm", "model": "openai/fake-model",
                     "params": {"api_base": server.api_base, "api_key_env": "FAKE_OPENAI_KEY",
                                "tool_mode": "tools", "max_retries": 2, **FAST, "timeout_s": 1.0}}],
            graders=[{"name": "probe_answer", "params": {"sandbox": "local"}}])
        scenario = load_scenario(path)
        # one episode at a time: the scripted faults reach the episodes in a known order (with 16 in
        # flight the three 500s spread over episodes, each of which then passes on a retry)
        summary = run_scenario(scenario, tmp_path / "out", workers=0, progress=False, concurrency=1)
    records = read_records(tmp_path / "out" / RECORDS_FILE).records
    assert summary.total == len(records) == 6
    assert len({r.episode_key for r in records}) == 6
    assert sum(r.termination == "infra_error" for r in records) == 1
    assert all(r.termination == "budget_exhausted" for r in records if r.termination != "infra_error")


def test_cost_comes_from_litellm_price_map():
    from rsigym.llm import load_litellm

    with FakeOpenAI() as server:
        server.script(tool_call("act", {"guess": 1}))
        agent = LLMAgent("openai/gpt-4o-mini", api_base=server.api_base, api_key="sk-x", tool_mode="tools")
        agent.reset({"env_id": "rsigym/Probe-v0", "action_schema": {"type": "object"}}, 0)
        agent.act({"text": "go"})
    info = load_litellm().get_model_info("gpt-4o-mini")
    expected = 17 * info["input_cost_per_token"] + 5 * info["output_cost_per_token"]
    assert expected > 0 and agent.last_usage.cost_usd == pytest.approx(expected)


def test_missing_credentials_fail_fast_with_the_variable_to_set(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    agent = LLMAgent("openai/gpt-4o-mini")
    agent.reset({"env_id": "x", "action_schema": {"type": "object"}}, 0)
    with pytest.raises(LLMError, match="no credentials; set OPENAI_API_KEY"):
        agent.act({"text": "go"})
    agent = LLMAgent("openai/gpt-4o-mini", api_key_env="NOT_SET_ANYWHERE")
    agent.reset({"env_id": "x", "action_schema": {"type": "object"}}, 0)
    with pytest.raises(LLMError, match="NOT_SET_ANYWHERE named by api_key_env is not set"):
        agent.act({"text": "go"})


def test_local_server_needs_no_key(monkeypatch):
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    with FakeOpenAI() as server:
        server.script(Behaviour(content='{"guess": 3}'))
        agent = LLMAgent("openai/my-local-model", api_base=server.api_base)
        agent.reset({"env_id": "x", "action_schema": {"type": "object"}}, 0)
        assert agent.act({"text": "go"}) == {"guess": 3}


def test_scenario_rejects_a_key_in_params():
    with pytest.raises(Exception, match="api_key_env"):
        make_agent(AgentSpec("a", "llm", "openai/gpt-4o-mini", {"api_key": "sk-oops"}))


@pytest.mark.llm
@pytest.mark.skipif(not __import__("os").environ.get("OPENAI_API_KEY"), reason="needs OPENAI_API_KEY")
def test_hosted_model_plays_probe():  # pragma: no cover - needs a key
    spec = EpisodeSpec("0" * 32, EnvRef("rsigym/Probe-v0", {"sandbox": "local"}, TASK, None),
                       AgentSpec("gpt", "llm", "openai/gpt-4o-mini", {}), 0, 0, 20,
                       (NamedSpec("probe_answer", {"sandbox": "local"}),))
    record = run_episode(spec)
    assert record.termination in ("agent_stop", "budget_exhausted") and record.usage.cost_usd > 0
