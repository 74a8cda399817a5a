"""The server's one ledger of live Gymnasium envs, whatever made them.

OpenEnv makes a ``ServedEnv`` for every WebSocket session and for every stateless HTTP request
(``POST /reset``, ``POST /step``, ``GET /state``, ``GET /metadata``); a ``ServedEnv`` makes its
Gymnasium env (and with it any sandbox the env leases) on its first reset. The ledger counts those
Gymnasium envs from creation to close, for every path alike, and refuses the one past
``max_sessions`` instead of making it: OpenEnv's own session count covers only its WebSocket
sessions, so stateless resets and sessions it had reaped once went uncounted (issue 58).

When the server has held no env for ``drop_idle_after_s``, the process's sandbox pools remove
their idle containers: a served env leaves no container behind once its clients have gone.
"""

from __future__ import annotations

import threading
from typing import Callable

__all__ = ["CapacityError", "EnvLedger"]


class CapacityError(RuntimeError):
    """The server already holds ``max_sessions`` envs: a 503 (HTTP) or an error message (WebSocket)."""

    status_code = 503


class EnvLedger:
    """Counts the server's live Gymnasium envs against ``max_envs``; thread-safe.

    Args:
        max_envs: Envs at once (``--max-sessions``); one more is refused with ``CapacityError``.
        on_empty: Called (on a timer thread) once the ledger has stayed at zero for ``empty_after_s``.
        empty_after_s: How long the ledger must stay empty before ``on_empty`` runs.
    """

    def __init__(self, max_envs: int, on_empty: Callable[[], None] | None = None, empty_after_s: float = 5.0) -> None:
        self.max_envs = max_envs
        self._lock = threading.Lock()
        self.count = 0
        self.peak = 0
        self.refused = 0
        self._on_empty, self._empty_after_s = on_empty, empty_after_s
        self._timer: threading.Timer | None = None
        self._generation = 0  # which timer is current: one that fired after a newer one started does nothing

    def take(self) -> None:
        """Reserve a slot for one env about to be made; ``CapacityError`` when none is free."""
        with self._lock:
            if self.count >= self.max_envs:
                self.refused += 1
                raise CapacityError(f"the server holds {self.count} envs, its limit (--max-sessions "
                                    f"{self.max_envs}); try again when a session ends")
            self.count += 1
            self.peak = max(self.peak, self.count)
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None

    def give_back(self) -> None:
        """Free the slot of an env that was closed (or failed to be made)."""
        with self._lock:
            if self.count <= 0:
                raise RuntimeError("EnvLedger.give_back without a slot taken")
            self.count -= 1
            if self.count == 0 and self._on_empty is not None:
                self._generation += 1
                self._timer = threading.Timer(self._empty_after_s, self._still_empty, args=(self._generation,))
                self._timer.daemon = True
                self._timer.start()

    def _still_empty(self, generation: int) -> None:
        with self._lock:
            if self.count != 0 or self._timer is None or generation != self._generation:
                return
            self._timer = None
        assert self._on_empty is not None
        self._on_empty()

    def close(self) -> None:
        """Stop a pending ``on_empty`` timer (the server is shutting down)."""
        with self._lock:
            if self._timer is not None:
                self._timer.cancel()
                self._timer = None
