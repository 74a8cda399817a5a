"""Prompts for LLMAgent and the parsing of model replies into validated actions.

Two output modes. ``tools``: the action schema becomes the parameters of one function, ``act``,
and the model calls it (native tool calling). ``json``: the schema goes into the system prompt
and the model answers with one JSON object. Either way the action is checked with jsonschema
and a mistake comes back as a message the model can correct.
"""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import jsonschema

from rsigym.records.redact import redacted_excerpt

__all__ = ["ACT_TOOL", "Parsed", "system_prompt", "act_tool", "parse_reply", "parse_env_tool_reply",
           "extract_json"]

ACT_TOOL = "act"

_INTRO = ("You are an agent acting in the environment {env_id}. Each turn you receive an "
          "observation and choose exactly one action.")
_TOOLS_RULE = f"Always answer by calling the function `{ACT_TOOL}` with your action as its arguments."
_ENV_TOOLS_RULE = ("Use the functions you are given to act; to talk to the user, answer with plain "
                   "text. One function call or one message per turn.")
_JSON_RULE = ("Answer with one JSON object and nothing else (no prose, no code fences). It must "
              "match this JSON Schema:\n```json\n{schema}\n```")


def system_prompt(env_id: str, schema: dict[str, Any], mode: str, preamble: str | None = None,
                  env_tools: bool = False) -> str:
    parts = [preamble] if preamble else []
    parts.append(_INTRO.format(env_id=env_id))
    if mode == "tools" and env_tools:
        parts.append(_ENV_TOOLS_RULE)
    elif mode == "tools":
        parts.append(_TOOLS_RULE)
    else:
        parts.append(_JSON_RULE.format(schema=json.dumps(schema, sort_keys=True)))
    return "\n\n".join(parts)


def act_tool(schema: dict[str, Any]) -> dict[str, Any]:
    """The OpenAI-style tool whose parameters are the env's action schema."""
    description = schema.get("description") or "Take your next action in the environment."
    return {"type": "function", "function": {"name": ACT_TOOL, "description": description,
                                             "parameters": schema}}


def extract_json(text: str) -> Any:
    """The JSON value in a reply, tolerating code fences and prose around one object."""
    text = text.strip()
    if text.startswith("```"):
        text = text.split("\n", 1)[1] if "\n" in text else ""
        text = text.rsplit("```", 1)[0]
    try:
        return json.loads(text)
    except json.JSONDecodeError:
        start, end = text.find("{"), text.rfind("}")
        if start == -1 or end <= start:
            raise
        return json.loads(text[start:end + 1])


def _load_and_check(raw: Any, validator: jsonschema.protocols.Validator, label: str) -> tuple[Any, str | None]:
    """Arguments of a tool call: parsed from JSON text and checked against the schema."""
    try:
        value = json.loads(raw) if isinstance(raw, str) else raw
    except json.JSONDecodeError as exc:
        return None, f"the arguments of {label} are not valid JSON ({exc.msg}): {redacted_excerpt(str(raw), 200)!r}"
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
        return None, f"invalid arguments for {label} at {where}: {errors[0].message}"
    return value, None


@dataclass(frozen=True)
class Parsed:
    """A reply's action, or the error to feed back; ``tool_call_ids`` need answers next turn."""

    action: Any = None
    error: str | None = None
    tool_call_ids: tuple[str, ...] = ()


def parse_env_tool_reply(message: Any, tools: dict[str, jsonschema.protocols.Validator]) -> Parsed:
    """For envs that offer their own tools: a tool call becomes ``{"tool", "arguments"}`` (its
    arguments checked against that tool's parameters), plain text becomes ``{"message"}``."""
    tool_calls = list(getattr(message, "tool_calls", None) or [])
    ids = tuple(str(call.id) for call in tool_calls)
    if not tool_calls:
        content = str(getattr(message, "content", None) or "").strip()
        if not content:
            return Parsed(error="the reply was empty; call a tool or write a message to the user")
        return Parsed(action={"message": content})
    call = tool_calls[0]
    name = call.function.name
    if name not in tools:
        return Parsed(error=f"unknown tool {name!r}; the tools are: {', '.join(tools)}", tool_call_ids=ids)
    arguments, error = _load_and_check(call.function.arguments or "{}", tools[name], name)
    if error is not None:
        return Parsed(error=error, tool_call_ids=ids)
    return Parsed(action={"tool": name, "arguments": arguments}, tool_call_ids=ids)


def parse_reply(message: Any, validator: jsonschema.protocols.Validator) -> Parsed:
    """Turn one assistant message (LiteLLM ``Message``) into a validated action or an error."""
    tool_calls = list(getattr(message, "tool_calls", None) or [])
    ids = tuple(str(call.id) for call in tool_calls)
    if tool_calls:
        call = tool_calls[0]
        if call.function.name != ACT_TOOL:
            return Parsed(error=f"unknown tool {call.function.name!r}; call `{ACT_TOOL}` instead",
                          tool_call_ids=ids)
        value, error = _load_and_check(call.function.arguments or "{}", validator, f"`{ACT_TOOL}`")
        if error is not None:
            return Parsed(error=error, tool_call_ids=ids)
        return Parsed(action=value, tool_call_ids=ids)
    content = str(getattr(message, "content", None) or "")
    if not content.strip():
        return Parsed(error="the reply was empty; answer with an action")
    try:
        value = extract_json(content)
    except json.JSONDecodeError as exc:
        return Parsed(error=f"the reply is not valid JSON ({exc.msg}): {redacted_excerpt(content, 200)!r}")
    errors = sorted(validator.iter_errors(value), key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "action"
        return Parsed(error=f"the action does not match the schema at {where}: {errors[0].message}")
    return Parsed(action=value)
