"""What a call cost, from a provider's usage report where it can be trusted, else counted locally.

A provider reports its own token counts, and a cost limit that trusts them is the provider's to
break: -10^9 tokens priced a call at -12,500 USD and a run with ``--cost-limit 0.0002`` ran all
its 30 episodes instead of stopping after 5. A report whose prompt tokens are missing (LiteLLM
fills in 0), negative, or no finite number (a ``usage`` LiteLLM cannot parse is dropped at the
HTTP layer, ``rsigym.llm.http_guard``), or whose completion tokens are negative, or 0 for a reply that
holds text or a tool call, is replaced by LiteLLM's token counter (``litellm.token_counter``)
over the request and the reply, priced by LiteLLM's map. A price is never negative and never NaN.
"""

from __future__ import annotations

import json
import math
from typing import Any

__all__ = ["reported_tokens", "local_tokens", "priced_usd", "cost_usd", "non_negative"]


def _count(value: Any, least: int) -> int | None:
    """A token count as a provider reported it, or None where it is none (missing, NaN, negative)."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value) or value < least:
        return None
    return int(value)


def reported_tokens(response: Any) -> tuple[int, int] | None:
    """(prompt, completion) tokens the provider reported, or None where the report cannot be
    trusted. A request always has prompt tokens: 0 is what LiteLLM fills in for a missing usage."""
    reported = getattr(response, "usage", None)
    prompt = _count(getattr(reported, "prompt_tokens", None), 1)
    completion = _count(getattr(reported, "completion_tokens", None), 1 if _replied(response) else 0)
    return None if prompt is None or completion is None else (prompt, completion)


def _replied(response: Any) -> bool:
    """Whether the reply holds text or a tool call (then it has completion tokens)."""
    try:
        message = response.choices[0].message
    except (AttributeError, IndexError, TypeError):
        return False
    return bool(getattr(message, "content", None) or getattr(message, "tool_calls", None))


def local_tokens(litellm: Any, model: str, messages: list[dict[str, Any]],
                  tools: list[dict[str, Any]] | None, message: Any) -> tuple[int, int]:
    """(prompt, completion) tokens by LiteLLM's token counter (a chars/4 estimate where it fails)."""
    calls = [{"name": c.function.name, "arguments": c.function.arguments}
             for c in getattr(message, "tool_calls", None) or []]
    reply = str(getattr(message, "content", None) or "") + (json.dumps(calls) if calls else "")
    try:
        prompt = int(litellm.token_counter(model=model, messages=messages, tools=tools or None))
    except Exception:  # noqa: BLE001 - a message LiteLLM cannot count: a rough count all the same
        prompt = len(json.dumps(messages, default=str)) // 4
    try:
        completion = int(litellm.token_counter(model=model, text=reply, count_response_tokens=True))
    except Exception:  # noqa: BLE001
        completion = len(reply) // 4
    return max(prompt, 1), max(completion, 0)


def priced_usd(litellm: Any, model: str, prompt_tokens: int, completion_tokens: int) -> float:
    """LiteLLM's price of these token counts; 0 where the model has no price."""
    try:
        prompt_usd, completion_usd = litellm.cost_per_token(model=model, prompt_tokens=prompt_tokens,
                                                            completion_tokens=completion_tokens)
        return non_negative(float(prompt_usd) + float(completion_usd))
    except Exception:  # noqa: BLE001 - no price known for this model
        return 0.0


def non_negative(usd: float) -> float:
    return usd if math.isfinite(usd) and usd > 0 else 0.0


def cost_usd(litellm: Any, response: Any, model: str) -> float:
    """LiteLLM's price of the response; 0 where the model has no price (never negative)."""
    hidden = getattr(response, "_hidden_params", None) or {}
    if hidden.get("response_cost") is not None:  # already computed by LiteLLM for this call
        return non_negative(float(hidden["response_cost"]))
    try:
        return non_negative(float(litellm.completion_cost(completion_response=response, model=model) or 0.0))
    except Exception:  # no price known for this model
        return 0.0
