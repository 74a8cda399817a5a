"""Batteries under load (issue 38, hole 6): no grade from output a program did not produce.

Runs the README's first battery (``probe_smoke``, 80 episodes) and a larger Probe battery
(``probe_smoke`` over 30 test tasks and one seed: 120 episodes) with ``--workers 1 --concurrency
32``, env and answer check both on each sandbox provider asked for, ``--runs`` times each, beside a
CPU hog of ``--hog-per-core`` busy processes per core. The hog is started for each run and always
stopped (``finally``; each process also ends by itself after ``--hog-max-s``).

A run is the CLI's ``rsigym run``, then the same command again while episodes are left as
``infra_error`` (the CLI retries them; at most ``--max-resumes`` times). Per run the table shows
the first pass (episodes, infra errors, grader errors, agent errors, exit code), the resumes it
took and what is left, and the checks against the known truth: Probe's secret is known, so each
``probe_answer`` score is compared with whether the final guess is the secret, and each step's
feedback with the oracle's answer (swapped under ``reverse_hints``). The scripted agents
(``probe_bisect``, ``random``) never send an invalid action: any agent error is the harness's.

Totals must show 0 wrong grades, 0 wrong feedback, 0 agent errors, and nothing left after the
resumes (no infra error, no grader error).

Run: ``python benchmarks/under_load.py [--runs 10] [--hog-per-core 8] [--sandboxes local,docker]
[--batteries smoke,probe] [--keep DIR]``; ``python benchmarks/under_load.py --beside CMD ...`` runs
any command (the suite's subprocess and thread tests) beside the same hog instead and exits with
its status. One run of both batteries on both providers took 335 s
here (2 shared cores: local 73 + 55 s, docker 89 + 118 s, all 400 graded right, nothing to
resume); the full 10 runs take about an hour. On main, one run of ``smoke`` on docker needed 5
resumes (46 of 80 episodes infra errors: exit 0, empty stdout) and left 6 grader errors.
"""

from __future__ import annotations

import argparse
import multiprocessing
import os
import shutil
import subprocess
import sys
import tempfile
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from rsigym.envs.probe import make_task
from rsigym.records.jsonl import read_records

BATTERIES = {  # name -> the --set overrides of probe_smoke that make it
    "smoke": [],
    "probe": ["tasks={split: test, limit: 30}", "seeds=[0]"],
}
SWAP = {"higher": "lower", "lower": "higher"}


def _spin(stop_at: float) -> None:
    """A busy process with a bounded lifetime, should the parent die without stopping it."""
    while time.time() < stop_at:
        for _ in range(100_000):
            pass


class Hog:
    """``count`` busy processes, stopped on leaving the ``with`` block whatever happened."""

    def __init__(self, count: int, max_s: float) -> None:
        self.count, self.max_s = count, max_s
        self.procs: list[multiprocessing.process.BaseProcess] = []

    def __enter__(self) -> "Hog":
        ctx = multiprocessing.get_context("spawn")
        stop_at = time.time() + self.max_s
        for _ in range(self.count):
            proc = ctx.Process(target=_spin, args=(stop_at,), daemon=True)
            proc.start()
            self.procs.append(proc)
        return self

    def __exit__(self, *exc: object) -> None:
        for proc in self.procs:
            proc.kill()
        for proc in self.procs:
            proc.join(timeout=10)


@dataclass
class RunResult:
    sandbox: str
    battery: str
    run: int
    episodes: int = 0
    infra_first: int = 0      # record infra errors of the first pass
    grader_errors_first: int = 0
    agent_errors: int = 0
    exit_first: int = 0
    resumes: int = 0
    infra_left: int = 0
    grader_errors_left: int = 0
    wrong_grades: int = 0
    wrong_feedback: int = 0
    graded: int = 0
    seconds: float = 0.0
    causes: list[str] = field(default_factory=list)


def _command(sandbox: str, battery: str, out: Path) -> list[str]:
    sets = [f"env.kwargs.sandbox={sandbox}",
            f"graders=[{{name: probe_answer, params: {{sandbox: {sandbox}}}}}, probe_efficiency]",
            *BATTERIES[battery]]
    cli = [sys.executable, "-m", "rsigym", "run", "probe_smoke", "--workers", "1", "--concurrency", "32",
           "--out", str(out), "--no-progress"]
    for item in sets:
        cli += ["--set", item]
    return cli


def _records(path: Path) -> list[dict[str, Any]]:
    """Records as dicts, with the values a run keeps in ``shared.jsonl`` put back."""
    if not path.exists():
        return []
    return [record.to_dict() for record in read_records(path).records]


def _truth_checks(record: dict[str, Any]) -> tuple[int, int, int]:
    """(probe_answer grades checked, wrong ones, steps whose feedback was wrong) of one record."""
    final = (record.get("final") or {}).get("state") or {}
    if not final.get("task_id"):
        return 0, 0, 0
    task = make_task(final["task_id"], final["low"], final["high"])
    reverse = (record["env"].get("condition") or {}).get("name") == "reverse_hints"
    wrong_feedback = 0
    for guess, shown in zip(final.get("guesses", []), final.get("feedback", [])):
        truth = "higher" if guess < task.secret else "lower" if guess > task.secret else "correct"
        wrong_feedback += shown != (SWAP.get(truth, truth) if reverse else truth)
    graded = wrong = 0
    for grade in record.get("grades", []):
        if grade["grader"] == "probe_answer" and grade.get("score") is not None:
            graded += 1
            wrong += grade["score"] != float(final.get("final_guess") == task.secret)
    return graded, wrong, wrong_feedback


def one_run(sandbox: str, battery: str, run: int, args: argparse.Namespace, root: Path) -> RunResult:
    result = RunResult(sandbox, battery, run)
    out = root / f"{sandbox}-{battery}-{run}"
    command = _command(sandbox, battery, out)
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    started = time.monotonic()
    with Hog(args.hog_per_core * (os.cpu_count() or 1), args.hog_max_s):
        first = subprocess.run(command, env=env, capture_output=True, text=True)
        result.exit_first = first.returncode
        records = _records(out / "records.jsonl")
        result.infra_first = sum(r.get("termination") == "infra_error" for r in records)
        result.grader_errors_first = sum(g.get("score") is None for r in records for g in r.get("grades", []))
        while sum(r.get("termination") == "infra_error" for r in records) and result.resumes < args.max_resumes:
            result.resumes += 1
            subprocess.run(command, env=env, capture_output=True, text=True)
            records = _records(out / "records.jsonl")
    result.seconds = time.monotonic() - started
    retried = _records(out / "infra_errors.jsonl")
    result.episodes = len(records)
    result.infra_left = sum(r.get("termination") == "infra_error" for r in records)
    result.agent_errors = sum(r.get("termination") == "agent_error" for r in records + retried)
    result.grader_errors_left = sum(g.get("score") is None for r in records for g in r.get("grades", []))
    for record in records:
        graded, wrong, wrong_feedback = _truth_checks(record)
        result.graded += graded
        result.wrong_grades += wrong
        result.wrong_feedback += wrong_feedback
    for record in records + retried:
        errors = [record.get("error") or ""] + [g.get("error") or "" for g in record.get("grades", [])]
        result.causes += [e[:160] for e in errors if e]
    if first.returncode not in (0, 1) and not records:
        result.causes.append(f"rsigym run failed: {(first.stderr or first.stdout).strip()[-300:]}")
    return result


HEADER = ("sandbox", "battery", "run", "episodes", "infra 1st", "grader err 1st", "agent err", "exit 1st",
          "resumes", "infra left", "grader err left", "graded", "wrong grades", "wrong feedback", "s")


def _row(r: RunResult) -> tuple[Any, ...]:
    return (r.sandbox, r.battery, r.run, r.episodes, r.infra_first, r.grader_errors_first, r.agent_errors,
            r.exit_first, r.resumes, r.infra_left, r.grader_errors_left, r.graded, r.wrong_grades,
            r.wrong_feedback, f"{r.seconds:.0f}")


def _print_row(cells: tuple[Any, ...]) -> None:
    print("  ".join(f"{str(c):>{max(len(h), 6)}}" for c, h in zip(cells, HEADER)), flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=10)
    parser.add_argument("--hog-per-core", type=int, default=8)
    parser.add_argument("--hog-max-s", type=float, default=1800.0, help="each hog process ends by itself after this")
    parser.add_argument("--sandboxes", default="local,docker")
    parser.add_argument("--batteries", default="smoke,probe")
    parser.add_argument("--max-resumes", type=int, default=5)
    parser.add_argument("--keep", type=Path, help="keep the run folders here (default: a temp dir, removed)")
    parser.add_argument("--beside", nargs=argparse.REMAINDER, metavar="CMD",
                        help="run CMD (all the arguments after it) beside the hog instead of the batteries")
    args = parser.parse_args(argv)
    if args.beside:
        return run_beside_hog(args.beside, args.hog_per_core, args.hog_max_s)
    sandboxes = [s for s in args.sandboxes.split(",") if s]
    batteries = [b for b in args.batteries.split(",") if b]
    for name in batteries:
        if name not in BATTERIES:
            parser.error(f"unknown battery {name!r}; expected some of {', '.join(BATTERIES)}")
    for name in sandboxes:
        if name not in ("local", "docker"):
            parser.error(f"unknown sandbox {name!r}; expected local and/or docker")
    root = args.keep or Path(tempfile.mkdtemp(prefix="rsigym-under-load-"))
    root.mkdir(parents=True, exist_ok=True)
    print(f"under load: {args.runs} runs x {batteries} x {sandboxes}, --workers 1 --concurrency 32, "
          f"hog {args.hog_per_core} busy processes x {os.cpu_count()} cores", flush=True)
    _print_row(HEADER)
    results: list[RunResult] = []
    try:
        for run in range(1, args.runs + 1):
            for sandbox in sandboxes:
                for battery in batteries:
                    result = one_run(sandbox, battery, run, args, root)
                    results.append(result)
                    _print_row(_row(result))
    finally:
        if args.keep is None:
            shutil.rmtree(root, ignore_errors=True)
    return _summarise(results)


def run_beside_hog(command: list[str], per_core: int, max_s: float) -> int:
    """Run ``command`` beside ``per_core`` busy processes per core; its exit status."""
    count = per_core * (os.cpu_count() or 1)
    print(f"beside a hog of {count} busy processes: {' '.join(command)}", flush=True)
    started = time.monotonic()
    with Hog(count, max_s):
        status = subprocess.call(command)
    print(f"exit {status} after {time.monotonic() - started:.0f} s beside the hog", flush=True)
    return status


def _summarise(results: list[RunResult]) -> int:
    total = {key: sum(getattr(r, key) for r in results) for key in
             ("episodes", "infra_first", "grader_errors_first", "agent_errors", "resumes", "infra_left",
              "grader_errors_left", "graded", "wrong_grades", "wrong_feedback")}
    print("\ntotals: " + ", ".join(f"{k} {v}" for k, v in total.items()))
    causes: dict[str, int] = {}
    for r in results:
        for cause in r.causes:
            causes[cause] = causes.get(cause, 0) + 1
    for cause, n in sorted(causes.items(), key=lambda item: -item[1])[:10]:
        print(f"  x{n}: {cause}")
    checks = [("wrong grades", total["wrong_grades"]), ("wrong feedback", total["wrong_feedback"]),
              ("agent errors (the agents are scripted: all the harness's)", total["agent_errors"]),
              ("infra errors left after the resumes", total["infra_left"]),
              ("grader errors left", total["grader_errors_left"])]
    ok = True
    for label, value in checks:
        print(f"{'ok  ' if value == 0 else 'FAIL'} {label}: {value}")
        ok = ok and value == 0
    print(f"{'ok  ' if total['graded'] else 'FAIL'} answer checks graded against the truth: {total['graded']}")
    return 0 if ok and total["graded"] else 1


if __name__ == "__main__":
    sys.exit(main())
