"""The one LLM client and what a provider call needs.

Owns ``client`` (``complete``, retries, replies), the output modes a model supports
(``output_modes``), provider errors and usage/price (``provider_errors``, ``provider_usage``), the
per-provider concurrency and rate limits (``limits``), LiteLLM's setup and the HTTP guard under it
(``litellm_setup``, ``http_guard``) and the endpoint check before a run (``endpoint_check``). It may
import ``rsigym.errors`` and ``rsigym.records``; ``endpoint_check`` reads the scenario's preflight
inside a function. The client API of ``client`` is re-exported here, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .client import (
    planned_tool_mode, call_deadline, LLMError, LLMReply, RetryEvent, RetryPolicy, complete,
    is_retryable, is_rate_limit, load_litellm, on_load, retry_after_s, structured_output_supported,
    )

__all__ = [
    'planned_tool_mode', 'call_deadline', 'LLMError', 'LLMReply', 'RetryEvent', 'RetryPolicy', 'complete',
    'is_retryable', 'is_rate_limit', 'load_litellm', 'on_load', 'retry_after_s',
    'structured_output_supported',
]


def __getattr__(name: str) -> Any:
    # The re-exported names load with .client on first use (PEP 562).
    if name in __all__:
        return getattr(importlib.import_module(".client", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
