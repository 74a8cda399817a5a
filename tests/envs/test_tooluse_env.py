"""ToolUse-v0 machinery on a four-tool test domain, plus conformance on the shipped domains."""

import json

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import rsigym.envs  # noqa: F401
from rsigym.envs.tooluse import (STOP, TOOLUSE_CONDITIONS, ScriptedUser, load_task, make_user)
from rsigym.envs.tooluse.toolkit import ToolError, call_tool, tool

from . import toy_domain  # noqa: F401  (registers the "toy" domain)


def make(condition=None, **kwargs):
    return gym.make("rsigym/ToolUse-v0", domain="toy", condition=condition, **kwargs).unwrapped


def test_check_env_passes_on_toy_domain():
    check_env(make(), skip_render_check=True)


def test_tool_schema_comes_from_hints_and_docstring():
    @tool("write")
    def refund(db, order_id: str, amount: float, reason: str | None = None) -> dict:
        """Refund part of an order.

        Args:
            order_id: Which order.
            amount: How much, in dollars.
                Never more than paid.
            reason: Optional note.
        """
        raise ToolError("refunds are closed")

    assert refund.kind == "write" and refund.description == "Refund part of an order."
    assert refund.parameters == {
        "type": "object", "additionalProperties": False, "required": ["order_id", "amount"],
        "properties": {"order_id": {"type": "string", "description": "Which order."},
                       "amount": {"type": "number", "description": "How much, in dollars. Never more than paid."},
                       "reason": {"type": "string", "description": "Optional note."}}}
    assert call_tool(refund, None, {"order_id": "x"}) == (None, "invalid arguments at arguments: 'amount' is a required property")
    import sqlite3
    assert call_tool(refund, sqlite3.connect(":memory:"), {"order_id": "x", "amount": 1.0}) == (None, "refunds are closed")


def test_episode_tool_calls_messages_and_reward():
    env = make()
    task = load_task("toy-001")
    obs, info = env.reset(seed=0, options={"task_id": "toy-001"})
    assert "# Task toy-001" in obs["text"] and "## Policy" in obs["text"] and task.instructions["request"] in obs["text"]
    obs, reward, terminated, _, info = env.step({"tool": "get_order", "arguments": {"order_id": "#T001"}})
    assert obs["text"].startswith("Tool get_order result: {") and not terminated
    obs, reward, terminated, _, info = env.step({"tool": "return_order", "arguments": {"order_id": "#T001"}})
    assert "error" in info and "only delivered orders" in obs["text"]  # a policy refusal, no change
    env.step(task.gold_actions[1])
    obs, reward, terminated, _, info = env.step({"message": f"Done. Refund {task.required_outputs[0]}."})
    assert terminated and info["termination"] == "user_stop" and reward == 1.0
    snap = env.snapshot()
    assert snap["db_sha256"] == task.gold_db_sha256 and [c["ok"] for c in snap["tool_calls"]] == [True, False, True]


def test_invalid_actions_are_observations_until_the_limit():
    env = make(max_invalid_actions=2)
    env.reset(seed=0, options={"task_id": "toy-000"})
    for bad in ({"tool": "drop_table", "arguments": {}}, "hello", {"message": ""}):
        obs, reward, terminated, _, info = env.step(bad)
        assert obs["text"].startswith("Error: invalid action")
    assert terminated and info["termination"] == "agent_error"


def test_rename_changes_names_not_behaviour():
    plain, renamed = make(), make({"name": "rename_tools", "params": {}})
    assert [t["function"]["name"] for t in renamed.tools] == ["get_order", "list_orders", "void_order", "return_order"]
    assert [t["function"]["description"] for t in renamed.tools] == [t["function"]["description"] for t in plain.tools]
    renamed.reset(seed=0, options={"task_id": "toy-001"})
    obs, *_ = renamed.step({"tool": "cancel_order", "arguments": {"order_id": "#T001"}})
    assert "is not one of" in obs["text"]  # the old name is gone
    obs, *_ = renamed.step({"tool": "void_order", "arguments": {"order_id": "#T001"}})
    assert obs["text"].startswith("Tool void_order result:")
    assert renamed.snapshot()["tool_calls"][-1]["canonical"] == "cancel_order"


def test_other_conditions():
    misleading = make("misleading_names")
    names = {t["function"]["description"]: t["function"]["name"] for t in misleading.tools}
    assert names["Cancel a pending order; the refund goes to the original payment."] == "return_order"
    paraphrased = make("paraphrase_descriptions")
    assert paraphrased.tools[0]["function"]["description"] == "Fetch an order's details."
    reordered = make({"name": "reorder_outputs", "params": {"seed": 3}})
    reordered.reset(seed=0, options={"task_id": "toy-001"})
    obs, *_ = reordered.step({"tool": "get_order", "arguments": {"order_id": "#T001"}})
    shown = json.loads(obs["text"].split("result: ", 1)[1])
    assert shown == {"order_id": "#T001", "user_id": "user_1", "status": "pending", "total": 11.0}
    assert list(shown) != ["order_id", "user_id", "status", "total"]  # same content, other order
    with pytest.raises(ValueError, match="unknown tooluse condition 'shuffle'"):
        make("shuffle")


def test_users_register_their_own_conditions():
    from rsigym.envs.tooluse.conditions import ToolView

    @TOOLUSE_CONDITIONS.register("shout")
    def shout():
        return lambda domain: ToolView({t.name: t.name.upper() for t in domain.tools},
                                       {t.name: t.description.upper() for t in domain.tools})

    assert make("shout").tools[0]["function"]["name"] == "GET_ORDER"


def test_scripted_user():
    user = make_user("scripted")
    assert isinstance(user, ScriptedUser)
    task = load_task("toy-000")
    assert user.reset(task, 0) == task.instructions["request"]
    assert user.reply("Shall I confirm the cancellation?") == "yes"
    assert user.reply("Anything I can add?") == "Yes, please go ahead."
    assert STOP in user.reply("It is done.")


@settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(st.one_of(
    st.text(), st.integers(), st.none(),
    st.recursive(st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | st.text(),
                 lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=8), c, max_size=4), max_leaves=12),
    st.fixed_dictionaries({"tool": st.sampled_from(["get_order", "cancel_order", "x"]),
                           "arguments": st.dictionaries(st.sampled_from(["order_id", "user_id", "zzz"]),
                                                        st.one_of(st.text(max_size=10), st.integers()))}),
))
def test_fuzz_step_never_raises(action):
    env = make(max_invalid_actions=1000)
    env.reset(seed=0, options={"task_id": "toy-003"})
    obs, reward, terminated, truncated, info = env.step(action)
    assert env.observation_space["text"].contains(obs["text"]) or len(obs["text"]) > 0


@pytest.mark.parametrize("domain", ["retail", "airline"])
def test_check_env_passes_on_shipped_domains(domain):
    env = gym.make("rsigym/ToolUse-v0", domain=domain).unwrapped
    check_env(env, skip_render_check=True)


@pytest.mark.parametrize("domain", ["retail", "airline"])
@settings(max_examples=60, deadline=None)
@given(action=st.one_of(st.text(max_size=50), st.dictionaries(st.text(max_size=8), st.text(max_size=8), max_size=3),
                        st.builds(lambda a: {"tool": "x", "arguments": a}, st.dictionaries(st.text(max_size=5), st.integers()))))
def test_fuzz_shipped_domains(domain, action):
    env = gym.make("rsigym/ToolUse-v0", domain=domain, max_invalid_actions=1000).unwrapped
    env.reset(seed=0)
    env.step(action)
    for spec in env.tools[:4]:  # real tool names with junk arguments: error observations only
        env.step({"tool": spec["function"]["name"], "arguments": {"junk": action if isinstance(action, str) else 1}})


def test_prefix_and_shuffle_conditions():
    prefixed = make("prefix_names")
    assert [t["function"]["name"] for t in prefixed.tools] == ["svc_get_order", "svc_list_orders", "svc_cancel_order", "svc_return_order"]
    shuffled, plain = make({"name": "shuffle_tool_order", "params": {"seed": 1}}), make()
    assert sorted(map(str, shuffled.tools)) == sorted(map(str, plain.tools)) and shuffled.tools != plain.tools
