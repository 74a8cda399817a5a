"""One episode, start to record: make the env and agent, loop, snapshot, grade live.

Whatever goes wrong inside an episode ends in a record with the right termination, never in an
exception that would lose the episode: an agent that raises gives ``agent_error``; a sandbox or
env that fails gives ``infra_error`` (infrastructure failures are not agent failures).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import threading
import time
import warnings
import traceback
from typing import Any

from rsigym.action_limits import short_repr
from rsigym.agent import task_info
from rsigym.errors import InfraError
from rsigym.record_limits import cap_for_record
from rsigym.records import FinalSnapshot, Grade, Step, Trajectory, Usage, to_jsonable, utc_now

from ..scenario import EpisodeSpec, NamedSpec
from .deadline import TIMEOUT_CAUSE, EpisodeTimeout, deadline, timeout_message

__all__ = ["run_episode", "EpisodeTimeout", "TIMEOUT_CAUSE"]


def _import_before_the_timer(env_id: str) -> None:
    """Import the env's module (and the kernel's conditions) before an episode timer is armed: an
    alarm inside an import would leave a half-made module in the worker and surface as another
    error. One-time costs of a worker are not the episode's."""
    import importlib

    import gymnasium as gym

    import rsigym.conditions  # noqa: F401

    try:
        entry_point = gym.spec(env_id).entry_point
    except Exception:  # noqa: BLE001 - an unknown id fails in gym.make, inside the episode
        return
    if isinstance(entry_point, str):
        importlib.import_module(entry_point.split(":")[0])


_GRADER_CACHE: dict[tuple[str, str], Any] = {}
_GRADER_LOCK = threading.Lock()


def _grader(spec: NamedSpec) -> Any:
    """Graders are built once per worker process: some hold a sandbox pool or a loaded table."""
    from rsigym.grader import get_grader
    from rsigym.records import canonical_json

    key = (spec.name, canonical_json(spec.params))
    with _GRADER_LOCK:  # episodes in flight on threads share the cache: build each grader once
        if key not in _GRADER_CACHE:
            _GRADER_CACHE[key] = get_grader(spec.name, **spec.params)
        return _GRADER_CACHE[key]


def _short_error(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}" for f in frames)
    return f"{type(exc).__name__}: {exc} [{where}]"


def run_episode(spec: EpisodeSpec) -> Trajectory:
    """Run one episode and return its graded record. Never raises for agent or env failures."""
    import gymnasium as gym

    import rsigym
    from rsigym.agent import make_agent
    from rsigym.grader import grade_record
    from rsigym.registry import register_gym_envs

    import_user_modules(spec.imports)  # --import: the user's conditions, graders, handlers, here too
    if multiprocessing.parent_process() is not None:  # a worker: the runner warns once per run
        warnings.filterwarnings("ignore", message="sandbox falls back to local", category=RuntimeWarning)
    register_gym_envs()  # in this worker: every env id of the rsigym.envs entry points

    record = Trajectory(episode_key=spec.key, env=spec.env, agent=spec.agent, seed=spec.seed,
                        rep=spec.rep, rsigym_version=rsigym.__version__)
    env = agent = None
    if spec.timeout_s:
        _import_before_the_timer(spec.env.id)
    started = time.monotonic()
    try:
        with deadline(spec.timeout_s):
            kwargs = dict(spec.env.kwargs)
            if spec.env.condition is not None:
                kwargs["condition"] = spec.env.condition
            env = gym.make(spec.env.id, max_episode_steps=spec.max_steps, **kwargs)
            agent = make_agent(spec.agent)
            if spec.tool_mode and getattr(agent, "tool_mode", None) == "auto":
                setattr(agent, "tool_mode", spec.tool_mode)  # the endpoint check's probe decided
            _play(env, agent, spec, record)
    except EpisodeTimeout:  # an infrastructure limit, not the agent's failure
        record.termination, record.error = "infra_error", timeout_message(spec.timeout_s or 0.0)
    except Exception as exc:  # an env bug is not the agent's fault: infra_error, recorded
        record.termination, record.error = "infra_error", _short_error(exc)
        if spec.timeout_s and time.monotonic() - started >= spec.timeout_s:
            # The alarm came first, and code it interrupted (an import, a library's handler) turned
            # it into another exception: still the timeout, with what it surfaced as.
            record.error = f"{timeout_message(spec.timeout_s)} (surfaced as {record.error})"
    finally:
        agent_usage = sum((s.usage for s in record.steps), record.usage_by_role.pop("agent", Usage()))
        by_role = {"agent": agent_usage} if agent_usage.model_calls else {}
        if env is not None:
            by_role.update(getattr(env.unwrapped, "llm_usage", None) or {})  # e.g. a simulated user
            record.sandbox = getattr(env.unwrapped, "sandbox_info", None)
            try:
                env.close()
            except Exception as exc:
                record.error = (record.error + "; " if record.error else "") + f"close: {_short_error(exc)}"
    record.usage_by_role = by_role
    record.tool_mode = getattr(agent, "tool_mode_used", None)
    prompt = getattr(agent, "system_prompt_text", None)
    record.system_prompt = prompt if isinstance(prompt, str) else None
    record.usage = sum((u for role, u in by_role.items() if role != "agent"), agent_usage)
    record.finished_at = utc_now()
    if record.termination != "infra_error":
        for grader_spec in spec.graders:
            try:
                grader = _grader(grader_spec)
            except Exception as exc:  # a broken grader costs its grade, never the record
                record.grades.append(Grade(grader=grader_spec.name, version="?", score=None,
                                           params=dict(grader_spec.params),
                                           error=f"cannot build the grader: {_short_error(exc)}"))
                continue
            record.grades.append(grade_record(grader, record))
    return record


def import_user_modules(modules: tuple[str, ...] | list[str]) -> None:
    """Import the modules named by ``--import`` (cached by Python after the first time)."""
    import importlib

    for name in modules:
        importlib.import_module(name)


def _charge_agent(record: Trajectory, exc: InfraError) -> None:
    """Count the failed LLM attempts of an agent call that raised (they have no step to go in)."""
    usage = getattr(exc, "usage", None)
    if isinstance(usage, Usage):
        record.usage_by_role["agent"] = record.usage_by_role.get("agent", Usage()) + usage


def _storable(value: Any) -> Any:
    """``value`` as stored in a step: capped in depth and size (cuts marked), then JSON values."""
    try:
        return to_jsonable(cap_for_record(value))
    except TypeError:  # an object no record can hold (an agent may emit anything): keep its text
        return {"__rsigym_truncated__": "not JSON-storable", "preview": short_repr(value, 2000)}


def _play(env: Any, agent: Any, spec: EpisodeSpec, record: Trajectory) -> None:
    started = time.perf_counter()
    observation, info = env.reset(seed=spec.seed, options={"task_id": spec.env.task_id})
    reset_s = time.perf_counter() - started
    try:
        agent.reset({**task_info(env, info=info, task_id=spec.env.task_id, condition=spec.env.condition,
                                 rep=spec.rep), "env_id": spec.env.id}, spec.seed)
    except InfraError as exc:
        _charge_agent(record, exc)
        raise
    except Exception as exc:  # e.g. an optimiser given an action space it cannot search
        record.termination, record.error = "agent_error", _short_error(exc)
        return
    t = 0
    while True:
        started = time.perf_counter()
        try:
            action = agent.act(observation)
        except InfraError as exc:
            _charge_agent(record, exc)
            raise
        except Exception as exc:
            record.termination, record.error = "agent_error", _short_error(exc)
            break
        latency_s = time.perf_counter() - started
        started = time.perf_counter()
        next_observation, reward, terminated, truncated, info = env.step(action)
        env_s = time.perf_counter() - started + (reset_s if t == 0 else 0.0)
        observe_error = None
        observe = getattr(agent, "observe", None)
        if observe is not None:  # optional feedback hook: optimisers learn from reward or info
            try:
                observe(float(reward), next_observation, info)
            except InfraError as exc:
                _charge_agent(record, exc)
                raise
            except Exception as exc:
                observe_error = _short_error(exc)
        agent_usage = getattr(agent, "last_usage", None) or Usage()
        usage = dataclasses.replace(agent_usage, latency_s=agent_usage.latency_s or latency_s, env_s=env_s)
        # Stored as JSON values at once, so live grading sees exactly what a regrade reads.
        record.steps.append(Step(t, _storable(observation), _storable(action),
                                 float(reward), bool(terminated), bool(truncated),
                                 _storable(info), usage))
        observation, t = next_observation, t + 1
        if observe_error is not None:
            record.termination, record.error = "agent_error", observe_error
            break
        if terminated:
            record.termination = info.get("termination", "agent_stop")
            break
        if truncated:
            record.termination = info.get("termination", "max_steps")
            break
    snapshot = getattr(env.unwrapped, "snapshot", None)
    if snapshot is not None:
        record.final = FinalSnapshot.of(snapshot())
