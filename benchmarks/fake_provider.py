"""A local OpenAI-compatible chat server with a fixed reply latency and an optional 429 storm.

It stands in for a hosted model in ``benchmarks/concurrency.py`` and in the runner's tests: every
reply takes ``latency_s`` (a sleeping handler thread, like a provider's queue), and during a storm
every ``storm_every``-th request is answered 429 instead. Its "model" is a deterministic
function of the conversation, for ToolUse-v0 (env tools offered) and for single-action envs:

* no assistant turn yet: call the first offered tool (by name) whose required parameters are
  all strings, with a tag of the customer's request as every argument;
* one assistant turn: ask the customer a question that names the tag;
* after that: a closing statement (no question mark: the scripted customer stops);
* without env tools: ``{"guess": G}`` with G a deterministic function of the conversation.

So the records of two runs of the same battery must match action for action, whatever the
order in which the server saw the requests. ``open_episodes`` counts the ToolUse conversations
(request, seed) that have begun and not yet been closed: the episodes in flight.

In-process: ``with FakeProvider(latency_s=0.5) as server: ... server.api_base``.
As a process: ``python benchmarks/fake_provider.py --latency 0.5`` prints ``PORT <n>`` and serves
until killed; ``GET /stats`` answers the counters as JSON.
"""

from __future__ import annotations

import argparse
import json
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

__all__ = ["FakeProvider", "reply_for"]


def _tag(messages: list[dict[str, Any]]) -> str:
    first_user = next((str(m.get("content") or "") for m in messages if m.get("role") == "user"), "")
    return f"{zlib.crc32(first_user.encode()):08x}"


def _string_only_tool(tools: list[dict[str, Any]]) -> dict[str, Any] | None:
    for tool in sorted(tools, key=lambda t: t["function"]["name"]):
        parameters = tool["function"].get("parameters") or {}
        properties = parameters.get("properties") or {}
        required = parameters.get("required") or []
        if required and all((properties.get(name) or {}).get("type") == "string" for name in required):
            return tool
    return None


def reply_for(request: dict[str, Any]) -> dict[str, Any]:
    """The assistant message the fake model answers to one chat request (deterministic)."""
    messages = request.get("messages") or []
    tag = _tag(messages)
    turns = sum(1 for m in messages if m.get("role") == "assistant")
    tools = [t for t in request.get("tools") or [] if t.get("type") == "function"]
    env_tools = [t for t in tools if t["function"]["name"] != "act"]
    if env_tools:
        tool = _string_only_tool(env_tools) if turns == 0 else None
        if tool is not None:
            arguments = {name: tag for name in tool["function"]["parameters"]["required"]}
            return {"role": "assistant", "content": None, "tool_calls": [{
                "id": f"call_{tag}_{turns}", "type": "function",
                "function": {"name": tool["function"]["name"], "arguments": json.dumps(arguments)}}]}
        if turns <= 1:
            return {"role": "assistant", "content": f"Could you confirm the order for case {tag}?"}
        return {"role": "assistant", "content": f"Case {tag} is handled. Goodbye."}
    digest = zlib.crc32(json.dumps(messages, sort_keys=True).encode())
    action = json.dumps({"guess": digest % 101})
    if tools:  # the single `act` tool
        return {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{digest:08x}", "type": "function", "function": {"name": "act", "arguments": action}}]}
    return {"role": "assistant", "content": action}


class FakeProvider:
    """The server; ``api_base`` is its /v1 URL. Counters: ``requests``, ``throttled``, ``max_in_flight``.

    Args:
        latency_s: Seconds every answer takes (a 429 included).
        storm_s: Length of the 429 storm, counted from the first request (0: none).
        storm_every: During the storm, every this-many-th request is answered 429 (2: every other).
        retry_after_s: The Retry-After header of a 429 (None: no header).
        port: TCP port (0: any free one).
    """

    def __init__(self, latency_s: float = 0.5, *, storm_s: float = 0.0, storm_every: int = 2,
                 retry_after_s: float | None = None, port: int = 0) -> None:
        self.latency_s, self.storm_s, self.storm_every = latency_s, storm_s, storm_every
        self.retry_after_s = retry_after_s
        self.requests = self.throttled = self.in_flight = self.max_in_flight = 0
        self.first_request_at: float | None = None
        self._opened: set[tuple[str, Any]] = set()  # ToolUse conversations (request tag, seed) seen ...
        self._closed: set[tuple[str, Any]] = set()  # ... and those given their closing statement
        self._lock = threading.Lock()
        provider = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"  # keep-alive: a client reuses its connections

            def log_message(self, *args: Any) -> None:
                pass

            def do_GET(self) -> None:
                self._send(200, json.dumps(provider.stats()).encode(), {})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                throttle = provider._arrive()
                done = False

                def leave() -> None:  # before the answer goes out: a client that has it may call again at once
                    nonlocal done
                    if not done:
                        done = True
                        with provider._lock:
                            provider.in_flight -= 1

                try:
                    time.sleep(provider.latency_s)
                    if throttle:
                        headers = ({"Retry-After": f"{provider.retry_after_s:g}"}
                                   if provider.retry_after_s is not None else {})
                        error = {"error": {"message": "rate limited (storm)", "type": "rate_limit_error",
                                           "code": "rate_limit_exceeded"}}
                        leave()
                        self._send(429, json.dumps(error).encode(), headers)
                        return
                    message = reply_for(body)
                    provider._track(body, message)
                    payload = {"id": "chatcmpl-fake", "object": "chat.completion", "created": int(time.time()),
                               "model": body.get("model", "fake"),
                               "choices": [{"index": 0, "message": message,
                                            "finish_reason": "tool_calls" if message.get("tool_calls") else "stop"}],
                               "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}}
                    leave()
                    self._send(200, json.dumps(payload).encode(), {})
                finally:
                    leave()

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client went away
                    pass

        class Server(ThreadingHTTPServer):
            daemon_threads = True
            request_queue_size = 512  # 64 clients connect at once; the default backlog of 5 drops SYNs

        self._httpd = Server(("127.0.0.1", port), Handler)
        self.port = self._httpd.server_address[1]
        self.api_base = f"http://127.0.0.1:{self.port}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def _arrive(self) -> bool:
        """Count a request; True when it is to be answered 429."""
        with self._lock:
            now = time.monotonic()
            if self.first_request_at is None:
                self.first_request_at = now
            self.requests += 1
            self.in_flight += 1
            self.max_in_flight = max(self.max_in_flight, self.in_flight)
            in_storm = now - self.first_request_at < self.storm_s
            throttle = in_storm and self.requests % self.storm_every == 0
            self.throttled += throttle
            return throttle

    def _track(self, body: dict[str, Any], message: dict[str, Any]) -> None:
        conversation = (_tag(body.get("messages") or []), body.get("seed"))
        with self._lock:
            self._opened.add(conversation)
            if str(message.get("content") or "").endswith("Goodbye."):
                self._closed.add(conversation)

    @property
    def open_episodes(self) -> int:
        """ToolUse episodes that have had a reply and not yet their closing one: episodes in flight."""
        with self._lock:
            return len(self._opened - self._closed)

    def stats(self) -> dict[str, Any]:
        with self._lock:
            return {"requests": self.requests, "throttled": self.throttled, "max_in_flight": self.max_in_flight}

    def __enter__(self) -> "FakeProvider":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--latency", type=float, default=0.5)
    parser.add_argument("--storm", type=float, default=0.0, help="seconds of 429 storm from the first request")
    parser.add_argument("--storm-every", type=int, default=2)
    parser.add_argument("--retry-after", type=float, default=None)
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args(argv)
    with FakeProvider(args.latency, storm_s=args.storm, storm_every=args.storm_every,
                      retry_after_s=args.retry_after, port=args.port) as server:
        print(f"PORT {server.port}", flush=True)
        try:
            while True:
                time.sleep(3600)
        except KeyboardInterrupt:
            pass


if __name__ == "__main__":
    sys.exit(main())
