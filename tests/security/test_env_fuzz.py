"""Hostile agent actions (issue 14, items 6 and 9): each attack that made an env raise, now an
error observation; the runner records such an episode as the agent's doing, never infra_error.

The generic hypothesis fuzz over every registered env id is in tests/test_env_conformance.py;
``benchmarks/env_fuzz.py`` runs it with 2,000 actions per env id.
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import pytest

import rsigym.envs  # noqa: F401
from rsigym.records.action_limits import ActionLimits, action_limit_error, short_repr
from rsigym.agent import register_agent
from rsigym.records.jsonl import RecordWriter, read_records
from rsigym.records import AgentSpec, EnvRef, Usage, canonical_json, to_jsonable
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec


def nested(depth: int, kind: str = "list") -> Any:
    value: Any = "bottom"
    for _ in range(depth):
        value = [value] if kind == "list" else {"k": value}
    return value


SURROGATE = {"message": "\ud800 a lone surrogate"}  # valid to the env; its record line must still encode

# The review's crashing actions on ToolUse-v0 (240 retail and 204 airline crashes in 2,000).
REVIEW_ATTACKS = [
    {"tool": ["x"], "arguments": {}},                           # unhashable tool name
    {"tool": ["x"]},
    {"kind": None, "tool": 0, "arguments": "{}", "message": ""},  # null kind (typed form)
    {"kind": "refund", "tool": 0, "arguments": "{}", "message": ""},  # unknown kind
    {"kind": 0, "tool": 0, "message": ""},                        # typed call, no arguments key
    {"kind": 0, "tool": -1, "arguments": "{}", "message": ""},    # index out of range (was: last tool)
    {"kind": 0, "tool": 0, "arguments": "[" * 5000 + "]" * 5000, "message": ""},
    {"tool": "get_order_details"},                                # missing arguments
    {"message": nested(1000)},
    {"message": "x" * 3_000_000},
    {"tool": "get_order_details", "arguments": nested(1000, "dict")},  # RecursionError in jsonschema
    {"tool": "get_order_details", "arguments": {"order_id": nested(1000)}},
    {"tool": "get_order_details", "arguments": {"order_id": 10**5000}},
    nested(1000), nested(1000, "dict"), 10**5000, None, object(),
    SURROGATE,
]


@pytest.mark.parametrize("domain", ["retail", "airline"])
@pytest.mark.parametrize("attack", REVIEW_ATTACKS, ids=lambda a: short_repr(a, 40))
def test_review_attacks_are_error_observations_and_snapshot_serialises(domain, attack):
    env = gym.make("rsigym/ToolUse-v0", domain=domain, max_invalid_actions=100).unwrapped
    env.reset(seed=0)
    observation, reward, terminated, truncated, info = env.step(attack)
    if attack is SURROGATE:  # a message the user can read; only its record line is at stake
        return
    assert "error" in info and info["invalid_actions"] + len(env.snapshot()["tool_calls"]) >= 1
    assert observation["event"] == 3 and env.observation_space.contains(observation)
    assert len(info["error"]) <= 1000  # the message quotes the action, cut
    snapshot = env.snapshot()
    json.loads(canonical_json(snapshot))  # "snapshot() then fails to serialise": no more
    assert len(canonical_json(snapshot)) < 100_000


def test_out_of_range_typed_tool_index_no_longer_calls_the_last_tool():
    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    env.reset(seed=0)
    _, _, _, _, info = env.step({"kind": 0, "tool": -1, "arguments": "{}", "message": ""})
    assert "tool must be an index" in info["error"] and env.snapshot()["tool_calls"] == []


@pytest.mark.parametrize("expression", ["1e308 * 10", "1e309", "1e308 * 10 - 1e308 * 10", "-1e309 + 1e309"])
def test_retail_calculate_refuses_non_finite_results(expression):
    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    env.reset(seed=0)
    observation, _, _, _, info = env.step({"tool": "calculate", "arguments": {"expression": expression}})
    assert "too large" in info["error"]
    assert "Infinity" not in observation["text"] and "NaN" not in observation["text"]


def test_retail_calculate_refuses_a_nul_byte():
    env = gym.make("rsigym/ToolUse-v0", domain="retail").unwrapped
    env.reset(seed=0)
    _, _, _, _, info = env.step({"tool": "calculate", "arguments": {"expression": "1 +\x00 2"}})
    assert "cannot parse" in info["error"]


# -- the limits themselves: each one can refuse, and refuses only past its bound ------------------

@pytest.mark.parametrize("value,limits,refused", [
    (nested(8), ActionLimits(max_depth=8), False),
    (nested(9), ActionLimits(max_depth=8), True),
    (nested(9, "dict"), ActionLimits(max_depth=8), True),
    ([0] * 99, ActionLimits(max_items=100), False),
    ([0] * 100, ActionLimits(max_items=100), True),
    (["ab"] * 5, ActionLimits(max_chars=10), False),
    (["ab"] * 6, ActionLimits(max_chars=10), True),
    ({"k" * 11: 1}, ActionLimits(max_chars=10), True),   # keys count as text too
    (2**63 - 1, ActionLimits(), False),
    (-(2**63) + 1, ActionLimits(), False),
    (2**63, ActionLimits(), True),
    (10**5000, ActionLimits(), True),
    (nested(10**5), ActionLimits(), True),              # the walk itself never recurses
], ids=lambda v: short_repr(v, 30))
def test_action_limits(value, limits, refused):
    assert (action_limit_error(value, limits) is not None) == refused


def test_to_jsonable_refuses_deep_values_without_recursion_error():
    with pytest.raises(TypeError, match="nested deeper"):
        to_jsonable(nested(10_000))
    with pytest.raises(TypeError, match="nested deeper"):
        canonical_json({"a": nested(5000, "dict")})
    with pytest.raises(TypeError, match="bits"):
        to_jsonable({"n": 10**5000})
    assert to_jsonable(nested(50)) == nested(50)


# -- the runner: a hostile agent is the agent's failure, not the infrastructure's ----------------

class HostileAgent:
    """Sends the review's attacks, one per step."""

    def __init__(self, spec: AgentSpec) -> None:
        self.spec, self.last_usage, self._t = spec, Usage(), 0

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self._t = 0

    def act(self, observation: Any) -> Any:
        self._t += 1
        return REVIEW_ATTACKS[(self._t - 1) % len(REVIEW_ATTACKS)]


register_agent("test_hostile_actions")(HostileAgent)


def test_runner_records_hostile_actions_as_agent_behaviour_not_infra_error(tmp_path):
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail", "max_invalid_actions": len(REVIEW_ATTACKS)},
                 "retail-000", None)
    record = run_episode(EpisodeSpec("0" * 32, env, AgentSpec("hostile", "test_hostile_actions"), 0, 0, 100))
    # the last attack is a message the scripted user answers by ending the conversation
    assert record.termination == "user_stop", record.error
    assert len(record.steps) == len(REVIEW_ATTACKS)
    assert all("error" in step.info for step in record.steps[:-1]) and "error" not in record.steps[-1].info
    with RecordWriter(tmp_path / "records.jsonl") as writer:  # hostile actions included, one UTF-8 line
        writer.write(record)
    (again,) = read_records(tmp_path / "records.jsonl").records
    assert again.termination == "user_stop" and len(again.steps) == len(record.steps)
    assert again.steps[-1].action == {"message": "? a lone surrogate"}
    assert record.final is not None


def test_invalid_actions_past_the_limit_end_as_agent_error(tmp_path):
    env = EnvRef("rsigym/ToolUse-v0", {"domain": "retail", "max_invalid_actions": 3}, "retail-000", None)
    record = run_episode(EpisodeSpec("1" * 32, env, AgentSpec("hostile", "test_hostile_actions"), 0, 0, 100))
    assert record.termination == "agent_error" and len(record.steps) == 4
    assert record.steps[-1].info["termination"] == "agent_error"
