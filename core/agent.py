"""The Agent protocol and ``make_agent``, which builds an agent from a scenario entry."""

from __future__ import annotations

from typing import Any, Callable, Protocol, runtime_checkable

from rsigym.errors import UserError
from rsigym.records.trajectory import AgentSpec, Usage

from .records.redact import redact, redact_text
from .registry import AGENTS

__all__ = ["Agent", "register_agent", "make_agent", "available_agents", "task_info"]


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


def task_info(env: Any, *, info: dict[str, Any] | None = None, task_id: str | None = None,
              condition: dict[str, Any] | None = None, rep: int = 0) -> dict[str, Any]:
    """What ``Agent.reset`` receives for ``env`` (a made Gymnasium env), as the runner builds it.

    In your own ``env.step`` loop: ``observation, info = env.reset(seed=s, options={"task_id": t})``,
    then ``agent.reset(task_info(env, info=info, task_id=t), s)``.
    """
    unwrapped = env.unwrapped
    return {
        "env_id": env.spec.id if env.spec is not None else type(unwrapped).__name__, "task_id": task_id,
        "condition": condition, "action_space": env.action_space, "observation_space": env.observation_space,
        "action_schema": getattr(unwrapped, "action_schema", None), "info": info or {},
        "tools": getattr(unwrapped, "tools", None), "rep": rep,
    }


def register_agent(kind: str) -> Callable[[Callable[[AgentSpec], Agent]], Callable[[AgentSpec], Agent]]:
    """Decorator: ``make_agent`` builds agents of ``kind`` with this factory (``spec -> Agent``).

    From another package, use the entry-point group ``rsigym.agents`` instead (``kind =
    "pkg.module:Factory"``): it reaches every process, spawned workers included.
    """
    return AGENTS.register(kind)


def available_agents() -> list[str]:
    """Every agent kind: registered here or through the ``rsigym.agents`` entry points."""
    return list(AGENTS)


def make_agent(spec: AgentSpec | dict[str, Any]) -> Agent:
    """Build the agent a scenario entry describes; an unknown kind or bad params is a UserError."""
    if isinstance(spec, dict):
        spec = AgentSpec.from_dict({"id": spec.get("id") or spec.get("kind"), **spec})
    factory = AGENTS.lookup(spec.kind)
    try:
        return factory(spec)
    except TypeError as exc:
        raise UserError(f"agent {spec.id!r} ({spec.kind}) rejects params {redact(spec.params)}: "
                        f"{redact_text(str(exc))}") from exc
