"""Attacks on who may write a served run's records (``rsigym serve``): a client without the token,
a server pointed at a battery's run folder so that its clients add graded records to the battery,
and an episode of repeated calls that never ends. Each test performs the attack and checks what
the run folder holds afterwards."""

from __future__ import annotations

import hashlib
import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")

import httpx  # noqa: E402
from websockets.exceptions import InvalidStatus  # noqa: E402
from websockets.sync.client import connect  # noqa: E402

import rsigym.remote as remote  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402

RSIGYM = [sys.executable, "-m", "rsigym"]
PROBE = ("rsigym/Probe-v0", {"sandbox": "local"})
TOKEN = "correct-horse-battery-staple-0123456789"
DOCUMENTED_DEFAULT_STEP_CAP = 1000  # docs/serve.md, `rsigym serve --help`


def _records(run_dir: Path) -> list:
    path = run_dir / "records.jsonl"
    return read_records(path).records if path.exists() else []


def _bisect_over(ws) -> None:
    """Play one Probe episode to its end over a raw WebSocket session: what writes a record."""
    def ask(message: dict) -> dict:
        ws.send(json.dumps(message))
        return json.loads(ws.recv(timeout=60))

    ask({"type": "reset", "data": {"seed": 7, "agent_id": "bisect"}})
    low, high = 0, 100
    while True:
        guess = (low + high) // 2
        data = ask({"type": "step", "data": {"guess": guess}})["data"]
        if data.get("done"):
            return
        low, high = (guess + 1, high) if data["observation"]["feedback"] == 1 else (low, guess - 1)


def _bisect(url: str, **make_kwargs) -> None:
    with remote.make(url, agent_id="bisect", **make_kwargs) as env:
        low, high = 0, 100
        env.reset(seed=7)
        while True:
            guess = (low + high) // 2
            observation, _, terminated, truncated, _ = env.step({"guess": guess})
            if terminated or truncated:
                return
            low, high = (guess + 1, high) if observation["feedback"] == 1 else (low, guess - 1)


HTTP_ENDPOINTS = [("POST", "/reset"), ("POST", "/step"), ("GET", "/state"), ("GET", "/schema"), ("GET", "/metadata"),
                  ("GET", "/rsigym/env"), ("POST", "/mcp"), ("GET", "/openapi.json"), ("GET", "/docs")]


@pytest.mark.parametrize("authorization", [None, "Bearer wrong", f"Bearer {TOKEN[:-1]}X", f"Basic {TOKEN}",
                                           TOKEN, "Bearer", f"Bearer {TOKEN}{TOKEN}"])
def test_without_the_token_every_endpoint_is_401_and_no_record_is_written(tmp_path, authorization):
    run_dir = tmp_path / "served"
    headers = {"Authorization": authorization} if authorization is not None else {}
    with ServerThread(ServeConfig(*PROBE, run_dir=run_dir, port=0, token=TOKEN)) as server:
        for method, path in HTTP_ENDPOINTS:
            body = {"seed": 1} if path == "/reset" else {"action": {"guess": 50}} if path == "/step" else {}
            response = httpx.request(method, server.url + path, headers=headers, timeout=60,
                                     **({"json": body} if method == "POST" else {}))
            assert (path, response.status_code) == (path, 401), response.text
            assert response.json() == {"detail": "missing or wrong token"}
        for path in ("/ws", "/mcp"):
            try:
                ws = connect(server.url.replace("http://", "ws://") + path, additional_headers=headers).__enter__()
            except InvalidStatus as exc:
                assert exc.response.status_code == 401 and b"missing or wrong token" in exc.response.body
            else:  # the hole: the handshake went through, so play an episode as the attacker would
                with ws:
                    if path == "/ws":
                        _bisect_over(ws)
                pytest.fail(f"the {path} handshake was accepted without the token")
        assert server.live_envs() == 0
        assert httpx.get(server.url + "/health", timeout=10).status_code == 200  # a load balancer's check
    assert _records(run_dir) == []


def test_with_the_token_a_client_plays_and_the_token_is_stored_nowhere(tmp_path):
    run_dir = tmp_path / "served"
    with ServerThread(ServeConfig(*PROBE, run_dir=run_dir, port=0, token=TOKEN)) as server:
        _bisect(server.url, token=TOKEN)
        response = httpx.post(server.url + "/reset", json={"seed": 1}, timeout=60,
                              headers={"Authorization": f"bearer {TOKEN}"})  # the scheme is case-insensitive
        assert response.status_code == 200
        with pytest.raises(remote.RemoteEnvError, match="missing or wrong token"):
            remote.make(server.url, token="wrong")
    record, stateless = _records(run_dir)  # the stateless reset started an episode too: recorded, unfinished
    assert record.agent.id == "bisect" and record.termination == "agent_stop"
    assert stateless.steps == [] and stateless.termination == "infra_error"
    for path in run_dir.rglob("*"):
        assert TOKEN.encode() not in path.read_bytes(), path
    assert TOKEN not in repr(server.config)


def test_the_token_from_the_environment_guards_the_cli_server_and_is_never_printed(tmp_path):
    run_dir = tmp_path / "served"
    process = subprocess.Popen([*RSIGYM, "serve", *PROBE[:1], "--set", "sandbox=local", "--port", "0",
                                "--out", str(run_dir)], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                               env={**os.environ, "RSIGYM_SERVE_TOKEN": TOKEN})
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split(" at ")[1].split()[0]
        assert httpx.get(url + "/rsigym/env", timeout=60).status_code == 401
        attack = httpx.post(url + "/reset", json={"seed": 1, "agent_id": "bisect"}, timeout=60)
        assert attack.status_code == 401
        _bisect(url, token=TOKEN)
    finally:
        os.kill(process.pid, signal.SIGINT)
        stdout, stderr = process.communicate(timeout=60)
    assert process.returncode == 0, stderr
    assert TOKEN not in line + stdout + stderr and "token required" in line
    assert [r.agent.id for r in _records(run_dir)] == ["bisect"]
    assert not [p for p in run_dir.rglob("*") if TOKEN.encode() in p.read_bytes()]


_BATTERY = """\
name: tiny
env: {id: rsigym/Probe-v0, kwargs: {sandbox: local, max_guesses: 10}}
tasks: {split: test, limit: 1}
agents: [{id: bisect, kind: probe_bisect}]
seeds: [0]
max_steps: 20
graders: [probe_answer]
analyses: [summary]
"""


def _contents(folder: Path) -> dict[str, str]:
    return {str(p.relative_to(folder)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def battery(tmp_path_factory) -> Path:
    """The run folder of a battery made by ``rsigym run`` of a tiny scenario."""
    root = tmp_path_factory.mktemp("battery")
    (root / "tiny.yaml").write_text(_BATTERY)
    done = subprocess.run([*RSIGYM, "run", str(root / "tiny.yaml"), "--out", str(root / "run"), "--no-progress",
                           "--workers", "1"], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert len(_records(root / "run")) == 1 and (root / "run" / "manifest.json").exists()
    return root / "run"


def _serve_into(folder: Path) -> tuple[int, str, str]:
    """``rsigym serve --out folder``: its exit status, first line and stderr. Where it serves (the
    hole), a client plays a graded episode into the folder first, as the issue's attacker did."""
    process = subprocess.Popen([*RSIGYM, "serve", "rsigym/Probe-v0", "--set", "sandbox=local", "--port", "0",
                                "--grader", "probe_answer", "--out", str(folder)],
                               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        if " at http://" in line:
            _bisect(line.split(" at ")[1].split()[0])
            os.kill(process.pid, signal.SIGINT)
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    return process.returncode, line, stderr


def test_serve_refuses_a_batterys_run_folder_and_leaves_it_byte_identical(battery):
    before = _contents(battery)
    status, line, stderr = _serve_into(battery)
    assert status == 2, (line, stderr)
    assert str(battery) in stderr and "manifest.json" in stderr and len(stderr.strip().splitlines()) == 1, stderr
    assert _contents(battery) == before
    assert len(_records(battery)) == 1


def test_a_server_in_python_refuses_the_battery_folder_too(battery):
    from rsigym.errors import UserError

    before = _contents(battery)
    with pytest.raises(UserError, match="holds a run of rsigym run"):
        ServerThread(ServeConfig(*PROBE, run_dir=battery, port=0))
    assert _contents(battery) == before


def _copy_records_only(battery: Path, to: Path) -> Path:
    to.mkdir()
    (to / "records.jsonl").write_bytes((battery / "records.jsonl").read_bytes())
    return to


@pytest.mark.parametrize("case,message", [("records_without_serve_json", "that no rsigym serve wrote"),
                                          ("another_envs_served_folder", "not rsigym/Probe-v0")])
def test_serve_refuses_records_it_did_not_write(tmp_path, battery, case, message):
    folder = _copy_records_only(battery, tmp_path / "folder")
    if case == "another_envs_served_folder":
        (folder / "serve.json").write_text(json.dumps({"env": {"id": "rsigym/BlackBox-v0"}}))
    before = _contents(folder)
    status, line, stderr = _serve_into(folder)
    assert status == 2 and message in stderr and str(folder) in stderr, (line, stderr)
    assert len(stderr.strip().splitlines()) == 1, stderr
    assert _contents(folder) == before


def test_an_episode_of_repeated_tool_calls_ends_at_the_default_step_cap(tmp_path):
    """ToolUse without ``--max-steps``: the same valid tool call again and again, over the wire."""
    run_dir = tmp_path / "served"
    with ServerThread(ServeConfig("rsigym/ToolUse-v0", run_dir=run_dir, port=0)) as server:
        call = {"tool": "list_product_types", "arguments": {}}
        with connect(server.url.replace("http://", "ws://") + "/ws", max_size=None) as ws:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
            json.loads(ws.recv(timeout=60))
            for steps in range(1, DOCUMENTED_DEFAULT_STEP_CAP + 11):  # a few past the cap: the hole never ends
                ws.send(json.dumps({"type": "step", "data": call}))
                reply = json.loads(ws.recv(timeout=60))["data"]
                if reply.get("done"):
                    break
        assert reply.get("done") and reply["observation"]["truncated"], "the episode never ended"
        assert steps == DOCUMENTED_DEFAULT_STEP_CAP
        assert httpx.get(server.url + "/rsigym/env", timeout=60).json()["max_steps"] == DOCUMENTED_DEFAULT_STEP_CAP
    record, = _records(run_dir)
    assert (record.termination, len(record.steps)) == ("max_steps", DOCUMENTED_DEFAULT_STEP_CAP)
    assert (run_dir / "records.jsonl").stat().st_size < 2_000_000  # about 0.6 MB at the cap
    assert json.loads((run_dir / "serve.json").read_text())["max_steps"] == DOCUMENTED_DEFAULT_STEP_CAP
