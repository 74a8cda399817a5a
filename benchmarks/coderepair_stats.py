"""CodeRepair-v0's data: the public/hidden split of the 164 HumanEval problems, the reference
solutions run against all of it, and the offline mixture coder's statistics.

Three tables:

1. The split: problems with docstring examples, fallbacks, public tests, hidden assertions,
   strict extras.
2. Every reference solution executed (one sandbox exec for all 164) against its public, hidden
   and strict tests: how many pass each set (all of them must).
3. The mixture coder's candidates (drawn as the env draws them, rounds 1-3, before and after its
   drift point) by kind, the share correct, the share of public-passing candidates that fail hidden
   tests (the target is 15-20%), and the failure types of the failing ones. Kinds and failure
   types come from the catalogue, which was executed in the sandbox.

Run: ``python benchmarks/coderepair_stats.py [--sandbox auto] [--draws 20]``.
"""

from __future__ import annotations

import argparse
import time
from collections import Counter
from dataclasses import dataclass
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.envs.coderepair.coders import MixtureCoder, build_catalogue
from rsigym.envs.coderepair.execution import CODEREPAIR_LIMITS, Job, run_jobs
from rsigym.envs.coderepair.problems import build_suite
from rsigym.sandbox import open_sandbox


@dataclass
class Args:
    """Benchmark settings."""

    sandbox: str = "auto"
    """sandbox provider"""
    draws: int = 20
    """candidates drawn per problem, round and phase"""
    problems: int = 164
    """problems (from the start of the dataset) for the coder statistics"""


def main(args: Args) -> dict[str, Any]:
    console = Console(width=140)
    started = time.perf_counter()
    with open_sandbox(args.sandbox, CODEREPAIR_LIMITS) as sandbox:
        provider = sandbox.info.get("provider")
        suite = build_suite(sandbox)
        stats = suite.stats()
        split = Table(title=f"HumanEval public/hidden split ({provider} sandbox)")
        for key in stats:
            split.add_column(key.replace("_", " "), justify="right")
        split.add_row(*(str(v) for v in stats.values()))
        console.print(split)

        passes = {}
        for name in ("public", "hidden", "strict_extra"):
            jobs = [Job(p.problem_id, p.reference, p.entry, getattr(p, name), prelude=p.prelude, helpers=p.helpers)
                    for p in suite.problems if getattr(p, name)]
            results = run_jobs(sandbox, jobs)
            passes[name] = (sum(r.all_pass for r in results.values()), len(jobs))
        reference = Table(title="reference solutions against their own tests (one exec per test set)")
        for column in ("test set", "problems with tests", "reference passes", "reference fails"):
            reference.add_column(column, justify="right")
        for name, (ok, total) in passes.items():
            reference.add_row(name, str(total), str(ok), str(total - ok))
        console.print(reference)

        problems = suite.problems[: args.problems]
        catalogue = build_catalogue(problems, sandbox)
    coder = MixtureCoder(drift_at=0.5)
    by_phase: dict[str, Counter[str]] = {"before drift": Counter(), "after drift": Counter()}
    failures: dict[str, Counter[str]] = {"before drift": Counter(), "after drift": Counter()}
    for problem in problems:
        entries = catalogue[problem.problem_id]
        for phase, progress in (("before drift", 0.0), ("after drift", 0.9)):
            for round_index in range(3):
                rng = np.random.default_rng([round_index, len(problem.problem_id), int(progress * 10)])
                for candidate in coder.propose(problem, entries, round_index=round_index, progress=progress,
                                               feedback="x" if round_index else None, n=args.draws, rng=rng):
                    by_phase[phase][candidate.kind] += 1
                    if candidate.kind != "correct":
                        failures[phase][f"{candidate.origin.split(':')[0]} / {candidate.failure}"] += 1
    table = Table(title=f"mixture coder: {args.draws} candidates x 3 rounds x {len(problems)} problems per phase")
    for column in ("phase", "candidates", "correct", "sneaky (public pass, hidden fail)", "wrong", "crash",
                   "share correct", "public-pass but hidden-fail share"):
        table.add_column(column, justify="right")
    shares = {}
    for phase, counts in by_phase.items():
        total = sum(counts.values())
        public_pass = counts["correct"] + counts["sneaky"]
        shares[phase] = counts["sneaky"] / public_pass if public_pass else float("nan")
        table.add_row(phase, str(total), str(counts["correct"]), str(counts["sneaky"]), str(counts["wrong"]),
                      str(counts["crash"]), f"{counts['correct'] / total:.1%}", f"{shares[phase]:.1%}")
    console.print(table)
    kinds = Table(title="failure types of failing candidates (origin / failure on the hidden tests)")
    kinds.add_column("origin / failure")
    for phase in failures:
        kinds.add_column(phase, justify="right")
    for key in sorted(set(failures["before drift"]) | set(failures["after drift"])):
        kinds.add_row(key, *(str(failures[phase][key]) for phase in failures))
    console.print(kinds)
    console.print(f"wall time {time.perf_counter() - started:.0f} s")
    return {"split": stats, "reference": passes, "by_phase": by_phase, "sneaky_share": shares}


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--draws", type=int, default=20)
    parser.add_argument("--problems", type=int, default=164)
    ns = parser.parse_args()
    return Args(ns.sandbox, ns.draws, ns.problems)


if __name__ == "__main__":
    main(_parse())
