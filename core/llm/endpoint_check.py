"""Endpoint check: one cheap call per distinct model endpoint of a scenario, before any episode.

A scenario names models in many places: agents, the simulated user (``env.kwargs.user``), judges
(``graders[i].params``), candidate sources, workflow roles. A bad key, an unknown model, a URL
that is not one or a server that does not answer would otherwise fail every episode, one by one,
after retries. ``check_endpoints`` sends one short request (``max_tokens`` 5) per distinct
(model, api_base, credentials) through the one LLM client and turns every failure that cannot
pass into a preflight problem: one line with the key path, the model, and the provider's own
message. Offline ``rsigym/...`` models need no call. A rate limit or a 5xx after a retry is a
warning (the endpoint exists and the run's own retries may see it through). Its usage (tokens,
cost) is returned so that the run counts it.

For an ``llm`` agent with ``tool_mode: auto`` the call offers one function and requires it: a
reply that calls it means native tools work at that endpoint (``tools``), a reply in text means
JSON (``json``), and either shows the endpoint answers (no second call: it cost 0.5 s of every
run's start against a 500 ms provider). A probe that fails is followed by the plain call: an
endpoint that answers it refused the tools (``json``), one that does not is a problem as above.
LiteLLM's map would guess from the model's name, which a local server's model is not in.

Each endpoint has one overall deadline (``deadline_s``, both calls and the retry together): the
request timeout applies per read, and a server that trickles its answer a byte at a time would
hold every run at this check for as long as it liked. Past the deadline the socket is closed
(``rsigym.llm.http_guard`` bounds every socket operation by it) and the endpoint is a problem.
"""

from __future__ import annotations

import os
import time
from dataclasses import dataclass, field
from typing import Any, Callable, Mapping

from .provider_errors import provider_message
from ..records.trajectory import Usage

__all__ = ["Endpoint", "EndpointCheck", "scenario_endpoints", "check_endpoints", "PING"]

PING = [{"role": "user", "content": "Reply with the word OK."}]
DEADLINE_S = 60.0  # per endpoint: the ping, its retry and the tool probe together
_PASSING_KINDS = frozenset({"rate_limit", "server"})  # the endpoint answered; the run may retry


@dataclass(frozen=True)
class Endpoint:
    """A distinct model endpoint and where the scenario names it (key paths)."""

    model: str
    api_base: str | None
    api_key_env: str | None
    role: str
    wheres: tuple[str, ...]
    auto_agents: tuple[str, ...] = ()  # ids of llm agents with tool_mode auto at this endpoint


@dataclass
class EndpointCheck:
    """What the check found: problems (one line each), warnings, and what the calls cost."""

    endpoints: list[Endpoint] = field(default_factory=list)
    problems: list[str] = field(default_factory=list)
    warnings: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)
    tool_modes: dict[str, str] = field(default_factory=dict)  # tool_mode auto agent id -> tools | json


def _role(where: str) -> str:
    if where.startswith("agents"):
        return "agent"
    if where.startswith("graders"):
        return "judge"
    if where.endswith(".user"):
        return "user"
    return where.rsplit(".", 1)[-1].split("[")[0] or "model"


def scenario_endpoints(raw: dict[str, Any]) -> list[Endpoint]:
    """Every distinct hosted model endpoint the scenario (its raw mapping) names, in order."""
    from ..scenario.preflight import model_entries

    found: dict[tuple[str, str | None, str | None], list[str]] = {}
    auto: dict[tuple[str, str | None, str | None], list[str]] = {}
    for where, entry in model_entries(raw):
        model = entry["model"]
        params: dict[str, Any] = entry["params"] if isinstance(entry.get("params"), dict) else {}
        api_base = entry.get("api_base") or params.get("api_base")
        if model.startswith("rsigym/") and not api_base:
            continue  # offline models answer in-process
        if "mock_response" in (params.get("litellm_kwargs") or {}) or "mock_response" in params:
            continue  # LiteLLM answers these itself
        key = (model, api_base, entry.get("api_key_env") or params.get("api_key_env"))
        found.setdefault(key, []).append(where)
        if where.startswith("agents[") and entry.get("kind") == "llm" and params.get("tool_mode", "auto") == "auto":
            auto.setdefault(key, []).append(str(entry.get("id", model)))
    return [Endpoint(model, base, key_env, _role(wheres[0]), tuple(wheres), tuple(auto.get(key, ())))
            for key, wheres in found.items() for model, base, key_env in [key]]


def check_endpoints(raw: dict[str, Any], *, source: str = "scenario", environ: Mapping[str, str] | None = None,
                    call: Callable[..., Any] | None = None, timeout_s: float = 30.0,
                    deadline_s: float | None = None) -> EndpointCheck:
    """Call each endpoint of the scenario once; problems name the key path and the provider's words.

    Args:
        raw: The scenario's raw mapping (after ``--model`` and the other overrides).
        source: The scenario file, named at the start of each problem line.
        environ: Where ``api_key_env`` variables are read (default ``os.environ``).
        call: The client (``rsigym.llm.client.complete``; tests may pass another).
        timeout_s: Per-request timeout.
        deadline_s: Overall time per endpoint (its calls, the retry and the tool probe together;
            default ``DEADLINE_S``).
    """
    from .client import LLMError, RetryPolicy, call_deadline, complete, load_litellm

    environ = os.environ if environ is None else environ
    deadline_s = DEADLINE_S if deadline_s is None else deadline_s
    call = call or complete
    result = EndpointCheck(endpoints=scenario_endpoints(raw))
    if result.endpoints and call is complete:
        load_litellm()  # seconds of import, before any endpoint's deadline starts
    # one retry: a connection that fails twice in a row is not coming up for the run either
    retry = RetryPolicy(max_retries=1, backoff_base_s=0.5, backoff_max_s=2.0, retry_after_max_s=5.0,
                        max_rate_limit_retries=0)
    for endpoint in result.endpoints:
        where = f"{source}: {endpoint.wheres[0]}.model"
        at = f" at {endpoint.api_base}" if endpoint.api_base else ""
        key = environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
        end = time.monotonic() + deadline_s
        with call_deadline(end):
            if endpoint.auto_agents:  # an answered tool probe shows the endpoint answers: no ping then
                mode = _probe_tools(call, endpoint, key, timeout_s, retry, result)
                if mode is not None:
                    result.tool_modes.update({agent: mode for agent in endpoint.auto_agents})
                    continue
            try:
                reply = call(PING, model=endpoint.model, role=endpoint.role, api_base=endpoint.api_base,
                             api_key=key, params={"max_tokens": 5, "temperature": 0.0}, timeout_s=timeout_s,
                             retry=retry)
            except LLMError as exc:
                result.usage = result.usage + exc.usage
                if time.monotonic() >= end:
                    result.problems.append(f"{where}: {endpoint.model}{at} failed the endpoint check (deadline): no "
                                           f"complete answer within the check's deadline of {deadline_s:g} s per "
                                           "endpoint (--no-endpoint-check skips this check)")
                    continue
                cause = exc.__cause__
                words = provider_message(cause) if cause is not None else str(exc).split(": ", 1)[-1]
                line = f"{where}: {endpoint.model}{at} failed the endpoint check ({exc.kind or 'error'}): {words}"
                line = " ".join(line.split())  # one line, whatever the provider sent
                if exc.kind in _PASSING_KINDS:
                    result.warnings.append(line)
                else:
                    result.problems.append(line + " (--no-endpoint-check skips this check)")
                continue
            result.usage = result.usage + reply.usage
            if endpoint.auto_agents:  # it answers, but refused the probe's tools: JSON it is
                result.tool_modes.update({agent: "json" for agent in endpoint.auto_agents})
    return result


_PROBE_TOOL = {"type": "function", "function": {
    "name": "act", "description": "Say whether you can act.",
    "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}


def _probe_tools(call: Callable[..., Any], endpoint: Endpoint, key: str | None, timeout_s: float,
                 retry: Any, result: EndpointCheck) -> str | None:
    """``tools`` when the endpoint answers a required function with a call of it, ``json`` when it
    answers in text; None when the call failed (a server that refuses ``tools``, or one that is
    down: the ping then tells which, and says why)."""
    from .client import LLMError

    try:
        reply = call([{"role": "user", "content": "Call the function act with ok set to true."}],
                     model=endpoint.model, role=endpoint.role, api_base=endpoint.api_base, api_key=key,
                     params={"max_tokens": 32, "temperature": 0.0}, tools=[_PROBE_TOOL],
                     tool_choice={"type": "function", "function": {"name": "act"}}, timeout_s=timeout_s,
                     retry=retry)
    except LLMError as exc:
        result.usage = result.usage + exc.usage
        return None
    result.usage = result.usage + reply.usage
    return "tools" if getattr(reply.message, "tool_calls", None) else "json"
