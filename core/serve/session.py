"""One served session: an OpenEnv ``Environment`` around one Gymnasium env, recording as the runner does.

Each WebSocket session gets its own ``ServedEnv`` (OpenEnv's server makes one per session and
closes it when the session ends, however it ends), hence its own Gymnasium env, made on the first
``reset`` (counted in the server's ``EnvLedger``, refused past ``max_sessions``) and reused for the
session's later episodes; a closed ``ServedEnv`` never makes another. Every step is stored as the runner stores
it (``rsigym.runner.episode``: the observation the agent acted on, the action, reward, flags, info,
the env's time); when the episode ends its record gets the env's snapshot and goes to the run
folder's one writer (``RunRecorder``). An episode the client leaves unfinished (it resets, closes,
or vanishes; with steps or none) is recorded as ``infra_error`` with the reason: never graded, never counted as the
agent's failure. What a client sees is what an in-process agent sees (observation, reward, flags,
``info``); the snapshot graders read stays on the server.
"""

from __future__ import annotations

import dataclasses
import secrets
import threading
import time
from typing import Any, Optional

from . import openenv_server  # noqa: F401 - first: OpenEnv without Gradio (see openenv_server)
from openenv.core.env_server.interfaces import Environment
from openenv.core.env_server.types import EnvironmentMetadata, State
from pydantic import Field

from rsigym.records import AgentSpec, FinalSnapshot, Step, Trajectory, Usage, episode_key, utc_now
from rsigym.runner.episode import _short_error, _storable

from .config import ServeConfig
from .ledger import EnvLedger
from .models import ServedAction, ServedObservation
from .recorder import RunRecorder

__all__ = ["ServedEnv", "ServedState", "SessionError", "BadArgument", "EnvFailure"]

_LABEL_CHARS = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789._-/:")


class SessionError(ValueError):
    """A request this session cannot serve now (a step before reset): a 409."""

    status_code = 409


class BadArgument(SessionError):
    """A reset argument of the wrong type or value (seed, task id, agent id): a 422."""

    status_code = 422


class EnvFailure(RuntimeError):
    """The env raised (a broken environment, not a bad request): the episode is recorded as
    ``infra_error`` and the request answered with a 500 naming the error."""


class ServedState(State):
    """What ``GET /state`` and the WebSocket ``state`` message return: where the session stands.

    Never the env's snapshot: that holds what graders read (answers, hidden outcomes)."""

    env_id: str = ""
    task_id: Optional[str] = None
    seed: Optional[int] = None
    agent_id: Optional[str] = None
    done: bool = False
    termination: Optional[str] = None
    tools: Optional[list[Any]] = Field(default=None, description="the env's tools for this episode, if any")


class ServedEnv(Environment[ServedAction, ServedObservation, ServedState]):
    """A Gymnasium env served over OpenEnv's contract, one per session."""

    SUPPORTS_CONCURRENT_SESSIONS = True  # each session owns its env; sessions share only the writer

    def __init__(self, config: ServeConfig, recorder: RunRecorder | None, observation_cls: type[ServedObservation],
                 ledger: EnvLedger | None = None):
        super().__init__()
        self.config, self.recorder, self.observation_cls = config, recorder, observation_cls
        self.ledger = ledger or EnvLedger(config.max_sessions)
        self._env: Any = None
        self._closed = False  # closed for good: a reset after close makes no env (nothing would close it)
        self._lock = threading.Lock()  # an env is made or closed by one thread at a time
        self._record: Trajectory | None = None
        self._observation: Any = None  # the observation the client acts on next
        self._episode_id: str | None = None
        self._done = False

    # -- OpenEnv protocol ------------------------------------------------------------------
    def reset(self, seed: Optional[int] = None, episode_id: Optional[str] = None,  # noqa: ARG002 - ours is random
              task_id: Optional[str] = None, agent_id: Optional[str] = None) -> ServedObservation:
        """Start an episode. ``seed`` (an int >= 0; default: drawn), ``task_id`` (default: the env's
        own choice), ``agent_id`` (a label for the record; default ``remote``). A client's
        ``episode_id`` is ignored: the server names episodes with 128 random bits."""
        seed = _seed(seed)
        agent = AgentSpec(id=_label(agent_id, "agent_id") or "remote", kind="remote")
        if task_id is not None and (not isinstance(task_id, str) or len(task_id) > 200):
            raise BadArgument(f"task_id must be a string of at most 200 characters, got {str(task_id)[:60]!r}")
        self._abandon("the client started another episode")
        with self._lock:
            if self._closed:
                raise SessionError("this session was closed (idle past the timeout, or the server is stopping): "
                                   "open a new one")
            if self._env is None:
                self.ledger.take()  # CapacityError past --max-sessions, before anything is made
                try:
                    self._env = self.config.make_env()
                except Exception as exc:
                    self.ledger.give_back()
                    raise EnvFailure(f"the env could not be made: {_short_error(exc)}") from exc
        if task_id is not None:
            known = _task_ids(self._env)
            if known is not None and task_id not in known:
                raise BadArgument(f"unknown task_id {task_id!r}; this env has {len(known)} tasks, e.g. "
                                   f"{', '.join(known[:5])}")
        env_ref = self.config.recorded_env(task_id)
        started = time.perf_counter()
        try:
            observation, info = self._env.reset(seed=seed, options={"task_id": task_id})
        except Exception as exc:
            raise EnvFailure(f"the env failed to reset: {_short_error(exc)}") from exc
        if task_id is None and isinstance(info.get("task_id"), str):
            env_ref = dataclasses.replace(env_ref, task_id=info["task_id"])
        rep = self.recorder.next_rep(env_ref, agent, seed) if self.recorder is not None else 0
        import rsigym

        self._record = Trajectory(episode_key(env_ref, agent, seed, rep), env_ref, agent, seed, rep,
                                  rsigym_version=rsigym.__version__)
        self._reset_s = time.perf_counter() - started
        self._observation, self._done = observation, False
        self._episode_id = secrets.token_hex(16)
        return self._wire(observation, None, False, False, info)

    def step(self, action: ServedAction, timeout_s: Optional[float] = None, **kwargs: Any) -> ServedObservation:  # noqa: ARG002
        record = self._record
        if record is None or self._done or self._env is None:
            raise SessionError("no episode in progress in this session: send reset first")
        value = action.env_action() if isinstance(action, ServedAction) else action
        started = time.perf_counter()
        try:
            observation, reward, terminated, truncated, info = self._env.step(value)
        except Exception as exc:
            self._finish("infra_error", f"the env failed on step {len(record.steps)}: {_short_error(exc)}")
            raise EnvFailure(record.error or "the env failed") from exc
        env_s = time.perf_counter() - started + (self._reset_s if not record.steps else 0.0)
        record.steps.append(Step(len(record.steps), _storable(self._observation), _storable(value), float(reward),
                                 bool(terminated), bool(truncated), _storable(info), Usage(env_s=env_s)))
        self._observation = observation
        if terminated or truncated:
            self._finish(info.get("termination", "agent_stop" if terminated else "max_steps"), None)
        return self._wire(observation, float(reward), bool(terminated), bool(truncated), info)

    @property
    def state(self) -> ServedState:
        record = self._record
        if record is None:
            return ServedState(env_id=self.config.env_id)
        tools = getattr(getattr(self._env, "unwrapped", None), "tools", None)
        return ServedState(episode_id=self._episode_id, step_count=len(record.steps), env_id=self.config.env_id,
                           task_id=record.env.task_id, seed=record.seed, agent_id=record.agent.id, done=self._done,
                           termination=record.termination if self._done else None,
                           tools=_storable(tools) if isinstance(tools, list) else None)

    def get_metadata(self) -> EnvironmentMetadata:
        return EnvironmentMetadata(name=self.config.env_id, description=self.config.description,
                                   version=self.config.version)

    def close(self) -> None:
        """End the session for good: record its unfinished episode, close its env, free its slot."""
        with self._lock:
            self._closed = True
            self._abandon("the session ended (the client closed it, vanished, or idled past the timeout)")
            env, self._env = self._env, None
        if env is not None:
            try:
                env.close()  # releases the env's sandbox
            finally:
                self.ledger.give_back()

    # -- recording -------------------------------------------------------------------------
    def _abandon(self, why: str) -> None:
        """Record an episode that started and did not finish (steps or none) as an infra_error."""
        record = self._record
        if record is not None and not self._done:
            self._finish("infra_error", f"unfinished after {len(record.steps)} steps: {why}")
        self._record = None

    def _finish(self, termination: str, error: str | None) -> None:
        """The runner's ending of an episode: snapshot, usage, sandbox, then the one writer."""
        record = self._record
        assert record is not None
        self._done = True
        record.termination, record.error = termination, error
        unwrapped = self._env.unwrapped if self._env is not None else None
        if termination != "infra_error" and unwrapped is not None:
            snapshot = getattr(unwrapped, "snapshot", None)
            if snapshot is not None:
                try:
                    record.final = FinalSnapshot.of(snapshot())
                except Exception as exc:  # an env bug: the record says so, never a success
                    record.termination, record.error = "infra_error", f"snapshot: {_short_error(exc)}"
        agent_usage = sum((s.usage for s in record.steps), Usage())
        by_role: dict[str, Usage] = {}
        if unwrapped is not None:
            by_role.update(getattr(unwrapped, "llm_usage", None) or {})
            record.sandbox = getattr(unwrapped, "sandbox_info", None)
        record.usage_by_role = by_role
        record.usage = sum(by_role.values(), agent_usage)
        record.finished_at = utc_now()
        if self.recorder is not None:
            self.recorder.finish(record)

    def _wire(self, observation: Any, reward: float | None, terminated: bool, truncated: bool,
              info: dict[str, Any]) -> ServedObservation:
        values = _storable(observation)
        fields = values if isinstance(values, dict) else {"observation": values}
        return self.observation_cls(**fields, info=_storable(info), terminated=terminated, truncated=truncated,
                                    done=terminated or truncated, reward=reward)


def _seed(seed: Any) -> int:
    if seed is None:
        return secrets.randbelow(2**31)
    if isinstance(seed, bool) or not isinstance(seed, int) or not 0 <= seed < 2**63:
        raise BadArgument(f"seed must be an integer in [0, 2**63), got {str(seed)[:60]!r}")
    return seed


def _label(value: Any, name: str) -> str | None:
    if value is None:
        return None
    if not isinstance(value, str) or not 0 < len(value) <= 64 or not set(value) <= _LABEL_CHARS:
        raise BadArgument(f"{name} must be 1 to 64 characters of letters, digits and ._-/:, got {str(value)[:60]!r}")
    return value


def _task_ids(env: Any) -> list[str] | None:
    lister = getattr(env.unwrapped, "list_tasks", None)
    if lister is None:
        return None
    try:
        return [str(t) for t in lister()]
    except Exception:  # noqa: BLE001 - an env whose catalogue needs arguments judges task ids itself
        return None
