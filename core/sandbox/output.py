"""Capped capture of a command's output streams, shared by the providers."""

from __future__ import annotations

__all__ = ["CappedBuffer"]


class CappedBuffer:
    """Keeps the first ``cap`` bytes written to it and counts the rest.

    The providers keep draining a stream after the cap is hit (a child blocked on a full pipe
    would otherwise never exit), so bytes past the cap are dropped here, not left unread.
    """

    TAIL_BYTES = 256  # the last bytes written are kept apart too: an end marker past the cap

    def __init__(self, cap: int) -> None:
        self.cap = cap
        self._chunks: list[bytes] = []
        self._kept = 0
        self.dropped = 0
        self.tail = b""  # the last TAIL_BYTES bytes written, kept or not

    def write(self, data: bytes) -> None:
        room = self.cap - self._kept
        if room > 0:
            kept = data[:room]
            self._chunks.append(kept)
            self._kept += len(kept)
        self.dropped += max(0, len(data) - max(room, 0))
        self.tail = (self.tail + data[-self.TAIL_BYTES:])[-self.TAIL_BYTES:]

    @property
    def written(self) -> int:
        """Bytes written in all, kept or dropped."""
        return self._kept + self.dropped

    @property
    def truncated(self) -> bool:
        return self.dropped > 0

    def getvalue(self) -> bytes:
        return b"".join(self._chunks)

    def text(self) -> str:
        # errors="replace": a cut can split a UTF-8 sequence, and programs may print bytes.
        return self.getvalue().decode("utf-8", errors="replace")
