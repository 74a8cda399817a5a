"""What a server serves and how: typed data that flows from the CLI (or Python) to the sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # not imported at run time: the CLI's parser reads the defaults below (no numpy)
    from rsigym.records import EnvRef
    from rsigym.scenario import NamedSpec

__all__ = ["ServeConfig", "DEFAULT_HOST", "DEFAULT_MAX_SESSIONS", "DEFAULT_MAX_MESSAGE_BYTES",
           "DEFAULT_IDLE_TIMEOUT_S"]

DEFAULT_HOST = "127.0.0.1"        # loopback unless told otherwise: a served env runs code for whoever connects
DEFAULT_MAX_SESSIONS = 64         # sessions (one env each) at once; more are refused, not queued
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20  # one request body or WebSocket message
DEFAULT_IDLE_TIMEOUT_S = 600.0    # a session silent this long is closed and its env freed


@dataclass
class ServeConfig:
    """A served env and the server's limits.

    Args:
        env_id: A registered env id (built-in or plug-in).
        env_kwargs: Keyword arguments of ``gymnasium.make`` (fixed for every session).
        condition: A condition (``{"name", "params"}``) applied to every session's env, or None.
        max_steps: The step cap (``TimeLimit``), as a scenario's ``max_steps``; None: the env's own.
        graders: Graders applied live to every finished episode's record.
        run_dir: The run folder the records go to.
        host: Address to bind (default loopback).
        port: TCP port (0: any free one).
        max_sessions: Concurrent sessions; one more is refused with a capacity error.
        idle_timeout_s: A session idle this long is closed (its env freed, its episode recorded).
        max_message_bytes: Largest request body or WebSocket message; larger is refused (413 / close 1009).
    """

    env_id: str
    env_kwargs: dict[str, Any] = field(default_factory=dict)
    condition: dict[str, Any] | None = None
    max_steps: int | None = None
    graders: list[NamedSpec] = field(default_factory=list)
    run_dir: Path = Path("runs/serve")
    host: str = DEFAULT_HOST
    port: int = 8000
    max_sessions: int = DEFAULT_MAX_SESSIONS
    idle_timeout_s: float = DEFAULT_IDLE_TIMEOUT_S
    max_message_bytes: int = DEFAULT_MAX_MESSAGE_BYTES
    description: str = ""
    version: str = ""

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0, got {self.idle_timeout_s}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes must be >= 1024, got {self.max_message_bytes}")

    def make_env(self) -> Any:
        """A fresh Gymnasium env, made as the runner makes it."""
        import gymnasium as gym

        from rsigym.registry import register_gym_envs

        register_gym_envs()
        kwargs = dict(self.env_kwargs)
        if self.condition is not None:
            kwargs["condition"] = self.condition
        return gym.make(self.env_id, max_episode_steps=self.max_steps, **kwargs)

    def recorded_env(self, task_id: str | None) -> EnvRef:
        from rsigym.records import EnvRef

        from .recorder import recordable_kwargs

        return EnvRef(self.env_id, recordable_kwargs(self.env_kwargs), task_id, self.condition)
