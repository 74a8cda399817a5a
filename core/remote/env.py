"""The remote Gymnasium env: OpenEnv's WebSocket session protocol under Gymnasium's API.

A step sends ``{"type": "step", "data": action}`` and reads back the observation fields, reward,
``terminated``, ``truncated`` and ``info`` the server's ``ServedEnv`` sent, so an ``env.step``
loop (or ``LLMAgent``) sees what it sees in-process: observations rebuilt into the env's spaces
(``rsigym.serve.wire``), the env's own info (errors of invalid actions included), and an invalid
action as an error observation, never an exception. What raises is what is not the agent's doing:
the server refusing a session (capacity), a request it rejects, a broken connection
(``RemoteEnvError``, with the server's one-line reason).
"""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from rsigym.records import to_jsonable
from rsigym.serve.wire import build_space, value_from_wire

__all__ = ["RemoteEnv", "AsyncRemoteEnv", "RemoteEnvError", "make", "make_async"]

TEXT_ACTION_FIELD = "rsigym_text_action"  # as rsigym.serve.models (which needs the server stack)
_RESULT_FIELDS = ("info", "terminated", "truncated")


class RemoteEnvError(RuntimeError):
    """The server refused a request or the session broke; the message is the server's reason."""


def _ws_url(url: str) -> str:
    url = url.rstrip("/")
    if url.startswith("https://"):
        return "wss://" + url[len("https://"):] + "/ws"
    if url.startswith("http://"):
        return "ws://" + url[len("http://"):] + "/ws"
    return url + "/ws"


def _headers(token: str | None) -> dict[str, str]:
    """The request headers a server started with ``--token`` asks for (on HTTP and the handshake)."""
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


def _describe(url: str, timeout_s: float, token: str | None = None) -> dict[str, Any]:
    import httpx

    try:
        response = httpx.get(url.rstrip("/") + "/rsigym/env", timeout=timeout_s, headers=_headers(token))
    except httpx.HTTPError as exc:
        raise RemoteEnvError(f"cannot reach an rsigym server at {url}: {exc}") from exc
    if response.status_code == 401:
        raise RemoteEnvError(f"{url} refused the request: missing or wrong token (pass token=...)")
    if response.status_code != 200:
        raise RemoteEnvError(f"{url} is not an rsigym server (GET /rsigym/env: {response.status_code})")
    return dict(response.json())


def _payload(action: Any) -> dict[str, Any]:
    """An action as the server's action model takes it (a string travels in its own field)."""
    if isinstance(action, (str, bytes)):
        return {TEXT_ACTION_FIELD: action.decode("utf-8", "replace") if isinstance(action, bytes) else action}
    value = to_jsonable(action)
    if not isinstance(value, dict):
        raise TypeError(f"a remote env takes a dict (or string) action, got {type(action).__name__}")
    return value


def _reply(raw: str | bytes) -> dict[str, Any]:
    message = json.loads(raw)
    if message.get("type") == "error":
        data = message.get("data") or {}
        raise RemoteEnvError(f"server: {data.get('message', 'error')} ({data.get('code', 'UNKNOWN')})")
    return dict(message.get("data") or {})


class _Interface:
    """What both remote envs share: the served env's interface and the decoding of replies."""

    def _setup(self, url: str, about: dict[str, Any], agent_id: str | None) -> None:
        self.url, self.agent_id = url, agent_id
        self.env_id: str = about["env_id"]
        self.observation_space = build_space(about["observation_space"])
        self.action_space = build_space(about["action_space"]) if about.get("action_space") else gym.spaces.Dict({})
        self.action_schema: dict[str, Any] | None = about.get("action_schema")
        self.example_actions: list[Any] = list(about.get("example_actions") or [])
        self.tools: list[Any] | None = None
        self.last_state: dict[str, Any] = {}

    def _reset_message(self, seed: int | None, options: dict[str, Any] | None) -> str:
        data: dict[str, Any] = {}
        if seed is not None:
            data["seed"] = int(seed)
        if options and options.get("task_id") is not None:
            data["task_id"] = options["task_id"]
        if self.agent_id is not None:
            data["agent_id"] = self.agent_id
        return json.dumps({"type": "reset", "data": data})

    def _observation(self, data: dict[str, Any]) -> tuple[Any, dict[str, Any], bool, bool]:
        fields = dict(data.get("observation") or {})
        info, terminated, truncated = (fields.pop(k, None) for k in _RESULT_FIELDS)
        value: Any = fields if isinstance(self.observation_space, gym.spaces.Dict) else fields.get("observation")
        return (value_from_wire(self.observation_space, value), dict(info or {}), bool(terminated),
                bool(truncated))


class RemoteEnv(_Interface, gym.Env[Any, Any]):
    """A served env as a Gymnasium env: one WebSocket session, opened on construction.

    Args:
        url: The server (``http://127.0.0.1:8000``).
        agent_id: A label the server records as the episodes' agent id (default ``remote``).
        timeout_s: How long to wait for the server to answer one request.
        token: The server's token (``rsigym serve --token``), sent as ``Authorization: Bearer``.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, url: str, *, agent_id: str | None = None, timeout_s: float = 600.0,
                 token: str | None = None) -> None:
        from websockets.sync.client import connect

        about = _describe(url, min(timeout_s, 60.0), token)
        self._setup(url, about, agent_id)
        self.spec = EnvSpec(id=self.env_id, entry_point="rsigym.remote:make", max_episode_steps=about.get("max_steps"))
        self.timeout_s = timeout_s
        self._ws: Any = None
        try:
            # entered as a context manager: websockets >= 17 deprecates using connect()'s result directly
            self._ws = connect(_ws_url(url), max_size=None, open_timeout=min(timeout_s, 60.0),
                               additional_headers=_headers(token)).__enter__()
        except Exception as exc:  # noqa: BLE001 - refused, reset, unreachable: one line
            raise RemoteEnvError(f"cannot open a session at {url}: {exc}") from exc

    def _ask(self, message: str) -> dict[str, Any]:
        try:
            try:
                self._ws.send(message)
            except Exception:  # noqa: BLE001 - closed: the server may have said why first (capacity)
                pass
            raw = self._ws.recv(timeout=self.timeout_s)
        except TimeoutError as exc:
            raise RemoteEnvError(f"no answer from {self.url} within {self.timeout_s:g} s") from exc
        except Exception as exc:  # noqa: BLE001 - a closed session: the server refused it or went away
            reason = getattr(getattr(exc, "rcvd", None), "reason", "") or str(exc)
            raise RemoteEnvError(f"the session at {self.url} ended: {reason}") from exc
        return _reply(raw)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        observation, info, _, _ = self._observation(self._ask(self._reset_message(seed, options)))
        self.last_state = self.state()
        self.tools = self.last_state.get("tools")
        return observation, info

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        data = self._ask(json.dumps({"type": "step", "data": _payload(action)}))
        observation, info, terminated, truncated = self._observation(data)
        return observation, float(data.get("reward") or 0.0), terminated, truncated, info

    def state(self) -> dict[str, Any]:
        """The session's state on the server (episode id, step count, task, seed, done)."""
        return self._ask(json.dumps({"type": "state"}))

    def close(self) -> None:
        ws, self._ws = getattr(self, "_ws", None), None
        if ws is not None:
            try:
                ws.send(json.dumps({"type": "close"}))
            except Exception:  # noqa: BLE001 - already closed
                pass
            ws.close()


class AsyncRemoteEnv(_Interface):
    """A served env with ``async`` reset, step, state and close (make it with ``await make_async(url)``)."""

    def __init__(self, url: str, about: dict[str, Any], ws: Any, *, agent_id: str | None = None,
                 timeout_s: float = 600.0) -> None:
        self._setup(url, about, agent_id)
        self._ws, self.timeout_s = ws, timeout_s

    async def _ask(self, message: str) -> dict[str, Any]:
        import asyncio

        try:
            try:
                await self._ws.send(message)
            except Exception:  # noqa: BLE001 - closed: the server may have said why first (capacity)
                pass
            raw = await asyncio.wait_for(self._ws.recv(), self.timeout_s)
        except asyncio.TimeoutError as exc:
            raise RemoteEnvError(f"no answer from {self.url} within {self.timeout_s:g} s") from exc
        except Exception as exc:  # noqa: BLE001
            reason = getattr(getattr(exc, "rcvd", None), "reason", "") or str(exc)
            raise RemoteEnvError(f"the session at {self.url} ended: {reason}") from exc
        return _reply(raw)

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        observation, info, _, _ = self._observation(await self._ask(self._reset_message(seed, options)))
        self.last_state = await self.state()
        self.tools = self.last_state.get("tools")
        return observation, info

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        data = await self._ask(json.dumps({"type": "step", "data": _payload(action)}))
        observation, info, terminated, truncated = self._observation(data)
        return observation, float(data.get("reward") or 0.0), terminated, truncated, info

    async def state(self) -> dict[str, Any]:
        return await self._ask(json.dumps({"type": "state"}))

    async def close(self) -> None:
        try:
            await self._ws.send(json.dumps({"type": "close"}))
        except Exception:  # noqa: BLE001
            pass
        await self._ws.close()


def make(url: str, *, agent_id: str | None = None, timeout_s: float = 600.0, token: str | None = None) -> RemoteEnv:
    """A Gymnasium env over the served env at ``url`` (one session; ``close()`` ends it)."""
    return RemoteEnv(url, agent_id=agent_id, timeout_s=timeout_s, token=token)


async def make_async(url: str, *, agent_id: str | None = None, timeout_s: float = 600.0,
                     token: str | None = None) -> AsyncRemoteEnv:
    """An ``AsyncRemoteEnv`` over the served env at ``url`` (one session; ``await env.close()`` ends it)."""
    import asyncio

    from websockets.asyncio.client import connect

    about = await asyncio.to_thread(_describe, url, min(timeout_s, 60.0), token)
    try:
        ws = await connect(_ws_url(url), max_size=None, open_timeout=min(timeout_s, 60.0),
                           additional_headers=_headers(token))
    except Exception as exc:  # noqa: BLE001
        raise RemoteEnvError(f"cannot open a session at {url}: {exc}") from exc
    return AsyncRemoteEnv(url, about, ws, agent_id=agent_id, timeout_s=timeout_s)
