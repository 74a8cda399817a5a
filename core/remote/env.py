"""The remote Gymnasium env: OpenEnv's WebSocket session protocol under Gymnasium's API.

A step sends ``{"type": "step", "data": action}`` and reads back the observation fields, reward,
``terminated``, ``truncated`` and ``info`` the server's ``ServedEnv`` sent, so an ``env.step``
loop (or ``LLMAgent``) sees what it sees in-process: observations rebuilt into the env's spaces
(``rsigym.serve.wire``), the env's own info (errors of invalid actions included), and an invalid
action as an error observation, never an exception. What raises is what is not the agent's doing:
the server refusing a session (capacity), a request it rejects, a broken connection, and a
reply that breaks the client's walls: over ``max_reply_bytes``, later than ``timeout_s``, or
malformed (``RemoteEnvError``, one line; see ``rsigym.remote.transport`` and ``replies``).

The synchronous ``RemoteEnv`` is the asynchronous one run on an event loop in a thread of its
own, so both have the same walls by construction and work where a loop is already running.
"""


from __future__ import annotations

import asyncio
import json
import threading
import weakref
from typing import Any, Coroutine, TypeVar

import gymnasium as gym
from gymnasium.envs.registration import EnvSpec

from rsigym.records import to_jsonable

from .replies import Interface, RemoteEnvError, one_line, reply_cap, reply_data, step_result
from .transport import Session, describe

__all__ = ["RemoteEnv", "AsyncRemoteEnv", "RemoteEnvError", "make", "make_async"]

TEXT_ACTION_FIELD = "rsigym_text_action"  # as rsigym.serve.models (which needs the server stack)
CONNECT_TIMEOUT_CAP_S = 60.0  # making an env (description and handshake) waits at most this long
T = TypeVar("T")


def _payload(action: Any) -> dict[str, Any]:
    """An action as the server's action model takes it (a string travels in its own field)."""
    if isinstance(action, (str, bytes)):
        return {TEXT_ACTION_FIELD: action.decode("utf-8", "replace") if isinstance(action, bytes) else action}
    value = to_jsonable(action)
    if not isinstance(value, dict):
        raise TypeError(f"a remote env takes a dict (or string) action, got {type(action).__name__}")
    return value


class AsyncRemoteEnv:
    """A served env with ``async`` reset, step, state and close (make it with ``await make_async(url)``).

    Attributes ``observation_space``, ``action_space``, ``action_schema``, ``example_actions`` and
    ``env_id`` come from the server's description; ``tools`` and ``last_state`` from the state
    read after each reset.
    """

    def __init__(self, interface: Interface, session: Session, *, agent_id: str | None = None) -> None:
        self._interface, self._session = interface, session
        self.url, self.agent_id, self.env_id = interface.url, agent_id, interface.env_id
        self.observation_space, self.action_space = interface.observation_space, interface.action_space
        self.action_schema, self.example_actions = interface.action_schema, interface.example_actions
        self.max_steps = interface.max_steps
        self.timeout_s, self.max_reply_bytes = session.timeout_s, session.max_reply_bytes
        self.tools: list[Any] | None = None
        self.last_state: dict[str, Any] = {}

    async def _ask(self, message: dict[str, Any]) -> dict[str, Any]:
        return reply_data(await self._session.exchange(json.dumps(message)))

    async def reset(self, *, seed: int | None = None,
                    options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        data: dict[str, Any] = {}
        if seed is not None:
            data["seed"] = int(seed)
        if options and options.get("task_id") is not None:
            data["task_id"] = options["task_id"]
        if self.agent_id is not None:
            data["agent_id"] = self.agent_id
        observation, info, _, _ = self._interface.observation(await self._ask({"type": "reset", "data": data}))
        self.last_state = await self.state()
        tools = self.last_state.get("tools")
        if not isinstance(tools, (list, type(None))):
            raise RemoteEnvError(f"the state from {self.url} has tools that are not a list: {one_line(repr(tools), 80)}")
        self.tools = tools
        return observation, info

    async def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return step_result(self._interface, await self._ask({"type": "step", "data": _payload(action)}))

    async def state(self) -> dict[str, Any]:
        """The session's state on the server (episode id, step count, task, seed, done)."""
        return await self._ask({"type": "state"})

    async def close(self) -> None:
        await self._session.close(json.dumps({"type": "close"}))


class _LoopThread:
    """An event loop in a daemon thread of its own, on which a ``RemoteEnv`` runs its coroutines."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, name="rsigym-remote", daemon=True)
        self._thread.start()

    @property
    def closed(self) -> bool:
        return self.loop.is_closed()

    def run(self, coroutine: Coroutine[Any, Any, T]) -> T:
        future = asyncio.run_coroutine_threadsafe(coroutine, self.loop)
        try:
            return future.result()
        except BaseException:  # interrupted while waiting (Ctrl-C): cancel the call, whose session drops
            future.cancel()
            raise

    def stop(self) -> None:
        if self.loop.is_closed():
            return
        if threading.current_thread() is self._thread:  # collected on the loop itself: it cannot wait on itself
            self.loop.call_soon(self.loop.stop)
            return

        async def drain() -> None:
            tasks = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
            for task in tasks:
                task.cancel()
            await asyncio.gather(*tasks, return_exceptions=True)
            await self.loop.shutdown_default_executor()

        try:
            self.run(drain())
        finally:
            self.loop.call_soon_threadsafe(self.loop.stop)
            self._thread.join()
            self.loop.close()


class RemoteEnv(gym.Env[Any, Any]):
    """A served env as a Gymnasium env: one WebSocket session, opened on construction.

    Args:
        url: The server (``http://127.0.0.1:8000``).
        agent_id: A label the server records as the episodes' agent id (default ``remote``).
        timeout_s: The deadline of one call (reset, step, state): sending the request and reading
            the whole reply. Making the env (description and handshake) has ``min(timeout_s, 60)``.
        max_reply_bytes: The largest reply the client reads (counted after decompression); a larger
            one ends the session with ``RemoteEnvError``. Default: 16 MiB, or the server's
            ``--max-message-bytes`` when that is larger, up to 64 MiB.
        token: The server's token (``rsigym serve --token``), sent as ``Authorization: Bearer``.
    """

    metadata: dict[str, Any] = {"render_modes": []}

    def __init__(self, url: str, *, agent_id: str | None = None, timeout_s: float = 600.0,
                 max_reply_bytes: int | None = None, token: str | None = None) -> None:
        self._loop = _LoopThread()
        self._stop_loop = weakref.finalize(self, self._loop.stop)  # also when dropped unclosed
        try:
            remote = self._loop.run(make_async(url, agent_id=agent_id, timeout_s=timeout_s,
                                               max_reply_bytes=max_reply_bytes, token=token))
        except BaseException:
            self._stop_loop()
            raise
        self._remote = remote
        self.url, self.agent_id, self.env_id = url, agent_id, remote.env_id
        self.observation_space, self.action_space = remote.observation_space, remote.action_space
        self.action_schema, self.example_actions = remote.action_schema, remote.example_actions
        self.timeout_s, self.max_reply_bytes = remote.timeout_s, remote.max_reply_bytes
        self.spec = EnvSpec(id=self.env_id, entry_point="rsigym.remote:make", max_episode_steps=remote.max_steps)

    @property
    def tools(self) -> list[Any] | None:
        return self._remote.tools

    @property
    def last_state(self) -> dict[str, Any]:
        return self._remote.last_state

    def _call(self, coroutine: Coroutine[Any, Any, T]) -> T:
        if self._loop.closed:
            coroutine.close()
            raise RemoteEnvError(f"the session at {self.url} is closed")
        return self._loop.run(coroutine)

    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None) -> tuple[Any, dict[str, Any]]:
        super().reset(seed=seed)
        return self._call(self._remote.reset(seed=seed, options=options))

    def step(self, action: Any) -> tuple[Any, float, bool, bool, dict[str, Any]]:
        return self._call(self._remote.step(action))

    def state(self) -> dict[str, Any]:
        """The session's state on the server (episode id, step count, task, seed, done)."""
        return self._call(self._remote.state())

    def close(self) -> None:
        loop = getattr(self, "_loop", None)
        if loop is None or loop.closed:
            return
        try:
            loop.run(self._remote.close())
        finally:
            self._stop_loop()


def make(url: str, *, agent_id: str | None = None, timeout_s: float = 600.0,
         max_reply_bytes: int | None = None, token: str | None = None) -> RemoteEnv:
    """A Gymnasium env over the served env at ``url`` (one session; ``close()`` ends it).

    ``timeout_s`` and ``max_reply_bytes`` are the client's walls; see ``RemoteEnv`` for all arguments.
    """
    return RemoteEnv(url, agent_id=agent_id, timeout_s=timeout_s, max_reply_bytes=max_reply_bytes, token=token)


async def make_async(url: str, *, agent_id: str | None = None, timeout_s: float = 600.0,
                     max_reply_bytes: int | None = None, token: str | None = None) -> AsyncRemoteEnv:
    """An ``AsyncRemoteEnv`` over the served env at ``url`` (one session; ``await env.close()`` ends it).

    ``timeout_s`` and ``max_reply_bytes`` are the client's walls; the arguments are ``RemoteEnv``'s.
    """
    if not timeout_s > 0:
        raise ValueError(f"timeout_s must be > 0, got {timeout_s!r}")
    connect_timeout_s = min(timeout_s, CONNECT_TIMEOUT_CAP_S)
    try:
        async with asyncio.timeout(connect_timeout_s):
            about = await describe(url, max_reply_bytes=reply_cap(None, max_reply_bytes), token=token)
            cap = reply_cap(about, max_reply_bytes)
            interface = Interface(url, about)
            session = await Session.open(url, timeout_s=timeout_s, max_reply_bytes=cap, token=token)
    except TimeoutError:
        raise RemoteEnvError(f"no complete answer from {url} within {connect_timeout_s:g} s "
                             "(GET /rsigym/env and the session's handshake)") from None
    return AsyncRemoteEnv(interface, session, agent_id=agent_id)
