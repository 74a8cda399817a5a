"""Per-exec overhead of the pooled docker sandbox against a raw SDK exec, and pool acquire time.

Prints one table of medians:

* ``DockerSandbox.exec`` of ``true`` and of ``python3 -c pass`` on a pooled container;
* the reference: ``container.exec_run`` (``exec_create`` + ``exec_start`` + ``exec_inspect``,
  the SDK's plain exec) of the same commands on the same container, same user;
* the ``docker exec`` CLI, for context only (it pays a process start and its own API calls);
* the ratio sandbox/reference (target <= 1.3) and the median ``DockerPool.acquire()`` of a warm
  container, released between runs (target <= 50 ms), each with PASS/MISS;
* for context: ``exec true`` with ``persist=True`` (no exec wrapper, so nothing is killed at the
  end: the difference is the price of the end-of-exec kill), and the release of a lease (the
  reset and its verification, paid by the releasing caller, outside ``acquire``).

Run: ``python benchmarks/sandbox_overhead.py [--runs 50]``. Needs a Docker engine and the image
(``rsigym sandbox build``).
"""

from __future__ import annotations

import argparse
import shutil
import statistics
import subprocess
import time
from typing import Callable

from rich.console import Console
from rich.table import Table

from rsigym.sandbox import DockerPool, SandboxLimits, image_tag
from rsigym.sandbox.engine import NOBODY, connect

EXEC_RATIO_TARGET = 1.3
ACQUIRE_TARGET_MS = 50.0
WARMUP_RUNS = 5


def _interleaved_medians(fns: dict[str, Callable[[], object]], runs: int) -> dict[str, float]:
    """Medians in ms, measured round-robin so engine drift hits every contender alike."""
    samples: dict[str, list[float]] = {name: [] for name in fns}
    for _ in range(runs):
        for name, fn in fns.items():
            started = time.perf_counter()
            fn()
            samples[name].append(time.perf_counter() - started)
    return {name: statistics.median(values) * 1000 for name, values in samples.items()}


def main(runs: int = 50, image: str | None = None) -> dict[str, float]:
    """Measure, print the table, and return the medians in ms keyed by row name."""
    image = image or image_tag()
    warmup = min(WARMUP_RUNS, runs)  # a smoke run with a tiny budget stays tiny
    client = connect()
    limits = SandboxLimits()
    with DockerPool(image, limits, size=1, client=client) as pool:
        sandbox = pool.acquire()
        container = client.containers.get(sandbox.container_id)
        python_pass = ["python3", "-c", "pass"]
        contenders: dict[str, Callable[[], object]] = {
            "docker_true": lambda: sandbox.exec(["true"]),
            "docker_true_persist": lambda: sandbox.exec(["true"], persist=True),
            "raw_true": lambda: container.exec_run(["true"], user=NOBODY),
            "docker_python": lambda: sandbox.exec(python_pass),
            "raw_python": lambda: container.exec_run(python_pass, user=NOBODY),
        }
        if shutil.which("docker"):
            cli = ["docker", "exec", "-u", NOBODY, sandbox.container_id, "true"]
            contenders["cli_true"] = lambda: subprocess.run(cli, capture_output=True, check=True)
        for fn in contenders.values():
            for _ in range(warmup):
                fn()
        medians = _interleaved_medians(contenders, runs)
        sandbox.close()

        def acquire_release() -> None:
            started = time.perf_counter()
            leased = pool.acquire()
            acquire_samples.append(time.perf_counter() - started)
            started = time.perf_counter()
            leased.close()  # reset happens here, outside the timed acquire
            release_samples.append(time.perf_counter() - started)

        acquire_samples: list[float] = []
        release_samples: list[float] = []
        for _ in range(warmup + runs):
            acquire_release()
        medians["acquire"] = statistics.median(acquire_samples[warmup:]) * 1000
        medians["release"] = statistics.median(release_samples[warmup:]) * 1000
    client.close()
    _print_table(medians, runs)
    return medians


def _verdict(ok: bool) -> str:
    return "[green]PASS[/green]" if ok else "[red]MISS[/red]"


def _print_table(medians: dict[str, float], runs: int) -> None:
    table = Table(title=f"sandbox overhead, median of {runs} runs")
    for column in ("measurement", "sandbox ms", "exec_run ms", "ratio", "target", "verdict"):
        table.add_column(column, justify="left" if column == "measurement" else "right", no_wrap=True)
    for command, key in (("true", "true"), ("python3 -c pass", "python")):
        ours, ref = medians[f"docker_{key}"], medians[f"raw_{key}"]
        ratio = ours / ref
        table.add_row(
            f"exec {command}", f"{ours:.1f}", f"{ref:.1f}", f"{ratio:.2f}",
            f"<= {EXEC_RATIO_TARGET}", _verdict(ratio <= EXEC_RATIO_TARGET),
        )  # fmt: skip
    if "docker_true_persist" in medians:
        persist = medians["docker_true_persist"]
        table.add_row("exec true, persist=True (no end kill)", f"{persist:.1f}", f"{medians['raw_true']:.1f}",
                      f"{persist / medians['raw_true']:.2f}", "context", "")  # fmt: skip
    if "cli_true" in medians:
        table.add_row("docker exec CLI true", f"{medians['cli_true']:.1f}", "", "", "context", "")
    acquire = medians["acquire"]
    table.add_row(
        "pool acquire (warm)", f"{acquire:.1f}", "", "", f"<= {ACQUIRE_TARGET_MS:.0f} ms",
        _verdict(acquire <= ACQUIRE_TARGET_MS),
    )  # fmt: skip
    if "release" in medians:
        table.add_row("pool release (reset + verify)", f"{medians['release']:.1f}", "", "", "context", "")
    Console(width=120).print(table)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=50, help="timed runs per measurement, after warm-up")
    main(runs=parser.parse_args().runs)
