"""DIAL token selection against all-token and divergence-only distillation, its beta sweep and the
low-low swap with its random control, in a vocabulary where low-low tokens are a real share.

The regime: ``digitsum`` in base 16 (3 digits adding up to a target; 18 tokens), held-out targets
``t % 3 == 1`` that neither warm start nor distillation ever sees (overlap 0, printed). A token is
low-low when both models give it less than ``low_prob_per_vocab / |V|`` (1/18 by default: below the
uniform probability), so the cut-off scales with the vocabulary instead of a fixed 0.1 that, over
12 tokens, catches most valid continuations. The regime table prints the share of sampled tokens
the cut-off selects and how many of them are mistakes (the answer can no longer be right): the
tokens DIAL's logarithmic-mean weight plays down.

Two scores: in distribution (the training targets, fresh samples: where distillation is trained to close the
teacher's lead, and the per-row share of that gap closed is printed) and the held-out targets (the second
column: transfer beyond the training targets). The power table runs the design's all-token run against no
distillation (the student warm start: a known gain in distribution, the one the gap share measures) and against
itself reseeded (a null).

Why round three closed only 29% of the gap (600 steps x 64 targets, learning rate 1e-3) and what closes more:
the learning curve (``benchmarks/dial_curve.py``, warm start 0, all tokens, share closed every 100 steps). At 64
targets per step the share wanders (0.40 at 600 steps, 0.27 at 1100, 0.59 at 1500): each step's per-token
policy-gradient estimate rests on 64 x 3 sampled tokens and is noisy. At 256 targets per step it rises faster
per step and per second (0.33 at 200, 0.39 at 300, 0.58 at 500, 0.46 at 600, 0.73 at 700 to 1000); a learning
rate of 2e-3 is no faster (0.50 at 500); 128 targets per step: 0.31 at 400, 0.48 at 500, 0.41 at 600, 0.46 at 700.
The design takes 500 steps x 128 targets. So the cause was too few sampled tokens, not the student's size (it
closes 73% of the gap) or the token-selection threshold (all-token distillation selects every token).

Every selector distils the same teacher into the same student warm start with the same problems
and sampling per step; only the tokens in the loss differ (the keep ratio is applied exactly).
Every variant runs on every (warm start, seed) of two disjoint seed blocks; per block, paired
differences against all-token distillation get a warm-start-then-seed bootstrap CI, and a claim's
verdict is printed where both blocks agree, else "unstable" (``posttrain_verdicts.py``). Threads are
pinned (``threads``, default 1): the same command writes the same results file.

Run: ``nice -n 10 python benchmarks/dial_opd.py`` (default preset; ``--preset quick`` for a smoke run;
``--blocks 1 --runs-only`` in a second process fills the run cache in parallel).
"""

from __future__ import annotations

import math
import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain_grid import (
    parse_preset_args, power_runs, power_summary, run_blocks, summarise_blocks, update_power, window_mean,
    write_results)
from posttrain_tables import dial_tables

from rsigym.agents.train import opd
from rsigym.agents.train.digitsum import DigitSumTask

RESEED = 1000
"""the null variant distils on all tokens with the distillation seed shifted by this: only the random draws change"""
VARIANTS: dict[str, dict[str, Any]] = {  # name -> the opd.Args fields it changes (seed_shift: added to the seed;
    # steps_factor: multiplies the design's steps, rounded)
    "all": {"selector": "all"}, "top_signal": {"selector": "top_signal", "beta": 0.0},
    "dial_b0.25": {"selector": "dial", "beta": 0.25}, "dial_b0.5": {"selector": "dial", "beta": 0.5},
    "dial_b1": {"selector": "dial", "beta": 1.0}, "swap_low_low": {"selector": "swap_low_low", "beta": 0.0},
    "swap_random": {"selector": "swap_random", "beta": 0.0}, "random": {"selector": "random", "beta": 0.0},
    "all_half_steps": {"selector": "all", "steps_factor": 0.5}, "all_reseed": {"selector": "all", "seed_shift": RESEED},
    "none": {"selector": "all", "steps_factor": 0},  # no distillation: the student warm start, evaluated the same way
}
METRICS = ("mean_at_k_in", "pass_at_k_in", "mean_at_k", "pass_at_k", "train_reward_end")
CLAIMS = (
    {"id": "D1", "text": "DIAL (beta 0.5) raises in-distribution Mean@k over all-token distillation",
     "variant": "dial_b0.5", "baseline": "all", "metric": "mean_at_k_in", "direction": 1},
    {"id": "D2", "text": "DIAL (beta 0.5) raises in-distribution Mean@k over divergence-only selection (beta 0)",
     "variant": "dial_b0.5", "baseline": "top_signal", "metric": "mean_at_k_in", "direction": 1},
    {"id": "D3", "text": "low-low tokens are the ones to leave out: swapping them out of the divergence-only picks "
     "beats swapping out as many random picks (in-distribution Mean@k)", "variant": "swap_low_low",
     "baseline": "swap_random", "metric": "mean_at_k_in", "direction": 1},
    {"id": "D4", "text": "DIAL (beta 0.5) raises held-out-target Mean@k over all-token distillation (the second column)",
     "variant": "dial_b0.5", "baseline": "all", "metric": "mean_at_k", "direction": 1},
)
POWER_ARMS = (
    # all-token distillation against none (the student warm start): in distribution it closes a share of the teacher
    # gap (the regime table prints it per block), a known gain of the size the tables must resolve; on held-out targets
    # distillation is not known to help, so no control there
    {"arm": "positive control", "variant": "all", "baseline": "none", "metric": "mean_at_k_in", "direction": 1},
    *({"arm": "null", "variant": "all_reseed", "baseline": "all", "metric": metric, "direction": 1}
      for metric in ("mean_at_k_in", "mean_at_k")))


@dataclass(frozen=True)
class Args:
    """Benchmark settings (``main`` takes them; ``--preset`` picks one of ``PRESETS``)."""

    blocks: tuple[int, ...] = (0, 1)
    """seed blocks (disjoint warm starts and seeds); a verdict needs the blocks to agree"""
    warm_starts: int = 3
    """warm starts (student and teacher pairs) per block: the unit resampled first"""
    seeds: int = 1
    """distillation seeds per warm start (one each: the 2-core machine the tables ran on fits 3 x 1 per block; the unit of
    inference is the warm start either way)"""
    variants: tuple[str, ...] = ("all", "top_signal", "dial_b0.5", "swap_low_low", "swap_random", "all_reseed")
    """selectors compared (``all`` is the baseline and must be there); the claims' variants and the null arm
    (``dial_b0.25``, ``dial_b1``, ``random`` and ``all_half_steps`` run with ``--variants``: left out for time; ``none``,
    the positive control's baseline, runs in the power study)"""
    keep_ratio: float = 0.4
    """share of the batch's tokens kept by the selectors other than ``all``"""
    low_prob_per_vocab: float = 1.0
    """low-low: both probabilities below this / |V|"""
    steps: int = 500
    """student updates per run (the learning curve on warm start 0: 48% of the in-distribution teacher gap closed after
    500 steps at 128 targets per step, 58% at 256; round three's 600 steps x 64 targets closed 29%; the issue asks for
    40%)"""
    prompts_per_step: int = 128
    """training targets per step (one response each; 64 until round three: too few sampled tokens per step; 256 closes
    more per step but costs 1.7 times as much per step, which the 2-core machine the tables ran on could not fit)"""
    learning_rate: float = 1e-3
    """Adam learning rate of the student (pilots on warm start 0, all tokens, in-distribution gap closed: at 64 targets
    per step 1e-3 0.31 after 400 steps, 1.5e-3 0.20; 2e-3 0.14 and 3e-3 -0.08 after 200 steps; at 256 targets 1e-3
    0.58 and 2e-3 0.50 after 500 steps)"""
    curve_points: int = 5
    """in-distribution Mean@k evaluations during each run (every ``steps // curve_points`` steps): the learning curve
    of the gap share in the regime table"""
    student_sft_steps: int = 200
    """supervised steps of each student warm start (pinned)"""
    teacher_sft_steps: int = 400
    """supervised steps of each teacher (3 blocks of width 96; pinned)"""
    teacher_temperature: float = 0.5
    """temperature the teacher scores tokens at (< 1: sharper)"""
    base: int = 16
    """digits per position (|V| = base + 2)"""
    length: int = 3
    """digits per response"""
    held_out_every: int = 3
    """targets t % held_out_every == 1 are held out of all training and are the evaluation set"""
    eval_size: int = 150
    """held-out problems (each held-out target equally often), greedy and ``sample_k`` samples each"""
    sample_k: int = 8
    """samples per held-out problem for Mean@k and Pass@k"""
    threads: int = 1
    """torch intra-op threads (pinned: the tables are for 1)"""
    out_dir: str = "runs/dial_opd"
    """run cache and warm-start cache"""
    results: str = "benchmarks/results/dial_opd.json"
    """the results file (empty: not written)"""
    runs_only: bool = False
    """only run (and cache) the runs, no summary: to spread blocks or variants over processes"""
    power_blocks: int = 20
    """replications of one block of this design (blocks 0 .. power_blocks - 1, the first ones shared with the
    tables) that run the power arms' variants: positive-control detection and null false-call rates"""
    power_store: str = "benchmarks/results/dial_opd_power.json"
    """the power study's committed per-run metrics, block by block (empty: none): a block it holds is not run
    again, and every block run is added to it when done, so ``--power-blocks N`` runs only the missing blocks"""
    power_only: bool = False
    """run only the power study (its missing blocks) and replace it in the results file, the tables left as they are"""


PRESETS = {"default": Args(),
           "quick": Args(warm_starts=3, seeds=1, steps=3, prompts_per_step=8, student_sft_steps=10, teacher_sft_steps=10,
                         curve_points=3,
                         eval_size=15, sample_k=4, power_blocks=2, power_store="",
                         variants=("all", "top_signal", "dial_b0.5", "swap_low_low", "swap_random", "all_reseed"),
                         out_dir="runs/dial_opd_quick", results="benchmarks/results/dial_opd_quick.json")}
"""``quick``: the regeneration check's preset (``posttrain_regenerate.py``, run by the tests): every claim's
variants and the power arms, small enough to rerun in the test suite"""


def task_of(args: Args) -> DigitSumTask:
    return DigitSumTask(args.length, 0.2, args.base, "canonical", args.held_out_every)


def run_args(args: Args, variant: str, warm_start: int, seed: int) -> opd.Args:
    changes = dict(VARIANTS[variant])
    seed += changes.pop("seed_shift", 0)
    steps = round(args.steps * changes.pop("steps_factor", 1))
    return opd.Args(**changes, keep_ratio=args.keep_ratio, low_prob_per_vocab=args.low_prob_per_vocab,
                    steps=steps, prompts_per_step=args.prompts_per_step, learning_rate=args.learning_rate,
                    seed=seed, eval_every=steps, curve_every=steps // args.curve_points if args.curve_points else 0, eval_size=args.eval_size, sample_k=args.sample_k,
                    student_sft_steps=args.student_sft_steps, teacher_sft_steps=args.teacher_sft_steps,
                    teacher_temperature=args.teacher_temperature, sft_seed=warm_start, task="digitsum", base=args.base,
                    length=args.length, held_out_every=args.held_out_every,
                    cache_dir=str(Path(args.out_dir) / "cache"), threads=args.threads)


def run_metrics(result: dict) -> dict[str, float]:
    history, final, final_in = result["history"], result["final_sampled"], result["final_in_distribution"]
    return {"mean_at_k": final["mean_at_k"], "pass_at_k": final["pass_at_k"], "greedy": result["final_accuracy"],
            "mean_at_k_in": final_in["mean_at_k"], "pass_at_k_in": final_in["pass_at_k"],
            "start_mean_at_k_in": result["initial_in_distribution"]["mean_at_k"],
            "teacher_mean_at_k_in": result["teacher_in_distribution"]["mean_at_k"],
            "reverse_kl_end": window_mean(history, "reverse_kl", False),
            "train_reward_end": window_mean(history, "reward", False),
            # no steps (``none``): no training statistics
            **{key: statistics.fmean(r[key] for r in history) if history else math.nan
               for key in ("selected_share", "selected_low_low_share", "overlap_top_signal")}}


def gap_curve(base_runs: list[dict]) -> list[list[float]]:
    """[step, share of the in-distribution teacher gap closed] at every curve evaluation, pooled over the runs."""
    start = sum(r["initial_in_distribution"]["mean_at_k"] for r in base_runs)
    gap = sum(r["teacher_in_distribution"]["mean_at_k"] for r in base_runs) - start
    steps = [h["step"] for h in base_runs[0]["history"] if "mean_at_k_in" in h]
    out = []
    for step in steps:
        reached = sum(h["mean_at_k_in"] for r in base_runs for h in r["history"] if h["step"] == step)
        out.append([step, (reached - start) / gap if gap > 0 else math.nan])
    return out


GAP_TARGET = 0.4
"""share of the in-distribution teacher gap all-token distillation is to close (the issue's target for the design)"""


def power_gap(per_run: dict[str, dict[str, dict[str, dict[str, float]]]]) -> dict[str, Any] | None:
    """The in-distribution teacher gap all-token distillation closed on every power block (each a replication of
    one table block: its warm starts' pooled share, as the tables' gap column computes it), pooled over all of
    them, and how many blocks reach ``GAP_TARGET``. ``per_run``: ``power_runs``'s; None without blocks."""
    if not per_run:
        return None
    shares: dict[str, float] = {}
    totals = [0.0, 0.0, 0.0]  # start, teacher, end: summed over every block's runs
    for name, block in per_run.items():
        runs = [block["all"][k] for k in sorted(block["all"])]
        start, teacher, end = (sum(r[key] for r in runs)
                               for key in ("start_mean_at_k_in", "teacher_mean_at_k_in", "mean_at_k_in"))
        shares[name] = (end - start) / (teacher - start) if teacher > start else math.nan
        totals = [totals[0] + start, totals[1] + teacher, totals[2] + end]
    pooled = (totals[2] - totals[0]) / (totals[1] - totals[0]) if totals[1] > totals[0] else math.nan
    return {"target": GAP_TARGET, "blocks": len(shares), "pooled": pooled, "per_block": shares,
            "reaching_target": sum(share >= GAP_TARGET for share in shares.values())}


REGIME_TOKEN_KEYS = ("low_low_share", "low_low_error_share", "error_share", "low_low_share_fixed_01",
                     "teacher_sure_share", "top_signal_low_low_share")


def regime(task: DigitSumTask, runs: dict[str, dict[str, dict]]) -> dict[str, Any]:
    """Per block: the split, the answers per target, both warm starts, and the low-low tokens (first 10%
    of all-token distillation's steps)."""
    train, held = task.train_targets(), task.held_out_targets()
    valid = [task.valid_answers(t) for t in held]
    base_runs = [runs["all"][k] for k in sorted(runs["all"])]
    mean = statistics.fmean
    out: dict[str, Any] = {
        "vocabulary": task.tokenizer.vocab_size, "low_prob": base_runs[0]["low_prob"], "train_targets": len(train),
        "held_out_targets": len(held), "held_out_overlap": len(set(train) & set(held)),
        "valid_answers_mean": mean(valid), "valid_answers_min": min(valid), "valid_answers_max": max(valid),
        "student_greedy": mean(r["initial_accuracy"] for r in base_runs),
        "student_mean_at_k": mean(r["initial_sampled"]["mean_at_k"] for r in base_runs),
        "student_pass_at_k": mean(r["initial_sampled"]["pass_at_k"] for r in base_runs),
        "teacher_greedy": mean(r["teacher_accuracy"] for r in base_runs),
        "teacher_mean_at_k": mean(r["teacher_sampled"]["mean_at_k"] for r in base_runs),
        "teacher_pass_at_k": mean(r["teacher_sampled"]["pass_at_k"] for r in base_runs),
        "student_mean_at_k_in": mean(r["initial_in_distribution"]["mean_at_k"] for r in base_runs),
        "teacher_mean_at_k_in": mean(r["teacher_in_distribution"]["mean_at_k"] for r in base_runs),
        "all_mean_at_k_in": mean(r["final_in_distribution"]["mean_at_k"] for r in base_runs),
        "all_mean_at_k": mean(r["final_sampled"]["mean_at_k"] for r in base_runs)}
    curve = gap_curve(base_runs)
    out["all_gap_curve"] = curve
    out["all_gap_curve_text"] = ", ".join(f"{share:.0%} at {step:.0f}" for step, share in curve) or "not measured"
    for key in REGIME_TOKEN_KEYS:
        out[key] = mean(window_mean(r["history"], key, True) for r in base_runs)
    return out


def main(args: Args | None = None) -> dict:
    """Run every selector on every run of every block, print the tables, write and return the results."""
    args = args or Args()
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown or not (args.runs_only or "all" in args.variants):
        raise ValueError(f"variants must include 'all' and come from {', '.join(VARIANTS)}; got {args.variants}")
    def make_run(variant: str, warm_start: int, seed: int) -> tuple[Any, opd.Args]:
        return opd.main, run_args(args, variant, warm_start, seed)

    if args.power_only:
        power = power_runs(args, POWER_ARMS, make_run, run_metrics)
        results = update_power(args, {**power_summary(args, power, POWER_ARMS, METRICS), "power_gap": power_gap(power)})
        print(dial_tables(results))
        write_results(args.results, results)
        return results
    runs = run_blocks(args.blocks, args.warm_starts, args.seeds, args.variants, make_run, Path(args.out_dir))
    power = power_runs(args, POWER_ARMS, make_run, run_metrics)
    if args.runs_only:
        return {}
    results = summarise_blocks(args, runs, run_metrics, lambda block: regime(task_of(args), block), "all",
                               METRICS, CLAIMS)
    results.update(power_summary(args, power, POWER_ARMS, METRICS))
    results["power_gap"] = power_gap(power)
    print(dial_tables(results))
    write_results(args.results, results)
    return results


if __name__ == "__main__":
    started = time.perf_counter()
    main(parse_preset_args(__doc__.splitlines()[0], PRESETS))
    print(f"total {time.perf_counter() - started:.0f} s")
