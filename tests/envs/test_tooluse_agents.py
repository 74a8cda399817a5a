"""Scripted TRACE agents on the test domain: each fails exactly where its design says."""

import pytest

from rsigym.agents import make_agent
from rsigym.records import AgentSpec, EnvRef
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec, NamedSpec

from . import toy_domain  # noqa: F401  (registers the "toy" domain)

GRADERS = tuple(NamedSpec(g) for g in ("db_state", "outputs", "action_match", "action_match_mapped", "reward"))


def play(kind, condition=None, task="toy-001", model=None, seed=0, rep=0, **params):
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "toy"}, task, condition and {"name": condition, "params": {}})
    spec = EpisodeSpec("0" * 32, env, AgentSpec(kind, kind, model, params), seed, rep, 30, GRADERS)
    record = run_episode(spec)
    assert record.termination == "user_stop", record.error
    return {g.grader: g.score for g in record.grades}, record


@pytest.mark.parametrize("kind", ["role_binding", "name_bound", "description_reader"])
def test_every_agent_solves_the_unmodified_task(kind):
    scores, record = play(kind)
    assert scores == {"db_state": 1.0, "outputs": 1.0, "action_match": 1.0, "action_match_mapped": 1.0, "reward": 1.0}
    assert record.steps[-1].action["message"].startswith("Your request has been handled.")


@pytest.mark.parametrize("kind, condition, expected", [
    # a rename: role_binding behaves the same, only the name-bound grader drops
    ("role_binding", "rename_tools", {"db_state": 1.0, "action_match": 0.0, "action_match_mapped": 1.0}),
    # name_bound really fails: the end state is wrong
    ("name_bound", "rename_tools", {"db_state": 0.0, "action_match": 0.0, "action_match_mapped": 0.0}),
    # misleading names fool the description reader, not role_binding
    ("description_reader", "misleading_names", {"db_state": 0.0, "reward": 0.0}),
    ("role_binding", "misleading_names", {"db_state": 1.0, "reward": 1.0}),
    ("role_binding", "paraphrase_descriptions", {"db_state": 1.0, "action_match": 1.0}),
])
def test_agents_fail_where_designed(kind, condition, expected):
    scores, _ = play(kind, condition)
    assert {k: scores[k] for k in expected} == expected


def test_error_rate_slips_deterministically():
    outcomes = [play("role_binding", seed=s, rep=r, error_rate=0.5)[0]["db_state"] for s in range(4) for r in range(4)]
    again = [play("role_binding", seed=s, rep=r, error_rate=0.5)[0]["db_state"] for s in range(4) for r in range(4)]
    assert outcomes == again and 0 < sum(outcomes) < len(outcomes)
    with pytest.raises(Exception, match="error_rate"):
        make_agent(AgentSpec("x", "role_binding", params={"error_rate": 2}))


@pytest.mark.parametrize("kind, condition, db_state", [
    ("role_binding", None, 1.0), ("role_binding", "rename_tools", 1.0), ("name_bound", "rename_tools", 0.0),
])
def test_offline_models_run_the_llm_agent_path(kind, condition, db_state):
    scores, record = play("llm", condition, model=f"rsigym/{kind}", tool_mode="tools")
    assert scores["db_state"] == db_state
    assert record.usage.model_calls >= 3
