"""Issue 58's serving must-show, measured on a real ``rsigym serve`` process (Docker sandbox).

Runs ``rsigym serve rsigym/Probe-v0 --set sandbox=docker --max-sessions 2 --idle-timeout-s 5`` and
attacks it from outside, counting what it holds by the engine's own list of its containers (Probe
leases one container per env) and by its records:

1. six clients cycling through reap-and-reset (reset, step, silent past the idle timeout, reset
   again on the same connection) and twelve concurrent ``POST /reset`` (during and after);
2. containers 10 s after the clients leave; records against the episodes that started;
3. 64 ``POST /mcp`` session creations, then a WebSocket client;
4. 2,000 half-sent requests from 127.0.0.2 (the server at 1,024 descriptors), then ``/health``.

    python benchmarks/serve_walls.py            # about 2 minutes; needs Docker and the sandbox image
"""

from __future__ import annotations

import argparse
import json
import re
import resource
import socket
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import docker
import httpx
from websockets.exceptions import ConnectionClosed
from websockets.sync.client import connect

from rsigym.records.jsonl import read_records


def start(out: Path, *flags: str) -> tuple[subprocess.Popen, str]:
    def limit() -> None:
        resource.setrlimit(resource.RLIMIT_NOFILE, (1024, 1024))

    process = subprocess.Popen([sys.executable, "-m", "rsigym", "serve", "rsigym/Probe-v0", "--port", "0",
                                "--out", str(out), *flags], stdout=subprocess.PIPE, text=True, preexec_fn=limit)
    assert process.stdout is not None
    line = process.stdout.readline()
    found = re.search(r"at (http://\S+) ", line)
    if not found:
        raise SystemExit(f"the server did not start: {line}")
    return process, found.group(1)


def stop(process: subprocess.Popen) -> None:
    process.terminate()
    try:
        process.wait(timeout=30)
    except subprocess.TimeoutExpired:
        process.kill()
        process.wait()


def containers(client: docker.DockerClient, pid: int) -> int:
    for _ in range(10):
        try:
            return len(client.containers.list(all=True, filters={"label": f"rsigym.owner_pid={pid}"}))
        except docker.errors.NotFound:
            continue
    return -1


def cycle(url: str, idle_s: float, cycles: int) -> dict[str, int]:
    out = {"episodes": 0, "reset_after_reap": 0}
    for _ in range(cycles):
        while True:
            ws = connect(url.replace("http://", "ws://") + "/ws").__enter__()
            try:
                ws.send(json.dumps({"type": "reset", "data": {"seed": 7}}))
                if json.loads(ws.recv(timeout=120))["type"] == "observation":
                    break
            except ConnectionClosed:
                pass
            ws.close()
            time.sleep(0.2)
        out["episodes"] += 1
        ws.send(json.dumps({"type": "step", "data": {"guess": 50}}))
        ws.recv(timeout=120)
        time.sleep(idle_s + 2.0)
        try:
            ws.send(json.dumps({"type": "reset", "data": {"seed": 8}}))
            if json.loads(ws.recv(timeout=30))["type"] == "observation":
                out["reset_after_reap"] += 1
        except (ConnectionClosed, TimeoutError):
            pass
        ws.close()
    return out


def resets(url: str, n: int) -> list[int]:
    with ThreadPoolExecutor(n) as pool:
        return list(pool.map(lambda s: httpx.post(url + "/reset", json={"seed": s}, timeout=120).status_code, range(n)))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--idle-timeout-s", type=float, default=5.0)
    args = parser.parse_args()
    client = docker.from_env()
    rows: list[tuple[str, str, str]] = []
    with tempfile.TemporaryDirectory() as tmp:
        out = Path(tmp) / "served"
        process, url = start(out, "--set", "sandbox=docker", "--max-sessions", "2",
                             "--idle-timeout-s", str(args.idle_timeout_s))
        peak, stop_watch = [0], threading.Event()

        def watch() -> None:
            while not stop_watch.is_set():
                peak[0] = max(peak[0], containers(client, process.pid))
                stop_watch.wait(0.05)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        with ThreadPoolExecutor(6) as pool:
            cycling = [pool.submit(cycle, url, args.idle_timeout_s, 2) for _ in range(6)]
            time.sleep(1.0)
            codes = resets(url, 12)
            outcomes = [f.result() for f in cycling]
        codes += resets(url, 12)
        left = time.monotonic()
        time.sleep(10.0)
        remaining = containers(client, process.pid)
        stop_watch.set()
        watcher.join()
        rows.append(("containers at once (6 cycling clients + 2 x 12 POST /reset)", str(peak[0]), "<= 2"))
        rows.append(("resets on a reaped session's connection", str(sum(o["reset_after_reap"] for o in outcomes)), "0"))
        rows.append(("POST /reset answers", f"{codes.count(200)} x 200, {codes.count(503)} x 503", "200 or 503"))
        rows.append((f"containers {time.monotonic() - left:.0f} s after the clients left", str(remaining), "0"))
        stop(process)
        records = read_records(out / "records.jsonl").records
        started = sum(o["episodes"] + o["reset_after_reap"] for o in outcomes) + codes.count(200)
        rows.append(("records / episodes started", f"{len(records)} / {started}", "equal"))

        process, url = start(Path(tmp) / "served2", "--set", "sandbox=local", "--max-sessions", "4")
        create = {"jsonrpc": "2.0", "method": "openenv/session/create", "params": {}, "id": 1}
        mcp = [httpx.post(url + "/mcp", json=create, timeout=30).status_code for _ in range(64)]
        ws = connect(url.replace("http://", "ws://") + "/ws").__enter__()
        ws.send(json.dumps({"type": "reset", "data": {"seed": 1}}))
        admitted = json.loads(ws.recv(timeout=60))["type"] == "observation"
        ws.close()
        rows.append(("64 POST /mcp, then a WebSocket client", f"mcp {sorted(set(mcp))}, admitted {admitted}", "admitted"))
        port = int(url.rsplit(":", 1)[1])
        attackers = []
        for _ in range(2000):
            s = socket.socket()
            s.bind(("127.0.0.2", 0))
            s.settimeout(60)
            s.connect(("127.0.0.1", port))
            try:
                s.sendall(b"GET /health HTTP/1.1\r\nHost: x\r\nX-Slow: ")
            except OSError:
                pass
            attackers.append(s)
        started_s = time.monotonic()
        status = httpx.get(url + "/health", timeout=10).status_code
        rows.append(("/health beside 2,000 half-sent requests (1,024 fds)",
                     f"{status} in {time.monotonic() - started_s:.2f} s", "200 within 1 s"))
        for s in attackers:
            s.close()
        stop(process)
    width = max(len(r[0]) for r in rows)
    print(f"{'measure'.ljust(width)}  {'seen':<28} target")
    for name, seen, target in rows:
        print(f"{name.ljust(width)}  {seen:<28} {target}")


if __name__ == "__main__":
    main()
