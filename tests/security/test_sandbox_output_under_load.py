"""Attack: run the sandbox under load (issue 38, hole 6) and make it report output the program did
not produce, or a timeout for a program that had finished.

Under a CPU hog with 32 episodes in flight, a harness thread can sleep for seconds between two
looks at its command. The command has long finished and its output lies in the pipe; the thread
wakes up past the exec's deadline or past the drain grace and, on main, took the late look for a
timeout (a finished check reported as timed out, output and all) or stopped draining before
reading what the pipe held (exit 0, empty stdout). The deterministic tests below put the thread
in exactly that position; the stress tests run many concurrent execs beside a hog of busy
processes whose work is bounded by an iteration count.
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from typing import Callable

import pytest

from rsigym.errors import InfraError, SandboxError
from rsigym.sandbox import LocalSandbox, process_io
from rsigym.sandbox.output import CappedBuffer

from .conftest import LIMITS

THREADS = 32
EXECS_PER_THREAD = 4
HOG_PROCESSES = 8
HOG_ITERATIONS = 60_000_000  # each hog process's work: a bounded count, not a clock


def _spin(iterations: int) -> None:
    total = 0
    for i in range(iterations):
        total += i


def _start_hog() -> list[multiprocessing.process.BaseProcess]:
    ctx = multiprocessing.get_context("spawn")
    hogs = [ctx.Process(target=_spin, args=(HOG_ITERATIONS,), daemon=True) for _ in range(HOG_PROCESSES)]
    for hog in hogs:
        hog.start()
    return hogs


def _stop_hog(hogs: list[multiprocessing.process.BaseProcess]) -> None:
    for hog in hogs:
        hog.kill()
    for hog in hogs:
        hog.join()


def _finished_child(code: str) -> subprocess.Popen[bytes]:
    """A child that has run to its end (a zombie, not yet reaped) before anyone drains it."""
    proc = subprocess.Popen([sys.executable, "-S", "-c", code], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                            stdin=subprocess.DEVNULL, start_new_session=True)
    os.waitid(os.P_PID, proc.pid, os.WEXITED | os.WNOWAIT)
    return proc


def test_a_command_that_finished_before_a_starved_thread_looked_is_not_a_timeout():
    proc = _finished_child("print('the answer')")
    out, err = CappedBuffer(4096), CappedBuffer(4096)
    # The thread wakes up after the deadline, the exit and the output both unread.
    timed_out = process_io.pump_process(proc, None, time.monotonic() - 5.0, out, err)
    assert not timed_out
    assert proc.returncode == 0
    assert out.text() == "the answer\n"


def test_output_still_in_the_pipe_is_read_when_a_starved_thread_wakes_after_the_drain_grace(monkeypatch):
    monkeypatch.delattr(os, "pidfd_open", raising=False)  # the polling path: exit seen by waitid
    monkeypatch.setattr(process_io, "_DRAIN_GRACE_S", -1.0)  # the grace was over when it woke up
    proc = _finished_child("print('the answer')")
    out, err = CappedBuffer(4096), CappedBuffer(4096)
    timed_out = process_io.pump_process(proc, None, time.monotonic() + 60.0, out, err)
    assert not timed_out
    assert proc.returncode == 0
    assert out.text() == "the answer\n", "exit 0 with output the program did not produce"


def _hammer(open_box: Callable[[], object], label: str) -> list[str]:
    """Run THREADS x EXECS_PER_THREAD execs at once beside the hog; each prints its own token.

    Returns what went wrong: a result that is neither exactly the program's output with exit 0
    nor an infra error (an exception the harness raises: SandboxError, InfraError).
    """
    wrong: list[str] = []
    lock = threading.Lock()

    def worker(thread: int) -> None:
        for i in range(EXECS_PER_THREAD):
            token = f"{label}-{thread}-{i}"
            try:
                with open_box() as box:  # type: ignore[attr-defined]
                    box.write_files({"check.py": f"print({token!r})\n"})
                    result = box.exec(["python3", "-S", "check.py"], timeout=120.0)
            except (SandboxError, InfraError):
                continue  # a harness fault, reported as one: allowed
            if result.exit_code != 0 or result.timed_out or result.stdout != token + "\n":
                with lock:
                    wrong.append(f"{token}: exit {result.exit_code}, timed out {result.timed_out}, "
                                 f"stdout {result.stdout[:60]!r}")

    hogs = _start_hog()
    try:
        threads = [threading.Thread(target=worker, args=(n,)) for n in range(THREADS)]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        _stop_hog(hogs)
    return wrong


def test_concurrent_local_execs_under_a_cpu_hog_each_report_exactly_their_own_output():
    wrong = _hammer(lambda: LocalSandbox(LIMITS), "local")
    assert wrong == []


@pytest.mark.docker
def test_concurrent_docker_execs_under_a_cpu_hog_each_report_exactly_their_own_output(sandbox_image):
    from rsigym.sandbox import open_sandbox

    wrong = _hammer(lambda: open_sandbox("docker", LIMITS, image=sandbox_image), "docker")
    assert wrong == []
