"""A record's steps as an inspect_ai conversation: real tool calls, tool results, timings.

An action that calls one of the env's tools (``{"tool": name, "arguments": {...}}``, ToolUse-v0)
becomes a ``ChatMessageAssistant`` with that ``ToolCall`` (the name the agent called, as it saw it;
under a renaming condition the original name is in the message's metadata), and the next
observation its ``ChatMessageTool``. A message to the env's user (``{"message": text}``) is the
assistant's text and the user's answer a ``ChatMessageUser``. Any other action is a call of the
``act`` function with the action as its arguments (what an LLM agent in tools mode sends, and what
``env.step`` receives from any agent), except where the model wrote it as JSON text (tool modes
``json_schema`` and ``json_text``): then it is that text. An invalid reply is its raw text.
"""

from __future__ import annotations

import json
from typing import Any

from ..records.tool_names import NO_SUCH_TOOL, renamed_away, renamed_to_original
from ..records.trajectory import Step, Trajectory
from ..spaces import INVALID_ACTION_KEY

__all__ = ["observation_text", "sample_messages", "ACT_FUNCTION"]

ACT_FUNCTION = "act"  # the function LLMAgent offers in tools mode (agents/llm_messages.ACT_TOOL)
_JSON_MODES = ("json_schema", "json_text")


def observation_text(value: Any) -> str:
    if isinstance(value, dict) and isinstance(value.get("text"), str):
        return value["text"]
    return value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)


def _step_metadata(step: Step) -> dict[str, Any]:
    u = step.usage
    meta: dict[str, Any] = {"t": step.t, "reward": step.reward, "latency_s": u.latency_s, "env_s": u.env_s,
                            "model_calls": u.model_calls, "prompt_tokens": u.prompt_tokens,
                            "completion_tokens": u.completion_tokens}
    if step.terminated or step.truncated:
        meta.update(terminated=step.terminated, truncated=step.truncated)
    if step.info.get("error"):
        meta["error"] = step.info["error"]
    return meta


def sample_messages(record: Trajectory) -> list[Any]:
    """The inspect_ai messages of ``record``: system prompt, then each observation and action."""
    from inspect_ai.model import ChatMessageAssistant, ChatMessageSystem, ChatMessageTool, ChatMessageUser
    from inspect_ai.tool import ToolCall

    originals = renamed_to_original(record)
    originals.update({name: NO_SUCH_TOOL for name in renamed_away(record)})  # a renamed-away name calls nothing
    model = record.agent.model or f"rsigym/{record.agent.kind}"
    messages: list[Any] = []
    if record.system_prompt:
        messages.append(ChatMessageSystem(content=record.system_prompt))
    pending: tuple[str, str] | None = None  # (call id, function) the next observation answers
    for step in record.steps:
        text = observation_text(step.observation)
        if pending is not None:
            messages.append(ChatMessageTool(content=text, tool_call_id=pending[0], function=pending[1],
                                            metadata={"t": step.t}))
        else:
            messages.append(ChatMessageUser(content=text, metadata={"t": step.t}))
        pending = None
        action, meta = step.action, _step_metadata(step)
        call_id = f"{record.episode_key[:12]}-{step.t}"
        if isinstance(action, dict) and INVALID_ACTION_KEY in action:
            invalid = action[INVALID_ACTION_KEY] if isinstance(action[INVALID_ACTION_KEY], dict) else {}
            meta["invalid"] = str(invalid.get("error", ""))
            messages.append(ChatMessageAssistant(content=str(invalid.get("raw", "")), model=model, metadata=meta))
        elif isinstance(action, dict) and isinstance(action.get("tool"), str):
            name, arguments = action["tool"], action.get("arguments")
            if name in originals:
                meta["original_tool"] = originals[name]
            call = ToolCall(id=call_id, function=name,
                            arguments=arguments if isinstance(arguments, dict) else {"arguments": arguments})
            messages.append(ChatMessageAssistant(content="", tool_calls=[call], model=model, metadata=meta))
            pending = (call_id, name)
        elif isinstance(action, dict) and set(action) == {"message"} and isinstance(action["message"], str):
            messages.append(ChatMessageAssistant(content=action["message"], model=model, metadata=meta))
        elif record.tool_mode in _JSON_MODES:
            messages.append(ChatMessageAssistant(content=observation_text(action), model=model, metadata=meta))
        else:
            arguments = action if isinstance(action, dict) else {"action": action}
            messages.append(ChatMessageAssistant(content="", model=model, metadata=meta,
                                                 tool_calls=[ToolCall(id=call_id, function=ACT_FUNCTION,
                                                                      arguments=arguments)]))
            pending = (call_id, ACT_FUNCTION)
    return messages
