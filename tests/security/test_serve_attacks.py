"""Attacks on a served env (``rsigym serve``): bad payloads, session guessing, a flood of
sessions, clients that die or go silent. Each test can fail: it checks the server's answer (a
4xx with a one-line reason, a refusal), that the server still serves afterwards, and how many
Gymnasium envs it holds (``ServerThread.live_envs``)."""

from __future__ import annotations

import asyncio
import json
import os
import signal
import subprocess
import sys
import time

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import httpx  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import rsigym.remote as remote  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402

PROBE = ("rsigym/Probe-v0", {"sandbox": "local"})
LIMIT = 64 * 1024


def _server(tmp_path, **overrides) -> ServerThread:
    settings = {"run_dir": tmp_path / "served", "port": 0, "max_sessions": 8, "max_message_bytes": LIMIT,
                **overrides}
    return ServerThread(ServeConfig(*PROBE, **settings))


def _ws(url: str):
    return connect(url.replace("http://", "ws://") + "/ws", max_size=None).__enter__()


def _ask(ws, message) -> dict:
    text = message if isinstance(message, str) else json.dumps(message)
    if isinstance(ws, remote.RemoteEnv):  # that env's own session: its raw replies, errors included
        return ws._call(ws._remote._session.exchange(text))
    ws.send(text)
    return json.loads(ws.recv(timeout=60))


def _wait_for(predicate, timeout_s: float = 60.0) -> bool:
    deadline = time.monotonic() + timeout_s
    while time.monotonic() < deadline:
        if predicate():
            return True
        time.sleep(0.1)
    return predicate()


def _one_line(response: httpx.Response) -> str:
    detail = response.json()["detail"]
    assert isinstance(detail, str) and "\n" not in detail and 0 < len(detail) <= 300, detail
    return detail


@pytest.mark.parametrize("body,status,reason", [
    (b"{bad", 400, "malformed JSON"),
    (b"\xff\xfe\x00garbage", 400, "malformed JSON"),
    (b"[" * 200_000 + b"]" * 200_000, 413, "over the limit"),
    (b"[" * 30_000 + b"]" * 30_000, 400, "nested too deep"),
    (b"3", 422, "body"),
    (json.dumps({"action": 3}).encode(), 422, "body.action"),
    (json.dumps({"action": {"guess": 1}, "timeout_s": -1}).encode(), 422, "timeout_s"),
    (json.dumps({"action": {"rsigym_text_action": 5}}).encode(), 422, "rsigym_text_action"),
    (json.dumps({"action": {"guess": 1}}).encode(), 409, "send reset first"),
    (b"x" * (LIMIT + 1), 413, "over the limit"),
])
def test_malformed_and_oversized_http_payloads_get_a_one_line_4xx(tmp_path, body, status, reason):
    with _server(tmp_path) as server:
        response = httpx.post(server.url + "/step", content=body, headers={"content-type": "application/json"},
                              timeout=60)
        assert response.status_code == status
        assert reason in _one_line(response)
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
        assert httpx.post(server.url + "/reset", json={"seed": 1}, timeout=60).status_code == 200


def test_an_oversized_chunked_body_is_cut_off_without_reading_it_all(tmp_path):
    sent = 0

    def chunks():
        nonlocal sent
        for _ in range(1000):  # 64 MiB offered, no content-length
            sent += 65536
            yield b" " * 65536

    with _server(tmp_path) as server:
        try:
            response = httpx.post(server.url + "/step", content=chunks(), timeout=60)
            assert response.status_code == 413 and "over the limit" in _one_line(response)
        except httpx.HTTPError:
            pass  # the server answered and closed while the client was still sending: also a refusal
        assert sent < 64 * 1024 * 1024
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200


@pytest.mark.parametrize("data,status", [({"seed": "x"}, 422), ({"seed": -1}, 422), ({"task_id": "../../etc/passwd"}, 422),
                                         ({"agent_id": "a b\nc"}, 422), ({"seed": 2**70}, 422)])
def test_bad_reset_arguments_get_a_one_line_4xx(tmp_path, data, status):
    with _server(tmp_path) as server:
        response = httpx.post(server.url + "/reset", json=data, timeout=60)
        assert response.status_code == status, response.text
        _one_line(response)


def test_bad_websocket_messages_never_break_the_session_or_the_server(tmp_path):
    with _server(tmp_path) as server:
        ws = _ws(server.url)
        assert _ask(ws, "{not json")["data"]["code"] == "INVALID_JSON"
        assert _ask(ws, {"type": "launch"})["data"]["code"] == "UNKNOWN_TYPE"
        assert _ask(ws, {"type": "step", "data": 3})["data"]["code"] == "VALIDATION_ERROR"
        assert _ask(ws, {"type": "reset", "data": {"seed": "x"}})["data"]["code"] == "EXECUTION_ERROR"
        assert _ask(ws, {"type": "step", "data": {"guess": 3}})["type"] == "error"  # no episode yet
        assert _ask(ws, {"type": "reset", "data": {"seed": 1}})["type"] == "observation"
        # a hostile action inside a valid envelope is the agent's mistake: an error observation
        deep: object = 1
        for _ in range(500):
            deep = [deep]
        reply = _ask(ws, {"type": "step", "data": {"guess": deep}})
        assert reply["type"] == "observation" and "invalid action" in reply["data"]["observation"]["info"]["error"]
        assert _ask(ws, {"type": "state"})["data"]["step_count"] == 1
        # a message over the limit closes this session (1009) and frees its env; the server goes on
        ws.send(json.dumps({"type": "step", "data": {"guess": "x" * (LIMIT + 10)}}))
        with pytest.raises(Exception):
            ws.recv(timeout=30)
        assert _wait_for(lambda: server.live_envs() == 0)
        with remote.make(server.url) as env:
            env.reset(seed=2)
            assert env.step({"guess": 50})[0]["guesses_left"] == 9


def test_sessions_cannot_reach_each_other_by_guessing_ids(tmp_path):
    with _server(tmp_path) as server:
        a, b = remote.make(server.url, agent_id="a"), remote.make(server.url, agent_id="b")
        try:
            a.reset(seed=1)
            a.step({"guess": 10})
            a.step({"guess": 20})
            victim = a.state()
            # b names a's episode id in every place a request can carry one
            data = _ask(b, {"type": "reset", "data": {"seed": 1, "episode_id": victim["episode_id"],
                                                          "session_id": victim["episode_id"]}})
            assert data["type"] == "observation"
            assert _ask(b, {"type": "state", "session_id": victim["episode_id"]})["type"] == "error"
            mine = b.state()
            assert mine["episode_id"] != victim["episode_id"] and mine["step_count"] == 0
            b.step({"guess": 99})
            assert a.state() == victim  # untouched by b
            # the stateless HTTP endpoints run on a fresh env: they never show a live session
            state = httpx.get(server.url + "/state", params={"session_id": victim["episode_id"]}, timeout=10).json()
            assert state["step_count"] == 0 and state["episode_id"] is None
            # no endpoint takes a session or file: nothing to guess, nothing to read
            paths = httpx.get(server.url + "/openapi.json", timeout=10).json()["paths"]
            assert not [p for p in paths if "{" in p]
            for path in ("/records.jsonl", "/served/records.jsonl", "/rsigym/records", "/../records.jsonl"):
                assert httpx.get(server.url + path, timeout=10).status_code == 404
            assert str(tmp_path) not in httpx.get(server.url + "/rsigym/env", timeout=10).text
            # episode ids are 128 random bits, never the client's
            ids = set()
            for _ in range(50):
                _ask(b, {"type": "reset", "data": {"episode_id": "chosen-by-client"}})
                ids.add(b.state()["episode_id"])
            assert len(ids) == 50 and all(len(i) == 32 and int(i, 16) >= 0 for i in ids)
        finally:
            a.close()
            b.close()


def test_a_thousand_sessions_are_refused_past_the_bound_not_queued(tmp_path):
    bound = 8
    with _server(tmp_path, max_sessions=bound) as server:
        held = [remote.make(server.url) for _ in range(bound)]
        for env in held:
            env.reset(seed=1)
        assert server.live_envs() == bound

        async def open_and_reset(url: str, gate: asyncio.Semaphore) -> str:
            from websockets.asyncio.client import connect as aconnect

            async with gate:
                async with aconnect(url.replace("http://", "ws://") + "/ws") as ws:
                    try:
                        await ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
                    except ConnectionClosed:
                        pass  # refused and closed before the reset went out: the refusal is still there to read
                    reply = json.loads(await asyncio.wait_for(ws.recv(), 60))
                    return reply["data"].get("code", reply["type"])

        async def flood() -> list[str]:
            gate = asyncio.Semaphore(100)
            return await asyncio.gather(*(open_and_reset(server.url, gate) for _ in range(1000 - bound)))

        # every one answered while the bound's sessions are still held: refused, not queued for a slot
        codes = asyncio.run(flood())
        assert codes.count("CAPACITY_REACHED") == 1000 - bound, {c: codes.count(c) for c in set(codes)}
        assert server.live_envs() == bound
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200
        for env in held:
            env.close()
        assert _wait_for(lambda: server.live_envs() == 0)
        with remote.make(server.url) as env:  # slots come back
            env.reset(seed=3)


_CLIENT = """
import sys, time
import rsigym.remote as remote
env = remote.make(sys.argv[1], agent_id="doomed")
env.reset(seed=4)
env.step({"guess": 10})
env.step({"guess": 90})
print("ready", flush=True)
time.sleep(600)
"""


def _doomed_client(url: str) -> subprocess.Popen:
    process = subprocess.Popen([sys.executable, "-c", _CLIENT, url], stdout=subprocess.PIPE, text=True)
    assert process.stdout is not None and process.stdout.readline().strip() == "ready"
    return process


def test_a_client_killed_mid_episode_frees_its_env_and_its_episode_is_recorded(tmp_path):
    with _server(tmp_path) as server:
        process = _doomed_client(server.url)
        assert server.live_envs() == 1
        os.kill(process.pid, signal.SIGKILL)
        process.wait(timeout=30)
        assert _wait_for(lambda: server.live_envs() == 0)
        with remote.make(server.url) as env:
            env.reset(seed=5)
    record, left = read_records(tmp_path / "served" / "records.jsonl").records
    assert record.agent.id == "doomed" and len(record.steps) == 2
    assert record.termination == "infra_error" and "unfinished after 2 steps" in (record.error or "")
    assert record.grades == []
    # an episode reset and left without a step started too: it is recorded, never graded
    assert left.agent.id == "remote" and left.steps == [] and left.seed == 5
    assert left.termination == "infra_error" and "unfinished after 0 steps" in (left.error or "")


def test_a_client_that_goes_silent_is_reaped_after_the_idle_timeout(tmp_path):
    with _server(tmp_path, idle_timeout_s=1.0) as server:
        process = _doomed_client(server.url)
        os.kill(process.pid, signal.SIGSTOP)  # alive, connected, silent
        try:
            assert server.live_envs() == 1
            assert _wait_for(lambda: server.live_envs() == 0, timeout_s=60)
        finally:
            os.kill(process.pid, signal.SIGKILL)
            process.wait(timeout=30)
