"""Attack (issue 27, item 6): SIGKILL of only the main ``rsigym run --workers 2`` process. Its
workers must not run on with PPID 1 holding memory and containers: each notices its parent's death,
removes the containers it created and exits (``rsigym.runner.orphans``)."""

from __future__ import annotations

import os
import signal
import subprocess
import time

import psutil
import pytest
import yaml

from ..conftest import rsigym_cmd

# How long the test waits for what must happen within seconds: "never" on a broken build, and
# no wall-clock claim (benchmarks/orphan_exit.py measures how fast workers go).
PATIENCE_S = 120.0


def _scenario(path, sandbox: str) -> None:
    raw = {"name": "orphans", "env": {"id": "rsigym/CodeRepair-v0",
                                      "kwargs": {"coder": "mixture", "problems": 4, "rounds": 3, "sandbox": sandbox}},
           "tasks": ["humaneval"], "agents": [{"id": "random", "kind": "coderepair_random"}],
           "seeds": [0, 1, 2, 3], "max_steps": 50, "graders": []}
    path.write_text(yaml.safe_dump(raw, sort_keys=False))


def _running(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def _containers_of(client, pids: set[int]) -> list[str]:
    found = client.api.containers(all=True, filters={"label": ["rsigym.sandbox=1"]})
    return [c["Id"] for c in found if c.get("Labels", {}).get("rsigym.owner_pid", "") in {str(p) for p in pids}]


@pytest.mark.parametrize("path", ["pool", "in_flight"])
def test_workers_end_and_release_their_containers_when_the_runner_is_killed(provider, path, tmp_path, request):
    if provider == "local" and path == "in_flight":
        pytest.skip("the in-flight path's parent watch is older; its docker run covers containers too")
    client = request.getfixturevalue("docker_client") if provider == "docker" else None
    scenario = tmp_path / "s.yaml"
    _scenario(scenario, provider)
    argv = [*rsigym_cmd(), "run", str(scenario), "--out", str(tmp_path / "out"), "--no-progress", "--workers", "2"]
    if path == "in_flight":
        argv += ["--concurrency", "2"]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    try:
        # Patience is counted in polls, not read off a clock: this test bounds a hang, it times nothing
        # (how fast workers go is the benchmark's business).
        workers: set[int] = set()
        for _ in range(int(PATIENCE_S / 0.2)):
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            children = psutil.Process(proc.pid).children()
            workers = {c.pid for c in children if "resource_tracker" not in " ".join(c.cmdline())}
            if len(workers) >= 2 and (client is None or len(_containers_of(client, workers)) >= 2):
                break
            time.sleep(0.2)
        else:
            pytest.fail(f"never two workers{' with containers' if client else ''}: {workers}")
        os.kill(proc.pid, signal.SIGKILL)  # the runner only
        proc.wait(timeout=30)
        alive = set(workers)
        for _ in range(int(PATIENCE_S / 0.05)):
            alive = {pid for pid in alive if _running(pid)}
            if not alive:
                break
            time.sleep(0.05)
        assert not alive, f"workers {alive} outlived their killed runner"
        if client is not None:
            assert _containers_of(client, workers) == [], "the dead workers' containers are still there"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        if client is not None:
            for cid in _containers_of(client, workers):
                client.api.remove_container(cid, force=True)


# Each of the two lines alone (``benchmarks/sandbox_mutation_check.py`` removes each in turn): a
# run that only starts its watchdog, and a run whose worker only has its own parent watch. The
# driver prints the worker's pid, then waits to be SIGKILLed.
WATCHDOG_ONLY = r"""
import subprocess, sys, time
from rsigym.runner.orphans import RunWatchdog
worker = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(600)"])
watchdog = RunWatchdog()
watchdog.add([worker.pid])
print(worker.pid, flush=True)
time.sleep(600)
"""

PARENT_WATCH_ONLY = r"""
import multiprocessing, time
from rsigym.runner.orphans import exit_with_parent


def work(ready):
    exit_with_parent()
    ready.set()
    time.sleep(600)


if __name__ == "__main__":
    context = multiprocessing.get_context("fork")
    ready = context.Event()
    worker = context.Process(target=work, args=(ready,))
    worker.start()
    ready.wait(60)
    print(worker.pid, flush=True)
    time.sleep(600)
"""


@pytest.mark.parametrize("driver", [WATCHDOG_ONLY, PARENT_WATCH_ONLY], ids=["watchdog", "parent_watch"])
def test_each_line_alone_ends_the_worker_of_a_killed_run(driver):
    import sys

    proc = subprocess.Popen([sys.executable, "-c", driver], start_new_session=True, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE)
    worker = 0
    try:
        assert proc.stdout is not None
        line = proc.stdout.readline().decode().strip()
        assert line.isdigit(), (line, proc.stderr.read().decode() if proc.poll() is not None and proc.stderr else "")
        worker = int(line)
        assert _running(worker)
        os.kill(proc.pid, signal.SIGKILL)  # the run only
        proc.wait(timeout=30)
        for _ in range(int(PATIENCE_S / 0.05)):
            if not _running(worker):
                break
            time.sleep(0.05)
        assert not _running(worker), f"worker {worker} outlived its killed run"
    finally:
        if proc.poll() is None:
            proc.kill()
        if worker and _running(worker):
            os.kill(worker, signal.SIGKILL)
