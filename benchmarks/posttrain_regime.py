"""Regime statistics of the post-training benchmarks: the old addition regime against the digit-sum one.

For each regime, a short GRPODropout run from the warm start measures how distinct a group's
rollouts are and what dropping removes (does an identical copy stay in the group? how likely was
the dropped rollout?), and a short DIAL (beta 0.5) distillation run measures the teacher's
certainty, the share of low-low tokens, the low-low share among divergence-only picks, and how
many of DIAL's picks divergence-only selection also makes. ``before`` are the settings the
benchmarks used to have (addition, three digits, the teacher trained to ~100%); ``after`` the
benchmarks' defaults now. Writes ``results`` (JSON, committed); ``posttrain_tables.py`` renders it.

Run: ``nice python benchmarks/posttrain_regime.py`` (a few minutes of one core, mostly warm starts).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time
from dataclasses import dataclass
from pathlib import Path

import dial_opd
import grpo_dropout
from posttrain_tables import regime_table

from rsigym.agents.train import grpo, opd


@dataclass
class Args:
    steps: int = 20
    """steps of each short run (statistics are over these, from the warm start)"""
    seed: int = 0
    """seed of the short runs"""
    low_prob: float = 0.1
    """low-low threshold"""
    before_sft_steps: int = 600
    """the addition student's warm start: the old benchmark's most steps (it stopped earlier once validation
    accuracy reached 0.4, which jumps from ~0.4 to ~0.7 between two checks; pinned at 300 steps the cosine
    schedule leaves greedy accuracy at 0.04, not the old regime)"""
    before_teacher_sft_steps: int = 700
    """the addition teacher's supervised steps (the old default)"""
    after_sft_steps: int = grpo_dropout.Args.sft_steps
    """the digit-sum warm start (both benchmarks' default)"""
    after_teacher_sft_steps: int = dial_opd.Args.teacher_sft_steps
    """the digit-sum teacher (the distillation benchmark's default)"""
    eval_size: int = 200
    """held-out problems for the warm starts' accuracies"""
    out_dir: str = "runs/posttrain_regime"
    """the warm-start cache"""
    results: str = "benchmarks/results/posttrain_regime.json"
    """the results file (empty: not written)"""


def regime(task: str, length: int, sft_steps: int, teacher_sft_steps: int, teacher_temperature: float,
           args: Args) -> dict:
    cache = str(Path(args.out_dir) / "cache")  # shared with nothing else: its own warm starts
    g = grpo.main(grpo.Args(filter="dropout", task=task, length=length, sft_steps=sft_steps, steps=args.steps,
                            seed=args.seed, eval_size=args.eval_size, eval_every=args.steps, cache_dir=cache))
    o = opd.main(opd.Args(selector="dial", beta=0.5, task=task, length=length, student_sft_steps=sft_steps,
                          teacher_sft_steps=teacher_sft_steps, teacher_temperature=teacher_temperature,
                          low_prob=args.low_prob, steps=args.steps, seed=args.seed, eval_size=args.eval_size,
                          eval_every=args.steps, cache_dir=cache))
    gh, oh = g["history"], o["history"]
    drops = sum(r["drops"] for r in gh)
    mean = statistics.fmean
    return {"task": task, "length": length, "sft_steps": sft_steps, "teacher_sft_steps": teacher_sft_steps,
            "teacher_temperature": teacher_temperature,
            "student_greedy": g["initial_accuracy"], "student_mean_at_8": g["initial_sampled"]["mean_at_k"],
            "distinct_share": mean(r["distinct_share"] for r in gh), "drops": drops,
            "drops_with_copy": sum(r["drops_with_copy"] for r in gh),
            "dropped_probability": sum(r["dropped_probability"] for r in gh) / max(drops, 1),
            "teacher_greedy": o["teacher_accuracy"], "teacher_mean_at_8": o["teacher_sampled"]["mean_at_k"],
            "teacher_sure_share": mean(r["teacher_sure_share"] for r in oh),
            "teacher_unsure_share": mean(r["teacher_unsure_share"] for r in oh),
            "low_low_share": mean(r["low_low_share"] for r in oh),
            "low_low_share_at_001": mean(r["low_low_share_at_001"] for r in oh),
            "top_signal_low_low_share": mean(r["top_signal_low_low_share"] for r in oh),
            "dial_overlap_top_signal": mean(r["overlap_top_signal"] for r in oh)}


def main(args: Args | None = None) -> dict:
    args = args or Args()
    g, d = grpo_dropout.Args(), dial_opd.Args()
    if g.sft_steps != d.student_sft_steps or g.length != d.length:
        raise ValueError("the two benchmarks' digit-sum warm starts differ; the 'after' regime would be ambiguous")
    results = {"settings": {"steps": args.steps, "seed": args.seed, "low_prob": args.low_prob},
               "regimes": {
                   "before: addition, 3 digits": regime("addition", 5, args.before_sft_steps,
                                                        args.before_teacher_sft_steps, 1.0, args),
                   f"after: digitsum, length {g.length}": regime(g.task, g.length, args.after_sft_steps,
                                                                 args.after_teacher_sft_steps, d.teacher_temperature,
                                                                 args)}}
    print(regime_table(results))
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(results, indent=1) + "\n")
    return results


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=Args.steps)
    parser.add_argument("--results", default=Args.results)
    started = time.perf_counter()
    ns = parser.parse_args()
    main(Args(steps=ns.steps, results=ns.results))
    print(f"total {time.perf_counter() - started:.0f} s")
