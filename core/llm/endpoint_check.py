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
The first endpoint's deadline runs from the start of the check, LiteLLM's import included: with
workers importing beside it that import took 16-23 s, and a check of a 5 s deadline against a
trickling server ended after 22-29 s (60 s: 80 s). Its calls get half the deadline at least, so an
import that takes more than half of it delays the end by what it took over that half. The calls run on a thread of their own, and
the check waits for them until ``WATCHDOG_GRACE_S`` past the deadline at most, whatever holds them
outside a socket operation.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import dataclass, field
from functools import partial
from typing import Any, Callable, Mapping

from .provider_errors import provider_message
from ..records.trajectory import Usage

__all__ = ["Endpoint", "EndpointCheck", "scenario_endpoints", "check_endpoints", "PING"]

PING = [{"role": "user", "content": "Reply with the word OK."}]
DEADLINE_S = 60.0  # per endpoint: the ping, its retry and the tool probe together
WATCHDOG_GRACE_S = 2.0  # past the deadline, the check stops waiting for calls that have not returned
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
    from .client import RetryPolicy, complete, load_litellm

    began = time.monotonic()  # the first endpoint's deadline runs from here: LiteLLM's import counts
    environ = os.environ if environ is None else environ
    deadline_s = DEADLINE_S if deadline_s is None else deadline_s
    call = call or complete
    result = EndpointCheck(endpoints=scenario_endpoints(raw))
    if result.endpoints and call is complete:
        load_litellm()  # seconds of import (20 on a loaded machine), here rather than on the watchdog's thread
    # the calls get half the deadline at least: an import that took most of it fails no healthy endpoint
    first_end = max(began + deadline_s, time.monotonic() + deadline_s / 2)
    # one retry: a connection that fails twice in a row is not coming up for the run either
    retry = RetryPolicy(max_retries=1, backoff_base_s=0.5, backoff_max_s=2.0, retry_after_max_s=5.0,
                        max_rate_limit_retries=0)
    for index, endpoint in enumerate(result.endpoints):
        where = f"{source}: {endpoint.wheres[0]}.model"
        at = f" at {endpoint.api_base}" if endpoint.api_base else ""
        key = environ.get(endpoint.api_key_env) if endpoint.api_key_env else None
        end = first_end if index == 0 else time.monotonic() + deadline_s
        outcome = _by_deadline(end + WATCHDOG_GRACE_S, partial(_check_one, call, endpoint, key, timeout_s, retry, end))
        if outcome is not None:
            result.usage = result.usage + outcome.usage
            result.tool_modes.update({agent: outcome.tool_mode for agent in endpoint.auto_agents
                                      if outcome.tool_mode})
        if outcome is None or (outcome.error is not None and time.monotonic() >= end):
            result.problems.append(f"{where}: {endpoint.model}{at} failed the endpoint check (deadline): no "
                                   f"complete answer within the check's deadline of {deadline_s:g} s per "
                                   "endpoint (--no-endpoint-check skips this check)")
        elif outcome.error is not None:
            exc = outcome.error
            cause = exc.__cause__
            words = provider_message(cause) if cause is not None else str(exc).split(": ", 1)[-1]
            line = f"{where}: {endpoint.model}{at} failed the endpoint check ({exc.kind or 'error'}): {words}"
            line = " ".join(line.split())  # one line, whatever the provider sent
            if exc.kind in _PASSING_KINDS:
                result.warnings.append(line)
            else:
                result.problems.append(line + " (--no-endpoint-check skips this check)")
    return result


@dataclass
class _Outcome:
    """One endpoint's calls: what they cost, the ping's error (None: it answered), the tool mode found."""

    usage: Usage = field(default_factory=Usage)
    error: Any = None  # the LLMError of the ping (a TimeoutError: the deadline passed before it)
    tool_mode: str | None = None


def _check_one(call: Callable[..., Any], endpoint: Endpoint, key: str | None, timeout_s: float, retry: Any,
               end: float) -> _Outcome:
    """The tool probe (``tool_mode: auto``), then the ping unless the probe answered, all by ``end``."""
    from .client import LLMError, call_deadline

    outcome = _Outcome()
    with call_deadline(end):  # every socket operation, timeout and backoff of these calls ends by then
        if endpoint.auto_agents:  # an answered tool probe shows the endpoint answers: no ping then
            outcome.tool_mode = _probe_tools(call, endpoint, key, timeout_s, retry, outcome)
            if outcome.tool_mode is not None:
                return outcome
            if time.monotonic() >= end:  # no time left for the ping: the deadline is the answer
                outcome.error = TimeoutError("the endpoint check's deadline passed")
                return outcome
        try:
            reply = call(PING, model=endpoint.model, role=endpoint.role, api_base=endpoint.api_base,
                         api_key=key, params={"max_tokens": 5, "temperature": 0.0}, timeout_s=timeout_s,
                         retry=retry)
        except LLMError as exc:
            outcome.usage, outcome.error = outcome.usage + exc.usage, exc
            return outcome
    outcome.usage = outcome.usage + reply.usage
    if endpoint.auto_agents:  # it answers, but refused the probe's tools: JSON it is
        outcome.tool_mode = "json"
    return outcome


def _by_deadline(end: float, work: Callable[[], _Outcome]) -> _Outcome | None:
    """``work()`` on a thread of its own; None when it has not returned by ``end``.

    The calls' sockets are bounded by the deadline already; this bounds what is not a socket
    operation (a name lookup, LiteLLM's own work on a starved CPU). A thread left behind ends at
    its sockets' deadline; its calls are not counted (none of them answered)."""
    box: list[tuple[_Outcome | None, BaseException | None]] = []

    def run() -> None:
        try:
            box.append((work(), None))
        except BaseException as exc:  # noqa: BLE001 - raised again in the caller's thread
            box.append((None, exc))

    thread = threading.Thread(target=run, name="rsigym-endpoint-check", daemon=True)
    thread.start()
    thread.join(max(0.0, end - time.monotonic()))
    if not box:
        return None
    outcome, error = box[0]
    if error is not None:
        raise error
    return outcome


_PROBE_TOOL = {"type": "function", "function": {
    "name": "act", "description": "Say whether you can act.",
    "parameters": {"type": "object", "properties": {"ok": {"type": "boolean"}}, "required": ["ok"]}}}


def _probe_tools(call: Callable[..., Any], endpoint: Endpoint, key: str | None, timeout_s: float,
                 retry: Any, result: _Outcome) -> str | None:
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
