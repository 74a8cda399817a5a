"""GRPO vs GRPODropout vs drop-without-re-centring vs random drop, several seeds, same sampling budget.

Every variant starts from the same supervised warm start (seed ``sft_seed``) and samples the same
number of rollouts per step (``prompts_per_step`` x ``group_size``); they differ only in which
rollouts enter the update and with what advantages. Printed per variant: final greedy accuracy on
a held-out set (median and range over seeds, and each seed), policy entropy at the start and the
end of training, and mean rollouts used per prompt. Curves go to ``out_dir`` as a PNG, per-step
metrics as JSONL files.

Run: ``python benchmarks/grpo_dropout.py [--steps 300] [--seeds 0 1 2]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from rich.console import Console
from rich.table import Table

from rsigym.agents.train import grpo
from rsigym.agents.train.runlog import plot_curves

VARIANTS = ("none", "dropout", "drop_no_recentre", "random_drop")


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    """GRPO seeds per variant (problems, sampling, random filter)"""
    variants: tuple[str, ...] = VARIANTS
    """rollout filters compared"""
    steps: int = 300
    """policy updates per run"""
    prompts_per_step: int = 32
    """problems per step"""
    group_size: int = 8
    """rollouts per problem"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    drop_share: float = 0.125
    """most rollouts dropped per group by the dropout variants"""
    sft_steps: int = 600
    """most steps of the shared warm start"""
    eval_size: int = 1000
    """held-out problems (greedy decoding)"""
    eval_every: int = 25
    """steps between held-out evaluations"""
    out_dir: str = "runs/grpo_dropout"
    """JSONL logs, the PNG and the warm-start cache"""
    threads: int = 1
    """torch intra-op threads"""


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def window_mean(history: list[dict], key: str, first: bool, share: float = 0.1) -> float:
    """Mean of ``key`` over the first or last ``share`` of the steps."""
    n = max(1, int(len(history) * share))
    part = history[:n] if first else history[-n:]
    return statistics.fmean(r[key] for r in part)


def main(args: Args | None = None) -> dict:
    """Run every variant x seed, print the table, return ``{"variants": {name: {...}}, "initial_accuracy"}``."""
    args = args or Args()
    out = Path(args.out_dir)
    runs: dict[str, list[dict]] = {}
    initial = None
    for variant in args.variants:
        for seed in args.seeds:
            result = grpo.main(grpo.Args(
                filter=variant, drop_share=args.drop_share, steps=args.steps, prompts_per_step=args.prompts_per_step,
                group_size=args.group_size, learning_rate=args.learning_rate, seed=seed, eval_every=args.eval_every,
                eval_size=args.eval_size, sft_steps=args.sft_steps, cache_dir=str(out / "cache"),
                log_dir=str(out), threads=args.threads))
            initial = result["initial_accuracy"]
            runs.setdefault(variant, []).append(result)

    console = Console(width=200)  # one line per row when piped to a file
    table = Table(title=f"GRPO rollout filters: {len(args.seeds)} seeds x {args.steps} steps x "
                        f"{args.prompts_per_step} prompts x G={args.group_size} (warm start greedy accuracy "
                        f"{initial:.3f})")
    for column in ("variant", "final greedy acc median [min, max]", "per seed", "mean",
                   "entropy first 10%", "entropy last 10%", "sampled acc last 10%", "rollouts used / prompt",
                   "s per run"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    summary: dict[str, dict] = {}
    for variant, results in runs.items():
        finals = [r["final_accuracy"] for r in results]
        entropy_start = statistics.fmean(window_mean(r["history"], "entropy", True) for r in results)
        entropy_end = statistics.fmean(window_mean(r["history"], "entropy", False) for r in results)
        sampled_end = statistics.fmean(window_mean(r["history"], "accuracy", False) for r in results)
        used = statistics.fmean(x["rollouts_used"] for r in results for x in r["history"])
        seconds = statistics.median(r["seconds"] for r in results)
        summary[variant] = {"final_accuracy": finals, "entropy_start": entropy_start, "entropy_end": entropy_end,
                            "sampled_accuracy_end": sampled_end, "rollouts_used": used, "seconds": seconds}
        table.add_row(variant, spread(finals), " ".join(f"{v:.3f}" for v in finals), f"{statistics.fmean(finals):.3f}",
                      f"{entropy_start:.3f}", f"{entropy_end:.3f}", f"{sampled_end:.3f}", f"{used:.2f}",
                      f"{seconds:.0f}")
    console.print(table)
    plot = plot_curves({f"{v}/{r['seed']}": r["history"] for v, results in runs.items() for r in results},
                       ["accuracy", "eval_accuracy", "entropy", "rollouts_used"], out / "grpo_dropout.png",
                       title="GRPO rollout filters (one line per seed)")
    console.print(f"curves: {plot}; logs: {out}/grpo_*.jsonl")
    (out / "summary.json").write_text(json.dumps({"initial_accuracy": initial, "variants": summary}, indent=1))
    return {"initial_accuracy": initial, "variants": summary}


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Args()
    parser.add_argument("--seeds", type=int, nargs="+", default=list(defaults.seeds))
    parser.add_argument("--variants", nargs="+", default=list(defaults.variants))
    for name in ("steps", "prompts_per_step", "group_size", "sft_steps", "eval_size", "eval_every", "threads"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("learning_rate", "drop_share"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    parser.add_argument("--out-dir", default=defaults.out_dir)
    ns = vars(parser.parse_args())
    ns["seeds"], ns["variants"] = tuple(ns["seeds"]), tuple(ns["variants"])
    return Args(**ns)


if __name__ == "__main__":
    started = time.perf_counter()
    main(_parse())
    print(f"total {time.perf_counter() - started:.0f} s")
