"""``LLMAgent``: any LiteLLM model acting in any rsigym env.

Each turn it sends the observation's ``text`` (as the answer to its previous tool call, or as a
user message), asks for one action through native tool calling or JSON output, validates it
against the env's ``action_schema``, and feeds a validation error back for a bounded number of
retries; after that it returns an explicit invalid action, which the env records as an error
observation. Every request goes through the kernel's LLM client (``rsigym.llm.client.complete``):
provider failures are retried with backoff there, and when retries run out the episode ends as
``infra_error`` with the failed attempts counted in its usage.
"""

from __future__ import annotations

import json
import os
import random
from typing import Any

import jsonschema

from rsigym.llm import LLMError, LLMReply, RetryEvent, RetryPolicy, complete, load_litellm, planned_tool_mode
from rsigym.spaces import invalid_action
from rsigym.records import AgentSpec, Usage
from rsigym.records.redact import redacted_excerpt

from rsigym.agent import register_agent
from .llm_messages import ACT_TOOL, act_tool, parse_env_tool_reply, parse_reply, system_prompt

__all__ = ["LLMAgent"]

TOOL_MODES = ("auto", "tools", "json")


class LLMAgent:
    """An agent backed by a LiteLLM model string (``openai/gpt-4o-mini``, ``rsigym/random``, ...).

    Args:
        model: LiteLLM model string.
        temperature, seed, max_tokens: Sampling parameters. ``seed`` defaults to the episode seed.
        api_base: Base URL of an OpenAI-compatible server (vLLM, Ollama, a proxy).
        api_key: Key for the provider; never stored in records (scenarios use ``api_key_env``).
        api_key_env: Name of an environment variable holding the key.
        tool_mode: ``tools`` (native tool calling), ``json`` (schema in the prompt), or ``auto``
            (tools where ``litellm.supports_function_calling(model)`` says so).
        tool_choice: Passed with tools; ``required`` forces a call, None omits it.
        max_invalid_retries: Validation errors fed back per turn before giving up on the turn.
        max_retries, backoff_base_s, backoff_max_s: Provider-error retries (see RetryPolicy).
        max_rate_limit_retries: Retries of 429s, counted apart from other errors' (see RetryPolicy).
        timeout_s: Per-request timeout.
        system_preamble: Text put before the built-in system prompt (a persona, task notes).
        litellm_kwargs: Any other arguments for ``litellm.completion``.
        spec: The scenario entry this agent came from (built from the arguments when None).
    """

    def __init__(self, model: str, *, temperature: float | None = 0.0, seed: int | None = None,
                 max_tokens: int | None = None, api_base: str | None = None,
                 api_key: str | None = None, api_key_env: str | None = None,
                 tool_mode: str = "auto", tool_choice: str | None = "required",
                 max_invalid_retries: int = 2, max_retries: int = 4, backoff_base_s: float = 1.0,
                 backoff_max_s: float = 30.0, max_rate_limit_retries: int = 8, timeout_s: float = 120.0,
                 system_preamble: str | None = None, litellm_kwargs: dict[str, Any] | None = None,
                 spec: AgentSpec | None = None) -> None:
        if tool_mode not in TOOL_MODES:
            raise TypeError(f"tool_mode must be one of {TOOL_MODES}, got {tool_mode!r}")
        if max_invalid_retries < 0 or max_retries < 0 or max_rate_limit_retries < 0:
            raise TypeError("retry counts must be >= 0")
        self.model = model
        self.temperature, self.fixed_seed, self.max_tokens = temperature, seed, max_tokens
        self.api_base, self.tool_mode, self.tool_choice = api_base, tool_mode, tool_choice
        self.max_invalid_retries, self.timeout_s = max_invalid_retries, timeout_s
        self.system_preamble = system_preamble
        self.litellm_kwargs = dict(litellm_kwargs or {})
        self._api_key, self._api_key_env = api_key, api_key_env
        self.retry_policy = RetryPolicy(max_retries, backoff_base_s, backoff_max_s,
                                        max_rate_limit_retries=max_rate_limit_retries)
        self.spec = spec or AgentSpec(id=model, kind="llm", model=model, params={})
        self.last_usage = Usage()
        self.retry_log: list[RetryEvent] = []  # provider retries of the current episode
        self.tool_mode_used: str | None = None  # how the last reply was asked for (see Trajectory.tool_mode)

    @classmethod
    def from_spec(cls, spec: AgentSpec) -> "LLMAgent":
        if not spec.model:
            raise TypeError("an llm agent needs a model (in the scenario, or --model)")
        if "api_key" in spec.params:
            raise TypeError("put the key in an environment variable and name it with api_key_env; "
                            "a key in params would be written into every record")
        return cls(spec.model, spec=spec, **spec.params)

    # -- episode --------------------------------------------------------------------------
    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        schema = task_info.get("action_schema")
        if not schema:
            raise TypeError(f"{task_info.get('env_id')} publishes no action_schema; an LLM agent needs one")
        self._litellm = load_litellm()
        self.schema = schema
        self._validator = jsonschema.Draft202012Validator(schema)
        self.mode = self._resolve_mode()
        # An env with its own tools (ToolUse-v0) gets them as native functions, and text replies
        # become messages to its user; other envs get the single `act` function.
        self.env_tools = list(task_info.get("tools") or []) if self.mode == "tools" else []
        self._tool_validators = {t["function"]["name"]: jsonschema.Draft202012Validator(t["function"]["parameters"])
                                 for t in self.env_tools}
        self.seed = self.fixed_seed if self.fixed_seed is not None else seed
        self._rng = random.Random(seed)  # jitter only; never affects what the model is asked
        preamble = self.system_preamble
        self.messages: list[dict[str, Any]] = [
            {"role": "system", "content": system_prompt(str(task_info.get("env_id")), schema, self.mode, preamble,
                                                         env_tools=bool(self.env_tools))}]
        self._pending_tool_calls: tuple[str, ...] = ()
        self.retry_log = []

    @property
    def system_prompt_text(self) -> str | None:
        """The system prompt of the current episode (the runner records it), None before reset."""
        messages = getattr(self, "messages", None)
        return messages[0]["content"] if messages and messages[0].get("role") == "system" else None

    def _resolve_mode(self) -> str:
        if self.tool_mode != "auto":
            return self.tool_mode
        return "tools" if planned_tool_mode(self.model, "auto", self.api_base) == "tools" else "json"

    def act(self, observation: dict[str, Any]) -> Any:
        self._add_observation(str(observation.get("text", observation)))
        usage = Usage()
        for attempt in range(self.max_invalid_retries + 1):
            try:
                reply = self._complete()
            except LLMError as exc:  # the turn's earlier calls count too
                raise exc.with_usage(usage) from exc
            message, usage = reply.message, usage + reply.usage
            self.tool_mode_used = _mode_used(self.mode, bool(self.env_tools), reply.reply_format)
            if self.mode == "tools" and not getattr(message, "tool_calls", None):
                usage.text_replies += 1  # counted apart: a weak model's text passes for a message to the user
            parsed = (parse_env_tool_reply(message, self._tool_validators) if self.env_tools
                      else parse_reply(message, self._validator))
            self.messages.append(_assistant_dict(message))
            self._pending_tool_calls = parsed.tool_call_ids
            if parsed.error is None:
                self.last_usage = usage
                return parsed.action
            usage.invalid_replies += 1
            if attempt < self.max_invalid_retries:
                self._add_feedback(f"Error: {parsed.error}. Try again with one valid action.")
        self.last_usage = usage
        return invalid_action(parsed.error or "no valid action", raw=_reply_text(message))

    # -- conversation ---------------------------------------------------------------------
    def _add_observation(self, text: str) -> None:
        if self._pending_tool_calls:  # the observation is the result of the previous call
            first, *rest = self._pending_tool_calls
            self.messages.append({"role": "tool", "tool_call_id": first, "content": text})
            self.messages += [{"role": "tool", "tool_call_id": i, "content": "ignored: one action per turn"}
                              for i in rest]
            self._pending_tool_calls = ()
        else:
            self.messages.append({"role": "user", "content": text})

    def add_recorded_turn(self, observation_text: str, action: Any) -> None:
        """Append a past turn (the observation shown, the action taken) without asking the model.

        Replays use it to resend a recorded conversation up to a decision point, so the model
        is asked in the multi-turn context it acted in. The reply is written as the model gives
        it in this mode: a call of the act tool (id derived from the arguments, as the offline
        provider does) or the action as JSON text. Validation retries within a turn are not
        recorded, so they are not resent.
        """
        import hashlib

        self._add_observation(observation_text)
        arguments = json.dumps(action)
        if self.mode == "tools" and not self.env_tools:
            call_id = "call_" + hashlib.sha256(arguments.encode()).hexdigest()[:12]
            self.messages.append({"role": "assistant", "content": None, "tool_calls": [
                {"id": call_id, "type": "function", "function": {"name": ACT_TOOL, "arguments": arguments}}]})
            self._pending_tool_calls = (call_id,)
        else:
            self.messages.append({"role": "assistant", "content": arguments})

    def _add_feedback(self, text: str) -> None:
        if self._pending_tool_calls:
            self._add_observation(text)
        else:
            self.messages.append({"role": "user", "content": text})

    def _complete(self) -> LLMReply:
        params: dict[str, Any] = {"seed": self.seed}
        if self.temperature is not None:
            params["temperature"] = self.temperature
        if self.max_tokens is not None:
            params["max_tokens"] = self.max_tokens
        params.update(self.litellm_kwargs)
        tools: list[dict[str, Any]] | None = None
        tool_choice: Any = None
        if self.env_tools:  # messages to the user are actions too: the model may answer in text
            tools = self.env_tools
        elif self.mode == "tools":
            tools = [act_tool(self.schema)]
            if self.tool_choice == "required":
                tool_choice = {"type": "function", "function": {"name": ACT_TOOL}}
            else:
                tool_choice = self.tool_choice
        return complete(self.messages, model=self.model, role="agent", api_base=self.api_base,
                        api_key=self._credentials(), params=params, tools=tools, tool_choice=tool_choice,
                        json_schema=self.schema if self.mode == "json" else None, timeout_s=self.timeout_s,
                        retry=self.retry_policy, rng=self._rng, on_retry=self.retry_log.append)

    def _credentials(self) -> str | None:
        """The key named by ``api_key_env`` (or given), or None to let the client find one.

        A variable that is named but not set is not worth a request: it ends the episode at once
        with a message that names it.
        """
        if self._api_key:
            return self._api_key
        if not self._api_key_env:
            return None
        key = os.environ.get(self._api_key_env)
        if not key:
            raise LLMError(f"{self.model}: the environment variable {self._api_key_env} "
                           "named by api_key_env is not set", role="agent", model=self.model)
        return key


def _mode_used(mode: str, env_tools: bool, reply_format: str) -> str:
    if mode == "tools":
        return "env_tools" if env_tools else "tools"
    return "json_schema" if reply_format == "json_schema" else "json_text"


def _reply_text(message: Any) -> str:
    calls = getattr(message, "tool_calls", None) or []
    if calls:
        return redacted_excerpt(json.dumps([{"name": c.function.name, "arguments": c.function.arguments} for c in calls]), 2000)
    return redacted_excerpt(str(getattr(message, "content", "") or ""), 2000)


def _assistant_dict(message: Any) -> dict[str, Any]:
    """The assistant turn as a plain message dict, tool calls included, for the next request."""
    out: dict[str, Any] = {"role": "assistant", "content": getattr(message, "content", None)}
    calls = getattr(message, "tool_calls", None)
    if calls:
        out["tool_calls"] = [{"id": c.id, "type": "function",
                              "function": {"name": c.function.name, "arguments": c.function.arguments}}
                             for c in calls]
    return out


register_agent("llm")(LLMAgent.from_spec)
