"""What a served env's replies must look like before the remote client believes them.

A server is not trusted: every reply is parsed and its shape checked here, and anything else
(not JSON, not an object, a missing or mistyped field, a space no client can rebuild) is one
``RemoteEnvError`` of one line, never a ``KeyError``, ``JSONDecodeError`` or ``TypeError`` out of
the client. The reply size cap's default is decided here too (``reply_cap``).
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym

from rsigym.serve.wire import build_space, value_from_wire

__all__ = ["RemoteEnvError", "DEFAULT_MAX_REPLY_BYTES", "MAX_DEFAULT_REPLY_BYTES", "one_line", "reply_cap",
           "decode", "reply_data", "check_about", "Interface", "step_result"]

# The bundled families' largest reply in their tests is about 1 MB (a DataSelection step that
# echoes a large invalid action); their descriptions are under 30 kB.
DEFAULT_MAX_REPLY_BYTES = 16 << 20
# A server that takes larger messages (--max-message-bytes) raises the default up to this bound,
# never past it: the description that says so comes from the server too.
MAX_DEFAULT_REPLY_BYTES = 64 << 20
_RESULT_FIELDS = ("info", "terminated", "truncated")


class RemoteEnvError(RuntimeError):
    """The server refused a request, the session broke, or a reply broke the client's rules
    (too large, too late, malformed); the message is one line with the reason."""


def one_line(text: object, limit: int = 300) -> str:
    """``text`` (which may come from the server) as one bounded line."""
    first = " ".join(str(text).split())
    return first if len(first) <= limit else first[:limit - 3] + "..."


def reply_cap(about: dict[str, Any] | None, max_reply_bytes: int | None) -> int:
    """The largest reply the client reads: ``max_reply_bytes`` when given, else the default,
    raised to the server's own ``max_message_bytes`` up to ``MAX_DEFAULT_REPLY_BYTES``."""
    if max_reply_bytes is not None:
        if isinstance(max_reply_bytes, bool) or not isinstance(max_reply_bytes, int) or max_reply_bytes < 1024:
            raise ValueError(f"max_reply_bytes must be an int >= 1024, got {max_reply_bytes!r}")
        return max_reply_bytes
    declared = (about or {}).get("max_message_bytes")
    declared = declared if isinstance(declared, int) and not isinstance(declared, bool) else 0
    return min(max(DEFAULT_MAX_REPLY_BYTES, declared), MAX_DEFAULT_REPLY_BYTES)


def decode(raw: str | bytes, what: str) -> Any:
    """The JSON in ``raw``, or a ``RemoteEnvError`` that says ``what`` was not JSON."""
    try:
        return json.loads(raw)
    except (ValueError, RecursionError) as exc:  # JSONDecodeError and bad UTF-8 are ValueErrors
        raise RemoteEnvError(f"{what} is not JSON: {one_line(exc, 120)}") from None


def reply_data(message: Any) -> dict[str, Any]:
    """The ``data`` of a session reply (``{"type": ..., "data": {...}}``); an error reply raises."""
    if not isinstance(message, dict) or not isinstance(message.get("type"), str):
        raise RemoteEnvError(f"the server's reply is not a message object: {one_line(repr(message), 120)}")
    data = message.get("data")
    if message["type"] == "error":
        data = data if isinstance(data, dict) else {}
        raise RemoteEnvError(f"server: {one_line(data.get('message', 'error'))} ({one_line(data.get('code', 'UNKNOWN'), 60)})")
    if not isinstance(data, dict):
        raise RemoteEnvError(f"the server's {one_line(message['type'], 60)} reply has no data object")
    return data


def _field(about: dict[str, Any], key: str, kinds: tuple[type, ...], *, required: bool = False) -> Any:
    value = about.get(key)
    if value is None and not required:
        return None
    if isinstance(value, bool) and bool not in kinds or not isinstance(value, kinds):
        raise RemoteEnvError(f"the server's GET /rsigym/env has no valid {key!r}: {one_line(repr(value), 80)}")
    return value


def check_about(about: Any) -> dict[str, Any]:
    """The server's ``GET /rsigym/env`` description, its fields checked (types, not values)."""
    if not isinstance(about, dict):
        raise RemoteEnvError(f"the server's GET /rsigym/env is not an object: {one_line(repr(about), 80)}")
    _field(about, "env_id", (str,), required=True)
    _field(about, "observation_space", (dict,), required=True)
    for key, kinds in (("action_space", (dict,)), ("action_schema", (dict,)), ("example_actions", (list,)),
                       ("max_steps", (int,)), ("max_message_bytes", (int,))):
        _field(about, key, kinds)
    return about


def _space(description: dict[str, Any], key: str) -> gym.spaces.Space[Any]:
    try:
        return build_space(description)
    except Exception as exc:  # noqa: BLE001 - a hostile description can fail anywhere in Gymnasium's checks
        raise RemoteEnvError(f"the server's {key} cannot be rebuilt: {one_line(exc, 160)}") from None


class Interface:
    """A served env's interface, rebuilt from its checked description (both remote envs hold one)."""

    def __init__(self, url: str, about: dict[str, Any]) -> None:
        self.url = url
        self.env_id: str = about["env_id"]
        self.observation_space = _space(about["observation_space"], "observation_space")
        self.action_space = (_space(about["action_space"], "action_space")
                             if about.get("action_space") else gym.spaces.Dict({}))
        self.action_schema: dict[str, Any] | None = about.get("action_schema")
        self.example_actions: list[Any] = list(about.get("example_actions") or [])
        self.max_steps: int | None = about.get("max_steps")

    def observation(self, data: dict[str, Any]) -> tuple[Any, dict[str, Any], bool, bool]:
        """Observation, info, terminated and truncated of a reset or step reply's data."""
        fields = data.get("observation")
        if not isinstance(fields, dict):
            raise RemoteEnvError(f"the reply from {self.url} has no observation object: "
                                 f"{one_line(repr(fields), 80)}")
        fields = dict(fields)
        info, terminated, truncated = (fields.pop(k, None) for k in _RESULT_FIELDS)
        if not isinstance(info, (dict, type(None))) or not all(isinstance(v, (bool, type(None)))
                                                              for v in (terminated, truncated)):
            raise RemoteEnvError(f"the reply from {self.url} has a malformed info, terminated or truncated")
        value: Any = fields if isinstance(self.observation_space, gym.spaces.Dict) else fields.get("observation")
        try:
            observation = value_from_wire(self.observation_space, value)
        except Exception as exc:  # noqa: BLE001 - a value of the wrong shape or type for the space
            raise RemoteEnvError(f"the observation from {self.url} does not fit {self.env_id}'s observation space: "
                                 f"{one_line(exc, 120)}") from None
        return observation, dict(info or {}), bool(terminated), bool(truncated)


def step_result(interface: Interface, data: dict[str, Any]) -> tuple[Any, float, bool, bool, dict[str, Any]]:
    """A step reply's data as Gymnasium's five-tuple."""
    observation, info, terminated, truncated = interface.observation(data)
    reward = data.get("reward")
    if not isinstance(reward, (int, float, type(None))):
        raise RemoteEnvError(f"the reward from {interface.url} is not a number: {one_line(repr(reward), 80)}")
    return observation, float(reward or 0.0), terminated, truncated, info
