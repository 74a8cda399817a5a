"""How many episodes run at once: workers times episodes in flight per worker, never more than the
cores for an env whose steps are CPU-heavy.

An env family says its steps are CPU-heavy (training a model, fitting students) in its class's
Gymnasium metadata::

    metadata = {"render_modes": [], "rsigym.cpu_heavy": True}

For such an env the runner keeps one episode in flight per worker and at most one worker per
core, whatever was asked, and says so. Otherwise the default is one episode per worker, or
``HOSTED_CONCURRENCY`` when the scenario calls a hosted model (its steps wait on the network).
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from typing import Any

from rsigym.errors import UserError

__all__ = ["CapacityPlan", "HOSTED_CONCURRENCY", "HOSTED_EPISODE_TIMEOUT_S", "CPU_HEAVY_KEY", "env_is_cpu_heavy",
           "episode_timeout_s", "plan_capacity", "uses_hosted_model"]

HOSTED_CONCURRENCY = 16  # episodes in flight per worker by default against a hosted model
# The default wall clock of an episode that calls a hosted model: a provider that stops answering
# must not hold a run for ever. 15 minutes is 10x the longest bundled hosted episode we have seen.
HOSTED_EPISODE_TIMEOUT_S = 900.0
CPU_HEAVY_KEY = "rsigym.cpu_heavy"


@dataclass(frozen=True)
class CapacityPlan:
    """Workers and episodes in flight per worker, with a line for each thing changed from the request."""

    workers: int
    concurrency: int
    cpu_heavy: bool = False
    notes: list[str] = field(default_factory=list)


def env_is_cpu_heavy(env_id: str) -> bool:
    """Whether the env class registered as ``env_id`` declares CPU-heavy steps (imports its module)."""
    from rsigym.registry import ENVS

    env_class = ENVS.lookup(env_id)
    return bool((getattr(env_class, "metadata", None) or {}).get(CPU_HEAVY_KEY))


def _is_hosted(model: Any) -> bool:
    return isinstance(model, str) and bool(model) and not model.startswith("rsigym/")


def uses_hosted_model(raw: dict[str, Any]) -> bool:
    """Whether a scenario (its raw mapping) names a hosted model: an agent's, the simulated
    user's (``env.kwargs.user.model``) or a grader's (``params.model``)."""
    if any(_is_hosted(agent.get("model")) for agent in raw.get("agents") or []):
        return True
    user = ((raw.get("env") or {}).get("kwargs") or {}).get("user")
    if isinstance(user, dict) and _is_hosted(user.get("model")):
        return True
    return any(isinstance(g, dict) and _is_hosted((g.get("params") or {}).get("model"))
               for g in raw.get("graders") or [])


def _names_hosted_model(value: Any) -> bool:
    """Whether a mapping names a hosted model under a ``model`` key, at any depth."""
    if isinstance(value, dict):
        return any((key == "model" and _is_hosted(item)) or _names_hosted_model(item) for key, item in value.items())
    if isinstance(value, (list, tuple)):
        return any(_names_hosted_model(item) for item in value)
    return False


def episode_can_spend(spec: Any) -> bool:
    """Whether an episode (an ``EpisodeSpec``) may spend: a hosted model named by its agent, or as a
    ``model`` anywhere in its agent params, env kwargs (the simulated user, a judge) or graders'
    params; or an agent kind rsigym does not ship (a custom agent may call a provider itself).
    rsigym's own scripted agents and offline models (``rsigym/...``) cost nothing."""
    if (_is_hosted(spec.agent.model) or _names_hosted_model(spec.agent.params)
            or _names_hosted_model(spec.env.kwargs) or any(_names_hosted_model(g.params) for g in spec.graders)):
        return True
    from rsigym.registry import AGENTS

    try:
        factory = AGENTS.lookup(spec.agent.kind)
    except Exception:  # an unknown kind fails in its episode, with its own message; it may spend
        return True
    return not str(getattr(factory, "__module__", "") or "").startswith("rsigym.")


def episode_timeout_s(asked_s: float | None, agent_model: Any, env_kwargs: dict[str, Any]) -> float | None:
    """An episode's wall clock: ``asked_s`` (``--episode-timeout``; 0 turns it off), or by default
    ``HOSTED_EPISODE_TIMEOUT_S`` when its agent or simulated user calls a hosted model and none for
    offline models and scripted agents (they call nothing that can stop answering)."""
    if asked_s is not None:
        return asked_s or None
    user = env_kwargs.get("user")
    hosted = _is_hosted(agent_model) or (isinstance(user, dict) and _is_hosted(user.get("model")))
    return HOSTED_EPISODE_TIMEOUT_S if hosted else None


def plan_capacity(env_id: str, raw: dict[str, Any], *, workers: int, concurrency: int | None,
                  cpu_count: int | None = None) -> CapacityPlan:
    """Resolve ``concurrency`` (None: the scenario's ``runner.concurrency``, else the default) and
    keep a CPU-heavy env to one episode per worker and one worker per core."""
    if concurrency is None:
        concurrency = (raw.get("runner") or {}).get("concurrency")
    asked = concurrency
    if concurrency is None:
        concurrency = HOSTED_CONCURRENCY if uses_hosted_model(raw) else 1
    if concurrency < 1:
        raise UserError(f"--concurrency must be >= 1, got {concurrency}")
    if not env_is_cpu_heavy(env_id):
        return CapacityPlan(workers, concurrency)
    cores = cpu_count or os.cpu_count() or 1
    notes = []
    if concurrency > 1:
        if asked is not None:
            notes.append(f"{env_id} declares CPU-heavy steps: 1 episode in flight per worker, not {asked}")
        concurrency = 1
    if workers > cores:
        notes.append(f"{env_id} declares CPU-heavy steps: {cores} workers (one per core), not {workers}")
        workers = cores
    return CapacityPlan(workers, concurrency, cpu_heavy=True, notes=notes)
