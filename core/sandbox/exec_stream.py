"""Reading a docker exec's multiplexed stream with a deadline.

The docker SDK's helpers (``exec_start(stream=True/demux=True)``, ``frames_iter``) block on the
socket with no deadline and buffer output without a cap, so a command that hangs or floods would
hang or flood us. This module reads the raw hijacked socket itself with ``select``: the wire
format is a sequence of frames, each an 8-byte header (stream type 1=stdout 2=stderr, three zero
bytes, big-endian uint32 payload length) followed by the payload.
"""

from __future__ import annotations

import secrets
import selectors
import socket
import time
from typing import Any

from rsigym.sandbox.output import CappedBuffer

__all__ = ["raw_socket", "buffered_output", "pump_exec_socket", "Demux", "new_mark", "unframe", "strip_start_mark"]

_HEADER = 8
_READY_READS = 64  # reads at most, at the deadline, of what the socket already holds
_STDERR = 2


def raw_socket(response: Any) -> socket.socket:
    """The ``socket.socket`` under what ``exec_start(socket=True)`` returns.

    On a unix socket the SDK returns a ``socket.SocketIO`` wrapper; select and shutdown need the
    socket itself.
    """
    sock: socket.socket = getattr(response, "_sock", response)
    return sock


def buffered_output(response: Any, sock: socket.socket) -> bytes:
    """The start of the exec's stream that the HTTP client already read with the upgrade headers.

    ``http.client`` reads the engine's answer through a buffered reader; when the command wrote
    before the headers were parsed (a loaded harness: the first frames are there already), its
    first frames sit in that reader's buffer, and reading the socket underneath skips them: exit
    0, stdout empty. ``sock`` must be non-blocking: a read past the buffer then returns at once.
    """
    reader = getattr(getattr(getattr(getattr(response, "_response", None), "raw", None), "_fp", None), "fp", None)
    read1 = getattr(reader, "read1", None)
    if read1 is None:
        return b""
    chunks = []
    while True:
        try:
            chunk = read1(65536)
        except (BlockingIOError, ValueError):  # nothing more now; or a reader already closed
            break
        if not chunk:
            break
        chunks.append(chunk)
    return b"".join(chunks)


class Demux:
    """Splits frames onto stdout/stderr buffers as bytes arrive, without waiting for whole frames."""

    def __init__(self, out: CappedBuffer, err: CappedBuffer) -> None:
        self._targets = {_STDERR: err}
        self._out = out
        self._pending = bytearray()
        self._target = out
        self._left = 0  # payload bytes of the current frame still to come

    def feed(self, data: bytes) -> None:
        self._pending += data
        buf, pos = self._pending, 0
        while pos < len(buf):
            if self._left == 0:
                if len(buf) - pos < _HEADER:
                    break
                self._target = self._targets.get(buf[pos], self._out)
                self._left = int.from_bytes(buf[pos + 4 : pos + 8], "big")
                pos += _HEADER
                continue
            take = min(self._left, len(buf) - pos)
            self._target.write(bytes(buf[pos : pos + take]))
            pos += take
            self._left -= take
        del buf[:pos]


def pump_exec_socket(
    sock: socket.socket, stdin: bytes | None, deadline: float, out: CappedBuffer, err: CappedBuffer,
    *, already: bytes = b"",
) -> bool:
    """Send ``stdin`` then half-close; demultiplex output until EOF or ``deadline``.

    Writing and reading share one loop so a command that floods its output before reading its
    input cannot deadlock with us.

    ``already``: the start of the stream, read before (``buffered_output``). At the deadline what
    the socket already holds is read first: a starved thread may wake up past it with the whole
    output, and its end, unread.

    Returns:
        True at EOF (the command finished), False when the deadline came first.

    Raises:
        OSError: the connection to the engine failed.
    """
    demux = Demux(out, err)
    demux.feed(already)
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    pending, pos = stdin, 0
    sel.register(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if pending is not None else 0))
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _read_ready(sock, demux)
            for _, mask in sel.select(remaining):
                if mask & selectors.EVENT_WRITE and pending is not None:
                    try:
                        pos += sock.send(pending[pos : pos + 65536])
                    except BlockingIOError:
                        pass
                    except (BrokenPipeError, ConnectionResetError):
                        pos = len(pending)  # the command exited without reading all of it
                    if pos >= len(pending):
                        pending = None
                        try:
                            sock.shutdown(socket.SHUT_WR)  # EOF on the command's stdin
                        except OSError:
                            pass
                        sel.modify(sock, selectors.EVENT_READ)
                if mask & selectors.EVENT_READ:
                    try:
                        chunk = sock.recv(65536)
                    except BlockingIOError:
                        continue
                    if not chunk:
                        return True
                    demux.feed(chunk)
    finally:
        sel.close()


def _read_ready(sock: socket.socket, demux: Demux) -> bool:
    """At the deadline: read what the socket holds now, without waiting; True when that reaches
    EOF (the command had finished). Bounded, should the command still be writing."""
    for _ in range(_READY_READS):
        try:
            chunk = sock.recv(65536)
        except BlockingIOError:
            return False
        if not chunk:
            return True
        demux.feed(chunk)
    return False


# Under load the engine can end an exec's stream without the output the command wrote (exit 0,
# empty stdout: moby#27289, docker-py#2042; 16 of 80 answer checks of probe_smoke beside a CPU
# hog). The wrapper therefore prints a fresh mark before and after the command; a stream that
# ends without both lost output, and the provider says so (SandboxError) instead of passing an
# empty or cut stdout on as the command's.


def new_mark() -> bytes:
    """A fresh mark for one exec (not guessable by an earlier command, so not forged by accident)."""
    return f"[rsigym-stream-{secrets.token_hex(8)}]".encode()


def unframe(out: CappedBuffer, mark: bytes) -> tuple[bytes, bool] | None:
    """The command's stdout between the start and end ``mark`` and whether the cap cut it; None
    when a mark is missing: the stream lost output. ``out`` keeps ``len(mark)`` bytes above the
    command's cap, for the start mark."""
    kept, size = out.getvalue(), len(mark)
    if out.written < 2 * size or not kept.startswith(mark) or not out.tail.endswith(mark):
        return None
    end = out.written - size  # where the end mark starts in the whole stream
    body = kept[size:end]
    return body, len(body) < end - size


def strip_start_mark(out: CappedBuffer, mark: bytes) -> bytes:
    """Stdout without the start mark (and within the command's cap), for a command that ended
    without its end mark on purpose (timed out, or its wrapper was killed)."""
    kept = out.getvalue()
    return kept[len(mark):] if kept.startswith(mark) else kept[: out.cap - len(mark)]
