"""What a server serves and how: typed data that flows from the CLI (or Python) to the sessions."""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:  # not imported at run time: the CLI's parser reads the defaults below (no numpy)
    from rsigym.records import EnvRef
    from rsigym.scenario import NamedSpec

__all__ = ["ServeConfig", "DEFAULT_HOST", "DEFAULT_MAX_SESSIONS", "DEFAULT_MAX_MESSAGE_BYTES",
           "DEFAULT_IDLE_TIMEOUT_S", "DEFAULT_MAX_STEPS", "TOKEN_ENV_VAR", "DEFAULT_HEADER_TIMEOUT_S",
           "DEFAULT_BODY_TIMEOUT_S", "DEFAULT_MAX_CONNECTIONS_PER_CLIENT"]

DEFAULT_HOST = "127.0.0.1"        # loopback unless told otherwise: a served env runs code for whoever connects
DEFAULT_MAX_SESSIONS = 64         # sessions (one env each) at once; more are refused, not queued
DEFAULT_MAX_MESSAGE_BYTES = 1 << 20  # one request body or WebSocket message
DEFAULT_IDLE_TIMEOUT_S = 600.0    # a session silent this long is closed and its env freed
DEFAULT_MAX_STEPS = 1000          # step cap when neither --max-steps nor the env spec gives one: an
                                  # episode of repeated valid calls would otherwise never end
TOKEN_ENV_VAR = "RSIGYM_SERVE_TOKEN"  # read by the CLI only (a flag shows in `ps`, the environment does not)
DEFAULT_HEADER_TIMEOUT_S = 10.0   # a request's headers, from its first byte (or the connection's start)
DEFAULT_BODY_TIMEOUT_S = 30.0     # a request's whole body (at most max_message_bytes)
# Open connections (HTTP or WebSocket) from one client address; the next one is refused with a 503.
# Room for a trainer's rollout workers on one host (a session each, plus their HTTP calls).
DEFAULT_MAX_CONNECTIONS_PER_CLIENT = 256
DROP_IDLE_AFTER_S = 5.0           # with no env held this long, idle sandbox containers are removed


@dataclass
class ServeConfig:
    """A served env and the server's limits.

    Args:
        env_id: A registered env id (built-in or plug-in).
        env_kwargs: Keyword arguments of ``gymnasium.make`` (fixed for every session).
        condition: A condition (``{"name", "params"}``) applied to every session's env, or None.
        max_steps: The step cap (``TimeLimit``), as a scenario's ``max_steps``; None: the env spec's
            ``max_episode_steps``, else ``DEFAULT_MAX_STEPS``. ``step_cap`` is the cap in force.
        graders: Graders applied live to every finished episode's record.
        run_dir: The run folder the records go to.
        host: Address to bind (default loopback).
        port: TCP port (0: any free one).
        max_sessions: Concurrent sessions; one more is refused with a capacity error.
        idle_timeout_s: A session idle this long is closed (its env freed, its episode recorded).
        max_message_bytes: Largest request body or WebSocket message; larger is refused (413 / close 1009).
        token: When set, every endpoint but ``/health`` needs ``Authorization: Bearer <token>``
            (401 otherwise). Never printed, logged or written (not even in ``repr``).
        header_timeout_s: A request's headers not complete this long after its first byte: connection cut.
        body_timeout_s: A request body not read whole in this long: a 408.
        max_connections_per_client: Open connections from one client address; the next is refused (503).
        drop_idle_after_s: With no env held this long, the process's idle sandbox containers are removed.
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
    header_timeout_s: float = DEFAULT_HEADER_TIMEOUT_S
    body_timeout_s: float = DEFAULT_BODY_TIMEOUT_S
    max_connections_per_client: int = DEFAULT_MAX_CONNECTIONS_PER_CLIENT
    drop_idle_after_s: float = DROP_IDLE_AFTER_S
    description: str = ""
    version: str = ""
    token: str | None = field(default=None, repr=False)
    step_cap: int = field(init=False, default=DEFAULT_MAX_STEPS)

    def __post_init__(self) -> None:
        self.run_dir = Path(self.run_dir)
        if self.max_sessions < 1:
            raise ValueError(f"max_sessions must be >= 1, got {self.max_sessions}")
        if self.idle_timeout_s <= 0:
            raise ValueError(f"idle_timeout_s must be > 0, got {self.idle_timeout_s}")
        if self.max_message_bytes < 1024:
            raise ValueError(f"max_message_bytes must be >= 1024, got {self.max_message_bytes}")
        if self.max_steps is not None and self.max_steps < 1:
            raise ValueError(f"max_steps must be >= 1, got {self.max_steps}")
        if self.token is not None and not _valid_token(self.token):  # the message never shows the token
            raise ValueError("the token must be 1 to 4096 printable ASCII characters without spaces")
        self.step_cap = self.max_steps or self._spec_max_steps() or DEFAULT_MAX_STEPS
        for name in ("header_timeout_s", "body_timeout_s", "drop_idle_after_s"):
            if not getattr(self, name) > 0:
                raise ValueError(f"{name} must be > 0, got {getattr(self, name)}")
        if self.max_connections_per_client < 1:
            raise ValueError(f"max_connections_per_client must be >= 1, got {self.max_connections_per_client}")

    def make_env(self) -> Any:
        """A fresh Gymnasium env, made as the runner makes it."""
        import gymnasium as gym

        from rsigym.registry import register_gym_envs

        register_gym_envs()
        kwargs = dict(self.env_kwargs)
        if self.condition is not None:
            kwargs["condition"] = self.condition
        return gym.make(self.env_id, max_episode_steps=self.step_cap, **kwargs)

    def _spec_max_steps(self) -> int | None:
        """The registered spec's own ``max_episode_steps`` (None: none, or not a registered id)."""
        import gymnasium as gym

        from rsigym.registry import register_gym_envs

        register_gym_envs()
        spec = gym.registry.get(self.env_id)
        return spec.max_episode_steps if spec is not None else None

    def recorded_env(self, task_id: str | None) -> EnvRef:
        from rsigym.records import EnvRef

        from .recorder import recordable_kwargs

        return EnvRef(self.env_id, recordable_kwargs(self.env_kwargs), task_id, self.condition)


def _valid_token(token: str) -> bool:
    # what an HTTP header can carry as is (RFC 6750's b64token is narrower; any visible ASCII works)
    return 0 < len(token) <= 4096 and token.isascii() and token.isprintable() and " " not in token
