"""Full evaluations per second of ProgramEvolution-v0 candidates: pooled docker sandbox vs a bare subprocess.

For each task the same full evaluations (the task's hand-written library, cycled) run two ways,
interleaved so that load drifts hit both alike:

* ``docker``: ``SandboxEvaluator`` on one warm container from the shared pool (``open_sandbox
  ("docker")``, the env's limits): one harness exec per evaluation, the candidate on stdin;
* ``bare``: the same evaluator on a bare local subprocess (a temp dir, ``subprocess.run`` of
  this interpreter, no limits): the reference cost of the evaluation itself.

Prints evaluations per second (from the median seconds per evaluation) and the in-run ratio
docker/bare (target >= 0.7), and checks that both give the same scores. The evaluator does a
task's whole full evaluation (all 30 bin-packing instances) in one exec, so container overhead
is paid once per evaluation, not per instance.

Run: ``python benchmarks/evaluation_throughput.py [--evaluations 12] [--items 1000]``.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

from rich.console import Console
from rich.table import Table

from rsigym.envs.evolution import EVOLUTION_LIMITS, SandboxEvaluator, make_task
from rsigym.sandbox import ExecResult, open_sandbox

RATIO_TARGET = 0.7


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    evaluations: int = 12
    """timed full evaluations per task and provider (after one warm-up each)"""
    items: int = 1000
    """items per bin-packing instance (30 instances; the paper size is 5,000)"""
    tasks: tuple[str, ...] = ("circle_packing_26", "bin_packing_online")
    """tasks to measure"""


class BareSubprocess:
    """The least a local evaluation can cost: a temp dir and ``subprocess.run``, nothing else."""

    provider = "bare"

    def __init__(self) -> None:
        self.work_dir = tempfile.mkdtemp(prefix="rsigym-bare-")

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        for path, content in files.items():
            with open(os.path.join(self.work_dir, path), "wb") as fh:
                fh.write(content.encode() if isinstance(content, str) else content)

    def exec(self, argv: Sequence[str], *, stdin: str | None = None, timeout: float = 30.0, **_: Any) -> ExecResult:
        argv = [sys.executable if argv[0] in ("python", "python3") else argv[0], *argv[1:]]
        started = time.monotonic()
        done = subprocess.run(argv, cwd=self.work_dir, input=stdin, capture_output=True, text=True, timeout=timeout)
        return ExecResult(done.stdout, done.stderr, done.returncode, False, time.monotonic() - started)

    def close(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)


def measure(task_name: str, args: Args) -> dict[str, Any]:
    task = make_task(task_name, **({"items": args.items} if task_name == "bin_packing_online" else {}))
    programs = list(task.library.values())
    docker_sandbox, bare = open_sandbox("docker", EVOLUTION_LIMITS), BareSubprocess()
    try:
        evaluators = {"docker": SandboxEvaluator(task, docker_sandbox), "bare": SandboxEvaluator(task, bare)}  # type: ignore[arg-type]
        seconds: dict[str, list[float]] = {name: [] for name in evaluators}
        scores: dict[str, list[float | None]] = {name: [] for name in evaluators}
        for i in range(args.evaluations + 1):  # the first round warms up both
            code = programs[i % len(programs)]
            for name, evaluator in evaluators.items():
                started = time.perf_counter()
                result = evaluator.evaluate(code, "full")
                if i > 0:
                    seconds[name].append(time.perf_counter() - started)
                    scores[name].append(result.score)
    finally:
        docker_sandbox.close()
        bare.close()
    rates = {name: 1.0 / statistics.median(values) for name, values in seconds.items()}
    return {"task": task_name, "docker": rates["docker"], "bare": rates["bare"],
            "ratio": rates["docker"] / rates["bare"], "scores_agree": _agree(scores["docker"], scores["bare"]),
            "evaluations": args.evaluations}


def _agree(a: list[float | None], b: list[float | None]) -> bool:
    return all((x is None and y is None) or (x is not None and y is not None and abs(x - y) <= 1e-9 * max(1, abs(x)))
               for x, y in zip(a, b))


def main(args: Args) -> list[dict[str, Any]]:
    rows = [measure(task, args) for task in args.tasks]
    table = Table(title=f"full evaluations per second, median of {args.evaluations} (bin packing: 30 x {args.items} items)")
    for column in ("task", "docker pool evals/s", "bare subprocess evals/s", "ratio", "target", "verdict", "same scores"):
        table.add_column(column, justify="left" if column == "task" else "right", no_wrap=True)
    for row in rows:
        ok = row["ratio"] >= RATIO_TARGET
        table.add_row(row["task"], f"{row['docker']:.2f}", f"{row['bare']:.2f}", f"{row['ratio']:.2f}",
                      f">= {RATIO_TARGET}", "[green]PASS[/green]" if ok else "[red]MISS[/red]",
                      "yes" if row["scores_agree"] else "[red]no[/red]")
    Console(width=150).print(table)
    return rows


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--evaluations", type=int, default=12)
    parser.add_argument("--items", type=int, default=1000)
    parser.add_argument("--tasks", nargs="*", default=list(Args.tasks))
    ns = parser.parse_args()
    return Args(ns.evaluations, ns.items, tuple(ns.tasks))


if __name__ == "__main__":
    main(_parse())
