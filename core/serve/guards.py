"""What bounds a client before its request reaches an env: a token, body size and read time,
WebSocket silence, header read time and connections per client address.

- ``BodyGuard`` (ASGI): an HTTP body over ``max_bytes`` is a 413, one not read whole within
  ``body_timeout_s`` a 408, one that is not JSON a 400; WebSocket sessions silent for
  ``idle_timeout_s`` are closed (code 4408), so the session's handler ends, closes its env and
  records its episode. The server closes the connection itself: a session reaped behind the
  client's back (OpenEnv's own reaper) left a socket that could reset a new, uncounted env.
- ``guarded_http_protocol`` (uvicorn's h11 protocol): a request whose headers are not complete
  within ``header_timeout_s`` of its first byte (or of the connection) is cut off, and a client
  address holding ``max_per_client`` connections (HTTP or upgraded WebSocket) has the next one
  refused with a 503, so half-sent requests cannot hold the server's file descriptors.
"""

from __future__ import annotations

import asyncio
import hashlib
import hmac
import json
from typing import Any, Awaitable, Callable

import h11
from uvicorn.protocols.http.h11_impl import H11Protocol

__all__ = ["BodyGuard", "TokenGuard", "guarded_http_protocol", "first_line", "IDLE_CLOSE_CODE"]

Scope = dict[str, Any]
Receive = Callable[[], Awaitable[dict[str, Any]]]
Send = Callable[[dict[str, Any]], Awaitable[None]]

IDLE_CLOSE_CODE = 4408
"""WebSocket close code of a session closed for silence (4000-4999: the application's own)."""


def first_line(text: str, limit: int = 300) -> str:
    first = (text.strip().splitlines() or [""])[0]
    return first if len(first) <= limit else first[:limit - 3] + "..."


class BodyGuard:
    """ASGI middleware: bounded HTTP bodies (size, read time, JSON) and WebSocket silence."""

    def __init__(self, app: Callable[[Scope, Receive, Send], Awaitable[None]], max_bytes: int,
                 body_timeout_s: float = 30.0, idle_timeout_s: float | None = None) -> None:
        self.app, self.max_bytes = app, max_bytes
        self.body_timeout_s, self.idle_timeout_s = body_timeout_s, idle_timeout_s

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "websocket":
            from starlette.websockets import WebSocketDisconnect

            try:
                if self.idle_timeout_s is None:
                    await self.app(scope, receive, send)
                else:
                    await self._websocket(scope, receive, send)
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
        try:
            async with asyncio.timeout(self.body_timeout_s):
                body = await self._read_body(receive, send)
        except TimeoutError:
            await _reply(send, 408, f"request body not received within {self.body_timeout_s:g} s")
            return
        if body is None:
            return
        replayed = False

        async def replay() -> dict[str, Any]:
            nonlocal replayed
            if replayed:
                return await receive()
            replayed = True
            return {"type": "http.request", "body": body, "more_body": False}

        await self.app(scope, replay, send)

    async def _read_body(self, receive: Receive, send: Send) -> bytes | None:
        """The whole body, or None when a reply was sent instead (or the client left)."""
        body, more = b"", True
        while more:
            message = await receive()
            if message["type"] == "http.disconnect":
                return None
            body += message.get("body", b"")
            more = message.get("more_body", False)
            if len(body) > self.max_bytes:
                await _reply(send, 413, f"request body over the limit of {self.max_bytes} bytes")
                return None
        if body:
            try:
                json.loads(body)
            except RecursionError:
                await _reply(send, 400, "malformed JSON: nested too deep")
                return None
            except ValueError as exc:  # UnicodeDecodeError and JSONDecodeError
                await _reply(send, 400, first_line(f"malformed JSON: {exc}"))
                return None
        return body

    async def _websocket(self, scope: Scope, receive: Receive, send: Send) -> None:
        """Run the session with a receive that closes the connection after ``idle_timeout_s`` of
        client silence (time the server spends answering does not count) and tells the handler
        the client left: its ``finally`` closes the env and records the episode."""
        assert self.idle_timeout_s is not None
        timeout_s, closed = self.idle_timeout_s, False

        async def silent_for_long() -> dict[str, Any]:
            nonlocal closed
            if closed:
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}
            try:
                return await asyncio.wait_for(receive(), timeout_s)  # the server's queue: safe to cancel
            except TimeoutError:
                closed = True
                await send({"type": "websocket.close", "code": IDLE_CLOSE_CODE,
                            "reason": f"idle for {timeout_s:g} s: session closed"})
                return {"type": "websocket.disconnect", "code": IDLE_CLOSE_CODE}

        async def send_unless_closed(message: dict[str, Any]) -> None:
            if not closed:  # after the idle close, the handler's own close and replies go nowhere
                await send(message)

        await self.app(scope, silent_for_long, send_unless_closed)


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


_REFUSED = (b"HTTP/1.1 503 Service Unavailable\r\ncontent-type: application/json\r\nconnection: close\r\n"
            b"content-length: %d\r\n\r\n%s")


def guarded_http_protocol(header_timeout_s: float, max_per_client: int) -> type[H11Protocol]:
    """uvicorn's h11 protocol with a header read deadline and a connection cap per client address."""

    class GuardedH11Protocol(H11Protocol):
        _header_timer: asyncio.TimerHandle | None = None

        def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
            super().connection_made(transport)
            host = self.client[0] if self.client else None
            # every open connection of this server, HTTP or upgraded to a WebSocket, knows its client
            held = sum(1 for c in self.connections if host is not None and (getattr(c, "client", None) or ("",))[0] == host)
            if held > max_per_client:
                detail = json.dumps({"detail": f"too many connections from {host} (at most {max_per_client})"}).encode()
                transport.write(_REFUSED % (len(detail), detail))
                transport.close()
                return
            self._arm_header_timer()

        def data_received(self, data: bytes) -> None:
            super().data_received(data)
            if self.transport.get_protocol() is not self:  # upgraded to a WebSocket: its own limits apply
                self._disarm_header_timer()
            elif self.conn.their_state is h11.IDLE:  # bytes of a request whose headers are not complete
                self._arm_header_timer()
            else:
                self._disarm_header_timer()

        def connection_lost(self, exc: Exception | None) -> None:
            self._disarm_header_timer()
            super().connection_lost(exc)

        def _arm_header_timer(self) -> None:
            if self._header_timer is None:
                self._header_timer = self.loop.call_later(header_timeout_s, self._headers_too_slow)

        def _disarm_header_timer(self) -> None:
            if self._header_timer is not None:
                self._header_timer.cancel()
                self._header_timer = None

        def _headers_too_slow(self) -> None:
            self._header_timer = None
            if self.conn.their_state is h11.IDLE and not self.transport.is_closing():
                self.transport.close()  # nothing was asked yet: no reply owed

    return GuardedH11Protocol
