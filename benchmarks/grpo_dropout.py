"""GRPO vs GRPODropout vs its ablations vs the entropy-control baselines (KL-Cov, Clip-Cov, entropy bonus).

Every variant starts from the same supervised warm start (pinned at ``sft_steps`` steps, cached)
and samples the same rollouts per step (``prompts_per_step`` x ``group_size``); they differ only
in which rollouts enter the update, with what advantages, and in the entropy control. The task is
``digitsum`` (many valid answers, so a group's rollouts are distinct and each is unlikely: the
regime GRPODropout is about). Per seed it records held-out sampled Mean@8 (= the Pass@1 estimate),
Mean@1 (first sample only), Pass@8, distinct right answers among the 8 samples, greedy accuracy,
the entropy curve, and the rollouts used per prompt over groups with a non-zero advantage; then
paired differences against vanilla GRPO with bootstrap CIs. Writes ``results`` (JSON, committed)
and prints the table ``posttrain_tables.py`` puts into README.md.

Run: ``nice python benchmarks/grpo_dropout.py`` (about 10 min of one core; ``--seeds 0 1`` for less).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from posttrain_tables import cached_run, grpo_table, summarise

from rsigym.agents.train import grpo
from rsigym.agents.train.runlog import plot_curves

VARIANTS: dict[str, tuple[str, str]] = {  # name -> (rollout filter, entropy control)
    "none": ("none", "none"), "dropout": ("dropout", "none"), "random_drop": ("random_drop", "none"),
    "kl_cov": ("none", "kl_cov"), "clip_cov": ("none", "clip_cov"), "entropy_bonus": ("none", "entropy_bonus"),
}
METRICS = ("mean_at_8", "pass_at_8", "mean_at_1", "greedy", "distinct_correct_at_8")


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """GRPO seeds per variant (problems, sampling, random filter); the warm start is shared"""
    variants: tuple[str, ...] = tuple(VARIANTS)
    """variants compared (``none`` is the baseline of the paired differences and must be there)"""
    steps: int = 100
    """policy updates per run"""
    prompts_per_step: int = 16
    """problems per step"""
    group_size: int = 8
    """rollouts per problem"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    drop_share: float = 0.125
    """most rollouts dropped per group by the dropout variants"""
    sft_steps: int = 200
    """supervised steps of the shared warm start (pinned)"""
    task: str = "digitsum"
    """task family"""
    length: int = 5
    """digits per response"""
    eval_size: int = 200
    """held-out problems (greedy, and 8 samples each)"""
    eval_every: int = 50
    """steps between greedy evaluations"""
    out_dir: str = "runs/grpo_dropout"
    """JSONL logs, the PNG and the warm-start cache"""
    results: str = "benchmarks/results/grpo_dropout.json"
    """the results file (empty: not written)"""
    runs_only: bool = False
    """only run (and cache) the runs of ``variants``, no summary: to spread a benchmark over processes"""
    threads: int = 1
    """torch intra-op threads"""


def window_mean(history: list[dict], key: str, first: bool, share: float = 0.1) -> float:
    """Mean of ``key`` over the first or last ``share`` of the steps."""
    n = max(1, int(len(history) * share))
    part = history[:n] if first else history[-n:]
    return statistics.fmean(r[key] for r in part)


def entropy_curve(history: list[dict], points: int = 10) -> list[float]:
    """Mean entropy over each tenth of the run."""
    size = max(1, len(history) // points)
    return [statistics.fmean(r["entropy"] for r in history[i:i + size]) for i in range(0, len(history), size)][:points]


def seed_metrics(result: dict) -> dict[str, float]:
    history, final = result["history"], result["final_sampled"]
    used = [r["rollouts_used_informative"] for r in history if r["rollouts_used_informative"] is not None]
    return {"mean_at_8": final["mean_at_k"], "pass_at_8": final["pass_at_k"], "mean_at_1": final["first_sample"],
            "greedy": result["final_accuracy"], "distinct_correct_at_8": final["distinct_correct_at_k"],
            "entropy_start": window_mean(history, "entropy", True), "entropy_end": window_mean(history, "entropy", False),
            "rollouts_used_informative": statistics.fmean(used) if used else float("nan"),
            "distinct_share_start": window_mean(history, "distinct_share", True),
            "distinct_share_end": window_mean(history, "distinct_share", False),
            "drops": sum(r["drops"] for r in history), "drops_with_copy": sum(r["drops_with_copy"] for r in history),
            "controlled_share": statistics.fmean(r["controlled_share"] for r in history),
            "seconds": result["seconds"]}


def main(args: Args | None = None) -> dict:
    """Run every variant x seed, print the table, write and return the results."""
    args = args or Args()
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown or not (args.runs_only or "none" in args.variants):
        raise ValueError(f"variants must include 'none' and come from {', '.join(VARIANTS)}; got {args.variants}")
    out = Path(args.out_dir)
    runs: dict[str, list[dict]] = {}
    for variant in args.variants:
        rollout_filter, control = VARIANTS[variant]
        for seed in args.seeds:
            runs.setdefault(variant, []).append(cached_run(grpo.main, grpo.Args(
                filter=rollout_filter, control=control, drop_share=args.drop_share, steps=args.steps,
                prompts_per_step=args.prompts_per_step, group_size=args.group_size, learning_rate=args.learning_rate,
                seed=seed, eval_every=args.eval_every, eval_size=args.eval_size, sft_steps=args.sft_steps,
                task=args.task, length=args.length, cache_dir=str(out / "cache"), log_dir=str(out),
                threads=args.threads), out))
    if args.runs_only:
        return {}
    per_seed = {v: {k: [seed_metrics(r)[k] for r in results] for k in seed_metrics(results[0])}
                for v, results in runs.items()}
    first = runs["none"][0]
    results = {
        "settings": {**dataclasses.asdict(args), "seeds": list(args.seeds), "variants": list(args.variants)},
        "warm_start": {"sft_steps": args.sft_steps, "greedy_accuracy": first["initial_accuracy"],
                       "mean_at_8": first["initial_sampled"]["mean_at_k"],
                       "pass_at_8": first["initial_sampled"]["pass_at_k"], "sft": first["warm_start"]},
        "variants": summarise(per_seed, "none", METRICS, list(args.seeds)),
        "entropy_curves": {v: [statistics.fmean(c) for c in zip(*(entropy_curve(r["history"]) for r in rs))]
                           for v, rs in runs.items()},
    }
    print(grpo_table(results))
    plot = plot_curves({f"{v}/{r['seed']}": r["history"] for v, rs in runs.items() for r in rs},
                       ["accuracy", "eval_accuracy", "entropy", "rollouts_used"], out / "grpo_dropout.png",
                       title="GRPO rollout filters and entropy controls (one line per seed)")
    print(f"curves: {plot}; logs: {out}/grpo_*.jsonl")
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Args()
    parser.add_argument("--seeds", type=int, nargs="+", default=list(defaults.seeds))
    parser.add_argument("--variants", nargs="+", default=list(defaults.variants))
    for name in ("steps", "prompts_per_step", "group_size", "sft_steps", "length", "eval_size", "eval_every",
                 "threads"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("learning_rate", "drop_share"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    for name in ("task", "out_dir", "results"):
        parser.add_argument("--" + name.replace("_", "-"), default=getattr(defaults, name))
    parser.add_argument("--runs-only", action="store_true")
    ns = vars(parser.parse_args())
    ns["seeds"], ns["variants"] = tuple(ns["seeds"]), tuple(ns["variants"])
    return Args(**ns)


if __name__ == "__main__":
    started = time.perf_counter()
    main(_parse())
    print(f"total {time.perf_counter() - started:.0f} s")
