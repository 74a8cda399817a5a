"""The HTTP layer under LiteLLM gives each thread its own connection pool (``http_guard``).

One pool shared by every episode thread serialised requests on its lock: with the other threads
busy, a 500 ms call took about 1 s at 32 in flight. These tests check the structure that removes
that queue (a pool per thread, reused by its thread, closed with its thread or the transport) and
that the guard still holds on every thread's pool (the deadline and the reply cap).
"""

from __future__ import annotations

import http.server
import json
import threading
import time

import httpx
import pytest

from rsigym.llm import http_guard


class _Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"  # keep-alive: a thread's second call reuses its connection

    def do_POST(self):  # noqa: N802 - the http.server API
        length = int(self.headers.get("content-length", 0))
        self.rfile.read(length)
        body = json.dumps({"port": self.client_address[1], "usage": {"prompt_tokens": 1}}).encode()
        if self.path == "/big":
            body = b"x" * (http_guard.MAX_REPLY_BYTES + 1)
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()


def _client_port(client: httpx.Client, url: str) -> int:
    """The client-side port of the connection that carried the call (the server echoes it)."""
    return int(client.post(url, json={}).json()["port"])


def test_each_thread_has_its_own_pool_and_reuses_its_connection(server):
    client, transport = http_guard.guarded_client(lambda: time.monotonic() + 30)
    ports: dict[str, list[int]] = {}
    pools: dict[str, httpx.HTTPTransport] = {}
    barrier = threading.Barrier(4)

    def calls(name: str) -> None:
        barrier.wait()  # all four threads hold a connection at once
        ports[name] = [_client_port(client, server + "/x"), _client_port(client, server + "/x")]
        pools[name] = transport._inner._local.transport

    threads = [threading.Thread(target=calls, args=(f"t{i}",)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert all(first == second for first, second in ports.values()), ports  # keep-alive within a thread
    assert len({first for first, _ in ports.values()}) == 4  # a connection per thread
    assert isinstance(transport._inner, http_guard._PerThreadTransport)
    assert len({id(pool) for pool in pools.values()}) == 4  # four threads, four pools: none shared
    client.close()


def test_a_thread_that_ended_has_its_pool_closed_and_close_closes_the_rest(server):
    client, transport = http_guard.guarded_client(lambda: time.monotonic() + 30)
    inner = transport._inner
    made: list[httpx.HTTPTransport] = []

    def one_call() -> None:
        _client_port(client, server + "/x")
        made.append(inner._local.transport)

    worker = threading.Thread(target=one_call)
    worker.start()
    worker.join()
    ended = made[0]
    assert ended._pool.connections  # the thread left a keep-alive connection behind
    one_call()  # this thread's pool is made: the ended thread's is closed on the way
    assert not ended._pool.connections
    assert [t for _, t in inner._by_thread] == [made[1]]  # the ended thread's pool is gone
    client.close()
    assert not made[1]._pool.connections
    refused: list[BaseException] = []

    def late() -> None:
        try:
            inner._own()
        except RuntimeError as exc:
            refused.append(exc)

    late_thread = threading.Thread(target=late)
    late_thread.start()
    late_thread.join()
    assert refused and "closed" in str(refused[0])  # a new thread after close gets no pool


def test_the_deadline_and_the_cap_hold_on_every_threads_pool(server):
    client, _ = http_guard.guarded_client(lambda: time.monotonic() - 1)  # a deadline already passed
    errors: list[BaseException] = []

    def call(path: str) -> None:
        try:
            client.post(server + path, json={})
        except BaseException as exc:  # noqa: BLE001 - collected for the assertion
            errors.append(exc)

    thread = threading.Thread(target=call, args=("/x",))
    thread.start()
    thread.join()
    assert errors and isinstance(errors[0], httpx.TimeoutException)
    client.close()
    client, _ = http_guard.guarded_client(lambda: time.monotonic() + 30)
    errors.clear()
    thread = threading.Thread(target=call, args=("/big",))
    thread.start()
    thread.join()
    assert errors and isinstance(errors[0], http_guard.ReplyTooLarge)
    client.close()
