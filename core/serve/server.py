"""Running the served app: in the foreground (``rsigym serve``) or on a thread (tests, benchmarks).

uvicorn runs the app on a socket bound here (so port 0 picks a free port that is known before the
first request), with WebSocket messages capped at ``max_message_bytes`` (a larger one closes the
session with 1009, freeing its env). The run folder's recorder is opened before the socket and
closed after the last session ended, so every episode a session left unfinished is on disk.
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any, Callable

from .app import build_app
from .config import ServeConfig
from .recorder import RunRecorder

__all__ = ["serve", "ServerThread"]


BACKLOG = 2048
"""the listen backlog until uvicorn starts (then ``ACCEPT_BATCH``)"""
ACCEPT_BATCH = 128
"""uvicorn's backlog: the kernel's queue of connections, and how many asyncio accepts at once"""


def _bind(host: str, port: int) -> socket.socket:
    """A socket bound and already listening: the address is announced before uvicorn starts, and a
    client that connects in between waits in the backlog instead of being refused."""
    family = socket.AF_INET6 if ":" in host else socket.AF_INET
    sock = socket.socket(family, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind((host, port))
    sock.listen(BACKLOG)
    sock.set_inheritable(True)
    return sock


def _uvicorn_server(config: ServeConfig, recorder: RunRecorder | None) -> Any:
    import uvicorn

    from .guards import guarded_http_protocol

    app = build_app(config, recorder)
    # uvicorn has no header read deadline nor a per-client connection cap: its h11 protocol, guarded
    http = guarded_http_protocol(config.header_timeout_s, config.max_connections_per_client)
    # backlog: asyncio accepts up to this many connections in one go before any of them is seen by the
    # protocol (its cap per client): at 2,048 a burst of half-sent requests took every descriptor first
    settings = uvicorn.Config(app, http=http, backlog=ACCEPT_BATCH, ws_max_size=config.max_message_bytes,
                              log_level="warning",
                              timeout_graceful_shutdown=5, ws_ping_interval=20.0, ws_ping_timeout=20.0)
    return uvicorn.Server(settings)


def serve(config: ServeConfig, *, on_ready: Callable[[str], None] | None = None) -> int:
    """Serve ``config`` until interrupted; returns the number of records written."""
    with RunRecorder(config.run_dir, config.env_id, config.env_kwargs, config.graders, config.condition,
                     max_steps=config.step_cap) as recorder:
        server = _uvicorn_server(config, recorder)
        sock = _bind(config.host, config.port)
        host, port = sock.getsockname()[:2]
        if on_ready is not None:
            on_ready(f"http://{'[' + host + ']' if ':' in host else host}:{port}")
        try:
            server.run(sockets=[sock])
        except KeyboardInterrupt:  # uvicorn re-raises the Ctrl-C it shut down on: a normal end of serving
            pass
        finally:
            server.config.app.state.rsigym_ledger.close()
        return recorder.written


class ServerThread:
    """A server on a daemon thread; a context manager whose ``url`` is ready on entry.

    For tests and benchmarks: ``with ServerThread(ServeConfig(...)) as server: server.url``.
    """

    def __init__(self, config: ServeConfig, *, record: bool = True) -> None:
        self.config = config
        self.recorder = (RunRecorder(config.run_dir, config.env_id, config.env_kwargs, config.graders,
                                     config.condition, max_steps=config.step_cap) if record else None)
        try:
            self._server = _uvicorn_server(config, self.recorder)
            self._sock = _bind(config.host, config.port)
        except BaseException:
            if self.recorder is not None:
                self.recorder.close()
            raise
        host, port = self._sock.getsockname()[:2]
        self.url = f"http://{host}:{port}"
        self._thread = threading.Thread(target=self._server.run, kwargs={"sockets": [self._sock]},
                                        name="rsigym-serve", daemon=True)

    def __enter__(self) -> "ServerThread":
        self._thread.start()
        deadline = time.monotonic() + 60.0
        while not self._server.started:
            if not self._thread.is_alive() or time.monotonic() > deadline:
                raise RuntimeError("the server did not start")
            time.sleep(0.01)
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    def close(self) -> None:
        self._server.should_exit = True
        self._thread.join(timeout=30.0)
        self._sock.close()
        self.ledger.close()
        if self.recorder is not None:
            self.recorder.close()

    @property
    def ledger(self) -> Any:
        """The server's ``EnvLedger``: envs held now (``count``), at most at once (``peak``), refused."""
        return self._server.config.app.state.rsigym_ledger

    def live_envs(self) -> int:
        """Gymnasium envs the server holds now (one per session that has reset, or reset in flight)."""
        return int(self.ledger.count)
