"""How fast the workers of a SIGKILLed ``rsigym run --workers 2`` exit (issue 27, item 6: within 5 s).

Starts a small code-repair battery on the local sandbox, waits for two workers, SIGKILLs only the
runner and times until no worker is left; prints a table (median of ``--repeats`` runs). The
attack test (tests/security/test_orphan_workers.py) checks *that* they go; this measures *how fast*.

    python benchmarks/orphan_exit.py --repeats 3
"""

from __future__ import annotations

import argparse
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import yaml


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


def measure_once(folder: Path) -> float:
    """Seconds from the runner's SIGKILL until its last worker has exited."""
    scenario = folder / "s.yaml"
    scenario.write_text(yaml.safe_dump({
        "name": "orphans", "env": {"id": "rsigym/CodeRepair-v0",
                                   "kwargs": {"coder": "mixture", "problems": 4, "rounds": 3, "sandbox": "local"}},
        "tasks": ["humaneval"], "agents": [{"id": "random", "kind": "coderepair_random"}],
        "seeds": [0, 1, 2, 3], "max_steps": 50, "graders": []}, sort_keys=False))
    argv = [sys.executable, "-m", "rsigym.cli.commands", "run", str(scenario), "--out", str(folder / "out"),
            "--no-progress", "--workers", "2"]
    proc = subprocess.Popen(argv, start_new_session=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        workers: set[int] = set()
        while len(workers) < 2:
            if proc.poll() is not None:
                raise RuntimeError("the run ended before two workers started")
            workers = {c.pid for c in psutil.Process(proc.pid).children()
                       if "resource_tracker" not in " ".join(c.cmdline())}
            time.sleep(0.1)
        os.kill(proc.pid, signal.SIGKILL)
        killed = time.monotonic()
        proc.wait(timeout=30)
        while any(_alive(pid) for pid in workers):
            if time.monotonic() - killed > 120:
                raise RuntimeError(f"workers {workers} still alive 120 s after the runner's death")
            time.sleep(0.02)
        return time.monotonic() - killed
    finally:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeats", type=int, default=3)
    args = parser.parse_args(argv)
    times = []
    for _ in range(args.repeats):
        with tempfile.TemporaryDirectory() as folder:
            times.append(measure_once(Path(folder)))
    print("| backend | runs | median s | max s | target s |")
    print("|---|---|---|---|---|")
    print(f"| local pool, --workers 2 | {len(times)} | {statistics.median(times):.2f} | {max(times):.2f} | 5.0 |")


if __name__ == "__main__":
    main()
