"""DataSelection-v0: do the pool's hidden factors matter, how long does a student take, and do
the selectors beat the random reference?

Table 1, factors. Subsets of ``group_size`` rows built from single hidden factors (clean only;
clean plus skills: missing function, missing parameter, long context, recovery; the same with
25% systematic wrong labels; with 25% truncated requests; without long context; random), each
trained with ``seeds`` student seeds: accuracy per evaluation category, mean and the standard
deviation over seeds (the seed noise).

Table 2, time. Student training (plus scoring the hidden evaluation) per 1,000 items, median of
the uncached runs of Table 1; and the wall time of the full evaluation of one submission (five
groups and ``n_random`` random subsets, ``seeds`` seeds each) from a cold score cache.

Table 3, selectors. For each selector (run on the visible items and base losses only): the top
group's gain over the paired random reference with its 95% bootstrap CI, the percentile among
the random draws, the five groups' scores and the Spearman of the predicted order.

Run: ``python benchmarks/dataselect.py [--pool-size 10000] [--group-size 1000] [--seeds 3]``.
"""

from __future__ import annotations

import argparse
import os
import resource
import statistics
import tempfile
import time
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch
from rich.console import Console
from rich.table import Table

from rsigym.envs.dataselect.subset_selectors import select
from rsigym.envs.dataselect.evaluation import random_subsets, score_submission
from rsigym.envs.dataselect.pools import PoolSpec, cached_scores, make_pool, warm_scores

SKILLS = ("clean", "missing_function", "missing_parameter", "long_context", "recovery")
WRONG = ("wrong_tool", "wrong_roles", "guess_not_ask")


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    pool: str = "function_calling"
    """pool to measure"""
    pool_size: int = 10_000
    """rows in the pool"""
    group_size: int = 1_000
    """rows per subset"""
    eval_per_category: int = 200
    """hidden evaluation items per category"""
    seeds: int = 3
    """student seeds per subset"""
    n_random: int = 10
    """random subsets in the reference"""
    selectors: tuple[str, ...] = ("stratified", "most_suspicious")
    """selectors of Table 3"""
    parts: tuple[str, ...] = ("factors", "time", "selectors")
    """tables to print"""
    workers: int = 2
    """processes that train the students of a submission (the env's ``eval_workers``)"""
    results: dict[str, Any] = field(default_factory=dict)
    """filled by ``main``: the numbers behind the tables"""


def factor_subsets(factors: list[str], size: int, rng: np.random.Generator) -> dict[str, list[int]]:
    f = np.array(factors)

    def draw(kinds: tuple[str, ...], n: int, exclude: tuple[str, ...] = ()) -> list[int]:
        rows = np.where(np.isin(f, kinds) & ~np.isin(f, exclude))[0]
        return rng.choice(rows, size=min(n, len(rows)), replace=False).tolist()

    quarter = size // 4
    return {
        "clean only": draw(("clean",), size),
        "clean + skills": draw(SKILLS, size),
        "+ systematic wrong labels (25%)": draw(SKILLS, size - quarter) + draw(WRONG, quarter),
        "+ truncation (25%)": draw(SKILLS, size - quarter) + draw(("truncated",), quarter),
        "clean + skills, no long context": draw(SKILLS, size, exclude=("long_context",)),
        "random": rng.choice(len(f), size=size, replace=False).tolist(),
    }


def _cpu_s() -> float:
    """CPU seconds of this process and of its finished children (the workers)."""
    own, children = resource.getrusage(resource.RUSAGE_SELF), resource.getrusage(resource.RUSAGE_CHILDREN)
    return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def main(args: Args) -> dict[str, Any]:
    torch.set_num_threads(1)
    console = Console(width=160)
    spec = PoolSpec(args.pool, args.pool_size, args.group_size, args.eval_per_category, 0)
    pool = make_pool(spec)
    seeds = list(range(args.seeds))
    train_s: list[float] = []
    train_cpu_s: list[float] = []
    if "factors" in args.parts:
        table = Table(title=f"Student accuracy by training subset ({args.group_size} rows, {args.seeds} seeds; mean ± sd over seeds)")
        table.add_column("subset")
        for c in (*pool.categories, "score"):
            table.add_column(c, justify="right")
        factor_rows = {}
        for name, rows in factor_subsets(pool.factors, args.group_size, np.random.default_rng(1)).items():
            runs = []
            for s in seeds:
                start, cpu = time.perf_counter(), time.process_time()
                runs.append(pool.train_and_score(rows, s))  # uncached: every run really trains
                train_s.append((time.perf_counter() - start) * 1000 / len(rows))
                train_cpu_s.append((time.process_time() - cpu) * 1000 / len(rows))
            cells = {c: (statistics.mean(r[c] for r in runs), statistics.stdev(r[c] for r in runs) if len(runs) > 1 else 0.0)
                     for c in (*pool.categories, "score")}
            factor_rows[name] = cells
            table.add_row(name, *[f"{m:.3f} ± {sd:.3f}" for m, sd in cells.values()])
        console.print(table)
        args.results["factors"] = factor_rows
    losses = pool.base_losses(range(len(pool)))
    items = [pool.item(r) for r in range(len(pool))]
    randoms = random_subsets(len(pool), args.group_size, args.n_random, spec.data_seed)
    if "time" in args.parts:
        groups, order = select("stratified", items, losses, args.group_size, 0)
        with tempfile.TemporaryDirectory() as cold:
            previous = os.environ.get("RSIGYM_CACHE")
            os.environ["RSIGYM_CACHE"] = cold  # a cold score cache: every student trains
            try:
                start, cpu = time.perf_counter(), _cpu_s()
                score_submission(groups, order, seeds, randoms, lambda r, s: cached_scores(pool, r, s),
                                 prefetch=lambda jobs: warm_scores(spec, jobs, args.workers))
                full_s, full_cpu_s = time.perf_counter() - start, _cpu_s() - cpu
            finally:
                if previous is None:
                    del os.environ["RSIGYM_CACHE"]
                else:
                    os.environ["RSIGYM_CACHE"] = previous
        table = Table(title="Time on this machine (1 torch thread)")
        table.add_column("measure")
        table.add_column("wall s", justify="right")
        table.add_column("CPU s", justify="right")
        if train_s:
            table.add_row(f"student training + evaluation per 1,000 items (median of {len(train_s)})",
                          f"{statistics.median(train_s):.2f}", f"{statistics.median(train_cpu_s):.2f}")
        table.add_row(f"full evaluation of one submission, cold ({5 * len(seeds)} + {args.n_random * len(seeds)} "
                      f"students, {args.workers} workers)", f"{full_s:.1f}", f"{full_cpu_s:.1f}")
        console.print(table)
        console.print(f"load average (1/5/15 min) at the end: {os.getloadavg()}, on {os.cpu_count()} CPUs")
        args.results["time"] = {"train_s_per_1000": statistics.median(train_s) if train_s else None,
                                "full_evaluation_s": full_s, "full_evaluation_cpu_s": full_cpu_s}
    if "selectors" in args.parts:
        table = Table(title=f"Selectors vs the random reference ({args.n_random} random subsets x {args.seeds} seeds, paired)")
        for column in ("selector", "top score", "random", "gain", "95% CI", "percentile", "group scores", "top best", "Spearman"):
            table.add_column(column, justify="right")
        for name in args.selectors:
            groups, order = select(name, items, losses, args.group_size, 0)
            m = score_submission(groups, order, seeds, randoms, lambda r, s: cached_scores(pool, r, s),
                                 prefetch=lambda jobs: warm_scores(spec, jobs, args.workers))
            args.results[name] = m
            table.add_row(name, f"{m['top_score']:.4f}", f"{m['random_mean']:.4f}", f"{m['gain']:+.4f}",
                          f"[{m['gain_ci'][0]:+.4f}, {m['gain_ci'][1]:+.4f}]", f"{m['percentile']:.0f}",
                          " ".join(f"{s:.3f}" for s in m["group_scores"]),
                          "tie" if m["top_tie"] else str(m["top_is_best"]), f"{m['spearman']:.2f}")
        console.print(table)
    return args.results


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for name, default in vars(Args()).items():
        if name == "results":
            continue
        flag = "--" + name.replace("_", "-")
        if isinstance(default, tuple):
            parser.add_argument(flag, nargs="+", default=default)
        else:
            parser.add_argument(flag, type=type(default), default=default)
    namespace = parser.parse_args()
    values: dict[str, Any] = {k: tuple(v) if isinstance(v, list) else v for k, v in vars(namespace).items()}
    return Args(**values)


if __name__ == "__main__":
    main(_parse())
