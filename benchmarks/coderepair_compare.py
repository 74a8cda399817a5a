"""Static verifier vs fixed vs adaptive world model on CodeRepair-v0: headroom table, then paired comparison.

Real episodes through the runner (the env, the mixture coder, every chosen candidate executed in
the sandbox, each final program re-executed by the ``hidden_tests`` graders), then the family's
analyses on the records: ``coderepair_compare`` (each world model against the static verifier,
paired on (seed, problem), problems as units, 95% paired bootstrap CIs, McNemar, with the blind
control that must come out worse) and ``coderepair_regrade`` (the flip table under the stricter
ruler). The tables are printed whatever the outcome.

Run: ``python benchmarks/coderepair_compare.py [--problems 40] [--seeds 3] [--predictor logistic]``.
"""

from __future__ import annotations

import argparse
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from rich.console import Console

from rsigym.envs.coderepair.analyses import coderepair_compare, coderepair_regrade
from rsigym.envs.coderepair.headroom import coderepair_headroom
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE, run_scenario
from rsigym.scenario import parse_scenario


@dataclass
class Args:
    """Benchmark settings."""

    problems: int = 40
    """problems per stream (from the start of the dataset, shuffled by the seed)"""
    seeds: int = 3
    """episode seeds"""
    predictor: str = "logistic"
    """world-model predictor: logistic or torch"""
    drift_at: float = 0.4
    """where in the stream the mixture coder drifts"""
    sandbox: str = "auto"
    """sandbox provider"""
    workers: int = 2
    """episodes in parallel"""
    warmup: int | None = None
    """warm-up problems of the world models (default: a fifth of the stream, at least 3)"""


def scenario(args: Args) -> Any:
    warmup = args.warmup if args.warmup is not None else max(3, args.problems // 5)
    wm = {"predictor": args.predictor, "warmup": warmup, "min_samples": 20, "min_fit_rows": 30}
    return parse_scenario({
        "name": "coderepair_compare_benchmark",
        "env": {"id": "rsigym/CodeRepair-v0",
                "kwargs": {"coder": "mixture", "coder_params": {"drift_at": args.drift_at},
                           "problems": args.problems, "sandbox": args.sandbox}},
        "tasks": ["humaneval"],
        "agents": [{"id": "static_verifier", "kind": "static_verifier"},
                   {"id": "static_audit", "kind": "static_verifier_audit"},
                   {"id": "fixed", "kind": "fixed_world_model", "params": wm},
                   {"id": "adaptive", "kind": "adaptive_world_model",
                    "params": {**wm, "check_every": max(2, args.problems // 10)}},
                   {"id": "random", "kind": "coderepair_random"}],
        "seeds": list(range(args.seeds)), "max_steps": 10 * args.problems,
        "graders": ["hidden_tests", "hidden_tests_strict"],
    }, "<benchmark>")


def main(args: Args) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        run_scenario(scenario(args), out, workers=args.workers, progress=False, report=False)
        records = read_records(f"{out}/{RECORDS_FILE}").records
        headroom = coderepair_headroom(records, Path(out))
        compare = coderepair_compare(records, Path(out), baseline="static_verifier", control="random")
        regrade = coderepair_regrade(records, Path(out))
    console = Console(width=200)
    infra = [r for r in records if r.termination == "infra_error"]
    console.print(f"{len(records)} episodes ({len(infra)} infra errors), {args.problems} problems x {args.seeds} seeds, "
                  f"predictor {args.predictor}, coder drift at {args.drift_at:.0%} of the stream, "
                  f"sandbox {records[0].sandbox.get('provider') if records and records[0].sandbox else '?'}")
    for section in (headroom, compare, regrade):
        console.print(f"\n## {section.title}\n\n{section.markdown}\n\n**Verdict:** {section.verdict}", markup=False)
    console.print(f"\nwall time {time.perf_counter() - started:.0f} s")
    return {"headroom": headroom.verdict, "compare": compare.verdict, "regrade": regrade.verdict, "records": len(records), "infra": len(infra)}


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--problems", type=int, default=40)
    parser.add_argument("--seeds", type=int, default=3)
    parser.add_argument("--predictor", default="logistic", choices=["logistic", "torch", "boosting"])
    parser.add_argument("--drift-at", type=float, default=0.4)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--warmup", type=int, default=None)
    ns = parser.parse_args()
    return Args(ns.problems, ns.seeds, ns.predictor, ns.drift_at, ns.sandbox, ns.workers, ns.warmup)


if __name__ == "__main__":
    main(_parse())
