"""The LLM user simulator and the LLM judge, against the local OpenAI-compatible test server."""

import pytest

from rsigym.envs.tooluse import STOP, LLMUser, make_user
from rsigym.graders import get_grader, grade_record
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec

from ..agents.fake_openai import Behaviour, FakeOpenAI
from . import toy_domain  # noqa: F401


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")


def test_llm_user_plays_the_customer_and_stops():
    with FakeOpenAI() as server:
        server.script(Behaviour(content="Yes, cancel it please."), Behaviour(content=f"Great, thanks! {STOP}"))
        spec = {"kind": "llm", "model": "openai/fake-user", "litellm_kwargs": {"api_base": server.api_base}}
        user = make_user(spec)
        assert isinstance(user, LLMUser)
        env = EnvRef("rsigym/ToolUse-v0", {"domain": "toy", "user": spec}, "toy-001", None)
        record = run_episode(EpisodeSpec("0" * 32, env, AgentSpec("role_binding", "role_binding"), 3, 0, 30))
        first = server.requests[0]
    assert record.termination == "user_stop", record.error
    assert "Your goal: cancel_order" in first["messages"][0]["content"]
    assert isinstance(first["seed"], int) and first["temperature"] == 0.0  # seeded from the episode
    assert record.final.state["user_messages"][-1].endswith(STOP)


def test_llm_judge_scores_fixed_trajectories():
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "toy"}, "toy-001", None)
    record = run_episode(EpisodeSpec("0" * 32, env, AgentSpec("role_binding", "role_binding"), 0, 0, 30))
    with FakeOpenAI() as server:
        server.script(Behaviour(content='{"score": 0.75, "reason": "cancelled as asked"}'),
                      Behaviour(content="I refuse to answer in JSON"))
        judge = get_grader("llm_judge", model="openai/fake-judge", rubric="process", api_base=server.api_base)
        grade = grade_record(judge, record, source="regrade")
        broken = grade_record(judge, record, source="regrade")
        prompt = server.requests[0]["messages"][0]["content"]
    assert (grade.score, grade.details["reason"], grade.params["rubric"]) == (0.75, "cancelled as asked", "process")
    assert "followed the policy" in prompt and "- Agent calls cancel_order [write]" in prompt
    assert "- Customer: " in prompt and "## End state" in prompt  # tool results, user turns, end state
    assert grade.grader == "llm_judge/process/openai/fake-judge"  # the judge's identity
    assert broken.score is None and broken.error  # a judge that does not answer is recorded, not fatal
