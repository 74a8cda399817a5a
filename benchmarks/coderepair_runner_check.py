"""Does the code repair test runner give honest programs the outcomes it gave them before, and how fast?

The runner decides pass/fail for every program the env executes, so a change to how it runs
programs (issue 27: a fresh interpreter per test, results collected by the harness identity) must
not change what an honest program scores. This script runs the hidden tests of

* every reference solution (164 programs; all must pass), and
* ``--mutants`` single-site mutants of them (the mixture coder's catalogue mutants, spread evenly
  over the problems: a deterministic choice),

and writes each program's per-test outcome (status and exception type) to ``--save``; with
``--compare`` it prints how many programs (the unit) have identical per-test outcomes to a file
saved by another runner (an earlier commit) and lists the ones that differ. It also times one
evaluation for ``--timed`` reference programs, median of ``--repeats``, the old runner and the new
one interleaved (see ``time_evaluations``).

Run: ``python benchmarks/coderepair_runner_check.py --save before.json`` on one commit, then
``python benchmarks/coderepair_runner_check.py --save after.json --compare before.json``.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import time
from typing import Any, Callable

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.envs.coderepair.coders import _generate
from rsigym.envs.coderepair.execution import CODEREPAIR_LIMITS, Job, run_jobs
from rsigym.envs.coderepair.problems import build_suite
from rsigym.envs.coderepair.sandbox_program import TRUSTED_BATCH, parse_batch
from rsigym.sandbox import open_sandbox


def programs(suite: Any, n_mutants: int) -> list[tuple[str, Any, str]]:
    """(key, problem, code): every reference, then ``n_mutants`` mutants spread over the problems."""
    out = [(f"{p.problem_id}/reference", p, p.reference) for p in suite.problems]
    mutants = [(f"{p.problem_id}/{i}:{origin}", p, code) for p in suite.problems
               for i, (code, origin, family) in enumerate(_generate(p)) if family == "mutant"]
    picks = np.unique(np.linspace(0, len(mutants) - 1, n_mutants).round().astype(int)) if n_mutants else []
    return out + [mutants[int(i)] for i in picks]


def outcomes(sandbox: Any, items: list[tuple[str, Any, str]]) -> tuple[dict[str, Any], float]:
    jobs = [Job(key, code, p.entry, p.hidden, prelude=p.prelude, helpers=p.helpers) for key, p, code in items]
    started = time.perf_counter()
    results = run_jobs(sandbox, jobs)
    elapsed = time.perf_counter() - started
    return {key: {"load_error": r.load_error, "tests": [[t.get("status"), t.get("type")] for t in r.tests],
                  "all_pass": r.all_pass, "failure": r.failure_type()} for key, r in results.items()}, elapsed


def _old_runner(sandbox: Any, jobs: list[Job]) -> None:
    """The runner before issue 27, as it ran: one user exec, a forked child per job (the same
    program now serves only the simulator's own programs, as the harness identity)."""
    payload = json.dumps({"jobs": [job.to_json() for job in jobs]}).encode()
    budget_s = sum(job.timeout_s * (len(job.tests) + 1) + 1.5 for job in jobs) + 10.0
    run = sandbox.exec(["python3", "-I", "-c", TRUSTED_BATCH], stdin=payload, timeout=budget_s)
    assert parse_batch(run.stdout) is not None, run.stderr[-300:]


def time_evaluations(sandbox: Any, old_sandbox: Any, items: list[tuple[str, Any, str]],
                     repeats: int) -> dict[str, list[float]]:
    """Seconds per evaluation, per program (median of ``repeats``), the three ways interleaved so
    that the machine's load hits them alike:

    * ``old step``: the old runner on the program's public and hidden tests (one env step before);
    * ``new step``: ``run_jobs`` of the public tests (one env step now);
    * ``new full``: ``run_jobs`` of the public and hidden tests (the same work as ``old step``).

    The old runner runs in a sandbox of its own: its plain exec as the user would end the new
    runner's exec server after every call (a plain exec kills every process of the user).
    """
    timings: dict[str, list[float]] = {"old step": [], "new step": [], "new full": []}
    for key, p, code in items:
        public = Job("public", code, p.entry, p.public, prelude=p.prelude, helpers=p.helpers)
        hidden = Job("hidden", code, p.entry, p.hidden, prelude=p.prelude, helpers=p.helpers)
        ways: dict[str, Callable[[], Any]] = {
            "old step": lambda: _old_runner(old_sandbox, [public, hidden]),
            "new step": lambda: run_jobs(sandbox, [public]),
            "new full": lambda: run_jobs(sandbox, [public, hidden])}
        runs: dict[str, list[float]] = {name: [] for name in ways}
        for _ in range(repeats):
            for name, way in ways.items():
                started = time.perf_counter()
                way()
                runs[name].append(time.perf_counter() - started)
        for name in ways:
            timings[name].append(statistics.median(runs[name]))
    return timings


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sandbox", default="docker")
    parser.add_argument("--mutants", type=int, default=200)
    parser.add_argument("--timed", type=int, default=20, help="programs timed (references, spread over the dataset)")
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--save", help="write the outcomes and timings here (JSON)")
    parser.add_argument("--compare", help="outcomes saved by another runner, to compare with")
    args = parser.parse_args()
    console = Console(width=140)
    load_before = os.getloadavg()[0]
    with open_sandbox(args.sandbox, CODEREPAIR_LIMITS) as sandbox:
        suite = build_suite(sandbox)
        items = programs(suite, args.mutants)
        result, batch_s = outcomes(sandbox, items)
        step = max(1, len(suite.problems) // max(args.timed, 1))
        timed = [items[i] for i in range(0, len(suite.problems), step)][: args.timed]
        with open_sandbox(args.sandbox, CODEREPAIR_LIMITS) as old_sandbox:
            timings = time_evaluations(sandbox, old_sandbox, timed, args.repeats)
    refs = [k for k in result if k.endswith("/reference")]
    summary = {"provider": args.sandbox, "programs": len(result), "references": len(refs),
               "references_passing": sum(result[k]["all_pass"] for k in refs),
               "mutants": len(result) - len(refs), "mutants_passing": sum(v["all_pass"] for k, v in result.items() if k not in refs),
               "hidden_batch_s": round(batch_s, 2), "programs_timed": len(timings["old step"]),
               **{f"{name} median s": round(statistics.median(v), 4) for name, v in timings.items()},
               "new step / old": round(statistics.median(timings["new step"]) / statistics.median(timings["old step"]), 2),
               "new full / old": round(statistics.median(timings["new full"]) / statistics.median(timings["old step"]), 2),
               # the machine's load (1-minute average) as the run started and ended: the ratio grows with it
               "load avg start": round(load_before, 1), "load avg end": round(os.getloadavg()[0], 1)}
    table = Table(title="code repair runner: hidden-test outcomes and time per evaluation")
    for key in summary:
        table.add_column(key.replace("_", " "), justify="right")
    table.add_row(*(str(v) for v in summary.values()))
    console.print(table)
    if args.save:
        with open(args.save, "w") as fh:
            json.dump({"summary": summary, "outcomes": result, "timings_s": timings}, fh, indent=1, sort_keys=True)
    if args.compare:
        with open(args.compare) as fh:
            before = json.load(fh)
        old = before["outcomes"]
        same = [k for k in result if k in old and old[k]["tests"] == result[k]["tests"] and old[k]["load_error"] == result[k]["load_error"]]
        differ = [k for k in result if k in old and k not in same]
        missing = [k for k in result if k not in old]
        cmp = Table(title="outcomes against " + args.compare + " (unit: a program)")
        for col in ("programs compared", "identical per-test outcomes", "differ", "missing", "same pass/fail"):
            cmp.add_column(col, justify="right")
        cmp.add_row(str(len(result) - len(missing)), str(len(same)), str(len(differ)), str(len(missing)),
                    str(sum(old[k]["all_pass"] == result[k]["all_pass"] for k in result if k in old)))
        console.print(cmp)
        for key in differ[:20]:
            console.print(f"differs: {key}: before {old[key]['tests']} {old[key]['load_error']} now {result[key]['tests']} {result[key]['load_error']}")


if __name__ == "__main__":
    main()
