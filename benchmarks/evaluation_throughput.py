"""Full evaluations per second of ProgramEvolution-v0 candidates: pooled docker sandbox vs a bare subprocess.

For each task the same full evaluations (the task's hand-written library, cycled) run two ways,
interleaved so that load drifts hit both alike, with the same protocol:

* ``docker``: ``SandboxEvaluator`` on one warm container from the shared pool (``open_sandbox
  ("docker")``, the env's limits) as the env runs it: per evaluation one fresh runner process as
  the user (the candidate on stdin), spawned by the sandbox's exec server (one engine exec per
  sandbox, not per evaluation; ``rsigym.sandbox.exec_server``) and, for bin packing, at the same
  time one harness exec as the harness identity that asks for one item at a time over a Unix
  socket;
* ``docker per exec``: a second container of the pool, each runner started by its own engine
  exec (how the evaluator ran before the exec server; the engine's exec costs ~45 ms here), for
  comparison;
* ``bare``: the same evaluator on bare local subprocesses (a temp dir, ``subprocess.run`` of this
  interpreter, no limits, no second identity): the reference cost of the evaluation itself.

A third column measures what enforcing online bin packing costs by itself: ``bare`` against the
former, forgeable scheme (``in-process``: the candidate and the instances in one process, which
calls ``priority()`` directly; a bare subprocess too).

Prints evaluations per second (from the median seconds per evaluation) and the in-run ratios
docker/bare (target >= 0.7) and docker per exec/bare, and checks that all ways give the same
scores. The evaluator does a
task's whole full evaluation (all 30 bin-packing instances) in one pair of execs, so container
overhead is paid once per evaluation, not per instance.

Run: ``python benchmarks/evaluation_throughput.py [--evaluations 12] [--items 1000]``.
"""

from __future__ import annotations

import argparse
import json
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass
from typing import Any, Mapping, Sequence

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.envs.evolution import EVOLUTION_LIMITS, SandboxEvaluator, make_task
from rsigym.envs.evolution.harness import RUNNER_PRELUDE, parse_result
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
    """The least a local evaluation can cost: a temp dir and ``subprocess.run``, nothing else.

    It accepts the sandbox's ``as_user`` and ``persist`` and ignores them (one identity, nothing
    killed after an exec), and runs concurrent execs from several threads.
    """

    provider = "bare"
    info: dict[str, Any] = {"provider": "bare", "image": None}

    def __init__(self) -> None:
        self.work_dir = tempfile.mkdtemp(prefix="rsigym-bare-")

    def exec(self, argv: Sequence[str], *, stdin: bytes | str | None = None, timeout: float = 30.0,
             **_: Any) -> ExecResult:
        argv = [sys.executable if argv[0] in ("python", "python3") else argv[0], *argv[1:]]
        data = stdin.encode() if isinstance(stdin, str) else stdin
        started = time.monotonic()
        done = subprocess.run(argv, cwd=self.work_dir, input=data, capture_output=True, timeout=timeout)
        return ExecResult(done.stdout.decode(errors="replace"), done.stderr.decode(errors="replace"),
                          done.returncode, False, time.monotonic() - started)

    def close(self) -> None:
        shutil.rmtree(self.work_dir, ignore_errors=True)


class PerExec:
    """A sandbox seen without its exec server: every runner gets its own engine exec."""

    def __init__(self, sandbox: Any) -> None:
        self._sandbox = sandbox
        self.provider, self.info, self.exec = sandbox.provider, sandbox.info, sandbox.exec


# The former, forgeable scheme as a speed reference: the candidate's own process holds the
# instances (here: after the candidate on stdin) and calls priority() directly.
IN_PROCESS = RUNNER_PRELUDE + r'''
import base64
import numpy as np
_source, _, _blob = _source.partition("\n#@@instances@@\n")
candidate = load_candidate()
priority = candidate["priority"]
_task = json.loads(_blob.partition("\n")[0])
_sizes = np.array(json.loads(_blob.partition("\n")[2]), dtype=float)
_bounds = np.cumsum([0] + _task["items"])
capacity, assignments = float(_task["capacity"]), []
for index in range(len(_bounds) - 1):
    items = _sizes[_bounds[index]:_bounds[index + 1]]
    remaining, assign, opened = np.zeros(len(items)), np.zeros(len(items), dtype=np.int32), 0
    for k, item in enumerate(items):
        fits = np.nonzero(remaining[:opened] >= item)[0]
        choice = int(np.argmax(np.asarray(priority(float(item), np.append(remaining[fits], capacity)), dtype=float)))
        if choice == len(fits):
            remaining[opened], assign[k], opened = capacity - item, opened, opened + 1
        else:
            remaining[fits[choice]] -= item
            assign[k] = fits[choice]
    assignments.append(base64.b64encode(assign.tobytes()).decode())
emit({"first": _task["first"], "assignments": assignments})
'''


class InProcessEvaluator:
    """Bin packing the former way (see ``IN_PROCESS``) on a bare subprocess: speed reference only."""

    def __init__(self, task: Any, bare: BareSubprocess) -> None:
        self.task, self.bare = task, bare

    def evaluate(self, code: str, kind: str) -> Any:
        header, _, blob = self.task.harness_input(kind).partition(b"\n")
        sizes = json.dumps(np.frombuffer(blob, dtype="<f8").tolist())
        stdin = (json.dumps({"shared_dirs": []}) + "\n" + code + "\n#@@instances@@\n" + header.decode() + "\n" + sizes)
        run = self.bare.exec(["python3", "-I", "-c", IN_PROCESS], stdin=stdin, timeout=600.0)
        payload = parse_result(run.stdout)
        assert payload is not None and "error" not in payload, (payload, run.stderr[-500:])
        return self.task.score(kind, payload)


def measure(task_name: str, args: Args) -> dict[str, Any]:
    task = make_task(task_name, **({"items": args.items} if task_name == "bin_packing_online" else {}))
    programs = list(task.library.values())
    docker_sandbox, bare = open_sandbox("docker", EVOLUTION_LIMITS), BareSubprocess()
    # A container of its own: a plain exec as the user ends the idle exec server of its container.
    per_exec_sandbox = open_sandbox("docker", EVOLUTION_LIMITS)
    try:
        evaluators: dict[str, Any] = {"docker": SandboxEvaluator(task, docker_sandbox),
                                      "docker_per_exec": SandboxEvaluator(task, PerExec(per_exec_sandbox)),  # type: ignore[arg-type]
                                      "bare": SandboxEvaluator(task, bare)}
        if task.harness_program is not None:
            evaluators["in_process"] = InProcessEvaluator(task, bare)
        seconds: dict[str, list[float]] = {name: [] for name in evaluators}
        scores: dict[str, list[float | None]] = {name: [] for name in evaluators}
        for i in range(args.evaluations + 1):  # the first round warms up every way
            code = programs[i % len(programs)]
            for name, evaluator in evaluators.items():
                started = time.perf_counter()
                result = evaluator.evaluate(code, "full")
                if i > 0:
                    seconds[name].append(time.perf_counter() - started)
                    scores[name].append(result.score)
    finally:
        docker_sandbox.close()
        per_exec_sandbox.close()
        bare.close()
    rates = {name: 1.0 / statistics.median(values) for name, values in seconds.items()}
    agree = all(_agree(scores["docker"], scores[name]) for name in scores)
    return {"task": task_name, "docker": rates["docker"], "bare": rates["bare"],
            "ratio": rates["docker"] / rates["bare"], "in_process": rates.get("in_process"),
            "per_exec": rates["docker_per_exec"], "per_exec_ratio": rates["docker_per_exec"] / rates["bare"],
            "scores_agree": agree, "evaluations": args.evaluations}


def _agree(a: list[float | None], b: list[float | None]) -> bool:
    return all((x is None and y is None) or (x is not None and y is not None and abs(x - y) <= 1e-9 * max(1, abs(x)))
               for x, y in zip(a, b))


def main(args: Args) -> list[dict[str, Any]]:
    rows = [measure(task, args) for task in args.tasks]
    title = f"full evaluations per second, median of {args.evaluations} (bin packing: 30 x {args.items} items)"
    table = Table(title=title)
    columns = ("task", "docker pool evals/s", "bare subprocess evals/s", "ratio", "target", "verdict",
               "docker per exec evals/s", "its ratio", "bare in-process evals/s", "online protocol cost",
               "same scores")
    for column in columns:
        table.add_column(column, justify="left" if column == "task" else "right", no_wrap=True)
    for row in rows:
        ok = row["ratio"] >= RATIO_TARGET
        reference = row["in_process"]
        table.add_row(row["task"], f"{row['docker']:.2f}", f"{row['bare']:.2f}", f"{row['ratio']:.2f}",
                      f">= {RATIO_TARGET}", "[green]PASS[/green]" if ok else "[red]MISS[/red]",
                      f"{row['per_exec']:.2f}", f"{row['per_exec_ratio']:.2f}",
                      "-" if reference is None else f"{reference:.2f}",
                      "-" if reference is None else f"x{reference / row['bare']:.2f} time",
                      "yes" if row["scores_agree"] else "[red]no[/red]")
    Console(width=230).print(table)
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
