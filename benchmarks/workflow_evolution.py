"""MASS-style workflow search offline at an equal evaluation budget: does the judge-guided loop beat its controls?

For each seed (one secret salt per seed, shared by every arm, so the arms meet the same task
instances): from the seed workflow, spend ``--budget`` candidate workflows (each run on the five
training tasks, one per family) in three ways, then run every resulting workflow on held-out
tasks (``--test-per-family`` instances per family) with the same role model:

* ``seed``: no search;
* ``random search``: ``budget`` independent random candidates (1-3 generic edits of the seed),
  the one the judge prefers most over the seed is kept;
* ``coin-judge loop``: the hill-climbing loop with the coin judge in the judge's place;
* ``evolved``: the hill-climbing loop with the scripted judge.

The optimiser draws from the generic operator set (``operators``): it knows nothing of which
edits win. Prints per family and pooled: mean hidden-key score per arm (bootstrap CI over
held-out tasks), paired differences to the evolved arm with CIs, output tokens and score per
1k output tokens, the judge's in-loop agreement with the grader, and what answering
model_comparison blind scores (each constant answer, over 60 instances; chance is 1/3).

    python benchmarks/workflow_evolution.py --seeds 0 1 2 [--budget 6] [--test-per-family 4]
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

import rsigym.envs.workflow.mass_policies  # noqa: F401  (offline judge and optimiser)
import rsigym.envs.workflow.policies  # noqa: F401  (offline roles)
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.analyses import agreement_counts, agreement_rate, paired_verdict
from rsigym.envs.workflow.families import FAMILIES, MODELS
from rsigym.envs.workflow.mass import EvolutionResult, Execution, evolve, execute, random_search
from rsigym.envs.workflow.spec import seed_spec
from rsigym.envs.workflow.tasks import make_task, new_salt
from rsigym.sandbox import open_sandbox
from rsigym.report.stats import bootstrap_ci

ARMS = ("seed", "random search", "coin-judge loop", "evolved")


@dataclass
class Args:
    """Benchmark settings."""

    seeds: list[int] = field(default_factory=lambda: [0, 1, 2])
    budget: int = 6                  # candidate workflows per arm (each run on every training task)
    test_per_family: int = 4         # held-out instances per family
    role_model: str = "rsigym/workflow_scripted"
    judge_model: str = "rsigym/workflow_judge"
    control_judge: str = "rsigym/workflow_judge_coin"
    optimizer_model: str = "rsigym/workflow_optimizer"
    sandbox: str = "auto"
    out: str = "workflow_bench_out"
    write_spec: str | None = None


def train_tasks(seed: int) -> list[str]:
    return [f"{name}-{seed:03d}" for name in FAMILIES]


def test_tasks(seed: int, per_family: int) -> list[str]:
    return [f"{name}-{100 + seed * per_family + i:03d}" for name in FAMILIES for i in range(per_family)]


def ci_text(values: list[float]) -> str:
    if len(values) < 2:
        return "insufficient data"
    low, high = bootstrap_ci(values)
    return f"{sum(values) / len(values):.3f} [{low:.3f}, {high:.3f}]"


def blind_model_comparison(salt: str, count: int = 60) -> dict[str, float]:
    """Mean answer score of each constant answer to model_comparison (no data read)."""
    keys = [make_task(f"model_comparison-{i:03d}", salt).key["best_model"] for i in range(count)]
    return {m: sum(k == m for k in keys) / count for m in MODELS}


def search_arms(args: Args, seed: int, salt: str, box: Any) -> dict[str, EvolutionResult]:
    common = dict(role_model=args.role_model, seed=seed, sandbox=box, task_salt=salt)
    budget = dict(rounds=args.budget, candidates=1, optimizer_model=args.optimizer_model)
    return {
        "random search": random_search(train_tasks(seed), judge_model=args.judge_model, budget=args.budget, **common),
        "coin-judge loop": evolve(train_tasks(seed), judge_model=args.control_judge, **budget, **common),
        "evolved": evolve(train_tasks(seed), judge_model=args.judge_model, **budget, **common),
    }


def main(args: Args) -> dict[str, Any]:
    console = Console(width=180)
    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    started = time.perf_counter()
    held: dict[str, list[Execution]] = {arm: [] for arm in ARMS}
    in_loop: list[Any] = []
    edits: dict[str, list[str]] = {arm: [] for arm in ARMS}
    blind: list[dict[str, float]] = []
    with open_sandbox(args.sandbox) as box:
        for seed in args.seeds:
            salt = new_salt()  # the run's secret: the same instances for every arm of this seed
            blind.append(blind_model_comparison(salt))
            results = search_arms(args, seed, salt, box)
            specs = {"seed": seed_spec(), **{arm: r.final_spec for arm, r in results.items()}}
            for r in results["evolved"].rounds:
                in_loop += [(v, c - i) for v, c, i in zip(r.verdicts, r.candidate_scores, r.incumbent_scores)]
            for arm, result in results.items():
                edits[arm].append(f"s{seed}: " + (", ".join(f"{r.mutation['op']}" for r in result.rounds
                                                              if r.accepted and r.mutation and "op" in r.mutation)
                                                  or ("kept a candidate" if result.final_spec != seed_spec()
                                                      and arm == "random search" else "-")))
            (out / f"evolved_seed{seed}.json").write_text(json.dumps(specs["evolved"], indent=1, sort_keys=True))
            if args.write_spec and seed == args.seeds[0]:
                Path(args.write_spec).write_text(json.dumps(dict(specs["evolved"], name="evolved_offline"),
                                                            indent=1, sort_keys=True) + "\n")
            player = RolePlayer(args.role_model, seed=seed)
            for arm in ARMS:
                held[arm] += [execute(specs[arm], t, player, seed=seed, sandbox=box, task_salt=salt)
                              for t in test_tasks(seed, args.test_per_family)]
    table = Table(title=f"Held-out hidden-key score at an equal budget of {args.budget} candidate workflows "
                        f"({len(args.seeds)} seeds x {args.test_per_family} instances per family; unit: held-out task)")
    table.add_column("family")
    for arm in ARMS:
        table.add_column(arm)
    table.add_column("evolved - seed (paired)")
    families = [*FAMILIES, "all"]
    for family in families:
        pick = {arm: [e.score for e in held[arm] if family == "all" or e.task_id.startswith(family + "-")] for arm in ARMS}
        gain = [b - a for a, b in zip(pick["seed"], pick["evolved"])]
        table.add_row(family, *(ci_text(pick[arm]) for arm in ARMS), ci_text(gain))
    console.print(table)
    pooled = {arm: [e.score for e in held[arm]] for arm in ARMS}
    per_seed = len(FAMILIES) * args.test_per_family  # held[arm] is filled seed after seed
    seeds_of = [args.seeds[i // per_seed] for i in range(len(held["seed"]))]
    for control in ("seed", "random search", "coin-judge loop"):
        diff = [b - a for a, b in zip(pooled[control], pooled["evolved"])]
        console.print(f"evolved - {control} (paired): {paired_verdict(diff, [f'seed {s}' for s in seeds_of])}")
    tokens = {arm: sum(e.output_tokens for e in held[arm]) / len(held[arm]) for arm in ARMS}
    per_k = {arm: sum(pooled[arm]) / len(pooled[arm]) / max(tokens[arm], 1.0) * 1000 for arm in ARMS}
    console.print("output tokens per task: " + ", ".join(f"{a} {tokens[a]:.0f}" for a in ARMS))
    console.print("score per 1k output tokens: " + ", ".join(f"{a} {per_k[a]:.2f} ({per_k[a] / per_k['seed']:.2f}x seed)"
                                                           for a in ARMS))
    console.print("accepted edits: " + " | ".join(f"{arm}: {'; '.join(edits[arm])}" for arm in ARMS[1:]))
    counts = agreement_counts(in_loop)
    rate = agreement_rate(in_loop)
    console.print(f"judge in-loop verdicts vs the grader ({len(in_loop)} candidate-vs-incumbent task pairs): "
                  f"agreement on separated pairs {rate:.0%}; {counts}")
    mean_blind = {m: float(np.mean([b[m] for b in blind])) for m in MODELS}
    console.print("model_comparison answered blind (share right, 60 instances per seed): "
                  + ", ".join(f"{m} {v:.2f}" for m, v in mean_blind.items()) + " (chance 0.33)")
    console.print(f"wall time {time.perf_counter() - started:.0f} s")
    return {"pooled": pooled, "tokens": tokens, "blind": mean_blind, "in_loop": counts}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, nargs="+", default=[0, 1, 2])
    parser.add_argument("--budget", type=int, default=6)
    parser.add_argument("--test-per-family", type=int, default=4)
    parser.add_argument("--sandbox", default="auto")
    parser.add_argument("--out", default="workflow_bench_out")
    parser.add_argument("--write-spec", default=None)
    ns = parser.parse_args()
    main(Args(seeds=ns.seeds, budget=ns.budget, test_per_family=ns.test_per_family, sandbox=ns.sandbox,
              out=ns.out, write_spec=ns.write_spec))
    sys.exit(0)
