"""A hostile rsigym server for the remote client's attack tests (``test_remote_client_walls.py``)
and ``benchmarks/remote_client_walls.py``.

Plain asyncio on 127.0.0.1 (port 0) in a thread, with hand-made HTTP and WebSocket frames, so it
can do what no well-behaved server library lets it: stream a body or message far over any cap
(lazily: it never holds what it sends), send a permessage-deflate bomb, trickle a reply a byte at
a time, or answer with malformed JSON. ``measure_client`` runs ``rsigym.remote.make`` against it in
a child process and reports the error, the time it took and the child's peak RSS growth.
"""

from __future__ import annotations

import asyncio
import base64
import hashlib
import json
import struct
import subprocess
import sys
import threading
import zlib
from dataclasses import dataclass, field
from typing import Any, Awaitable, Callable

from gymnasium import spaces

from rsigym.serve.wire import describe_space

Reply = Callable[[asyncio.StreamWriter], Awaitable[None]]
CHUNK = b" " * 65536  # JSON whitespace: a body of it is "valid so far" to a streaming parser
_WS_GUID = b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11"

ABOUT: dict[str, Any] = {
    "env_id": "hostile/Echo-v0", "action_schema": {"type": "object"},
    "observation_space": describe_space(spaces.Dict({"text": spaces.Text(1000, charset="abcdefgh ")})),
    "action_space": None, "example_actions": [], "max_steps": 10, "max_sessions": 4,
    "max_message_bytes": 1 << 20, "condition": None,
}
OBSERVATION = {"type": "observation", "data": {"observation": {"text": "abc", "info": {}, "terminated": False,
                                                               "truncated": False}, "reward": None, "done": False}}
STATE = {"type": "state", "data": {"episode_id": "e" * 32, "step_count": 0}}


# --- HTTP replies (GET /rsigym/env) --------------------------------------------------------------

def http_body(body: bytes, *, headers: dict[str, str] | None = None, status: int = 200) -> Reply:
    async def reply(writer: asyncio.StreamWriter) -> None:
        head = {"content-type": "application/json", "content-length": str(len(body)), **(headers or {})}
        writer.write(_http_head(status, head) + body)
        await writer.drain()
    return reply


def http_json(value: Any) -> Reply:
    return http_body(json.dumps(value).encode())


def http_stream(total_bytes: int, *, declare_length: bool = False) -> Reply:
    """``total_bytes`` of whitespace, written as the client reads it (close-delimited unless declared)."""
    async def reply(writer: asyncio.StreamWriter) -> None:
        head = {"content-type": "application/json", "connection": "close"}
        if declare_length:
            head["content-length"] = str(total_bytes)
        writer.write(_http_head(200, head))
        await _stream(writer, total_bytes)
    return reply


def http_gzip_bomb(total_bytes: int) -> Reply:
    """A gzip-encoded body that inflates to ``total_bytes`` of whitespace."""
    return http_body(_compress(total_bytes, wbits=31), headers={"content-encoding": "gzip"})


def http_trickle(interval_s: float, total_s: float) -> Reply:
    """A body that declares a few kB and sends one byte every ``interval_s`` for ``total_s``."""
    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(_http_head(200, {"content-type": "application/json", "content-length": "4096"}))
        await _trickle(writer, b" " * 4096, interval_s, total_s)
    return reply


def _http_head(status: int, headers: dict[str, str]) -> bytes:
    lines = [f"HTTP/1.1 {status} X"] + [f"{k}: {v}" for k, v in headers.items()]
    return ("\r\n".join(lines) + "\r\n\r\n").encode()


# --- WebSocket replies (one per client message) --------------------------------------------------

def ws_text(payload: str | bytes | Any, *, binary: bool = False) -> Reply:
    """One message (text, or binary): bytes or a string as they are, anything else as JSON."""
    data = payload if isinstance(payload, bytes) else (payload if isinstance(payload, str) else json.dumps(payload)).encode()

    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(_frame(0x2 if binary else 0x1, data))
        await writer.drain()
    return reply


def ws_stream(total_bytes: int, fragment_bytes: int = 1 << 20) -> Reply:
    """One text message of ``total_bytes`` whitespace in fragments, each small, the sum huge."""
    async def reply(writer: asyncio.StreamWriter) -> None:
        sent = 0
        while sent < total_bytes:
            size = min(fragment_bytes, total_bytes - sent)
            writer.write(_frame(0x1 if sent == 0 else 0x0, b"", fin=sent + size >= total_bytes, length=size))
            await _stream(writer, size)
            sent += size
    return reply


def ws_deflate_bomb(total_bytes: int) -> Reply:
    """One permessage-deflate message that inflates to ``total_bytes`` of whitespace."""
    data = _compress(total_bytes, wbits=-15)[:-4]  # RFC 7692: the sync flush's 00 00 ff ff is left off

    async def reply(writer: asyncio.StreamWriter) -> None:
        writer.write(_frame(0x1, data, rsv1=True))
        await writer.drain()
    return reply


def ws_trickle(payload: Any, interval_s: float, trickled_bytes: int) -> Reply:
    """A valid message whose first ``trickled_bytes`` come one every ``interval_s``, then the rest."""
    data = _frame(0x1, json.dumps(payload).encode())

    async def reply(writer: asyncio.StreamWriter) -> None:
        await _trickle(writer, data[:trickled_bytes], interval_s, interval_s * trickled_bytes)
        writer.write(data[trickled_bytes:])
        await writer.drain()
    return reply


def _frame(opcode: int, data: bytes, *, fin: bool = True, rsv1: bool = False, length: int | None = None) -> bytes:
    """A server frame (unmasked); ``length`` declares a payload the caller writes itself."""
    n = len(data) if length is None else length
    first = (0x80 if fin else 0) | (0x40 if rsv1 else 0) | opcode
    if n < 126:
        head = struct.pack("!BB", first, n)
    elif n < 1 << 16:
        head = struct.pack("!BBH", first, 126, n)
    else:
        head = struct.pack("!BBQ", first, 127, n)
    return head + data


# --- shared pieces -------------------------------------------------------------------------------

def _compress(total_bytes: int, *, wbits: int) -> bytes:
    compressor = zlib.compressobj(9, zlib.DEFLATED, wbits)
    block = CHUNK * 16  # 1 MiB per call
    parts = [compressor.compress(block) for _ in range(total_bytes // len(block))]
    parts.append(compressor.compress(b" " * (total_bytes % len(block))))
    parts.append(compressor.flush(zlib.Z_SYNC_FLUSH if wbits < 0 else zlib.Z_FINISH))
    return b"".join(parts)


async def _stream(writer: asyncio.StreamWriter, total_bytes: int) -> None:
    sent = 0
    while sent < total_bytes:
        piece = CHUNK[:min(len(CHUNK), total_bytes - sent)]
        writer.write(piece)
        await writer.drain()  # waits for the client to read: nothing piles up here
        sent += len(piece)


async def _trickle(writer: asyncio.StreamWriter, data: bytes, interval_s: float, total_s: float) -> None:
    loop = asyncio.get_running_loop()
    end = loop.time() + total_s
    for byte in data:
        if loop.time() >= end:
            return
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(interval_s)


@dataclass
class Plan:
    """What the server answers: ``about`` to ``GET /rsigym/env``, ``ws_replies[i]`` to the i-th
    message of a session (the last one again after that); ``deflate`` accepts permessage-deflate."""

    about: Reply = field(default_factory=lambda: http_json(ABOUT))
    ws_replies: list[Reply] = field(default_factory=lambda: [ws_text(OBSERVATION)])
    deflate: bool = False


class HostileServer:
    """``with HostileServer(plan) as url:`` serves ``plan`` on 127.0.0.1 from a thread."""

    def __init__(self, plan: Plan) -> None:
        self.plan = plan
        self.loop = asyncio.new_event_loop()
        self._thread = threading.Thread(target=self.loop.run_forever, daemon=True)

    def __enter__(self) -> str:
        self._thread.start()
        self._server = asyncio.run_coroutine_threadsafe(
            asyncio.start_server(self._handle, "127.0.0.1", 0), self.loop).result(timeout=30)
        return f"http://127.0.0.1:{self._server.sockets[0].getsockname()[1]}"

    def __exit__(self, *exc: object) -> None:
        async def stop() -> None:
            self._server.close()
            for task in asyncio.all_tasks():
                if task is not asyncio.current_task():
                    task.cancel()

        asyncio.run_coroutine_threadsafe(stop(), self.loop).result(timeout=30)
        self.loop.call_soon_threadsafe(self.loop.stop)
        self._thread.join(timeout=30)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            request = (await reader.readuntil(b"\r\n\r\n")).decode("latin-1")
            path = request.split(" ", 2)[1]
            if path == "/rsigym/env":
                await self.plan.about(writer)
            elif path == "/ws":
                await self._session(request, reader, writer)
        except (ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError):
            pass  # the client hung up: what these attacks expect
        finally:
            writer.close()

    async def _session(self, request: str, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in request.split("\r\n")[1:] if ":" in line)}
        accept = base64.b64encode(hashlib.sha1(headers["sec-websocket-key"].encode() + _WS_GUID).digest()).decode()
        head = {"upgrade": "websocket", "connection": "Upgrade", "sec-websocket-accept": accept}
        if self.plan.deflate and "permessage-deflate" in headers.get("sec-websocket-extensions", ""):
            head["sec-websocket-extensions"] = "permessage-deflate"
        writer.write(_http_head(101, head).replace(b" X\r\n", b" Switching Protocols\r\n", 1))
        await writer.drain()
        answered = 0
        while True:
            first, second = await reader.readexactly(2)
            length = second & 0x7F
            if length == 126:
                (length,) = struct.unpack("!H", await reader.readexactly(2))
            elif length == 127:
                (length,) = struct.unpack("!Q", await reader.readexactly(8))
            await reader.readexactly(length + (4 if second & 0x80 else 0))  # the mask and payload: unread
            opcode = first & 0x0F
            if opcode == 0x8:  # close
                return
            if opcode in (0x1, 0x2) and first & 0x80:  # a whole client message: answer it
                replies = self.plan.ws_replies
                await replies[min(answered, len(replies) - 1)](writer)
                answered += 1


_CHILD = """
import asyncio, json, resource, sys, time
import httpx, websockets.asyncio.client  # imported before the baseline, as the client imports them
import rsigym.remote as remote
from rsigym.remote import env as _env
url, mode, timeout_s = sys.argv[1], sys.argv[2], float(sys.argv[3])


def peak_kb():
    # VmHWM: this process's own peak. ru_maxrss is not reset by exec: under a pytest worker of 546 MB
    # the child read 546 MB before and after any reply, and a growth of 0
    try:
        with open("/proc/self/status") as status:
            for line in status:
                if line.startswith("VmHWM:"):
                    return int(line.split()[1])
    except OSError:
        pass
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss


baseline_kb = peak_kb()
start = call_start = time.monotonic()
call = "make"
try:
    if mode == "sync":
        env = remote.make(url, timeout_s=timeout_s)
        call, call_start = "reset", time.monotonic()
        env.reset(seed=0)
    else:
        async def play():
            global call, call_start
            env = await remote.make_async(url, timeout_s=timeout_s)
            call, call_start = "reset", time.monotonic()
            await env.reset(seed=0)
        asyncio.run(play())
    error = ""
except Exception as exc:
    error = type(exc).__name__ + ": " + str(exc)
end = time.monotonic()
elapsed_s, call_s, peak = end - start, end - call_start, peak_kb()
print(json.dumps({"error": error, "call": call, "call_s": call_s, "elapsed_s": elapsed_s, "peak_mb": peak / 1024,
                  "growth_mb": (peak - baseline_kb) / 1024}))
"""


def measure_client(url: str, *, mode: str = "sync", timeout_s: float = 60.0, hang_s: float = 300.0) -> dict[str, Any]:
    """``make(url)`` then ``reset()`` in a child process: ``{"error", "call", "call_s", "elapsed_s",
    "peak_mb", "growth_mb"}``: ``error`` is ``"Type: message"`` (empty when nothing raised), ``call``
    the last call made (``make`` or ``reset``) and ``call_s`` its time, ``elapsed_s`` both calls'
    time, ``growth_mb`` the peak RSS over the child's RSS once the client is imported."""
    done = subprocess.run([sys.executable, "-c", _CHILD, url, mode, str(timeout_s)], capture_output=True,
                          text=True, timeout=hang_s)
    lines = done.stdout.strip().splitlines()
    if done.returncode != 0 or not lines:
        return {"error": f"child exit {done.returncode}: {done.stderr.strip()[-300:]}", "call": "",
                "call_s": float("nan"), "elapsed_s": float("nan"), "peak_mb": float("nan"), "growth_mb": float("nan")}
    return dict(json.loads(lines[-1]))
