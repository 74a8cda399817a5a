"""Calls to a LiteLLM provider with retries: exponential backoff with jitter, Retry-After honoured.

Rate limits, timeouts, connection failures and 5xx answers are retried; anything else (a bad key,
an unknown model, a rejected request) is not. When retries run out, ``ProviderError`` (an
``InfraError``) ends the episode as ``infra_error``: a provider's failure is never the agent's.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable

from rsigym.errors import InfraError

__all__ = ["ProviderError", "RetryPolicy", "RetryEvent", "call_with_retries", "is_retryable", "retry_after_s"]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})


class ProviderError(InfraError):
    """The model provider failed and retries ran out (or the failure is not retryable)."""


@dataclass(frozen=True)
class RetryPolicy:
    """How provider errors are retried. ``max_retries`` counts retries after the first call."""

    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0


@dataclass(frozen=True)
class RetryEvent:
    """One failed call that was retried: what failed and how long we waited."""

    error: str
    delay_s: float


def is_retryable(exc: BaseException, litellm: Any) -> bool:
    if isinstance(exc, (litellm.Timeout, litellm.APIConnectionError, litellm.RateLimitError,
                        litellm.InternalServerError, litellm.ServiceUnavailableError,
                        litellm.BadGatewayError)):
        return True
    status = getattr(exc, "status_code", None)
    if isinstance(status, int):
        return status in RETRYABLE_STATUS or status >= 500
    return isinstance(exc, litellm.APIError)  # a malformed body and the like, without a status


def retry_after_s(exc: BaseException) -> float | None:
    """The server's Retry-After (seconds or ``retry-after-ms``), if the error carries one."""
    for source in (getattr(exc, "response", None), exc):
        headers = getattr(source, "headers", None) or getattr(source, "litellm_response_headers", None)
        if not headers:
            continue
        try:
            if headers.get("retry-after-ms") is not None:
                return float(headers["retry-after-ms"]) / 1000.0
            if headers.get("retry-after") is not None:
                return float(headers["retry-after"])
        except (TypeError, ValueError):  # an HTTP date: fall back to our own backoff
            return None
    return None


def call_with_retries(call: Callable[[], Any], litellm: Any, policy: RetryPolicy,
                      rng: random.Random, sleep: Callable[[float], None] = time.sleep,
                      on_retry: Callable[[RetryEvent], None] | None = None) -> Any:
    """Run ``call`` until it succeeds, retrying provider failures per ``policy``."""
    for attempt in range(policy.max_retries + 1):
        try:
            return call()
        except Exception as exc:
            summary = f"{type(exc).__name__}: {str(exc).splitlines()[0][:300] if str(exc) else ''}"
            if not is_retryable(exc, litellm):
                raise ProviderError(f"provider error (not retried): {summary}") from exc
            if attempt == policy.max_retries:
                raise ProviderError(f"provider error after {attempt + 1} attempts: {summary}") from exc
            # Full backoff doubled per attempt, jittered to half..full so clients do not align.
            delay = min(policy.backoff_max_s, policy.backoff_base_s * 2 ** attempt) * rng.uniform(0.5, 1.0)
            hinted = retry_after_s(exc)
            if hinted is not None:
                delay = max(delay, min(hinted, policy.retry_after_max_s))
            event = RetryEvent(summary, delay)
            if on_retry is not None:
                on_retry(event)
            sleep(delay)
    raise AssertionError("unreachable")
