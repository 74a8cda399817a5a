"""Invalid-reply rates: a model that never calls a tool in an env with its own tools (ToolUse) once
read "invalid replies 0%" although every reply was text only."""

from __future__ import annotations

from rsigym.records import AgentSpec, EnvRef, Trajectory, Usage
from rsigym.report.reply_quality import reply_lines, reply_rates, reply_warnings


def _record(key: str, calls: int, text: int, invalid: int = 0, mode: str = "env_tools") -> Trajectory:
    usage = Usage(model_calls=calls, text_replies=text, invalid_replies=invalid)
    return Trajectory(episode_key=key, env=EnvRef("rsigym/ToolUse-v0"), agent=AgentSpec("a", "llm", "m"), seed=0,
                      rep=0, usage=usage, usage_by_role={"agent": usage}, tool_mode=mode)


def test_episodes_without_a_single_tool_call_count_their_text_replies_as_invalid():
    rates = reply_rates([_record("k0", 6, 6), _record("k1", 4, 4)])
    assert rates[0].invalid == 10 and rates[0].invalid_rate == 1.0 and rates[0].no_tool_episodes == 2
    warnings = reply_warnings(rates)
    assert len(warnings) == 1 and "100% of 10 replies" in warnings[0] and "2 episodes without a single tool call" in warnings[0]
    assert "10 invalid (100%)" in reply_lines(rates)[0]


def test_text_to_the_user_beside_tool_calls_is_not_invalid():
    rates = reply_rates([_record("k0", 6, 3), _record("k1", 5, 1, invalid=1)])
    assert rates[0].invalid == 1 and rates[0].no_tool_episodes == 0 and reply_warnings(rates) == []


def test_the_act_function_mode_is_unchanged():
    """With the single `act` function, text is already a parse failure fed back (invalid_replies)."""
    rates = reply_rates([_record("k0", 4, 4, invalid=4, mode="tools")])
    assert rates[0].invalid == 4 and rates[0].no_tool_episodes == 0
