"""On-policy distillation token selectors: all tokens vs top-|signal| vs DIAL vs random, keep 40%.

Every variant distils the same teacher into the same student warm start (both trained once, seed
``sft_seed``), with the same problems and sampling budget per step; they differ only in which
sampled tokens enter the loss. Printed per variant: the student's final greedy accuracy on a
held-out set (median and range over seeds, and each seed), its end-of-training reverse KL to the
teacher on its own samples, and its policy entropy. Curves go to ``out_dir``.

DIAL runs once per strength in ``betas``.

Run: ``python benchmarks/dial_opd.py [--steps 400] [--seeds 0 1 2] [--betas 0.5 1.0]``.
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

from rsigym.agents.train import opd
from rsigym.agents.train.runlog import plot_curves

VARIANTS = ("all", "top_signal", "dial", "random")


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    seeds: tuple[int, ...] = (0, 1, 2)
    """distillation seeds per variant (problems, sampling, random selector)"""
    variants: tuple[str, ...] = VARIANTS
    """token selectors compared"""
    keep_ratio: float = 0.4
    """share of each response's tokens kept by the selectors other than ``all``"""
    betas: tuple[float, ...] = (0.5, 1.0)
    """DIAL strengths, one row each (at 1 the score is |p_t - p_s|; at 0 it would be top-|signal|)"""
    steps: int = 400
    """student updates per run"""
    prompts_per_step: int = 64
    """problems per step (one response each)"""
    learning_rate: float = 3e-4
    """Adam learning rate of the student"""
    student_sft_steps: int = 600
    """most steps of the student's warm start"""
    teacher_sft_steps: int = 700
    """steps of the teacher's supervised training"""
    eval_size: int = 1000
    """held-out problems (greedy decoding)"""
    eval_every: int = 25
    """steps between held-out evaluations"""
    out_dir: str = "runs/dial_opd"
    """JSONL logs, the PNG and the warm-start cache"""
    threads: int = 1
    """torch intra-op threads"""


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):.3f} [{min(values):.3f}, {max(values):.3f}]"


def tail_mean(history: list[dict], key: str, share: float = 0.1) -> float:
    n = max(1, int(len(history) * share))
    return statistics.fmean(r[key] for r in history[-n:])


def main(args: Args | None = None) -> dict:
    """Run every variant x seed, print the table, return ``{"variants": {name: {...}}, ...}``."""
    args = args or Args()
    out = Path(args.out_dir)
    runs: dict[str, list[dict]] = {}
    rows = [(v, b) for v in args.variants for b in (args.betas if v == "dial" else (1.0,))]
    for variant, beta in rows:
        label = f"dial beta={beta:g}" if variant == "dial" else variant
        for seed in args.seeds:
            runs.setdefault(label, []).append(opd.main(opd.Args(
                selector=variant, keep_ratio=args.keep_ratio, beta=beta, steps=args.steps,
                prompts_per_step=args.prompts_per_step, learning_rate=args.learning_rate, seed=seed,
                eval_every=args.eval_every, eval_size=args.eval_size, student_sft_steps=args.student_sft_steps,
                teacher_sft_steps=args.teacher_sft_steps, cache_dir=str(out / "cache"), log_dir=str(out),
                threads=args.threads)))
    first = next(iter(runs.values()))[0]
    initial, teacher = first["initial_accuracy"], first["teacher_accuracy"]

    console = Console(width=200)  # one line per row when piped to a file
    table = Table(title=f"On-policy distillation token selectors: keep {args.keep_ratio:g}, "
                        f"{len(args.seeds)} seeds x {args.steps} steps x {args.prompts_per_step} prompts "
                        f"(student starts at {initial:.3f}, teacher {teacher:.3f})")
    for column in ("variant", "student accuracy median [min, max]", "per seed", "mean", "reverse KL last 10%",
                   "entropy last 10%", "tokens in loss", "s per run"):
        table.add_column(column, justify="left" if column == "variant" else "right")
    summary: dict[str, dict] = {}
    for variant, results in runs.items():
        finals = [r["final_accuracy"] for r in results]
        kl = statistics.fmean(tail_mean(r["history"], "reverse_kl") for r in results)
        entropy = statistics.fmean(tail_mean(r["history"], "entropy") for r in results)
        share = statistics.fmean(x["selected_share"] for r in results for x in r["history"])
        seconds = statistics.median(r["seconds"] for r in results)
        summary[variant] = {"final_accuracy": finals, "reverse_kl_end": kl, "entropy_end": entropy,
                            "selected_share": share, "seconds": seconds}
        table.add_row(variant, spread(finals), " ".join(f"{v:.3f}" for v in finals), f"{statistics.fmean(finals):.3f}",
                      f"{kl:.3f}", f"{entropy:.3f}", f"{share:.2f}", f"{seconds:.0f}")
    console.print(table)
    plot = plot_curves({f"{v}/{r['seed']}": r["history"] for v, results in runs.items() for r in results},
                       ["accuracy", "eval_accuracy", "entropy", "reverse_kl"], out / "dial_opd.png",
                       title="On-policy distillation token selectors (one line per seed)")
    console.print(f"curves: {plot}; logs: {out}/opd_*.jsonl")
    result = {"initial_accuracy": initial, "teacher_accuracy": teacher, "variants": summary}
    (out / "summary.json").write_text(json.dumps(result, indent=1))
    return result


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    defaults = Args()
    parser.add_argument("--seeds", type=int, nargs="+", default=list(defaults.seeds))
    parser.add_argument("--variants", nargs="+", default=list(defaults.variants))
    parser.add_argument("--betas", type=float, nargs="+", default=list(defaults.betas))
    for name in ("steps", "prompts_per_step", "student_sft_steps", "teacher_sft_steps", "eval_size", "eval_every",
                 "threads"):
        parser.add_argument("--" + name.replace("_", "-"), type=int, default=getattr(defaults, name))
    for name in ("keep_ratio", "learning_rate"):
        parser.add_argument("--" + name.replace("_", "-"), type=float, default=getattr(defaults, name))
    parser.add_argument("--out-dir", default=defaults.out_dir)
    ns = vars(parser.parse_args())
    ns["seeds"], ns["variants"], ns["betas"] = tuple(ns["seeds"]), tuple(ns["variants"]), tuple(ns["betas"])
    return Args(**ns)


if __name__ == "__main__":
    started = time.perf_counter()
    main(_parse())
    print(f"total {time.perf_counter() - started:.0f} s")
