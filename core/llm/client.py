"""The one LLM client: every LLM call in rsigym goes through ``complete``.

``complete(messages, model=..., role=...)`` sends one chat request through LiteLLM and returns
the reply with its ``Usage`` (tokens, cost from LiteLLM's price map, latency, calls, retries).
Failures that may pass (429, 5xx, timeouts, lost connections, a malformed body) are retried with
exponential backoff, jitter and the server's Retry-After; failures that cannot pass (a bad or
missing key, an unknown model, a rejected request) fail at once. Either way the caller gets one
exception type, ``LLMError``: an ``InfraError``, so the runner records the episode as
``infra_error`` (a provider's failure is never the agent's), carrying the usage of the failed
attempts so that the record counts them.

LiteLLM is imported on first use (it takes seconds), with its local price map so that nothing is
fetched at import, and its HTTP goes through ``rsigym.llm.http_guard`` (a deadline on every socket
operation, a reply size cap). Code that serves models in-process (the offline ``rsigym/...``
models) installs itself into LiteLLM with ``on_load``.

A provider's usage is not trusted blindly (``rsigym.llm.provider_usage``): a call whose reported
tokens are missing, negative or no number is counted and priced locally, and flagged in
``Usage.usage_estimated``.
"""

from __future__ import annotations

import random
import time
from dataclasses import dataclass
from typing import Any, Callable

from . import limits
from ..errors import InfraError
from .litellm_setup import call_deadline, deadline, load_litellm, on_load
from .output_modes import _STRUCTURED, planned_tool_mode, structured_output_supported
from .provider_errors import NOT_RETRIED, error_kind, provider_message
from ..records.trajectory import Usage
from .provider_usage import cost_usd, local_tokens, priced_usd, reported_tokens
from .spending import COST_LIMIT_KIND, COST_LIMIT_PREFIX, current_meter
from ..records.redact import redacted_excerpt, register_secrets_in

__all__ = ["planned_tool_mode", "call_deadline", "LLMError", "LLMReply", "RetryEvent", "RetryPolicy", "complete", "is_retryable",
           "is_rate_limit", "load_litellm", "on_load", "retry_after_s", "structured_output_supported"]

RETRYABLE_STATUS = frozenset({408, 409, 425, 429})

def _time_left_s(wanted_s: float) -> float:
    end = deadline()
    return wanted_s if end is None else max(0.05, min(wanted_s, end - time.monotonic()))


class LLMError(InfraError):
    """An LLM call failed: retries ran out, or the failure cannot pass (bad key, unknown model).

    ``usage`` counts the attempts that failed (calls, retries, latency), ``role`` says who called
    (agent, user, candidate_source, judge), ``model`` what was called and ``kind`` what failed
    (``rsigym.llm.provider_errors.error_kind``: auth, not_found, bad_request, bad_url, connection,
    rate_limit, server, other; empty when no provider answered, e.g. missing credentials).
    """

    def __init__(self, message: str, *, role: str = "", model: str = "", usage: Usage | None = None,
                 kind: str = "") -> None:
        super().__init__(message)
        self.role, self.model, self.kind = role, model, kind
        self.usage = usage if usage is not None else Usage()

    def __reduce__(self) -> Any:  # picklable across worker processes despite keyword arguments
        return (_rebuild_error, (str(self), self.role, self.model, self.usage, self.kind))

    def with_usage(self, earlier: Usage) -> "LLMError":
        """The same error, charged with ``earlier`` usage of the caller's turn as well."""
        return LLMError(str(self), role=self.role, model=self.model, usage=earlier + self.usage, kind=self.kind)


def _rebuild_error(message: str, role: str, model: str, usage: Usage, kind: str = "") -> LLMError:
    return LLMError(message, role=role, model=model, usage=usage, kind=kind)


@dataclass(frozen=True)
class LLMReply:
    """One answer: LiteLLM's message (``content``, ``tool_calls``), its text, usage and the response.

    ``reply_format`` says how the reply was asked for: ``tools`` (functions offered),
    ``json_schema`` (a structured ``response_format`` sent and taken) or ``text`` (neither).
    """

    message: Any
    text: str
    usage: Usage
    raw: Any
    reply_format: str = "text"


@dataclass(frozen=True)
class RetryPolicy:
    """How provider errors are retried. ``max_retries`` counts retries after the first call.

    A 429 (rate limit) is counted apart, up to ``max_rate_limit_retries``: a rate limit says
    "later", not "broken", and the provider's gate (``rsigym.llm.limits``) slows every episode down
    meanwhile, so a storm of 429s is waited out instead of losing episodes; the count stays
    bounded all the same.
    """

    max_retries: int = 4
    backoff_base_s: float = 1.0
    backoff_max_s: float = 30.0
    retry_after_max_s: float = 120.0
    max_rate_limit_retries: int = 8


@dataclass(frozen=True)
class RetryEvent:
    """One failed call that was retried: what failed and how long we waited."""

    error: str
    delay_s: float


def is_retryable(exc: BaseException, litellm: Any) -> bool:
    """True for failures that may pass: rate limits, timeouts, lost connections, 5xx."""
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


def is_rate_limit(exc: BaseException, litellm: Any) -> bool:
    """True for a 429: the provider asks us to slow down."""
    return isinstance(exc, litellm.RateLimitError) or getattr(exc, "status_code", None) == 429


def _summary(exc: BaseException) -> str:
    """The exception's type and the provider's own words (LiteLLM's prefixes dropped), one line."""
    return f"{type(exc).__name__}: {redacted_excerpt(provider_message(exc), 1000)}"


def complete(messages: list[dict[str, Any]], *, model: str, role: str, api_base: str | None = None,
             api_key: str | None = None, params: dict[str, Any] | None = None,
             tools: list[dict[str, Any]] | None = None, tool_choice: Any = None,
             json_schema: dict[str, Any] | None = None, timeout_s: float = 120.0,
             retry: RetryPolicy = RetryPolicy(), rng: random.Random | None = None,
             sleep: Callable[[float], None] = time.sleep,
             on_retry: Callable[[RetryEvent], None] | None = None) -> LLMReply:
    """Send one chat request; retry what may pass; return the reply and its usage.

    Args:
        messages: OpenAI-style chat messages.
        model: LiteLLM model string (``openai/gpt-4o-mini``, ``rsigym/random``, ...).
        role: Who asks (``agent``, ``user``, ``candidate_source``, ``judge``); named in errors.
        api_base: Base URL of an OpenAI-compatible server.
        api_key: Key to send; None lets LiteLLM find one (a missing one fails at once, except
            with an ``api_base``: local servers accept any key).
        params: Other ``litellm.completion`` arguments (temperature, seed, max_tokens,
            mock_response, ...); they win over the ones set here.
        tools, tool_choice: Native tool calling.
        json_schema: The schema a JSON reply must follow. Sent as a structured-output
            ``response_format`` where ``structured_output_supported`` says so; the caller's prompt
            carries it either way.
        timeout_s: Per-request timeout.
        retry, rng, sleep: Retry policy, jitter source and sleeper (tests pass fakes).
        on_retry: Told about each retried failure.

    Raises:
        LLMError: the call failed for good; ``usage`` counts the failed attempts.
    """
    litellm = load_litellm()
    rng = rng or random.Random()
    request: dict[str, Any] = {"model": model, "messages": messages, "timeout": timeout_s,
                               "max_retries": 0,  # retries are ours, counted and recorded
                               "drop_params": True}  # a provider without e.g. seed ignores it, not fails
    if api_base:
        request["api_base"] = api_base
    if tools:
        request["tools"] = tools
        if tool_choice is not None:
            request["tool_choice"] = tool_choice
    request.update(params or {})
    # registered here, in whichever process calls: a provider that echoes the key, a header or the
    # URL's password is redacted even from an excerpt cut before the record's own redaction
    register_secrets_in({"api_key": request.get("api_key") or api_key, "params": params,
                         "api_base": request.get("api_base")})
    usage = Usage()
    started, slept_s = time.perf_counter(), 0.0

    def fail(message: str, exc: BaseException | None = None) -> LLMError:
        usage.latency_s = max(time.perf_counter() - started - slept_s, 0.0)
        return LLMError(f"{role} model {model}: {message}", role=role, model=model, usage=usage,
                        kind=error_kind(exc) if exc is not None else "")

    if "api_key" not in request and "mock_response" not in request:
        key = api_key or _default_key(litellm, model, request.get("api_base"), fail)
        if key:
            request["api_key"] = key
    structured = (json_schema is not None and not tools and "response_format" not in request
                  and structured_output_supported(model, request.get("api_base")))
    if structured:
        request["response_format"] = {"type": "json_schema",
                                      "json_schema": {"name": "action", "schema": json_schema}}
    gate = None if "mock_response" in request else limits.gate_for(model, request.get("api_base"))
    meter = current_meter()  # the episode's share of a cost limit: asked before the call is sent
    refused = meter.refusal() if meter is not None else None
    if refused is not None:
        raise LLMError(f"{COST_LIMIT_PREFIX} {role} model {model}: {refused}", role=role, model=model, usage=usage,
                       kind=COST_LIMIT_KIND)
    attempt, throttled_attempt = 0, 0
    while True:
        usage.model_calls += 1
        request["timeout"] = _time_left_s(timeout_s)
        try:
            response, waited_s = _send(litellm, request, gate)
            slept_s += waited_s
            break
        except Exception as exc:
            slept_s += getattr(exc, "_rsigym_gate_wait_s", 0.0)
            if structured and isinstance(exc, (litellm.BadRequestError, litellm.UnprocessableEntityError)):
                # The server refused the schema (an older vLLM, a proxy): ask prompt-only, once.
                _STRUCTURED[(model, request.get("api_base"))] = False
                structured = False
                del request["response_format"]
                continue
            # a URL that is not one fails the same way every time, though LiteLLM calls it a 500;
            # an oversized reply is no passing trouble either
            if not is_retryable(exc, litellm) or error_kind(exc) in ("bad_url", "too_large"):
                raise fail(f"provider error {NOT_RETRIED}: {_summary(exc)}", exc) from exc
            throttled = is_rate_limit(exc, litellm)
            end = deadline()  # past the caller's deadline a retry could only fail again at once
            if ((throttled_attempt == retry.max_rate_limit_retries) if throttled else (attempt == retry.max_retries)
                    or (end is not None and time.monotonic() >= end)):
                raise fail(f"provider error after {attempt + throttled_attempt + 1} attempts: {_summary(exc)}",
                           exc) from exc
            # Backoff doubled per attempt, jittered to half..full so that clients do not align.
            delay = (min(retry.backoff_max_s, retry.backoff_base_s * 2 ** (attempt + throttled_attempt))
                     * rng.uniform(0.5, 1.0))
            hinted = retry_after_s(exc)
            if hinted is not None:
                delay = max(delay, min(hinted, retry.retry_after_max_s))
            if on_retry is not None:
                on_retry(RetryEvent(_summary(exc), delay))
            usage.provider_retries += 1
            if throttled:
                throttled_attempt += 1
            else:
                attempt += 1
            delay = _time_left_s(delay)
            sleep(delay)
            slept_s += delay
    message = response.choices[0].message
    reported = reported_tokens(response)
    if reported is None:  # missing, negative or not a number: counted here instead
        usage.prompt_tokens, usage.completion_tokens = local_tokens(litellm, model, messages, tools, message)
        usage.cost_usd = priced_usd(litellm, model, usage.prompt_tokens, usage.completion_tokens)
        usage.usage_estimated = 1
    else:
        usage.prompt_tokens, usage.completion_tokens = reported
        usage.cost_usd = cost_usd(litellm, response, model)
    usage.latency_s = max(time.perf_counter() - started - slept_s, 0.0)  # backoff waits excluded
    if meter is not None:  # the local count's price where the provider's could not be trusted
        meter.charge(usage.cost_usd)
    reply_format = "tools" if tools else ("json_schema" if structured else "text")
    return LLMReply(message, str(getattr(message, "content", None) or ""), usage, response, reply_format)


def _send(litellm: Any, request: dict[str, Any], gate: limits.Gate | None) -> tuple[Any, float]:
    """One request through the provider's gate; returns the response and the seconds spent waiting
    for the gate (set on a raised error as ``_rsigym_gate_wait_s``: waits are not model time)."""
    if gate is None:
        return litellm.completion(**request), 0.0
    with gate.slot() as slot:
        try:
            response = litellm.completion(**request)
        except Exception as exc:
            slot.throttled = is_rate_limit(exc, litellm)
            exc._rsigym_gate_wait_s = slot.waited_s  # type: ignore[attr-defined]
            raise
        reported = reported_tokens(response)
        slot.ok = True
        slot.tokens = sum(reported) if reported is not None else 0  # never negative: no credit at the gate
        return response, slot.waited_s


def _default_key(litellm: Any, model: str, api_base: str | None,
                 fail: Callable[[str], LLMError]) -> str | None:
    """None to let LiteLLM find the key; fails at once when it cannot (not worth retrying)."""
    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # a provider LiteLLM cannot check: let the call itself say
        return None
    if missing and api_base:
        return "not-needed"  # vLLM, Ollama and the like accept any key
    if missing:
        raise fail(f"no credentials; set {' or '.join(missing)}")
    return None
