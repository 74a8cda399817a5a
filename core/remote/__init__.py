"""``rsigym.remote``: a served env (``rsigym serve``) as a Gymnasium env whose reset and step go over the wire.

``make(url)`` returns a ``RemoteEnv`` (synchronous, one WebSocket session); ``make_async(url)``
an ``AsyncRemoteEnv`` (``await env.reset(...)``, ``await env.step(...)``) for trainers that run
many rollouts on one event loop. Both speak OpenEnv's session protocol (``/ws``), so they work
against any rsigym server; spaces, the action schema and example actions come from the server's
``GET /rsigym/env``. Needs ``websockets`` and ``httpx`` (the ``serve`` extra), imported on use.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .env import AsyncRemoteEnv, RemoteEnv, RemoteEnvError, make, make_async

__all__ = ["make", "make_async", "RemoteEnv", "AsyncRemoteEnv", "RemoteEnvError"]


def __getattr__(name: str) -> Any:
    if name not in __all__:
        raise AttributeError(f"module 'rsigym.remote' has no attribute {name!r}")
    from . import env

    return getattr(env, name)
