"""One episode, start to record: make the env and agent, loop, snapshot, grade live.

Whatever goes wrong inside an episode ends in a record with the right termination, never in an
exception that would lose the episode: an agent that raises gives ``agent_error``; a sandbox or
env that fails gives ``infra_error`` (infrastructure failures are not agent failures).
"""

from __future__ import annotations

import dataclasses
import multiprocessing
import sys
import threading
import time
import warnings
import traceback
from typing import Any, Callable

from rsigym.records.action_limits import short_repr
from rsigym.agent import task_info
from rsigym.errors import InfraError
from rsigym.llm.spending import COST_LIMIT_KIND, SpendMeter, metered
from rsigym.records.record_limits import cap_for_record
from rsigym.records.trajectory import FinalSnapshot, Grade, Step, Trajectory, Usage, to_jsonable, utc_now

from ..scenario.spec import EpisodeSpec, NamedSpec
from .deadline import TIMEOUT_CAUSE, EpisodeTimeout, deadline, interrupted_import, timeout_message

__all__ = ["run_episode", "prepare", "harness_fault", "worker_damaged", "EpisodeTimeout", "TIMEOUT_CAUSE",
           "STARTUP_TIMEOUT_S"]

STARTUP_TIMEOUT_S = 600.0  # the least bound on an episode's start-up (env made and reset, agent built)
_STARTUP = "the episode's start-up (env made and reset, agent built)"


def prepare(spec: EpisodeSpec) -> None:
    """What an episode needs before its timer starts, done once per worker (then cached): the
    ``--import`` modules, the env ids, the env's and the agent's modules, and LiteLLM when the
    episode calls a model. One-time costs of a worker are not the episode's, and an import never
    runs under a timer that could leave it half-made (``deadline``)."""
    import importlib

    import gymnasium as gym

    import rsigym.conditions  # noqa: F401
    from rsigym.registry import AGENTS, register_gym_envs

    import_user_modules(spec.imports)  # --import: the user's conditions, graders, handlers, here too
    register_gym_envs()  # in this worker: every env id of the rsigym.envs entry points
    try:
        AGENTS.lookup(spec.agent.kind)  # an entry point: imports the agent's module
    except Exception:  # noqa: BLE001 - an unknown kind fails in make_agent, recorded
        pass
    try:
        entry_point = gym.spec(spec.env.id).entry_point
    except Exception:  # noqa: BLE001 - an unknown id fails in gym.make, recorded
        entry_point = None
    if isinstance(entry_point, str):
        importlib.import_module(entry_point.split(":")[0])
    if _calls_a_model(spec):
        from rsigym.llm.client import load_litellm

        load_litellm()


def _calls_a_model(spec: EpisodeSpec) -> bool:
    """Whether the episode's agent or simulated user names a model (offline ``rsigym/`` ones too:
    they are served through LiteLLM)."""
    user = spec.env.kwargs.get("user")
    return bool(spec.agent.model or spec.agent.params.get("model")
                or (isinstance(user, dict) and user.get("model")))


_NOT_KERNEL = ("rsigym.agents", "rsigym.envs")  # rsigym's own agents and envs answer for themselves
_damaged = threading.Event()  # an import in this process was interrupted: see ``worker_damaged``


def worker_damaged() -> bool:
    """Whether a timeout landed inside an import in this process, which may now hold a half-made
    module: a worker running episodes on threads is then retired (``inflight``)."""
    return _damaged.is_set()


def harness_fault(exc: BaseException) -> bool:
    """Whether an exception the agent's code let out is the harness's fault, not the agent's.

    The agent answers for its own outputs and for what its own code raises. A module that cannot
    be imported (missing, or half-made by an interrupted import) is the worker's state, and an
    exception raised inside rsigym's kernel (the LLM client, spaces, registries) is rsigym's:
    both are ``infra_error``, as an ``InfraError`` (a provider that failed for good) already is.
    """
    if isinstance(exc, (ImportError, InfraError)):
        return True
    tb = exc.__traceback__
    while tb is not None and tb.tb_next is not None:
        tb = tb.tb_next
    where = str(tb.tb_frame.f_globals.get("__name__", "")) if tb is not None else ""
    return ((where == "rsigym" or where.startswith("rsigym."))
            and not any(where == top or where.startswith(top + ".") for top in _NOT_KERNEL))


_GRADER_CACHE: dict[tuple[str, str], Any] = {}
_GRADER_LOCK = threading.Lock()


def _grader(spec: NamedSpec) -> Any:
    """Graders are built once per worker process: some hold a sandbox pool or a loaded table."""
    from rsigym.grader import get_grader
    from rsigym.records.trajectory import canonical_json

    key = (spec.name, canonical_json(spec.params))
    with _GRADER_LOCK:  # episodes in flight on threads share the cache: build each grader once
        if key not in _GRADER_CACHE:
            _GRADER_CACHE[key] = get_grader(spec.name, **spec.params)
        return _GRADER_CACHE[key]


def _short_error(exc: BaseException) -> str:
    frames = traceback.extract_tb(exc.__traceback__)[-3:]
    where = "; ".join(f"{f.filename.rsplit('/', 1)[-1]}:{f.lineno} in {f.name}" for f in frames)
    return f"{type(exc).__name__}: {exc} [{where}]"


def run_episode(spec: EpisodeSpec, on_first_step: Callable[[], None] | None = None) -> Trajectory:
    """Run one episode and return its graded record. Never raises for agent or env failures.

    ``on_first_step`` is called once the first step is recorded (env made and reset, agent built,
    its first action taken and stepped): what happens once per process has happened by then.

    With ``spec.timeout_s``, the episode's timer covers the agent's reset, its turns and the env's
    steps. Before it: ``prepare`` (imports, unbounded: they never run under a timer), then the
    start-up (env made and reset, agent built) under its own bound of at least
    ``STARTUP_TIMEOUT_S``, so that a slow start-up on a loaded machine is not the episode's time.
    """
    import gymnasium as gym

    import rsigym
    from rsigym.agent import make_agent
    from rsigym.grader import grade_record

    if multiprocessing.parent_process() is not None:  # a worker: the runner warns once per run
        warnings.filterwarnings("ignore", message="sandbox falls back to local", category=RuntimeWarning)
    record = Trajectory(episode_key=spec.key, env=spec.env, agent=spec.agent, seed=spec.seed,
                        rep=spec.rep, rsigym_version=rsigym.__version__)
    env = agent = None
    startup_s = max(STARTUP_TIMEOUT_S, spec.timeout_s) if spec.timeout_s else None
    stage, limit_s, started = _STARTUP, None, time.monotonic()  # no bound on the preparation
    # the episode's share of --cost-limit: every model call of its thread asks it first
    meter = SpendMeter(spec.spend_cap_usd) if spec.spend_cap_usd is not None else None
    modules_before: set[str] = set()
    try:
        prepare(spec)
        modules_before = set(sys.modules)
        limit_s, started = startup_s, time.monotonic()
        with deadline(startup_s, _STARTUP), metered(meter):
            kwargs = dict(spec.env.kwargs)
            if spec.env.condition is not None:
                kwargs["condition"] = spec.env.condition
            env = gym.make(spec.env.id, max_episode_steps=spec.max_steps, **kwargs)
            agent = make_agent(spec.agent)
            if spec.tool_mode and getattr(agent, "tool_mode", None) == "auto":
                setattr(agent, "tool_mode", spec.tool_mode)  # the endpoint check's probe decided
            begun = time.perf_counter()
            observation, info = env.reset(seed=spec.seed, options={"task_id": spec.env.task_id})
            reset_s = time.perf_counter() - begun
            about = {**task_info(env, info=info, task_id=spec.env.task_id, condition=spec.env.condition,
                                 rep=spec.rep), "env_id": spec.env.id}
        stage, limit_s, started = "the episode", spec.timeout_s, time.monotonic()
        with deadline(spec.timeout_s), metered(meter):
            _play(env, agent, spec, record, observation, about, reset_s, on_first_step)
    except EpisodeTimeout as exc:  # an infrastructure limit, not the agent's failure
        record.termination, record.error = "infra_error", timeout_message(limit_s or 0.0, stage)
        _note_damage(record, exc, modules_before)
    except Exception as exc:  # an env bug or a harness fault is not the agent's: infra_error, recorded
        record.termination, record.error = "infra_error", _short_error(exc)
        if getattr(exc, "kind", None) == COST_LIMIT_KIND:  # "cost limit: ...": the run's limit, not a fault
            record.error = str(exc)
        elif limit_s and time.monotonic() - started >= limit_s:
            # The alarm came first, and code it interrupted (an import, a library's handler) turned
            # it into another exception: still the timeout, with what it surfaced as.
            record.error = f"{timeout_message(limit_s, stage)} (surfaced as {record.error})"
            _note_damage(record, exc, modules_before)
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


def _note_damage(record: Trajectory, exc: BaseException, modules_before: set[str]) -> None:
    """After a timeout: if it landed inside an import, say so and keep the worker from reusing a
    half-made module. A local in-flight worker is retired (``inflight``); on the main thread (a
    process-pool worker, one episode at a time) the modules the import left half-made or orphaned
    (their package gone) are also forgotten, so that the next import starts afresh."""
    if not interrupted_import(exc):
        return
    _damaged.set()
    record.error = f"{record.error} (it landed inside an import)"
    if threading.current_thread() is threading.main_thread():
        for name in set(sys.modules) - modules_before:
            module = sys.modules.get(name)
            initializing = getattr(getattr(module, "__spec__", None), "_initializing", False)
            if initializing or name.partition(".")[0] not in sys.modules:
                sys.modules.pop(name, None)


def _agent_failed(record: Trajectory, exc: Exception) -> bool:
    """Record ``exc``, raised by the agent's code, as the agent's error; False (re-raise it) when
    it is the harness's (``harness_fault``)."""
    if isinstance(exc, InfraError):
        _charge_agent(record, exc)
    if harness_fault(exc):
        return False
    record.termination, record.error = "agent_error", _short_error(exc)
    return True


def _play(env: Any, agent: Any, spec: EpisodeSpec, record: Trajectory, observation: Any,
          about: dict[str, Any], reset_s: float, on_first_step: Callable[[], None] | None = None) -> None:
    try:
        agent.reset(about, spec.seed)
    except Exception as exc:  # e.g. an optimiser given an action space it cannot search
        if _agent_failed(record, exc):
            return
        raise
    t = 0
    while True:
        started = time.perf_counter()
        try:
            action = agent.act(observation)
        except Exception as exc:
            if _agent_failed(record, exc):
                break
            raise
        latency_s = time.perf_counter() - started
        started = time.perf_counter()
        next_observation, reward, terminated, truncated, info = env.step(action)
        env_s = time.perf_counter() - started + (reset_s if t == 0 else 0.0)
        observe_error = None
        observe = getattr(agent, "observe", None)
        if observe is not None:  # optional feedback hook: optimisers learn from reward or info
            try:
                observe(float(reward), next_observation, info)
            except Exception as exc:
                if isinstance(exc, InfraError):
                    _charge_agent(record, exc)
                if harness_fault(exc):
                    raise
                observe_error = _short_error(exc)
        agent_usage = getattr(agent, "last_usage", None) or Usage()
        usage = dataclasses.replace(agent_usage, latency_s=agent_usage.latency_s or latency_s, env_s=env_s)
        # Stored as JSON values at once, so live grading sees exactly what a regrade reads.
        record.steps.append(Step(t, _storable(observation), _storable(action),
                                 float(reward), bool(terminated), bool(truncated),
                                 _storable(info), usage))
        if t == 0 and on_first_step is not None:
            on_first_step()
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
