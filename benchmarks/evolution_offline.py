"""Offline program evolution (the ``mutate`` source): does the search improve, and does cascade save full evaluations?

Two tables from one run of real episodes (the runner, the sandbox, the env's evaluators):

1. ``circle_packing_26`` with ``always_full``: the seed program's score and the best score found
   within the budget, per seed (the best must rise above the seed's).
2. ``bin_packing_online``, ``always_full`` against ``cascade`` on the same seeds: full
   evaluations until the best score first reaches the target (default: the mean final best of
   ``always_full``, "the baseline's score"), per seed, with the first crossing of each mean
   curve, the medians, and the count of seeds where cascade needed fewer / as many / more.

Run: ``python benchmarks/evolution_offline.py [--seeds 5] [--budget 30] [--items 200]``.
"""

from __future__ import annotations

import argparse
import statistics
import tempfile
import time
from dataclasses import dataclass
from typing import Any

from rich.console import Console
from rich.table import Table

from rsigym.envs.evolution.analyses import best_curve, evaluations_to_reach, first_crossing, mean_curve
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE, run_scenario
from rsigym.scenario import parse_scenario


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    seeds: int = 5
    """episode seeds (0..seeds-1)"""
    budget: float = 30.0
    """full-evaluation equivalents per episode"""
    items: int = 200
    """items per bin-packing instance (30 instances, 8 in a partial evaluation)"""
    target: float | None = None
    """bin-packing target score; the mean final best of always_full when None"""
    sandbox: str = "auto"
    """sandbox provider of the env"""
    workers: int = 2
    """episodes run in parallel"""
    cascade_margin: float = 0.02
    """cascade's promotion margin"""


def _scenario(args: Args) -> Any:
    return parse_scenario({
        "name": "evolution_offline_benchmark",
        "env": {"id": "rsigym/ProgramEvolution-v0",
                "kwargs": {"source": "mutate", "budget": args.budget, "explore_p": 0.0, "sandbox": args.sandbox,
                           "task_params": {"bin_packing_online": {"items": args.items}}}},
        "tasks": ["circle_packing_26", "bin_packing_online"],
        "agents": [{"id": "always_full", "kind": "always_full"},
                   {"id": "cascade", "kind": "cascade", "params": {"margin": args.cascade_margin}}],
        "seeds": list(range(args.seeds)), "max_steps": 5000, "graders": ["evolution_best"],
    }, "<benchmark>")


def main(args: Args) -> dict[str, Any]:
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as out:
        run_scenario(_scenario(args), out, workers=args.workers, progress=False, report=False)
        records = read_records(f"{out}/{RECORDS_FILE}").records
    wall_s = time.perf_counter() - started
    failed = [r for r in records if r.termination != "budget_exhausted"]
    if failed:
        raise RuntimeError(f"{len(failed)} episodes did not finish: {[r.error for r in failed][:3]}")
    by = {(r.env.task_id, r.agent.id, r.seed): r for r in records}
    seeds = list(range(args.seeds))
    console = Console(width=150)

    circles = Table(title=f"circle_packing_26, always_full, mutate source, budget {args.budget:g} full evaluations")
    for column in ("seed", "seed program", "best found", "rise", "at full evaluation"):
        circles.add_column(column, justify="right")
    rises = []
    for seed in seeds:
        record = by[("circle_packing_26", "always_full", seed)]
        state = record.final.state  # type: ignore[union-attr]
        curve = best_curve(record)
        first = next(x for x, best in curve if best >= state["best_score"])
        rises.append(state["best_score"] - state["seed_score"])
        circles.add_row(str(seed), f"{state['seed_score']:.4f}", f"{state['best_score']:.4f}",
                        f"{rises[-1]:+.4f}", f"{first:g}")
    console.print(circles)

    finals = [by[("bin_packing_online", "always_full", s)].final.state["best_score"] for s in seeds]  # type: ignore[union-attr]
    target = args.target if args.target is not None else statistics.mean(finals)
    reach = {agent: {s: evaluations_to_reach(by[("bin_packing_online", agent, s)], target) for s in seeds}
             for agent in ("always_full", "cascade")}
    crossing, crossing_equivalents = {}, {}
    for agent in reach:
        runs = [by[("bin_packing_online", agent, s)] for s in seeds]
        crossing[agent] = first_crossing(*mean_curve(runs), target)
        crossing_equivalents[agent] = first_crossing(*mean_curve(runs, x="full_equivalents"), target)
    table = Table(title=f"bin_packing_online (30 x {args.items} items): full evaluations to reach {target:.4f} "
                        f"({'given' if args.target is not None else 'mean final best of always_full'})")
    for column in ("allocator", *(f"seed {s}" for s in seeds), "median", "mean-curve crossing",
                   "crossing in full-equivalents (partials counted)", "partial evals (mean)"):
        table.add_column(column, justify="left" if column == "allocator" else "right")
    for agent, values in reach.items():
        reached = [v for v in values.values() if v is not None]
        partials = statistics.mean(by[("bin_packing_online", agent, s)].final.state["counts"]["partial"] for s in seeds)  # type: ignore[union-attr]
        table.add_row(agent, *("-" if values[s] is None else f"{values[s]:g}" for s in seeds),
                      f"{statistics.median(reached):g}" if len(reached) == len(seeds) else "-",
                      "-" if crossing[agent] is None else f"{crossing[agent]:g}",
                      "-" if crossing_equivalents[agent] is None else f"{crossing_equivalents[agent]:g}", f"{partials:.1f}")
    console.print(table)
    def spent(agent: str, seed: int) -> float:  # not reached within the budget counts as infinite
        value = reach[agent][seed]
        return float("inf") if value is None else value

    fewer = sum(spent("cascade", s) < spent("always_full", s) for s in seeds)
    ties = sum(spent("cascade", s) == spent("always_full", s) for s in seeds)
    both = [s for s in seeds if reach["cascade"][s] is not None and reach["always_full"][s] is not None]
    both_fewer = sum(spent("cascade", s) < spent("always_full", s) for s in both)
    console.print(f"cascade needed fewer full evaluations in {fewer} of {len(seeds)} seeds, as many in {ties} "
                  f"('-' = not reached within the budget); of the {len(both)} seeds where both reached the target, "
                  f"cascade needed fewer in {both_fewer}; wall time {wall_s:.0f} s")
    return {"rises": rises, "target": target, "reach": reach, "crossing": crossing,
            "crossing_equivalents": crossing_equivalents, "fewer": fewer, "ties": ties}


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=5)
    parser.add_argument("--budget", type=float, default=30.0)
    parser.add_argument("--items", type=int, default=200)
    parser.add_argument("--target", type=float, default=None)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--workers", type=int, default=2)
    parser.add_argument("--cascade-margin", type=float, default=0.02)
    ns = parser.parse_args()
    return Args(ns.seeds, ns.budget, ns.items, ns.target, ns.sandbox, ns.workers, ns.cascade_margin)


if __name__ == "__main__":
    main(_parse())
