"""A small OpenAI-compatible chat-completions server on 127.0.0.1 for end-to-end and fault tests.

It answers ``POST /v1/chat/completions`` from a queue of scripted behaviours (a tool call, JSON
content, an HTTP error with headers, a hang, a malformed body); when the queue is empty it asks
``default`` (a function of the request) for a reply. Every request body is kept for assertions.
"""

from __future__ import annotations

import json
import threading
import time
from collections import deque
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Callable

USAGE = {"prompt_tokens": 17, "completion_tokens": 5, "total_tokens": 22}


@dataclass
class Behaviour:
    """One scripted answer. Exactly one of the fields describes it."""

    tool_call: tuple[str, dict[str, Any] | str] | None = None   # (name, arguments or raw text)
    content: str | None = None                                    # assistant text
    status: int | None = None                                     # an HTTP error status
    headers: dict[str, str] = field(default_factory=dict)
    hang_s: float | None = None                                   # sleep this long, then answer
    raw_body: bytes | None = None                                 # a 200 with this body
    message: str | None = None                                    # the error's message (with status)


def tool_call(name: str, arguments: dict[str, Any] | str) -> Behaviour:
    return Behaviour(tool_call=(name, arguments))


def completion_body(behaviour: Behaviour, model: str, index: int) -> dict[str, Any]:
    if behaviour.tool_call is not None:
        name, arguments = behaviour.tool_call
        message = {"role": "assistant", "content": None, "tool_calls": [{
            "id": f"call_{index}", "type": "function",
            "function": {"name": name, "arguments": arguments if isinstance(arguments, str) else json.dumps(arguments)},
        }]}
        finish = "tool_calls"
    else:
        message, finish = {"role": "assistant", "content": behaviour.content or ""}, "stop"
    return {"id": f"chatcmpl-{index}", "object": "chat.completion", "created": int(time.time()),
            "model": model, "choices": [{"index": 0, "message": message, "finish_reason": finish}],
            "usage": USAGE}


class FakeOpenAI:
    """Start with ``with FakeOpenAI() as server:``; ``server.api_base`` is the /v1 URL."""

    def __init__(self, default: Callable[[dict[str, Any]], Behaviour] | None = None) -> None:
        self.queue: deque[Behaviour] = deque()
        self.default = default or (lambda request: Behaviour(content='{"guess": 50}'))
        self.requests: list[dict[str, Any]] = []
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:  # keep test output clean
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length", 0))) or b"{}")
                with server._lock:
                    server.requests.append(body)
                    index = len(server.requests)
                    behaviour = server.queue.popleft() if server.queue else None
                if behaviour is None:
                    behaviour = server.default(body)
                if behaviour.hang_s is not None:
                    time.sleep(behaviour.hang_s)
                if behaviour.status is not None:
                    payload = json.dumps({"error": {"message": behaviour.message or f"scripted {behaviour.status}",
                                                    "type": "server_error", "code": behaviour.status}}).encode()
                    self._send(behaviour.status, payload, behaviour.headers)
                elif behaviour.raw_body is not None:
                    self._send(200, behaviour.raw_body, behaviour.headers)
                else:
                    payload = json.dumps(completion_body(behaviour, body.get("model", "fake"), index)).encode()
                    self._send(200, payload, behaviour.headers)

            def _send(self, status: int, payload: bytes, headers: dict[str, str]) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(payload)))
                    for key, value in headers.items():
                        self.send_header(key, value)
                    self.end_headers()
                    self.wfile.write(payload)
                except (BrokenPipeError, ConnectionResetError):  # the client gave up (timeout)
                    pass

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._httpd.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._httpd.serve_forever, daemon=True)

    def script(self, *behaviours: Behaviour) -> None:
        with self._lock:
            self.queue.extend(behaviours)

    def __enter__(self) -> "FakeOpenAI":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()
