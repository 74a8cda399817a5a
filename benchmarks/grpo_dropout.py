"""GRPODropout against vanilla GRPO, its ablations and the entropy-control baselines, where collapse costs.

The regime: ``digitsum`` (5 digits adding up to a target, thousands of right answers for a middle
target) whose warm start was taught one memorised favoured answer per target value for half of
its demonstrations (``favoured = per_target``), and whose held-out targets (``t % 3 == 1``, 15 of
46) never enter supervised training or GRPO (overlap 0, printed). On a training target, vanilla
GRPO can collapse onto the memorised answer, which is right there; the memorised answer of one
target says nothing about another, so a policy that collapsed has less of the general skill left
for the held-out targets. That is the case GRPODropout is made for: it drops the likely,
positive-advantage rollouts whose update lowers the entropy most.

At G=8 a collapsing policy samples its mode several times per group, so dropping one rollout mostly
leaves an identical twin in the update; the ``*_every_copy`` variants drop an answer with all its
copies, and the claims are about them (every table prints the share of drops with a surviving twin).
The power table runs a strong KL to the warm start (a known gain in entropy), GRPO that trains on the held-out
targets instead (``train_on_held_out``: a known held-out gain) and vanilla reseeded (a null).

Variants share each warm start and the rollout seed; they differ only in which rollouts enter the
update, with what advantages, and in the entropy control. Every warm start has its own rollout seed
(``seeding = "unit"``), so the warm starts of a block are independent units. Every variant runs on every (warm start,
seed) of two disjoint seed blocks; per block, paired differences against vanilla GRPO get a
Student-t interval over the warm starts; a claim's verdict is printed where both blocks agree, else
"unstable" (``posttrain_verdicts.py``). Threads are pinned (``threads``, default 1) and every run is
deterministic, so the same command writes the same results file.

Run: ``nice -n 10 python benchmarks/grpo_dropout.py`` (default preset; ``--preset quick`` for a smoke
run; ``--blocks 1 --runs-only`` in a second process fills the run cache in parallel).
"""

from __future__ import annotations

import statistics
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from posttrain_grid import (
    parse_preset_args, power_runs, power_summary, run_blocks, summarise_blocks, update_power, window_mean,
    write_results)
from posttrain_tables import grpo_tables

from rsigym.agents.train import grpo
from rsigym.agents.train.digitsum import DigitSumTask

STRONG_KL = 1.0
"""KL weight (k3, to the warm start) of the positive control: it keeps the policy near the warm start, which
beats vanilla GRPO on held-out Pass@k and entropy in this regime"""
ORACLE = "train_on_held_out"
"""the positive control of the held-out metrics: GRPO whose problems are the held-out targets (it trains on what it
is scored on, a gain known by construction); ``kl_strong``'s held-out gain is below the MDD of this design (the
power table shows how often it is detected)"""
RESEED = 1000
"""the null variant runs vanilla GRPO with the rollout seed shifted by this: it changes only the random draws"""
VARIANTS: dict[str, dict[str, Any]] = {  # name -> the grpo.Args fields it changes (seed_shift: added to the seed)
    "none": {}, "dropout": {"filter": "dropout"}, "drop_no_recentre": {"filter": "drop_no_recentre"},
    "random_drop": {"filter": "random_drop"}, "dropout_every_copy": {"filter": "dropout_every_copy"},
    "drop_every_copy_no_recentre": {"filter": "drop_every_copy_no_recentre"},
    "random_drop_every_copy": {"filter": "random_drop_every_copy"},
    "kl_strong": {"kl_coef": STRONG_KL}, ORACLE: {"train_held_out": True}, "none_reseed": {"seed_shift": RESEED},
    "kl_cov": {"control": "kl_cov"}, "clip_cov": {"control": "clip_cov"}, "entropy_bonus": {"control": "entropy_bonus"},
}
METRICS = ("mean_at_k", "pass_at_k", "greedy", "entropy_end")
METHOD = "dropout_every_copy"
"""the method's row in the claims: GRPODropout that drops every copy of a dropped answer, so the drop acts (the
one-copy rows stay in the ablation table with their surviving-twin share)"""
CLAIMS = (
    {"id": "G1", "text": "GRPODropout (every copy) raises held-out Mean@k over vanilla GRPO", "variant": METHOD,
     "baseline": "none", "metric": "mean_at_k", "direction": 1},
    {"id": "G2", "text": "GRPODropout (every copy) raises held-out Pass@k over vanilla GRPO", "variant": METHOD,
     "baseline": "none", "metric": "pass_at_k", "direction": 1},
    {"id": "G3", "text": "GRPODropout (every copy) keeps the policy entropy above vanilla GRPO's (last 10% of steps)",
     "variant": METHOD, "baseline": "none", "metric": "entropy_end", "direction": 1},
    {"id": "G4", "text": "re-centring matters: GRPODropout (every copy) beats it without re-centring on held-out Mean@k",
     "variant": METHOD, "baseline": "drop_every_copy_no_recentre", "metric": "mean_at_k", "direction": 1},
    {"id": "G5", "text": "the entropy criterion matters: GRPODropout (every copy) beats as many random drops on held-out "
     "Mean@k", "variant": METHOD, "baseline": "random_drop_every_copy", "metric": "mean_at_k", "direction": 1},
)
POWER_ARMS = tuple(
    {"arm": arm, "variant": variant, "baseline": "none", "metric": metric, "direction": 1}
    for arm, variant, metrics in (("positive control", "kl_strong", ("mean_at_k", "pass_at_k", "entropy_end")),
                                  ("positive control", ORACLE, ("mean_at_k", "pass_at_k")),
                                  ("null", "none_reseed", ("mean_at_k", "pass_at_k", "entropy_end")))
    for metric in metrics)
"""a positive control per metric the claims use (entropy: ``kl_strong``; held-out Mean@k and Pass@k: ``ORACLE``, and
``kl_strong`` for the detection rate of a realistic gain) and the reseeded null on each"""


@dataclass(frozen=True)
class Args:
    """Benchmark settings (``main`` takes them; ``--preset`` picks one of ``PRESETS``)."""

    blocks: tuple[int, ...] = (0, 1)
    """seed blocks (disjoint warm starts and seeds); a verdict needs the blocks to agree"""
    warm_starts: int = 3
    """warm starts per block (independent supervised trainings: the unit resampled first)"""
    seeds: int = 1
    """GRPO seeds per warm start (one each: the 2-core machine the tables ran on fits 3 x 1 per block; the unit of
    inference is the warm start either way)"""
    seeding: str = "unit"
    """rollout seeds of a block (``posttrain_grid.block_units``): ``"unit"``, each warm start its own (round three;
    ``"block"``, one shared by the block's warm starts, made the blocks' means vary 2.35x as much as their
    within-block intervals allow, so the null arm was called in 2 to 5 of 26 blocks)"""
    variants: tuple[str, ...] = tuple(VARIANTS)
    """variants compared (``none`` is the baseline and must be there)"""
    steps: int = 60
    """policy updates per run"""
    prompts_per_step: int = 16
    """training targets per step"""
    group_size: int = 8
    """rollouts per target (G)"""
    learning_rate: float = 3e-4
    """Adam learning rate"""
    drop_share: float = 0.125
    """most rollouts dropped per group by the dropout variants (1 of 8)"""
    sft_steps: int = 300
    """supervised steps of each warm start (pinned)"""
    length: int = 5
    """digits per response"""
    favoured: str = "per_target"
    """the warm start's favoured path: a memorised answer per target"""
    canonical_share: float = 0.5
    """share of demonstrations on the favoured path"""
    held_out_every: int = 3
    """targets t % held_out_every == 1 are held out of all training and are the evaluation set"""
    eval_size: int = 150
    """held-out problems (each held-out target equally often), greedy and ``sample_k`` samples each"""
    sample_k: int = 8
    """samples per held-out problem for Mean@k and Pass@k"""
    threads: int = 1
    """torch intra-op threads (pinned: the tables are for 1)"""
    out_dir: str = "runs/grpo_dropout"
    """run cache and warm-start cache"""
    results: str = "benchmarks/results/grpo_dropout.json"
    """the results file (empty: not written)"""
    runs_only: bool = False
    """only run (and cache) the runs, no summary: to spread blocks or variants over processes"""
    power_blocks: int = 20
    """replications of one block of this design (blocks 0 .. power_blocks - 1, the first ones shared with the
    tables) that run the power arms' variants: positive-control detection and null false-call rates"""
    power_store: str = "benchmarks/results/grpo_dropout_power.json"
    """the power study's committed per-run metrics, block by block (empty: none): a block it holds is not run
    again, and every block run is added to it when done, so ``--power-blocks N`` runs only the missing blocks"""
    power_only: bool = False
    """run only the power study (its missing blocks) and replace it in the results file, the tables left as they are"""


PRESETS = {"default": Args(),
           "quick": Args(warm_starts=3, seeds=1, steps=3, prompts_per_step=4, group_size=4, sft_steps=10,
                         eval_size=15, sample_k=4, power_blocks=2, power_store="",
                         variants=("none", "dropout", "dropout_every_copy", "drop_every_copy_no_recentre",
                                   "random_drop_every_copy", "kl_strong", ORACLE, "none_reseed"),
                         out_dir="runs/grpo_dropout_quick", results="benchmarks/results/grpo_dropout_quick.json")}
"""``quick``: the regeneration check's preset (``posttrain_regenerate.py``, run by the tests): every claim's
variants and the power arms, small enough to rerun in the test suite"""


def task_of(args: Args) -> DigitSumTask:
    return DigitSumTask(args.length, args.canonical_share, 10, args.favoured, args.held_out_every)


def run_args(args: Args, variant: str, warm_start: int, seed: int) -> grpo.Args:
    changes = dict(VARIANTS[variant])
    seed += changes.pop("seed_shift", 0)
    return grpo.Args(**changes, drop_share=args.drop_share, steps=args.steps,
                     prompts_per_step=args.prompts_per_step, group_size=args.group_size,
                     learning_rate=args.learning_rate, seed=seed, eval_every=args.steps, eval_size=args.eval_size,
                     sample_k=args.sample_k, sft_steps=args.sft_steps, sft_seed=warm_start, task="digitsum",
                     length=args.length, canonical_share=args.canonical_share, favoured=args.favoured,
                     held_out_every=args.held_out_every, cache_dir=str(Path(args.out_dir) / "cache"),
                     threads=args.threads)


def run_metrics(result: dict) -> dict[str, float]:
    """One run's held-out results and its training statistics."""
    history, final = result["history"], result["final_sampled"]
    used = [r["rollouts_used_informative"] for r in history if r["rollouts_used_informative"] is not None]
    return {"mean_at_k": final["mean_at_k"], "pass_at_k": final["pass_at_k"], "greedy": result["final_accuracy"],
            "distinct_correct_at_k": final["distinct_correct_at_k"],
            "entropy_start": window_mean(history, "entropy", True), "entropy_end": window_mean(history, "entropy", False),
            "favoured_start": window_mean(history, "favoured_share", True),
            "favoured_end": window_mean(history, "favoured_share", False),
            "train_reward_end": window_mean(history, "reward", False),
            "rollouts_used_informative": statistics.fmean(used) if used else float("nan"),
            "drops": sum(r["drops"] for r in history), "drops_with_copy": sum(r["drops_with_copy"] for r in history)}


def regime(task: DigitSumTask, runs: dict[str, dict[str, dict]]) -> dict[str, Any]:
    """What the regime is, per block: the split, the answers per target, the warm start, vanilla's collapse."""
    train, held = task.train_targets(), task.held_out_targets()
    valid = [task.valid_answers(t) for t in held]
    vanilla = [runs["none"][k] for k in sorted(runs["none"])]
    mean = statistics.fmean
    out = {"train_targets": len(train), "held_out_targets": len(held), "held_out_overlap": len(set(train) & set(held)),
           "valid_answers_mean": mean(valid), "valid_answers_min": min(valid), "valid_answers_max": max(valid),
           "warm_greedy": mean(r["initial_accuracy"] for r in vanilla),
           "warm_mean_at_k": mean(r["initial_sampled"]["mean_at_k"] for r in vanilla),
           "warm_pass_at_k": mean(r["initial_sampled"]["pass_at_k"] for r in vanilla),
           "warm_distinct_correct_at_k": mean(r["initial_sampled"]["distinct_correct_at_k"] for r in vanilla),
           "vanilla_mean_at_k_end": mean(r["final_sampled"]["mean_at_k"] for r in vanilla),
           "vanilla_pass_at_k_end": mean(r["final_sampled"]["pass_at_k"] for r in vanilla)}
    metrics = [run_metrics(r) for r in vanilla]
    for key in ("favoured_start", "favoured_end", "entropy_start", "entropy_end", "train_reward_end"):
        out[f"vanilla_{key}"] = mean(m[key] for m in metrics)
    # the drops and their surviving twins are per variant: the ablation table prints them for every row
    return out


def main(args: Args | None = None) -> dict:
    """Run every variant on every run of every block, print the tables, write and return the results."""
    args = args or Args()
    unknown = [v for v in args.variants if v not in VARIANTS]
    if unknown or not (args.runs_only or "none" in args.variants):
        raise ValueError(f"variants must include 'none' and come from {', '.join(VARIANTS)}; got {args.variants}")
    def make_run(variant: str, warm_start: int, seed: int) -> tuple[Any, grpo.Args]:
        return grpo.main, run_args(args, variant, warm_start, seed)

    if args.power_only:
        results = update_power(args, power_summary(args, power_runs(args, POWER_ARMS, make_run, run_metrics),
                                                   POWER_ARMS, METRICS))
        print(grpo_tables(results))
        write_results(args.results, results)
        return results
    runs = run_blocks(args.blocks, args.warm_starts, args.seeds, args.variants, make_run, Path(args.out_dir),
                      args.seeding)
    power = power_runs(args, POWER_ARMS, make_run, run_metrics)
    if args.runs_only:
        return {}
    results = summarise_blocks(args, runs, run_metrics, lambda block: regime(task_of(args), block), "none",
                               METRICS, CLAIMS)
    results.update(power_summary(args, power, POWER_ARMS, METRICS))
    print(grpo_tables(results))
    write_results(args.results, results)
    return results


if __name__ == "__main__":
    started = time.perf_counter()
    main(parse_preset_args(__doc__.splitlines()[0], PRESETS))
    print(f"total {time.perf_counter() - started:.0f} s")
