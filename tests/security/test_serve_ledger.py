"""Attacks on what a served env holds (issue 58, holes 1-3): sessions reaped behind the client's
back that reset again, stateless ``POST /reset`` floods, ``POST /mcp`` session squatting and
half-sent requests. Each test counts what the server holds by a means of its own (an env that
counts its live instances, the engine's containers, the client's sockets), never by the ledger it
attacks, and each fails on the server before the ledger (5d65b20)."""

from __future__ import annotations

import json
import os
import re
import resource
import selectors
import socket
import subprocess
import sys
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

import gymnasium as gym
import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import httpx  # noqa: E402
from websockets.exceptions import ConnectionClosed  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402

COUNTED = "rsigym-test/CountedProbe-v0"


class CountedProbe(gym.Wrapper):
    """Probe-v0 that counts its live instances (made, not closed) and resets slowly, so that
    concurrent resets overlap: the env's own count of what the server holds."""

    lock = threading.Lock()
    live = 0
    peak = 0

    def __init__(self, **kwargs: Any) -> None:
        from rsigym.envs.probe.env import ProbeEnv

        super().__init__(ProbeEnv(**kwargs))
        with CountedProbe.lock:
            CountedProbe.live += 1
            CountedProbe.peak = max(CountedProbe.peak, CountedProbe.live)
        self._open = True

    def reset(self, **kwargs: Any) -> Any:
        time.sleep(0.3)
        return self.env.reset(**kwargs)

    def close(self) -> None:
        if self._open:
            self._open = False
            with CountedProbe.lock:
                CountedProbe.live -= 1
        self.env.close()

    @classmethod
    def restart_count(cls) -> None:
        with cls.lock:
            cls.peak = cls.live


if COUNTED not in gym.registry:
    gym.register(COUNTED, entry_point=CountedProbe)


def _containers(docker_client) -> int:
    import docker

    for _ in range(10):
        try:
            return len(docker_client.containers.list(all=True, filters={"label": f"rsigym.owner_pid={os.getpid()}"}))
        except docker.errors.NotFound:  # one was removed while the list was read: read again
            continue
    raise AssertionError("the engine's container list kept changing")


class _PeakContainers:
    """The most containers of this process alive at once, sampled every 50 ms on a thread."""

    def __init__(self, docker_client) -> None:
        self.client, self.peak, self._stop = docker_client, 0, threading.Event()
        self._thread = threading.Thread(target=self._watch, daemon=True)

    def _watch(self) -> None:
        while not self._stop.is_set():
            self.peak = max(self.peak, _containers(self.client))
            self._stop.wait(0.05)

    def __enter__(self) -> "_PeakContainers":
        self._thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self._stop.set()
        self._thread.join()


def _reap_and_reset(url: str, idle_s: float, cycles: int) -> dict[str, int]:
    """One client: per cycle, open a session (retrying while the server is full), reset, step,
    go silent past the idle timeout, then try to reset on the same connection."""
    outcome = {"episodes": 0, "reset_after_reap": 0, "refusals": 0}
    ws_url = url.replace("http://", "ws://") + "/ws"
    for _ in range(cycles):
        for _attempt in range(400):
            ws = connect(ws_url, max_size=None).__enter__()
            try:
                ws.send(json.dumps({"type": "reset", "data": {"seed": 7}}))
                reply = json.loads(ws.recv(timeout=60))
            except ConnectionClosed:
                reply = {"type": "error"}
            if reply["type"] == "observation":
                break
            outcome["refusals"] += 1
            ws.close()
            time.sleep(0.1)
        else:
            raise AssertionError("no session was admitted in 400 tries")
        outcome["episodes"] += 1
        ws.send(json.dumps({"type": "step", "data": {"guess": 50}}))
        assert json.loads(ws.recv(timeout=60))["type"] == "observation"
        time.sleep(idle_s + 7.0)  # silent past the idle timeout (and past OpenEnv's reaper's 5 s round)
        try:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 8}}))
            again = json.loads(ws.recv(timeout=30))
            if again["type"] == "observation":
                outcome["reset_after_reap"] += 1  # the hole: an env no one counts or closes
                ws.send(json.dumps({"type": "step", "data": {"guess": 10}}))
                ws.recv(timeout=30)
        except (ConnectionClosed, TimeoutError):
            pass
        ws.close()
    return outcome


def _stateless_resets(url: str, n: int) -> list[int]:
    def one(seed: int) -> int:
        return httpx.post(url + "/reset", json={"seed": seed}, timeout=120).status_code

    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(one, range(n)))


@pytest.mark.parametrize("sandbox", ["local", pytest.param("docker", marks=pytest.mark.docker)])
def test_reaped_sessions_and_stateless_resets_never_hold_more_envs_than_max_sessions(tmp_path, sandbox, request):
    docker_client = request.getfixturevalue("docker_client") if sandbox == "docker" else None
    config = ServeConfig(COUNTED, {"sandbox": sandbox}, run_dir=tmp_path / "served", port=0, max_sessions=2,
                         idle_timeout_s=1.5, drop_idle_after_s=1.0)
    CountedProbe.restart_count()
    watch = _PeakContainers(docker_client) if docker_client is not None else None
    with ServerThread(config) as server:
        if watch is not None:
            watch.__enter__()
        try:
            with ThreadPoolExecutor(6) as clients:
                cycling = [clients.submit(_reap_and_reset, server.url, config.idle_timeout_s, 2) for _ in range(6)]
                time.sleep(1.0)
                during = _stateless_resets(server.url, 12)  # while the sessions hold the slots
                outcomes = [f.result(timeout=600) for f in cycling]
            after = _stateless_resets(server.url, 12)  # all at once on a free server
            codes = during + after
            assert sum(o["reset_after_reap"] for o in outcomes) == 0, outcomes  # a reaped session is closed
            assert CountedProbe.peak <= 2, f"{CountedProbe.peak} envs held at once with --max-sessions 2"
            assert set(codes) <= {200, 503} and 1 <= after.count(200) and after.count(503) >= 1, codes
            assert server.live_envs() == 0 and CountedProbe.live == 0
            if docker_client is not None:
                deadline = time.monotonic() + 10.0  # the clients have left: no container 10 s later
                while _containers(docker_client) and time.monotonic() < deadline:
                    time.sleep(0.2)
                assert _containers(docker_client) == 0
        finally:
            if watch is not None:
                watch.__exit__()
    if watch is not None:
        assert watch.peak <= 2, f"{watch.peak} containers at once with --max-sessions 2"
    records = read_records(tmp_path / "served" / "records.jsonl").records
    # every episode that started left a record: 12 sessions' episodes and each admitted stateless reset
    episodes = sum(o["episodes"] + o["reset_after_reap"] for o in outcomes) + codes.count(200)
    assert len(records) == episodes, (len(records), episodes)
    assert all(r.termination == "infra_error" and "unfinished after" in (r.error or "") for r in records)
    assert sum(len(r.steps) == 1 for r in records) == 12


def test_mcp_session_creation_cannot_squat_the_session_slots(tmp_path):
    config = ServeConfig("rsigym/Probe-v0", {"sandbox": "local"}, run_dir=tmp_path / "served", port=0,
                         max_sessions=4)
    with ServerThread(config) as server:
        create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
        answers = [httpx.post(server.url + "/mcp", json=create, timeout=30) for _ in range(64)]
        assert not [a for a in answers if a.status_code == 200 and "session_id" in a.text]
        ws = connect(server.url.replace("http://", "ws://") + "/ws").__enter__()
        try:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            assert json.loads(ws.recv(timeout=60))["type"] == "observation"  # admitted
        finally:
            ws.close()
        with pytest.raises(Exception):  # nor is OpenEnv's MCP WebSocket mounted
            connect(server.url.replace("http://", "ws://") + "/mcp", open_timeout=10).__enter__().recv(timeout=10)


def _serve_subprocess(tmp_path, nofile: int) -> tuple[subprocess.Popen, str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (nofile, nofile))

    process = subprocess.Popen(
        [sys.executable, "-m", "rsigym", "serve", "rsigym/Probe-v0", "--set", "sandbox=local", "--port", "0",
         "--out", str(tmp_path / "served")],
        stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, preexec_fn=limit)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"at (http://\S+) ", line)
    assert found, line
    return process, found.group(1)


def test_half_sent_requests_cannot_hold_the_servers_descriptors(tmp_path):
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft < 4096:  # this test's own 2,000 sockets
        resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, 8192), hard))
    process, url = _serve_subprocess(tmp_path, nofile=1024)
    port = int(url.rsplit(":", 1)[1])
    attackers: list[socket.socket] = []
    try:
        for _ in range(2000):  # from another loopback address than the health check's
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(60)  # a burst beyond the accept queue waits for its SYN to be retried
            s.connect(("127.0.0.1", port))
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            except OSError:
                pass  # refused (too many from this address) before the bytes went out
            attackers.append(s)
        started = time.monotonic()
        assert httpx.get(url + "/health", timeout=5).status_code == 200
        assert time.monotonic() - started < 1.0
        # and none is held past the header deadline (10 s by default): each reads its end
        held = {s.fileno(): s for s in attackers}
        with selectors.DefaultSelector() as readable:
            for s in attackers:
                readable.register(s, selectors.EVENT_READ)
            deadline = time.monotonic() + 30.0
            while held and time.monotonic() < deadline:
                for key, _ in readable.select(timeout=1.0):
                    try:
                        if key.fileobj.recv(65536):  # type: ignore[union-attr]
                            continue  # a 503 refusal; its end follows
                    except OSError:
                        pass  # reset by the server: cut off too
                    readable.unregister(key.fileobj)
                    held.pop(key.fd, None)
        assert not held, f"{len(held)} half-sent requests still open 30 s later"
    finally:
        for s in attackers:
            s.close()
        process.terminate()
        try:
            process.wait(timeout=30)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(timeout=30)
