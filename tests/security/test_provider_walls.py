"""A hostile model provider (issue 38, holes 3, 4 and 7), each attack from a server on 127.0.0.1:

* it trickles its 200 answer one byte at a time, so no single read ever times out: the endpoint
  check (and so every run) must give up at its overall deadline and close the connection;
* it answers with a body far over the reply cap: a provider error, read no further than the cap;
* it reports -10^9 tokens (or NaN, or no usage at all): the cost limit must stop the run as it
  stops an honest provider's, and no negative USD may appear anywhere;
* it echoes the configured API key where the 200-character reply excerpt cuts it: no part of the
  key may reach the records, shared.jsonl, the viewer or an export.
"""

from __future__ import annotations

import json
import math
import os
import re
import subprocess
import sys
import threading
import time
import zlib
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Callable, Iterator

import pytest
import yaml

from rsigym.llm import endpoint_check, http_guard
from rsigym.cli import main
from rsigym.llm.endpoint_check import check_endpoints
from rsigym.records.jsonl import read_records
from rsigym.llm import LLMError, RetryPolicy, complete
from tests.conftest import rsigym_cmd, write_scenario

Handler = Callable[[BaseHTTPRequestHandler, dict[str, Any]], None]


class Provider:
    """A chat server whose every POST is answered by ``handle(request handler, request body)``;
    ``outcome`` is how the last answer ended: ``sent`` in full, or ``closed`` by the client first."""

    def __init__(self, handle: Handler) -> None:
        provider = self
        self.outcome: str | None = None
        self.answered = threading.Event()

        class _Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args: Any) -> None:
                pass

            def do_POST(self) -> None:  # noqa: N802 - the http.server hook name
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
                try:
                    handle(self, body)
                    provider.outcome = "sent"
                except (BrokenPipeError, ConnectionResetError):
                    provider.outcome = "closed"
                    self.close_connection = True
                finally:
                    provider.answered.set()

        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _Handler)
        self._server.daemon_threads = True
        self.api_base = f"http://127.0.0.1:{self._server.server_address[1]}/v1"

    def __enter__(self) -> "Provider":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._server.shutdown()
        self._server.server_close()


def completion(content: str, usage: Any = None) -> dict[str, Any]:
    body: dict[str, Any] = {"id": "chatcmpl-hostile", "object": "chat.completion", "created": 1, "model": "m",
                            "choices": [{"index": 0, "message": {"role": "assistant", "content": content},
                                         "finish_reason": "stop"}]}
    if usage is not None:
        body["usage"] = usage
    return body


def send_json(handler: BaseHTTPRequestHandler, payload: dict[str, Any]) -> None:
    data = json.dumps(payload).encode()
    handler.send_response(200)
    handler.send_header("Content-Type", "application/json")
    handler.send_header("Content-Length", str(len(data)))
    handler.end_headers()
    handler.wfile.write(data)


def llm_agent(api_base: str, model: str = "openai/fake-model", **params: Any) -> dict[str, Any]:
    return {"id": "llm", "kind": "llm", "model": model,
            "params": {"api_base": api_base, "tool_mode": "json", "max_retries": 0, "backoff_base_s": 0.01,
                       "timeout_s": 30.0, **params}}


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


# -- hole 3: a trickled answer, an endless one ---------------------------------------------------
def trickle(interval_s: float) -> Handler:
    """The whole HTTP answer, status line first, one byte every ``interval_s``."""

    def handle(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        payload = json.dumps(completion("OK", {"prompt_tokens": 5, "completion_tokens": 1})).encode()
        raw = (b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(payload)
               + payload)
        for i in range(len(raw)):
            handler.wfile.write(raw[i:i + 1])
            handler.wfile.flush()
            time.sleep(interval_s)

    return handle


def test_a_trickled_answer_is_cut_off_at_the_endpoint_checks_overall_deadline():
    # about 300 bytes at one per 0.25 s: the answer would take over a minute, no read ever waits 30 s
    with Provider(trickle(0.25)) as provider:
        checked = check_endpoints({"agents": [llm_agent(provider.api_base)]}, deadline_s=3.0, timeout_s=30.0)
        assert provider.answered.wait(60)
    assert provider.outcome == "closed"  # the client hung up long before the last byte
    [problem] = checked.problems
    assert problem.startswith("scenario: agents[0].model: openai/fake-model at http://127.0.0.1")
    assert "(deadline): no complete answer within the check's deadline of 3 s per endpoint" in problem


def test_a_run_against_a_trickling_provider_exits_2_before_any_episode(capsys, tmp_path, monkeypatch):
    monkeypatch.setattr(endpoint_check, "DEADLINE_S", 2.0)
    with Provider(trickle(0.25)) as provider:
        path = write_scenario(tmp_path / "s.yaml", agents=[llm_agent(provider.api_base)], conditions=["none"])
        status = main(["run", str(path), "--out", str(tmp_path / "out"), "--workers", "0", "--no-progress"])
        assert provider.answered.wait(60)
    err = capsys.readouterr().err
    assert status == 2 and err.count("\n") == 1 and "within the check's deadline of 2 s" in err, err
    assert provider.outcome == "closed" and not (tmp_path / "out").exists()


def endless(declare_length: bool, total_bytes: int) -> Handler:
    """A chat completion whose content is ``total_bytes`` of ``a``, generated as it is sent."""

    def handle(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        head, tail = json.dumps(completion("<>", {"prompt_tokens": 5, "completion_tokens": 1})).encode().split(b"<>")
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        if declare_length:
            handler.send_header("Content-Length", str(len(head) + total_bytes + len(tail)))
        else:
            handler.send_header("Transfer-Encoding", "chunked")
        handler.end_headers()

        def write(data: bytes) -> None:
            handler.wfile.write(data if declare_length else b"%x\r\n%s\r\n" % (len(data), data))

        write(head)
        chunk, left = b"a" * 2**20, total_bytes
        while left > 0:
            write(chunk[:left])
            left -= len(chunk)
        write(tail)
        if not declare_length:
            handler.wfile.write(b"0\r\n\r\n")

    return handle


def call(api_base: str) -> Any:
    return complete([{"role": "user", "content": "hi"}], model="openai/fake-model", role="agent",
                    api_base=api_base, api_key="k", retry=RetryPolicy(max_retries=2, backoff_base_s=0.01))


@pytest.mark.parametrize("declare_length", [True, False], ids=["content-length", "chunked"])
def test_a_reply_over_the_cap_is_a_provider_error_read_no_further(monkeypatch, declare_length):
    monkeypatch.setattr(http_guard, "MAX_REPLY_BYTES", 64 * 1024)
    with Provider(endless(declare_length, 8 * 2**20)) as provider:
        with pytest.raises(LLMError) as raised:
            call(provider.api_base)
        assert provider.answered.wait(60)
    assert provider.outcome == "closed"  # 8 MiB offered, the client stopped reading at the cap
    error = raised.value
    assert error.kind == "too_large" and error.usage.model_calls == 1  # not retried: it would come again
    assert "(not retried)" in str(error) and "larger than the cap of 65,536 bytes" in str(error)


def test_a_300_mb_reply_is_refused_at_the_default_cap():
    """Full size, generated lazily by the server: the client reads 16 MiB and hangs up."""
    assert http_guard.MAX_REPLY_BYTES == 16 * 2**20
    with Provider(endless(False, 300 * 2**20)) as provider:
        with pytest.raises(LLMError) as raised:
            call(provider.api_base)
        assert provider.answered.wait(120)
    assert provider.outcome == "closed"
    assert raised.value.kind == "too_large" and "larger than the cap of 16,777,216 bytes" in str(raised.value)


def test_a_compressed_reply_is_capped_after_decompression(monkeypatch):
    """A gzip bomb: 8 MiB of JSON in a few kilobytes on the wire."""
    monkeypatch.setattr(http_guard, "MAX_REPLY_BYTES", 64 * 1024)
    bomb = zlib.compressobj(9, zlib.DEFLATED, 31)
    data = bomb.compress(json.dumps(completion("a" * 8 * 2**20)).encode()) + bomb.flush()

    def handle(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        handler.send_response(200)
        handler.send_header("Content-Type", "application/json")
        handler.send_header("Content-Encoding", "gzip")
        handler.send_header("Content-Length", str(len(data)))
        handler.end_headers()
        handler.wfile.write(data)

    with Provider(handle) as provider:
        with pytest.raises(LLMError) as raised:
            call(provider.api_base)
    assert len(data) < 64 * 1024 and raised.value.kind == "too_large"


# -- hole 4: the provider's usage -----------------------------------------------------------------
HOSTILE_USAGE = {
    "negative": {"prompt_tokens": -10**9, "completion_tokens": -10**9, "total_tokens": -2 * 10**9},
    "nan": {"prompt_tokens": math.nan, "completion_tokens": math.nan, "total_tokens": math.nan},
    "missing": None,
}


def guessing_provider(usage: str) -> Handler:
    """Answers ``{"guess": G}``; ``honest`` reports the tokens LiteLLM's counter finds."""
    import litellm

    def handle(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
        content = json.dumps({"guess": zlib.crc32(json.dumps(body["messages"]).encode()) % 101})
        if usage == "honest":
            prompt = litellm.token_counter(model=body["model"], messages=body["messages"])
            reply = litellm.token_counter(model=body["model"], text=content, count_response_tokens=True)
            reported = {"prompt_tokens": prompt, "completion_tokens": reply, "total_tokens": prompt + reply}
        else:
            reported = HOSTILE_USAGE[usage]
        send_json(handler, completion(content, reported))

    return handle


def cost_limited_run(capsys, tmp_path: Path, usage: str) -> tuple[int, str, list[Any], str]:
    out = tmp_path / usage
    with Provider(guessing_provider(usage)) as provider:
        path = write_scenario(tmp_path / f"{usage}.yaml", agents=[llm_agent(provider.api_base, "openai/gpt-4o")],
                              conditions=["none"], tasks={"split": "test", "limit": 3}, seeds=list(range(10)),
                              max_steps=2)
        status = main(["run", str(path), "--out", str(out), "--workers", "0", "--concurrency", "1",
                       "--no-progress", "--cost-limit", "0.006"])
    captured = capsys.readouterr()
    return status, captured.err, read_records(out / "records.jsonl").records, (out / "report.md").read_text()


@pytest.mark.parametrize("usage", list(HOSTILE_USAGE))
def test_a_provider_lying_about_its_usage_is_stopped_by_the_cost_limit_as_an_honest_one(capsys, tmp_path, usage):
    honest_status, honest_err, honest, _ = cost_limited_run(capsys, tmp_path, "honest")
    status, err, records, report = cost_limited_run(capsys, tmp_path, usage)
    assert honest_status == 3 and 1 < len(honest) < 30, honest_err  # the limit stopped the honest run
    # the same stop, give or take the one episode of unknown cost the guard lets in flight per worker
    assert status == 3 and abs(len(records) - len(honest)) <= 1, err
    assert all(r.termination != "infra_error" for r in records)
    assert all(r.usage.cost_usd > 0 and r.usage.usage_estimated == r.usage.model_calls for r in records)
    assert not any(r.usage.usage_estimated for r in honest) and "counted locally" not in honest_err
    assert err.count("counted locally (LiteLLM's token counter)") == 1  # flagged once per run
    assert not re.search(r"-\d[\d.]* ?USD|\| -\d", report) and "calls without a valid usage report" in report


def test_a_negative_or_nan_cost_buys_no_room_under_the_limit():
    """Defence in depth: should a negative cost reach the guard (a record of an older run), it counts 0."""
    from rsigym.records import AgentSpec, EnvRef, Trajectory, Usage
    from rsigym.runner.guard import RunGuard

    def done(i: int, cost: float) -> Trajectory:
        return Trajectory(f"{i:032d}", EnvRef("rsigym/Probe-v0"), AgentSpec("a", "llm", "m"), i, 0,
                          usage=Usage(cost_usd=cost))

    guard = RunGuard(cost_limit_usd=1.0, spent_usd=-5.0)
    guard.finished(done(0, -1e6))
    guard.finished(done(1, math.nan))
    assert guard.spent_usd == 0.0 and not guard.stop()
    guard.finished(done(2, 1.0))
    from rsigym.scenario import EpisodeSpec

    spends = EpisodeSpec("k3", EnvRef("rsigym/Probe-v0"), AgentSpec("a", "llm", "m"), 3, 0, None)
    assert not guard.admit(spends) and guard.stop()  # the limit reached: nothing that can spend starts


# -- hole 7: a secret split by an excerpt's cut ---------------------------------------------------
SECRET = "Qz7vKeyValueSecret-2718"  # 23 characters, no provider key's shape: only its value is known


def echoing_provider(handler: BaseHTTPRequestHandler, body: dict[str, Any]) -> None:
    """Not JSON: 185 characters, then the bearer key it was sent, placed so that the agent's
    200-character excerpt of the invalid reply cuts it after 15 characters."""
    key = (handler.headers.get("Authorization") or "").removeprefix("Bearer ")
    send_json(handler, completion("x" * 185 + key + " was the key you sent", {"prompt_tokens": 5, "completion_tokens": 9}))


def _texts(path: Path) -> list[str]:
    if path.suffix == ".parquet":
        import pandas

        return [pandas.read_parquet(path).to_json()]
    if path.suffix == ".eval":
        from inspect_ai.log import read_eval_log

        return [read_eval_log(str(path)).model_dump_json()]
    return [path.read_bytes().decode("utf-8", "replace")]


def test_a_key_cut_by_the_reply_excerpt_leaks_no_part_to_records_view_or_exports(tmp_path, capsys):
    with Provider(echoing_provider) as provider:
        agent = llm_agent(provider.api_base, api_key_env="I38_PROVIDER_KEY", max_invalid_retries=0)
        scenario = write_scenario(tmp_path / "s.yaml", agents=[agent], conditions=["none"],
                                  tasks={"split": "test", "limit": 1}, seeds=[0], max_steps=2)
        env = {**os.environ, "I38_PROVIDER_KEY": SECRET}
        ran = subprocess.run([*rsigym_cmd(), "run", str(scenario), "--out", "out", "--no-progress"],
                             capture_output=True, text=True, timeout=300, cwd=tmp_path, env=env)
    assert ran.returncode == 0, ran.stderr[-3000:]
    run_dir = tmp_path / "out"
    [record] = read_records(run_dir / "records.jsonl").records
    invalid = json.dumps([step.action for step in record.steps])
    assert "the reply is not valid JSON" in invalid and "x" * 150 in invalid  # the excerpt is there
    for fmt, name in (("jsonl", "e.jsonl"), ("parquet", "e.parquet"), ("inspect", "e_inspect")):
        assert main(["export", str(run_dir), "--format", fmt, "--out", str(tmp_path / name)]) == 0
    assert main(["view", str(run_dir)]) == 0
    texts = [ran.stdout, ran.stderr, *capsys.readouterr()]
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.suffix not in (".png", ".pyc")]
    assert {"records.jsonl", "shared.jsonl", "view.html", "report.md"} <= {p.name for p in files}
    texts += [text for path in files for text in _texts(path)]
    leaks = [SECRET[:n] for n in range(4, len(SECRET) + 1) if any(SECRET[:n] in text for text in texts)]
    assert not leaks, leaks
