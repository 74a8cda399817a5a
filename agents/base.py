"""The Agent protocol and ``make_agent``, which builds an agent from a scenario entry."""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from rsigym.errors import UserError
from rsigym.records import AgentSpec, Usage

__all__ = ["Agent", "register_agent", "make_agent", "available_agents"]


@runtime_checkable
class Agent(Protocol):
    """Decides actions. One instance runs one episode at a time.

    ``reset`` receives ``task_info``: ``env_id``, ``task_id``, ``condition``, ``action_space``,
    ``observation_space``, ``action_schema``, ``tools`` (the functions an env offers, as
    OpenAI-style specs, or None), ``rep`` (the repetition index) and the env's reset ``info``. ``last_usage`` is the
    usage of the latest ``act`` (tokens, cost, latency); the runner records it per step.

    An agent may also define ``observe(reward, observation, info)``: the runner calls it after
    every ``env.step`` with what the step returned. Optimisers (TPE, random search) learn from it;
    an LLM agent reads its feedback from ``observation["text"]`` instead and need not define it.
    """

    spec: AgentSpec
    last_usage: Usage

    def reset(self, task_info: dict[str, Any], seed: int) -> None: ...

    def act(self, observation: dict[str, Any]) -> Any: ...


_FACTORIES: dict[str, Callable[[AgentSpec], Agent]] = {}


def register_agent(kind: str) -> Callable[[Callable[[AgentSpec], Agent]], Callable[[AgentSpec], Agent]]:
    """Decorator: ``make_agent`` builds agents of ``kind`` with this factory (``spec -> Agent``)."""

    def decorate(factory: Callable[[AgentSpec], Agent]) -> Callable[[AgentSpec], Agent]:
        _FACTORIES[kind] = factory
        return factory

    return decorate


def available_agents() -> list[str]:
    return sorted(_FACTORIES)


def make_agent(spec: AgentSpec | dict[str, Any]) -> Agent:
    """Build the agent a scenario entry describes; an unknown kind or bad params is a UserError."""
    if isinstance(spec, dict):
        spec = AgentSpec.from_dict({"id": spec.get("id") or spec.get("kind"), **spec})
    if spec.kind not in _FACTORIES:
        raise UserError(f"unknown agent kind {spec.kind!r}; known: {', '.join(available_agents())}")
    try:
        return _FACTORIES[spec.kind](spec)
    except TypeError as exc:
        raise UserError(f"agent {spec.id!r} ({spec.kind}) rejects params {spec.params}: {exc}") from exc
