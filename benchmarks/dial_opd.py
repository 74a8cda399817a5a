"""On-policy distillation token selectors: all tokens, divergence only, DIAL (beta sweep), random, and
DIAL's main evidence: the matched-count swap of low-low tokens and its random-swap control.

Every variant distils the same teacher into the same student warm start (both pinned by step
count, cached), with the same problems and sampling budget per step; they differ only in which
sampled tokens enter the loss. The keep ratio is applied exactly (``keep_counts``) and the realised
share is reported. The task is ``digitsum``, with an imperfect teacher whose probabilities are
spread over many valid digits, so tokens that both models find implausible (low-low) carry real
mass. Per seed: held-out sampled Mean@8 and Pass@8, greedy accuracy, reverse KL and entropy at the
end, the low-low share of the selected tokens and the overlap with divergence-only selection;
paired differences against all-token distillation and against divergence-only selection, with
bootstrap CIs. Writes ``results`` (JSON, committed) and prints the README table.

Run: ``nice python benchmarks/dial_opd.py`` (about 10 min of one core; ``--seeds 0 1`` for less).
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

from posttrain_tables import cached_run, dial_table, summarise

from rsigym.agents.train import opd
from rsigym.agents.train.runlog import plot_curves

VARIANTS: dict[str, tuple[str, float]] = {  # name -> (selector, beta)
    "all": ("all", 0.0), "top_signal": ("top_signal", 0.0), "dial_b0.25": ("dial", 0.25), "dial_b0.5": ("dial", 0.5),
    "dial_b1": ("dial", 1.0), "swap_low_low": ("swap_low_low", 0.0), "swap_random": ("swap_random", 0.0),
    "random": ("random", 0.0),
}
METRICS = ("mean_at_8", "pass_at_8", "greedy")


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """distillation seeds per variant (problems, sampling, random selectors); the warm starts are shared"""
    variants: tuple[str, ...] = tuple(VARIANTS)
    """selectors compared (beta 0 of the sweep is ``top_signal``); ``all`` and ``top_signal`` must be there"""
    keep_ratio: float = 0.4
    """share of the batch's tokens kept by the selectors other than ``all``"""
    low_prob: float = 0.1
    """low-low threshold: both probabilities below it"""
    steps: int = 150
    """student updates per run"""
    prompts_per_step: int = 64
    """problems per step (one response each)"""
    learning_rate: float = 1e-3
    """Adam learning rate of the student (a pilot at 3e-4 moved all-token Mean@8 only 0.27 -> 0.30 in 150 steps)"""
    student_sft_steps: int = 200
    """supervised steps of the student's warm start (pinned)"""
    teacher_sft_steps: int = 400
    """supervised steps of the teacher (pinned)"""
    teacher_temperature: float = 1.0
    """temperature the teacher scores tokens at"""
    task: str = "digitsum"
    """task family"""
    length: int = 5
    """digits per response"""
    eval_size: int = 200
    """held-out problems (greedy, and 8 samples each)"""
    eval_every: int = 50
    """steps between greedy evaluations"""
    out_dir: str = "runs/dial_opd"
    """JSONL logs, the PNG and the warm-start cache"""
    results: str = "benchmarks/results/dial_opd.json"
    """the results file (empty: not written)"""
    runs_only: bool = False
    """only run (and cache) the runs of ``variants``, no summary: to spread a benchmark over processes"""
    threads: int = 1
    """torch intra-op threads"""


def tail_mean(history: list[dict], key: str, share: float = 0.1) -> float:
    n = max(1, int(len(history) * share))
    return statistics.fmean(r[key] for r in history[-n:])


def seed_metrics(result: dict) -> dict[str, float]:
    history, final = result["history"], result["final_sampled"]
    return {"mean_at_8": final["mean_at_k"], "pass_at_8": final["pass_at_k"], "mean_at_1": final["first_sample"],
            "greedy": result["final_accuracy"], "distinct_correct_at_8": final["distinct_correct_at_k"],
            "reverse_kl_end": tail_mean(history, "reverse_kl"), "entropy_end": tail_mean(history, "entropy"),
            "selected_share": statistics.fmean(r["selected_share"] for r in history),
            "selected_low_low_share": statistics.fmean(r["selected_low_low_share"] for r in history),
            "overlap_top_signal": statistics.fmean(r["overlap_top_signal"] for r in history),
            "low_low_share_start": statistics.fmean(r["low_low_share"] for r in history[:max(1, len(history) // 10)]),
            "low_low_share_end": tail_mean(history, "low_low_share"), "seconds": result["seconds"]}


def main(args: Args | None = None) -> dict:
    """Run every variant x seed, print the table, write and return the results."""
    args = args or Args()
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown or not (args.runs_only or {"all", "top_signal"} <= set(args.variants)):
        raise ValueError(f"variants must include 'all' and 'top_signal' and come from {', '.join(VARIANTS)}; "
                         f"got {args.variants}")
    out = Path(args.out_dir)
    runs: dict[str, list[dict]] = {}
    for variant in args.variants:
        selector, beta = VARIANTS[variant]
        for seed in args.seeds:
            runs.setdefault(variant, []).append(cached_run(opd.main, opd.Args(
                selector=selector, keep_ratio=args.keep_ratio, beta=beta, low_prob=args.low_prob, steps=args.steps,
                prompts_per_step=args.prompts_per_step, learning_rate=args.learning_rate, seed=seed,
                eval_every=args.eval_every, eval_size=args.eval_size, student_sft_steps=args.student_sft_steps,
                teacher_sft_steps=args.teacher_sft_steps, teacher_temperature=args.teacher_temperature,
                task=args.task, length=args.length, cache_dir=str(out / "cache"), log_dir=str(out),
                threads=args.threads), out))
    if args.runs_only:
        return {}
    per_seed = {v: {k: [seed_metrics(r)[k] for r in results] for k in seed_metrics(results[0])}
                for v, results in runs.items()}
    summary = summarise(per_seed, "all", METRICS, list(args.seeds))
    against_divergence = summarise(per_seed, "top_signal", METRICS, list(args.seeds))
    for variant, entry in summary.items():
        entry["vs_top_signal"] = against_divergence[variant]["vs_top_signal"]
    first = runs["all"][0]
    results = {
        "settings": {**dataclasses.asdict(args), "seeds": list(args.seeds), "variants": list(args.variants)},
        "warm_start": {"student_sft_steps": args.student_sft_steps, "student_greedy": first["initial_accuracy"],
                       "student_mean_at_8": first["initial_sampled"]["mean_at_k"],
                       "teacher_greedy": first["teacher_accuracy"],
                       "teacher_mean_at_8": first["teacher_sampled"]["mean_at_k"],
                       "teacher_pass_at_8": first["teacher_sampled"]["pass_at_k"]},
        "variants": summary,
        "entropy_curves": {v: [statistics.fmean(r["history"][i]["entropy"] for r in rs)
                               for i in range(0, args.steps, max(1, args.steps // 10))] for v, rs in runs.items()},
    }
    print(dial_table(results))
    plot = plot_curves({f"{v}/{r['seed']}": r["history"] for v, rs in runs.items() for r in rs},
                       ["accuracy", "eval_accuracy", "entropy", "reverse_kl"], out / "dial_opd.png",
                       title="On-policy distillation token selectors (one line per seed)")
    print(f"curves: {plot}; logs: {out}/opd_*.jsonl")
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    return results


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Args()
    parser.add_argument("--seeds", type=int, nargs="+", default=list(defaults.seeds))
    parser.add_argument("--variants", nargs="+", default=list(defaults.variants))
    for name in ("steps", "prompts_per_step", "student_sft_steps", "teacher_sft_steps", "length", "eval_size",
                 "eval_every", "threads"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("keep_ratio", "low_prob", "learning_rate", "teacher_temperature"):
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
