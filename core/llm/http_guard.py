"""The HTTP layer under LiteLLM: a deadline on every socket operation, a cap on a reply's size, and
usage that LiteLLM cannot parse dropped.

An HTTP client's timeout applies per read: a provider that sends its answer one byte every 4 s
never trips a 30 s timeout and holds the caller for as long as it likes. And a reply is read
whole into memory: a 300 MB body cost 51 s and 1.76 GB. So ``install`` gives LiteLLM (the
OpenAI SDK's client, ``litellm.client_session``, and its own handlers, ``litellm.sync_transport``)
one transport of ours:

* every connect, read and write of its sockets is bounded by the caller's deadline (a
  ``time.monotonic()`` value the caller sets, e.g. ``rsigym.llm.client.call_deadline``), so the deadline
  holds for the whole request however slowly the bytes come;
* a reply whose body (declared or counted, after decompression) passes ``MAX_REPLY_BYTES`` fails
  with ``ReplyTooLarge`` as soon as the cap is passed: at most the cap is ever buffered;
* a JSON reply whose ``usage`` holds a value that is no finite number (``NaN``, a string) has its
  ``usage`` dropped: LiteLLM would refuse the whole reply as a 500, retried and never counted;
  without usage the client counts the tokens itself (``rsigym.llm``).

Compression is asked off (``Accept-Encoding: identity``); a server that compresses anyway is
decompressed here, under the same cap.

Each thread gets its own connection pool (``_PerThreadTransport``). One pool shared by 32 episode
threads serialises every request and every response close on the pool's lock, and its holder drops
the GIL inside (a poll per pooled connection): with the other threads busy (replies parsed,
sandboxes driven) the lock is held across GIL hand-offs and the threads queue behind it: 32
threads each calling a 500 ms server 3 times with 50 ms of Python work after each call saw a
median call of 0.92-1.07 s through one pool, 0.53-0.57 s with a pool each. A thread reuses its own
keep-alive connections, so connections still number about the calls in flight.
"""

from __future__ import annotations

import json
import math
import threading
import time
import weakref
import zlib
from typing import Any, Callable, Iterator

import httpcore
import httpx

__all__ = ["MAX_REPLY_BYTES", "ReplyTooLarge", "GuardedTransport", "guarded_client", "install"]

MAX_REPLY_BYTES = 16 * 2**20  # a chat reply is kilobytes; 16 MiB leaves room for logprobs and long outputs
_CHUNK_BYTES = 64 * 1024

Deadline = Callable[[], "float | None"]  # the time.monotonic() by which the request must end, or None


class ReplyTooLarge(httpx.TransportError):
    """A provider's reply passed ``MAX_REPLY_BYTES``: refused before more of it was read."""


def _left_s(deadline: Deadline, timeout: float | None, error: type[Exception]) -> float | None:
    """``timeout`` shortened to what is left until the deadline; ``error`` once nothing is left
    (a timeout of 0 would make the socket non-blocking, not fail)."""
    end = deadline()
    if end is None:
        return timeout
    left = end - time.monotonic()
    if left <= 0:
        raise error("the request's deadline passed")
    return left if timeout is None else min(timeout, left)


class _DeadlineStream(httpcore.NetworkStream):
    def __init__(self, stream: httpcore.NetworkStream, deadline: Deadline) -> None:
        self._stream, self._deadline = stream, deadline

    def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        return self._stream.read(max_bytes, _left_s(self._deadline, timeout, httpcore.ReadTimeout))

    def write(self, buffer: bytes, timeout: float | None = None) -> None:
        self._stream.write(buffer, _left_s(self._deadline, timeout, httpcore.WriteTimeout))

    def close(self) -> None:
        self._stream.close()

    def start_tls(self, ssl_context: Any, server_hostname: str | None = None,
                  timeout: float | None = None) -> httpcore.NetworkStream:
        left = _left_s(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._stream.start_tls(ssl_context, server_hostname, left), self._deadline)

    def get_extra_info(self, info: str) -> Any:
        return self._stream.get_extra_info(info)


class _DeadlineBackend(httpcore.NetworkBackend):
    """httpcore's sockets, each operation bounded by the deadline (the pool's connections too)."""

    def __init__(self, backend: httpcore.NetworkBackend, deadline: Deadline) -> None:
        self._backend, self._deadline = backend, deadline

    def connect_tcp(self, host: str, port: int, timeout: float | None = None, local_address: str | None = None,
                    socket_options: Any = None) -> httpcore.NetworkStream:
        left = _left_s(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_tcp(host, port, left, local_address, socket_options),
                               self._deadline)

    def connect_unix_socket(self, path: str, timeout: float | None = None,
                            socket_options: Any = None) -> httpcore.NetworkStream:
        left = _left_s(self._deadline, timeout, httpcore.ConnectTimeout)
        return _DeadlineStream(self._backend.connect_unix_socket(path, left, socket_options), self._deadline)

    def sleep(self, seconds: float) -> None:
        self._backend.sleep(seconds)


def _too_large(cap: int) -> ReplyTooLarge:
    return ReplyTooLarge(f"the reply is larger than the cap of {cap:,} bytes (rsigym.llm.http_guard.MAX_REPLY_BYTES); "
                         "refused before more of it was read")


def _capped(chunks: Iterator[bytes], encoding: str, cap: int) -> Iterator[bytes]:
    """The body, decompressed (gzip or deflate), failing once more than ``cap`` bytes come out."""
    inflate = (zlib.decompressobj(47) if encoding in ("gzip", "x-gzip")  # 47: gzip or zlib header
               else zlib.decompressobj() if encoding == "deflate" else None)
    total = 0
    for chunk in chunks:
        while chunk:
            if inflate is not None:
                out, chunk = inflate.decompress(chunk, cap + 1 - total), inflate.unconsumed_tail
            else:
                out, chunk = chunk, b""
            total += len(out)
            if total > cap:
                raise _too_large(cap)
            yield out
    tail = inflate.flush() if inflate is not None else b""
    if total + len(tail) > cap:
        raise _too_large(cap)
    if tail:
        yield tail


def _readable_usage(body: bytes) -> bytes:
    """``body`` with its top-level ``usage`` dropped when a value in it is no finite number."""
    if b'"usage"' not in body:
        return body
    try:
        data = json.loads(body)
    except (ValueError, RecursionError):
        return body  # not JSON: LiteLLM says so itself
    usage = data.get("usage") if isinstance(data, dict) else None
    if not isinstance(usage, dict) or all(_readable(v) for v in usage.values()):
        return body
    del data["usage"]
    return json.dumps(data).encode()


def _readable(value: Any) -> bool:
    if isinstance(value, dict):
        return all(_readable(v) for v in value.values())
    if isinstance(value, bool) or value is None:
        return value is None
    return isinstance(value, int) or (isinstance(value, float) and math.isfinite(value))


class GuardedTransport(httpx.BaseTransport):
    """``inner`` with the reply cap and the usage check (the deadline sits in its sockets)."""

    def __init__(self, inner: httpx.BaseTransport) -> None:
        self._inner = inner

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        cap = MAX_REPLY_BYTES
        request.headers["Accept-Encoding"] = "identity"
        response = self._inner.handle_request(request)
        try:
            declared = response.headers.get("content-length", "")
            if declared.strip().isdigit() and int(declared) > cap:
                raise _too_large(cap)
            encoding = response.headers.get("content-encoding", "identity").strip().lower()
            body = b"".join(_capped(iter(response.stream), encoding, cap))  # type: ignore[arg-type]
        finally:
            response.close()
        if "json" in response.headers.get("content-type", "") and response.status_code == 200:
            body = _readable_usage(body)
        headers = [(k, v) for k, v in response.headers.multi_items()
                   if k.lower() not in ("content-encoding", "content-length", "transfer-encoding")]
        return httpx.Response(response.status_code, headers=[*headers, ("content-length", str(len(body)))],
                              content=body, request=request, extensions=response.extensions)

    def close(self) -> None:
        self._inner.close()


class _PerThreadTransport(httpx.BaseTransport):
    """A transport (and so a connection pool) per calling thread, made by ``make`` on first use:
    no lock shared between threads on the request path (see the module's docstring). A thread that
    has ended has its transport closed when the next thread's is made, and ``close`` closes all."""

    def __init__(self, make: Callable[[], httpx.HTTPTransport]) -> None:
        self._make = make
        self._local = threading.local()
        self._lock = threading.Lock()
        self._by_thread: list[tuple[weakref.ref[threading.Thread], httpx.HTTPTransport]] = []
        self._closed = False
        # made here, so that an httpcore the guard cannot wrap fails now, not at the first call;
        # the first thread to call takes it
        self._spare: httpx.HTTPTransport | None = make()

    def _own(self) -> httpx.HTTPTransport:
        transport: httpx.HTTPTransport | None = getattr(self._local, "transport", None)
        if transport is not None:
            return transport
        with self._lock:
            transport, self._spare = self._spare, None
        transport = transport or self._make()
        with self._lock:
            if self._closed:
                transport.close()
                raise RuntimeError("the transport is closed")
            ended = [t for ref, t in self._by_thread if (ref() is None or not ref().is_alive())]  # type: ignore[union-attr]
            self._by_thread = [(ref, t) for ref, t in self._by_thread if t not in ended]
            self._by_thread.append((weakref.ref(threading.current_thread()), transport))
        for old in ended:
            old.close()
        self._local.transport = transport
        return transport

    def handle_request(self, request: httpx.Request) -> httpx.Response:
        return self._own().handle_request(request)

    def close(self) -> None:
        with self._lock:
            self._closed = True
            transports, self._by_thread = [t for _, t in self._by_thread], []
            if self._spare is not None:
                transports.append(self._spare)
                self._spare = None
        for transport in transports:
            transport.close()


def _pooled(deadline: Deadline, verify: Any, proxy: str | None) -> httpx.HTTPTransport:
    inner = httpx.HTTPTransport(verify=verify, proxy=proxy,
                                limits=httpx.Limits(max_connections=1000, max_keepalive_connections=100))
    pool = inner._pool  # httpx passes no network backend through; the pool keeps it here
    if not hasattr(pool, "_network_backend"):  # an httpcore that moved it: say so, never run unguarded
        raise RuntimeError("rsigym.llm.http_guard: httpcore's pool keeps no _network_backend; the deadline cannot be set")
    pool._network_backend = _DeadlineBackend(pool._network_backend, deadline)
    return inner


def _transport(deadline: Deadline, verify: Any, proxy: str | None = None) -> GuardedTransport:
    return GuardedTransport(_PerThreadTransport(lambda: _pooled(deadline, verify, proxy)))


def guarded_client(deadline: Deadline, verify: Any = True) -> tuple[httpx.Client, GuardedTransport]:
    """An ``httpx.Client`` whose every transport (environment proxies too) is guarded, and its
    default transport (for LiteLLM's own handlers)."""
    try:
        from httpx._utils import get_environment_proxies

        proxies = get_environment_proxies()
    except Exception:  # noqa: BLE001 - a later httpx without it: no proxies from the environment
        proxies = {}
    default = _transport(deadline, verify)
    mounts: dict[str, httpx.BaseTransport | None] = {
        pattern: (_transport(deadline, verify, url) if url else None) for pattern, url in proxies.items()}
    return httpx.Client(transport=default, mounts=mounts, follow_redirects=True), default


def install(litellm: Any, deadline: Deadline) -> None:
    """Route LiteLLM's synchronous HTTP through guarded transports (once per process)."""
    if getattr(litellm, "_rsigym_guarded", False):
        return
    try:
        from litellm.llms.custom_httpx.http_handler import get_ssl_configuration

        verify: Any = get_ssl_configuration()
    except Exception:  # noqa: BLE001 - an older LiteLLM: httpx's default verification
        verify = True
    client, transport = guarded_client(deadline, verify)
    litellm.client_session = client    # the OpenAI SDK's client (openai/, hosted OpenAI-compatible servers)
    litellm.sync_transport = transport  # LiteLLM's own HTTP handlers (other providers)
    litellm._rsigym_guarded = True
