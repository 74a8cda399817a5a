"""Offline models: scripted policies served through LiteLLM under the ``rsigym/`` prefix.

``LLMAgent(model="rsigym/random")`` runs the very same code path as a hosted model (messages,
tool calling or JSON output, validation, usage and cost) with no key and no network: LiteLLM
routes the call to ``OfflineProvider``, a LiteLLM ``CustomLLM`` in ``litellm.custom_provider_map``,
which this module installs through the LLM client's ``on_load`` hook.
Env families add their own policies with ``@register_offline_policy("name")``.
"""

from __future__ import annotations

import hashlib
import json
import re
from dataclasses import dataclass
from typing import Any, Callable

import numpy as np

from rsigym.registry import OFFLINE_POLICIES
from rsigym.llm import on_load

from .schema_sampling import sample_instance

__all__ = ["OfflineRequest", "OfflineReply", "register_offline_policy", "offline_policies",
           "install_offline_provider", "PROVIDER"]

PROVIDER = "rsigym"


@dataclass(frozen=True)
class OfflineRequest:
    """What a policy sees: the conversation, the action schema and a deterministic generator."""

    messages: list[dict[str, Any]]
    schema: dict[str, Any] | None
    tool_name: str | None      # the tool to call when the agent offered tools, else None (JSON)
    rng: np.random.Generator   # seeded from the request's seed and the conversation so far
    tools: tuple[dict[str, Any], ...] = ()  # every tool offered (OpenAI-style specs)


@dataclass(frozen=True)
class OfflineReply:
    """An action (sent as a tool call or as JSON text, as the request asks) or raw text.

    ``tool`` names the function to call when several were offered (default: the first).
    """

    action: Any = None
    text: str | None = None
    tool: str | None = None


Policy = Callable[[OfflineRequest], OfflineReply]
_POLICIES = OFFLINE_POLICIES  # name -> policy; plug-ins join through the rsigym.offline_policies entry points
_REGISTERED_MODELS: set[str] = set()  # policies already announced to LiteLLM's model map


def register_offline_policy(name: str) -> Callable[[Policy], Policy]:
    """Serve ``policy`` as the LiteLLM model ``rsigym/<name>``."""

    def decorate(policy: Policy) -> Policy:
        _POLICIES.unregister(name)  # a later registration replaces an earlier one
        _POLICIES.register(name, policy)
        _REGISTERED_MODELS.discard(name)
        return policy

    return decorate


def offline_policies() -> list[str]:
    """Every offline model name (``rsigym/<name>``), entry points included."""
    return list(_POLICIES)


@register_offline_policy("random")
def _random_policy(request: OfflineRequest) -> OfflineReply:
    """A valid action drawn at random from the action schema."""
    return OfflineReply(action=sample_instance(request.schema or {"type": "object"}, request.rng))


_SCHEMA_BLOCK = re.compile(r"```json\s*(\{.*?\})\s*```", re.DOTALL)


def _request_schema(messages: list[dict[str, Any]], tools: list[dict[str, Any]] | None) -> tuple[dict[str, Any] | None, str | None]:
    if tools:
        function = tools[0]["function"]
        return function.get("parameters"), function["name"]
    for message in messages:  # JSON mode: LLMAgent puts the schema in a ```json block
        if message.get("role") == "system":
            match = _SCHEMA_BLOCK.search(str(message.get("content") or ""))
            if match:
                return json.loads(match.group(1)), None
    return None, None


def _rng(seed: Any, messages: list[dict[str, Any]]) -> np.random.Generator:
    # Seed, turn count and latest message identify the turn; hashing the whole history would
    # make every call cost time linear in the episode length.
    key = [seed, len(messages), messages[-1] if messages else None]
    digest = hashlib.sha256(json.dumps(key, sort_keys=True, default=str).encode()).digest()
    return np.random.default_rng(int.from_bytes(digest[:8], "big"))


def _tokens(text: str) -> int:
    return max(1, len(text) // 4)  # a rough count, so usage bookkeeping is exercised offline


_installed = False


def install_offline_provider(litellm: Any) -> None:
    """Add the ``rsigym`` provider to LiteLLM (idempotent) and register every policy as a model."""
    global _installed
    if not _installed:
        from litellm import CustomLLM
        from litellm.types.utils import ModelResponse

        class OfflineProvider(CustomLLM):
            def completion(self, model: str, messages: list[dict[str, Any]], *args: Any,
                           optional_params: dict[str, Any] | None = None, **kwargs: Any) -> Any:
                name = model.split("/", 1)[-1]
                if name not in _POLICIES:  # an unknown model: not worth a retry
                    raise litellm.NotFoundError(f"no offline policy {name!r}; known: {', '.join(offline_policies())}",
                                                model=model, llm_provider=PROVIDER)
                params = optional_params or {}
                schema, tool_name = _request_schema(messages, params.get("tools"))
                reply = _POLICIES[name](OfflineRequest(messages, schema, tool_name,
                                                       _rng(params.get("seed"), messages),
                                                       tuple(params.get("tools") or ())))
                tool_name = reply.tool or tool_name
                if reply.text is None and tool_name is not None:
                    arguments = json.dumps(reply.action)
                    message = {"role": "assistant", "content": None, "tool_calls": [{
                        "id": "call_" + hashlib.sha256(arguments.encode()).hexdigest()[:12],
                        "type": "function", "function": {"name": tool_name, "arguments": arguments}}]}
                    out_text, finish = arguments, "tool_calls"
                else:
                    out_text = reply.text if reply.text is not None else json.dumps(reply.action)
                    message, finish = {"role": "assistant", "content": out_text}, "stop"
                prompt_tokens = sum(_tokens(str(m.get("content") or "")) for m in messages)
                completion_tokens = _tokens(out_text)
                return ModelResponse(
                    model=model, choices=[{"index": 0, "message": message, "finish_reason": finish}],
                    usage={"prompt_tokens": prompt_tokens, "completion_tokens": completion_tokens,
                           "total_tokens": prompt_tokens + completion_tokens})

        providers = [p for p in (litellm.custom_provider_map or []) if p.get("provider") != PROVIDER]
        litellm.custom_provider_map = providers + [{"provider": PROVIDER, "custom_handler": OfflineProvider()}]
        _installed = True
    new = [name for name in _POLICIES if name not in _REGISTERED_MODELS]
    if new:
        litellm.register_model({f"{PROVIDER}/{name}": {
            "litellm_provider": PROVIDER, "mode": "chat", "supports_function_calling": True,
            "supports_tool_choice": True, "max_tokens": 1_000_000, "max_input_tokens": 1_000_000,
            "input_cost_per_token": 0.0, "output_cost_per_token": 0.0,
            "cache_creation_input_token_cost": 0.0, "cache_read_input_token_cost": 0.0,
        } for name in new})
        _REGISTERED_MODELS.update(new)


on_load(install_offline_provider)  # every LLM call in a process that has offline policies sees them
