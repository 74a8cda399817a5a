"""The remote client's wire, walled as the server's is: a size cap and an overall deadline.

``describe`` reads ``GET /rsigym/env`` and ``Session`` is one OpenEnv WebSocket session (``/ws``).
Both are asyncio (the synchronous ``RemoteEnv`` runs them on a loop of its own), so one set of
walls serves both clients:

- **size:** a reply over ``max_reply_bytes`` is refused as it arrives, never read whole: the HTTP
  body is counted while it streams (and no compressed body is taken), and a WebSocket message is
  capped by websockets' ``max_size``, which counts bytes *after* permessage-deflate decompression,
  so a small deflate bomb stops at the cap too.
- **time:** ``asyncio.timeout`` bounds a whole call (connect, send, the whole reply), not each
  read, so a server that trickles a byte at a time is cut off at the deadline.
- **one error:** everything a server can do wrong is a ``RemoteEnvError`` of one line. A session
  that broke a wall is closed at once: a late reply would otherwise answer the next request.
"""

from __future__ import annotations

import asyncio
from typing import Any

from .replies import RemoteEnvError, check_about, decode, one_line

__all__ = ["describe", "Session", "ws_url", "auth_headers"]

_FRAMES_QUEUED = 4  # websockets' read-ahead in frames: replies come one per request, so a few suffice


def ws_url(url: str) -> str:
    """The session endpoint of the server at ``url``."""
    url = url.rstrip("/")
    if url.startswith("https://"):
        return "wss://" + url[len("https://"):] + "/ws"
    if url.startswith("http://"):
        return "ws://" + url[len("http://"):] + "/ws"
    return url + "/ws"


def auth_headers(token: str | None) -> dict[str, str]:
    """The request headers a server started with ``--token`` asks for (on HTTP and the handshake)."""
    return {"Authorization": f"Bearer {token}"} if token is not None else {}


async def describe(url: str, *, max_reply_bytes: int, token: str | None = None) -> dict[str, Any]:
    """The server's ``GET /rsigym/env``, checked; the caller bounds the time (``asyncio.timeout``)."""
    import httpx

    endpoint = url.rstrip("/") + "/rsigym/env"
    # identity: httpx would inflate a compressed body a whole network chunk at a time, unbounded
    headers = {"accept-encoding": "identity", **auth_headers(token)}
    try:
        async with httpx.AsyncClient(headers=headers, timeout=None) as client:
            async with client.stream("GET", endpoint) as response:
                if response.status_code == 401:
                    raise RemoteEnvError(f"{url} refused the request: missing or wrong token (pass token=...)")
                if response.status_code != 200:
                    raise RemoteEnvError(f"{url} is not an rsigym server (GET /rsigym/env: {response.status_code})")
                encoding = response.headers.get("content-encoding", "identity").strip().lower()
                if encoding not in ("", "identity"):
                    raise RemoteEnvError(f"GET {endpoint} came {one_line(encoding, 40)}-encoded, "
                                         "which the client does not take (it asked for identity)")
                declared = response.headers.get("content-length", "")
                if declared.isdigit() and int(declared) > max_reply_bytes:
                    raise _too_large(endpoint, max_reply_bytes)
                body = bytearray()
                async for chunk in response.aiter_raw():
                    body += chunk
                    if len(body) > max_reply_bytes:
                        raise _too_large(endpoint, max_reply_bytes)
    except httpx.HTTPError as exc:
        raise RemoteEnvError(f"cannot reach an rsigym server at {url}: {one_line(exc, 200)}") from None
    return check_about(decode(bytes(body), f"GET {endpoint}"))


def _too_large(where: str, max_reply_bytes: int) -> RemoteEnvError:
    return RemoteEnvError(f"the reply to {where} is over the client's cap of {max_reply_bytes} bytes "
                          "(max_reply_bytes)")


class Session:
    """One WebSocket session: ``exchange`` sends a message and returns the decoded reply.

    Args:
        url: The server (for messages).
        ws: An open ``websockets.asyncio.client.ClientConnection`` (see ``open``).
        timeout_s: The deadline of one exchange, send and whole reply together.
        max_reply_bytes: The cap the connection was opened with (for messages).
    """

    def __init__(self, url: str, ws: Any, *, timeout_s: float, max_reply_bytes: int) -> None:
        self.url, self.timeout_s, self.max_reply_bytes = url, timeout_s, max_reply_bytes
        self._ws: Any = ws
        self._broken = ""

    @classmethod
    async def open(cls, url: str, *, timeout_s: float, max_reply_bytes: int, token: str | None = None) -> Session:
        """Open a session at ``url``; the caller bounds the time of the handshake."""
        from websockets.asyncio.client import connect

        try:
            ws = await connect(ws_url(url), max_size=max_reply_bytes, max_queue=_FRAMES_QUEUED,
                               open_timeout=None, close_timeout=min(timeout_s, 10.0),
                               additional_headers=auth_headers(token))
        except Exception as exc:  # noqa: BLE001 - refused, reset, unreachable, a bad handshake: one line
            raise RemoteEnvError(f"cannot open a session at {url}: {one_line(exc, 200)}") from None
        return cls(url, ws, timeout_s=timeout_s, max_reply_bytes=max_reply_bytes)

    async def exchange(self, message: str) -> Any:
        """Send ``message`` and return the reply's JSON, within ``timeout_s`` for both."""
        from websockets.exceptions import ConnectionClosed

        if self._ws is None:
            raise RemoteEnvError(f"the session at {self.url} is closed{self._broken}")
        try:
            async with asyncio.timeout(self.timeout_s):
                try:
                    await self._ws.send(message)
                except ConnectionClosed:
                    pass  # the server may have said why first (capacity): the reply read below tells
                raw = await self._ws.recv()
        except TimeoutError:
            raise self._abort(f"no complete answer from {self.url} within {self.timeout_s:g} s") from None
        except ConnectionClosed as exc:
            raise self._abort(f"the session at {self.url} ended: {self._reason(exc)}") from None
        except Exception as exc:  # noqa: BLE001 - a transport failure under websockets: one line
            raise self._abort(f"the session at {self.url} failed: {one_line(exc, 200)}") from None
        except BaseException:  # cancelled or interrupted mid-exchange: its reply may still come
            self._abort("interrupted")
            raise
        return decode(raw, f"the reply from {self.url}")

    def _reason(self, exc: Any) -> str:
        sent, received = getattr(exc, "sent", None), getattr(exc, "rcvd", None)
        if received is None and sent is not None and sent.code == 1009:  # websockets refused the message
            return f"a reply over the client's cap of {self.max_reply_bytes} bytes (max_reply_bytes)"
        return one_line(getattr(received, "reason", "") or exc, 200)

    def _abort(self, why: str) -> RemoteEnvError:
        """Drop the connection now (no closing handshake to wait on); later calls say why."""
        ws, self._ws = self._ws, None
        self._broken = f" ({why})"
        if ws is not None:
            ws.transport.abort()
        return RemoteEnvError(why)

    async def close(self, farewell: str) -> None:
        """Send ``farewell`` (best effort) and close, within the session's deadline."""
        ws, self._ws = self._ws, None
        if ws is None:
            return
        try:
            async with asyncio.timeout(self.timeout_s):
                try:
                    await ws.send(farewell)
                except Exception:  # noqa: BLE001 - already closed
                    pass
                await ws.close()
        except Exception:  # noqa: BLE001 - a server that does not close in time is dropped
            ws.transport.abort()
        except BaseException:
            ws.transport.abort()
            raise
