"""The served app: OpenEnv's FastAPI server around ``ServedEnv``, with rsigym's limits and errors.

Endpoints are OpenEnv's (``create_fastapi_app``, the web-UI-free path of ``create_app``: its UI
would share one env between all visitors): ``POST /reset``, ``POST /step``, ``GET /state`` (each
on a fresh env, OpenEnv's stateless HTTP contract), ``GET /schema``, ``GET /health``,
``GET /metadata`` and the session endpoint ``/ws`` (one env per connection, at most
``max_sessions`` at once; the next is refused with ``CAPACITY_REACHED``). Every path that makes an
env counts it in one ledger (``rsigym.serve.ledger``): past ``max_sessions`` envs a stateless reset
is a 503 and a session's reset an error message. OpenEnv's MCP endpoints are not mounted. rsigym adds
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

from typing import Any, Awaitable, Callable

from fastapi import FastAPI, Request
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse
from . import openenv_server  # noqa: F401 - first: OpenEnv without Gradio (see openenv_server)
from openenv.core.env_server.http_server import create_fastapi_app
from openenv.core.env_server.types import ConcurrencyConfig
from starlette.exceptions import HTTPException as StarletteHTTPException

from rsigym.records import to_jsonable

from .config import ServeConfig
from .models import action_model, observation_model
from .recorder import RunRecorder
from .guards import BodyGuard, TokenGuard, first_line as _line
from .ledger import CapacityError, EnvLedger
from .session import EnvFailure, ServedEnv, SessionError
from .wire import describe_space

__all__ = ["build_app", "describe_env", "TokenGuard"]

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
    ledger = EnvLedger(config.max_sessions, on_empty=_drop_idle_sandboxes, empty_after_s=config.drop_idle_after_s)

    def served_env() -> ServedEnv:  # OpenEnv's factory, for every path; named: errors quote the name
        return ServedEnv(config, recorder, observation_cls, ledger)

    # No OpenEnv session timeout: its reaper closed a session's env but left the socket open, able
    # to reset an env nothing counted or closed. BodyGuard closes a silent session's connection instead.
    app = create_fastapi_app(served_env, action_cls, observation_cls,
                             concurrency_config=ConcurrencyConfig(max_concurrent_envs=config.max_sessions,
                                                                  session_timeout=None))
    _unmount_mcp(app)
    app.state.rsigym_ledger = ledger

    @app.get("/rsigym/env", tags=["rsigym"], summary="the served env's interface")
    def rsigym_env() -> dict[str, Any]:
        return about

    app.add_exception_handler(SessionError, _one_line())
    app.add_exception_handler(CapacityError, _one_line())
    app.add_exception_handler(EnvFailure, _one_line(500))
    app.add_exception_handler(RequestValidationError, _validation_error)
    app.add_exception_handler(StarletteHTTPException, _http_error)
    app.add_middleware(BodyGuard, max_bytes=config.max_message_bytes, body_timeout_s=config.body_timeout_s,
                       idle_timeout_s=config.idle_timeout_s)
    if config.token is not None:  # added last: the outermost, so a stranger's body is never even read
        app.add_middleware(TokenGuard, token=config.token)
    return app


def _unmount_mcp(app: FastAPI) -> None:
    """Remove OpenEnv's MCP endpoints (``POST /mcp``, ``/mcp`` WebSocket): rsigym's envs have no MCP
    tools, and ``openenv/session/create`` held a session slot per POST with no connection behind it."""
    app.router.routes[:] = [r for r in app.router.routes if getattr(r, "path", None) != "/mcp"]


def _drop_idle_sandboxes() -> None:
    """The server has held no env for a while: remove the idle containers of this process's pools."""
    from rsigym.sandbox.pool import drop_idle_containers

    drop_idle_containers()


def _one_line(status: int | None = None) -> Callable[[Request, Exception], Awaitable[JSONResponse]]:
    async def handler(request: Request, exc: Exception) -> JSONResponse:
        code = status or int(getattr(exc, "status_code", 400))
        return JSONResponse({"detail": _line(str(exc))}, status_code=code)

    return handler


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
