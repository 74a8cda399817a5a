"""Reading a docker exec's multiplexed stream with a deadline.

The docker SDK's helpers (``exec_start(stream=True/demux=True)``, ``frames_iter``) block on the
socket with no deadline and buffer output without a cap, so a command that hangs or floods would
hang or flood us. This module reads the raw hijacked socket itself with ``select``: the wire
format is a sequence of frames, each an 8-byte header (stream type 1=stdout 2=stderr, three zero
bytes, big-endian uint32 payload length) followed by the payload.
"""

from __future__ import annotations

import selectors
import socket
import time
from typing import Any

from rsigym.sandbox.output import CappedBuffer

__all__ = ["raw_socket", "pump_exec_socket", "Demux"]

_HEADER = 8
_STDERR = 2


def raw_socket(response: Any) -> socket.socket:
    """The ``socket.socket`` under what ``exec_start(socket=True)`` returns.

    On a unix socket the SDK returns a ``socket.SocketIO`` wrapper; select and shutdown need the
    socket itself.
    """
    sock: socket.socket = getattr(response, "_sock", response)
    return sock


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
    sock: socket.socket, stdin: bytes | None, deadline: float, out: CappedBuffer, err: CappedBuffer
) -> bool:
    """Send ``stdin`` then half-close; demultiplex output until EOF or ``deadline``.

    Writing and reading share one loop so a command that floods its output before reading its
    input cannot deadlock with us.

    Returns:
        True at EOF (the command finished), False when the deadline came first.

    Raises:
        OSError: the connection to the engine failed.
    """
    demux = Demux(out, err)
    sock.setblocking(False)
    sel = selectors.DefaultSelector()
    pending, pos = stdin, 0
    sel.register(sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if pending is not None else 0))
    try:
        while True:
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return False
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
