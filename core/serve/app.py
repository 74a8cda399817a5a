"""The served app: OpenEnv's FastAPI server around ``ServedEnv``, with rsigym's limits and errors.

Endpoints are OpenEnv's (``create_fastapi_app``, the web-UI-free path of ``create_app``: its UI
would share one env between all visitors): ``POST /reset``, ``POST /step``, ``GET /state`` (each
on a fresh env, OpenEnv's stateless HTTP contract), ``GET /schema``, ``GET /health``,
``GET /metadata`` and the session endpoint ``/ws`` (one env per connection, at most
``max_sessions`` at once; the next is refused with ``CAPACITY_REACHED``). rsigym adds
``GET /rsigym/env``: the env id, action schema, spaces (``rsigym.serve.wire``) and example
actions ``rsigym.remote`` rebuilds a Gymnasium env from.

Bad input never reaches an env: a body over ``max_message_bytes`` is a 413, a body that is not
JSON (or nests too deep to parse) a 400, a request OpenEnv's models reject a 422, a step without
an episode a 409, a bad reset argument a 422, each with ``{"detail": "<one line>"}``. Sessions are reachable only through
their own connection: no endpoint takes a session id, and episode ids are 128 random bits.

With a token (``ServeConfig.token``), ``TokenGuard`` stands in front of everything: a request or
WebSocket handshake without ``Authorization: Bearer <token>`` is a 401 before any other code runs
(so it never makes an env, let alone a record). Only ``GET /health`` stays open, for load balancers.
"""

from __future__ import annotations

import functools
import hashlib
import hmac
import json
from typing import Any, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from . import openenv_server  # noqa: F401 - first: OpenEnv without Gradio (see openenv_server)
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.types import ConcurrencyConfig
from starlette.exceptions import HTTPException as StarletteHTTPException
from starlette.websockets import WebSocketDisconnect

from rsigym.records import to_jsonable

from .config import ServeConfig
from .models import action_model, observation_model
from .recorder import RunRecorder
from .session import EnvFailure, LiveEnvs, ServedEnv, SessionError
from .wire import describe_space

__all__ = ["build_app", "describe_env", "TokenGuard"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]


def describe_env(config: ServeConfig) -> dict[str, Any]:
    """What a remote client needs to rebuild the env's interface (no state, no outcomes)."""
    env = config.make_env()
    try:
        unwrapped = env.unwrapped
        examples = getattr(unwrapped, "example_actions", None)
        return {"env_id": config.env_id, "action_schema": getattr(unwrapped, "action_schema", None),
                "observation_space": describe_space(env.observation_space),
                "action_space": _space_or_none(env.action_space),
                "example_actions": to_jsonable(examples) if isinstance(examples, list) else [],
                "max_steps": config.step_cap, "max_sessions": config.max_sessions,
                "max_message_bytes": config.max_message_bytes,
                "condition": config.condition}
    finally:
        env.close()


def _space_or_none(space: Any) -> dict[str, Any] | None:
    try:
        return describe_space(space)
    except TypeError:  # an action space no client can rebuild: the schema still says it all
        return None


def build_app(config: ServeConfig, recorder: RunRecorder | None) -> FastAPI:
    """The FastAPI app serving ``config.env_id``; records go to ``recorder`` (None: not recorded)."""
    about = describe_env(config)
    from .wire import build_space

    action_cls = action_model(config.env_id, about["action_schema"] or {"type": "object"})
    observation_cls = observation_model(config.env_id, build_space(about["observation_space"]))
    live = LiveEnvs()
    factory = functools.partial(ServedEnv, config, recorder, observation_cls, live)
    app = create_fastapi_app(factory, action_cls, observation_cls,
                             concurrency_config=ConcurrencyConfig(max_concurrent_envs=config.max_sessions,
                                                                  session_timeout=config.idle_timeout_s))

    app.state.rsigym_live_envs = live

    @app.get("/rsigym/env", tags=["rsigym"], summary="the served env's interface")
    def rsigym_env() -> dict[str, Any]:
        return about

    app.add_exception_handler(SessionError, _one_line())
    app.add_exception_handler(EnvFailure, _one_line(500))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(BodyGuard, max_bytes=config.max_message_bytes)
    if config.token is not None:  # added last: the outermost, so a stranger's body is never even read
        app.add_middleware(TokenGuard, token=config.token)
    return app


def _one_line(status: int | None = None) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        code = status or int(getattr(exc, "status_code", 400))
        return JSONResponse({"detail": _line(str(exc))}, status_code=code)

    return handler


def _line(text: str, limit: int = 300) -> str:
    first = (text.strip().splitlines() or [""])[0]
    return first if len(first) <= limit else first[:limit - 3] + "..."


def _describe_errors(errors: Any) -> str:
    """Pydantic's error list as one line: where and what, for the first error (and how many)."""
    if not isinstance(errors, list) or not errors:
        return _line(str(errors))
    first = errors[0]
    where = ".".join(str(p) for p in first.get("loc", ())) or "request"
    more = f" (+{len(errors) - 1} more)" if len(errors) > 1 else ""
    return _line(f"{where}: {first.get('msg', 'invalid')}{more}")


async def _validation_error(request: Request, exc: Exception) -> JSONResponse:
    errors = exc.errors() if isinstance(exc, RequestValidationError) else str(exc)
    return JSONResponse({"detail": _describe_errors(errors)}, status_code=422)


async def _http_error(request: Request, exc: Exception) -> JSONResponse:
    assert isinstance(exc, StarletteHTTPException)
    detail = exc.detail if isinstance(exc.detail, str) else _describe_errors(exc.detail)
    return JSONResponse({"detail": _line(detail)}, status_code=exc.status_code, headers=exc.headers)


class BodyGuard:
    """ASGI middleware: an HTTP body over ``max_bytes`` is a 413 (read no further), a body that is
    not JSON (or nests too deep for the parser) a 400, each with a one-line reason; any other body
    is passed on unchanged. WebSocket messages are capped by the server (``ws_max_size``)."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int) -> None:
        self.app, self.max_bytes = app, max_bytes

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            try:
                await self.app(scope, receive, send)
            except WebSocketDisconnect:  # the client left first; OpenEnv's handler has freed its session
                pass
            return
        if scope["type"] != "http" or scope.get("method") not in ("POST", "PUT", "PATCH"):
            await self.app(scope, receive, send)
            return
        declared = dict(scope.get("headers") or []).get(b"content-length")
        if declared is not None and declared.isdigit() and int(declared) > self.max_bytes:
            await _reply(send, 413, f"request body of {int(declared)} bytes is over the limit of {self.max_bytes}")
            return
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await _reply(send, 413, f"request body over the limit of {self.max_bytes} bytes")
                return
        if body:
            try:
                json.loads(body)
            except RecursionError:
                await _reply(send, 400, "malformed JSON: nested too deep")
                return
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError
                await _reply(send, 400, _line(f"malformed JSON: {exc}"))
                return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)


class TokenGuard:
    """ASGI middleware: every HTTP request and WebSocket handshake must carry ``Authorization:
    Bearer <token>``, else a 401 ``missing or wrong token`` (the handshake is refused with a 401
    where the server can send one, else closed with 1008). ``/health`` stays open. The comparison
    is ``hmac.compare_digest`` of SHA-256 digests: constant time, and the length is not told either."""

    OPEN_PATHS = frozenset({"/health"})

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], token: str) -> None:
        self.app = app
        self._digest = hashlib.sha256(token.encode()).digest()

    def _authorized(self, scope: Scope) -> bool:
        given = b""
        for name, value in scope.get("headers") or []:
            if name == b"authorization":
                scheme, _, credential = value.partition(b" ")
                given = credential.strip() if scheme.lower() == b"bearer" else b""
                break
        return hmac.compare_digest(hashlib.sha256(given).digest(), self._digest) and bool(given)

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if (scope["type"] not in ("http", "websocket") or scope.get("path") in self.OPEN_PATHS
                or self._authorized(scope)):
            await self.app(scope, receive, send)
            return
        if scope["type"] == "http":
            await _reply(send, 401, "missing or wrong token", [(b"www-authenticate", b"Bearer")])
            return
        await receive()  # websocket.connect: the handshake request, answered below without accepting it
        if "websocket.http.response" in (scope.get("extensions") or {}):
            await _reply(send, 401, "missing or wrong token", [(b"www-authenticate", b"Bearer")],
                         prefix="websocket.")
        else:
            await send({"type": "websocket.close", "code": 1008, "reason": "missing or wrong token"})


async def _reply(send: Send, status: int, detail: str, headers: list[tuple[bytes, bytes]] | None = None,
                 prefix: str = "") -> None:
    payload = json.dumps({"detail": detail}).encode()
    await send({"type": f"{prefix}http.response.start", "status": status,
                "headers": [(b"content-type", b"application/json"), (b"content-length", str(len(payload)).encode()),
                            (b"connection", b"close"), *(headers or [])]})
    await send({"type": f"{prefix}http.response.body", "body": payload})
