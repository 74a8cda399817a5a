"""Releasing a pooled docker sandbox (reset and verify) against acquiring one, and the Probe check.

A lease given back to a ``DockerPool`` is reset before the next user gets it
(``DockerSandbox._reset``): every process of both identities killed, every writable place
emptied, then verified from a third uid. This script measures, interleaved on one pool so that
engine drift and machine load hit every contender alike:

* ``acquire``: ``pool.acquire()`` of a warm container;
* ``release``: ``close()`` of a lease (the reset and its verification), for a lease that wrote a
  file and ran one command as the user (``light``: plain execs, so the reset wipes from an engine
  exec), the same through the user's exec server (``served``, as a Probe episode: the server does
  the wipe and starts afresh in the same process, kept for the next lease, ``ExecServer.wipe``; its
  release includes that fresh interpreter's start, and the next lease starts no server), and a
  heavier one (files and commands of both identities, both exec servers: both wipe);
* the same two releases with the previous reset (``legacy_reset`` below: one engine exec per
  identity, one after the other, each ``python3 -I`` with ctypes loaded, then the verification in
  a fresh engine exec as INIT), so the ratio new / previous is measured in the same run;
* the Probe answer check (``rsigym.envs.probe.run_oracle``) through a plain docker exec against
  through the lease's exec server, and for context ``exec true`` against a bare host subprocess.

Prints the medians in ms, the ratios, the machine's load average before and after, and PASS/MISS
for the target: median release <= 100 ms. ``--json PATH`` writes the numbers.

Run: ``python benchmarks/sandbox_release.py [--runs 30]``. Needs a Docker engine and the image
(``rsigym sandbox build``).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import time
import types
from pathlib import Path
from typing import Any, Callable

from rich.console import Console
from rich.table import Table

from rsigym.envs.probe import make_task, run_oracle
from rsigym.sandbox import DockerPool, DockerSandbox, SandboxLimits, image_tag
from rsigym.sandbox import docker as docker_provider
from rsigym.sandbox.container_scripts import HARNESS_DIR, SHARED_DIRS, VERIFY
from rsigym.sandbox.engine import IDENTITY_USERS, INIT, connect

RELEASE_TARGET_MS = 100.0
KINDS = ("light", "served", "heavy")  # leases: plain execs; through the user's exec server; both identities' servers
WARMUP_RUNS = 3


def legacy_reset(self: DockerSandbox) -> None:
    """The reset as it was before the INIT server: the reference, same checks, same outcome."""
    self._close_server()  # as close() did before the servers wiped: they end first
    parts = [("user", self.limits.work_dir)] + ([("harness", HARNESS_DIR)] if self._harness_used else [])
    for identity, home in parts:
        argv = ["python3", "-I", "-c", "import ctypes\n" + docker_provider.WIPE, home, "755", *SHARED_DIRS]
        raw = self._raw_exec(argv, None, 30.0, 65536, user=IDENTITY_USERS[identity], workdir="/", kill_on_timeout=False)
        if raw.exit_code != 0:
            raise AssertionError(f"legacy wipe failed: {raw}")
    self._harness_used = False
    raw = self._raw_exec(["python3", "-I", "-c", VERIFY, self.limits.work_dir], None, 30.0, 65536, user=INIT, workdir="/")
    if raw.exit_code != 0:
        raise AssertionError(f"legacy verification failed: {raw.stdout!r}")


def _light(sandbox: DockerSandbox) -> None:
    sandbox.write_files({"solution.py": "print(1)\n"})
    assert sandbox.exec(["python3", "-S", "solution.py"]).ok


def _served(sandbox: DockerSandbox) -> None:
    """A Probe episode's lease: the file and the command through the user's exec server."""
    server = sandbox.exec_server()
    assert server.run_python("open('solution.py', 'w').write('print(1)')").ok
    assert server.exec(["python3", "-S", "solution.py"]).ok


def _heavy(sandbox: DockerSandbox) -> None:
    sandbox.write_files({"solution.py": "print(1)\n"})
    sandbox.write_files({"check.py": "print(2)\n"}, owner="harness")
    assert sandbox.exec_server().exec(["python3", "-S", "solution.py"]).ok
    assert sandbox.exec_server("harness").exec(["python3", "-S", "check.py"]).ok
    assert sandbox.exec(["sh", "-c", "echo x > /tmp/x; echo y > /dev/shm/y"]).ok


def main(runs: int = 30, json_path: str | None = None) -> dict[str, Any]:
    load_before = os.getloadavg()
    client = connect()
    samples: dict[str, list[float]] = {}

    def timed(name: str, fn: Callable[[], object]) -> None:
        started = time.perf_counter()
        fn()
        samples.setdefault(name, []).append((time.perf_counter() - started) * 1000)

    task = make_task("probe-007")
    with DockerPool(image_tag(), SandboxLimits(), size=1, client=client) as pool:
        def lease(kind: str, legacy: bool, record: bool) -> None:
            started = time.perf_counter()
            sandbox = pool.acquire()
            acquired = (time.perf_counter() - started) * 1000
            {"heavy": _heavy, "served": _served, "light": _light}[kind](sandbox)
            if legacy:  # the pool's release calls the handle's _reset: the previous one here
                sandbox._reset = types.MethodType(legacy_reset, sandbox)  # type: ignore[method-assign]
            started = time.perf_counter()
            sandbox.close()
            released = (time.perf_counter() - started) * 1000
            sandbox.__dict__.pop("_reset", None)  # the idle handle is the next lease's source: no legacy there
            if record:
                samples.setdefault("acquire", []).append(acquired)
                samples.setdefault(f"release {kind}{' (previous)' if legacy else ''}", []).append(released)

        def probe_checks() -> None:
            sandbox = pool.acquire()
            try:
                sandbox.write_files({"oracle.py": task.oracle_source})
                # As the env does: the first check starts the server (once per lease), the rest
                # reuse it. A plain exec as the user ends the idle server (its end-of-exec kill), so
                # the plain checks come after the server's.
                timed("probe check, exec server (first: its start)", lambda: run_oracle(sandbox, [task.secret], server=True))
                for _ in range(5):
                    timed("probe check, exec server", lambda: run_oracle(sandbox, [task.secret], server=True))
                for _ in range(5):
                    timed("probe check, docker exec", lambda: run_oracle(sandbox, [task.secret]))
                    timed("exec true, docker exec", lambda: sandbox.exec(["true"]))
                    timed("true, host subprocess", lambda: subprocess.run(["true"], check=True))
            finally:
                sandbox.close()

        for round_ in range(WARMUP_RUNS + runs):
            record = round_ >= WARMUP_RUNS
            for kind in KINDS:
                for legacy in (False, True):
                    lease(kind, legacy, record)
            if record and round_ % 3 == 0:
                probe_checks()
    client.close()
    load_after = os.getloadavg()
    medians = {name: statistics.median(values) for name, values in samples.items()}
    ratios = {kind: medians[f"release {kind}"] / medians[f"release {kind} (previous)"] for kind in KINDS}
    check_ratio = medians["probe check, exec server"] / medians["probe check, docker exec"]
    table = Table(title=f"docker sandbox: release vs acquire, median of {runs} leases each "
                        f"(load average {load_before[0]:.1f} before, {load_after[0]:.1f} after)")
    for column in ("measurement", "median ms", "n", "vs previous / plain", "target", "verdict"):
        table.add_column(column, justify="left" if column == "measurement" else "right", no_wrap=True)
    for name, value in medians.items():
        kind = name.split()[1] if name.startswith("release") and "previous" not in name else None
        ratio = f"{ratios[kind]:.2f}x" if kind else (f"{check_ratio:.3f}x" if name == "probe check, exec server" else "")
        target = f"<= {RELEASE_TARGET_MS:.0f} ms" if kind in ("light", "served") else ""
        verdict = ("PASS" if value <= RELEASE_TARGET_MS else "MISS") if kind in ("light", "served") else ""
        table.add_row(name, f"{value:.1f}", str(len(samples[name])), ratio, target, verdict)
    Console(width=140).print(table)
    result = {"runs": runs, "load_before": load_before, "load_after": load_after, "medians_ms": medians,
              "release_ratio_vs_previous": ratios, "probe_check_ratio_server_vs_exec": check_ratio,
              "release_target_ms": RELEASE_TARGET_MS}
    if json_path:
        Path(json_path).write_text(json.dumps(result, indent=2) + "\n")
    return result


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=30, help="timed leases per kind, after warm-up")
    parser.add_argument("--json", default=None, help="write the numbers to this file")
    args = parser.parse_args()
    main(runs=args.runs, json_path=args.json)
