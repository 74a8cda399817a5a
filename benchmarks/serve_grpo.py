"""A policy that learns through a served env: the project's GRPO on BlackBox-v0, in-process and over HTTP.

GRPO (``rsigym.agents.train.grpo``) trains its small GPT on ``ConfigEnvTask``: a prompt is one of
BlackBox-v0's 30 training tasks, a response is six digits that decode to a configuration
(learning rate, momentum, layers, optimizer), and its reward is the env's value for that
configuration, one episode per rollout (``max_trials=1``). The same runs (same seeds) are made
twice: with the env in this process (``gymnasium.make``), and with the env behind ``rsigym serve``
(a subprocess on 127.0.0.1, reached with ``rsigym.remote.make``: every rollout's reset and step
go over the WebSocket, and the server records every episode). The unit of inference is the run
(one seed: its own weight initialisation, problems and samples).

The agreement check has two parts, both printed:

* **identical** -- BlackBox-v0 with ``noise_std=0`` is deterministic, and so is training given its
  seed (one thread, deterministic kernels), so a served run must take exactly the in-process run's
  steps: every per-step metric equal, every final metric equal (the largest absolute difference is
  printed). The server's records are checked too: one per rollout, with the rewards the trainer got.
* **within the run-to-run spread** -- the final greedy value (mean over the 30 tasks) of the served
  arm against the in-process arm: "disagree" when Welch's t-test (two-sided) rejects equal means at
  5%, else "agree" (identical arms agree without a test), printed with the minimum detectable
  difference (80% power) at the in-process runs' SD, since "agree" rules out only differences about
  that large. The rule is calibrated on constructed arms with known truth (normal runs, the same
  number per arm; false-call rate of the null and detection rates, exact 95% intervals), and
  applied to two controls made in-process: a reseeded arm (seeds shifted by 1000: the same
  training, other draws; should agree) and an arm trained at a tenth of the learning rate (a real
  difference; should not).

Run: ``nice -n 10 python benchmarks/serve_grpo.py`` (writes ``benchmarks/results/serve_grpo.json`` and
``docs/plots/serve_grpo.png``); ``--preset tiny`` is the test's smoke run.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import os
import statistics
import subprocess
import tempfile
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

ENV_ID = "rsigym/BlackBox-v0"
ENV_KWARGS = {"max_trials": 1, "noise_std": 0.0}
RESEED = 1000
"""the reseeded control's seeds are the arm's seeds plus this"""
SLOW_LR_FACTOR = 0.1
"""the slow control trains at this share of the learning rate"""
EPISODE_SEEDS_PER_RUN = 1_000_000
"""run ``seed`` sends the env episode seeds ``seed * EPISODE_SEEDS_PER_RUN + 0, 1, ...``"""


@dataclass(frozen=True)
class Args:
    """Benchmark settings (``main`` takes them; ``--preset`` picks one of ``PRESETS``)."""

    seeds: tuple[int, ...] = (0, 1, 2, 3, 4)
    """runs per arm (the seed sets the warm start's weights and GRPO's problems and samples)"""
    steps: int = 30
    """GRPO policy updates per run"""
    prompts_per_step: int = 8
    """tasks per step"""
    group_size: int = 8
    """rollouts per task (G)"""
    learning_rate: float = 1e-3
    """Adam learning rate"""
    sft_steps: int = 10
    """warm-start steps (on uniform digits: the env has no teacher)"""
    eval_every: int = 5
    """steps between greedy evaluations (each task once)"""
    eval_size: int = 30
    """greedy evaluation problems: each of the 30 training tasks once"""
    sample_k: int = 4
    """samples per task for the start and end sampled metrics"""
    threads: int = 1
    """torch intra-op threads (pinned: runs are bit-for-bit repeatable)"""
    controls: bool = True
    """also run the reseeded and slow in-process controls"""
    results: str = "benchmarks/results/serve_grpo.json"
    """the results file (empty: not written)"""
    plot: str = "docs/plots/serve_grpo.png"
    """the learning-curve figure (empty: not drawn)"""


PRESETS = {"default": Args(),
           "tiny": Args(seeds=(0, 1), steps=3, prompts_per_step=2, group_size=4, sft_steps=2, eval_every=1,
                        eval_size=6, sample_k=2, results="", plot="")}


def grpo_args(args: Args, seed: int, learning_rate: float | None = None) -> Any:
    from rsigym.agents.train import grpo

    return grpo.Args(steps=args.steps, prompts_per_step=args.prompts_per_step, group_size=args.group_size,
                     learning_rate=args.learning_rate if learning_rate is None else learning_rate,
                     sft_steps=args.sft_steps, sft_seed=seed, seed=seed, eval_every=args.eval_every,
                     eval_size=args.eval_size, sample_k=args.sample_k, threads=args.threads)


def train(args: Args, env: Any, seed: int, learning_rate: float | None = None) -> dict[str, Any]:
    """One GRPO run on ``env`` (in-process or remote): its per-step history, final metrics and the episodes
    it played (``(episode seed, task id, reward)`` in order)."""
    from rsigym.agents.train import grpo
    from rsigym.agents.train.env_task import ConfigEnvTask
    from rsigym.envs.blackbox.objectives import task_ids

    task = ConfigEnvTask(env, task_ids("train"), seed=seed * EPISODE_SEEDS_PER_RUN)
    started = time.perf_counter()
    out = grpo.main(grpo_args(args, seed, learning_rate), task)
    print(f"  seed {seed}: greedy value {out['initial_accuracy']:.3f} -> {out['final_accuracy']:.3f}, "
          f"{task.episodes} episodes, {time.perf_counter() - started:.1f} s", flush=True)
    return {"seed": seed, "history": out["history"], "initial_greedy": out["initial_accuracy"],
            "final_greedy": out["final_accuracy"], "final_sampled": out["final_sampled"],
            "warm_start": out["warm_start"], "episodes": task.episodes, "played": task.played,
            "seconds": time.perf_counter() - started}


def in_process(args: Args, seed: int, learning_rate: float | None = None) -> dict[str, Any]:
    import gymnasium as gym

    from rsigym.registry import register_gym_envs

    register_gym_envs()
    env = gym.make(ENV_ID, disable_env_checker=True, **ENV_KWARGS)
    try:
        return train(args, env, seed, learning_rate)
    finally:
        env.close()


def served(args: Args, url: str, seed: int) -> dict[str, Any]:
    import rsigym.remote as remote

    env = remote.make(url, agent_id=f"grpo-s{seed}")
    try:
        return train(args, env, seed)
    finally:
        env.close()


def start_server(run_dir: Path) -> tuple[subprocess.Popen[str], str]:
    """``rsigym serve`` in a subprocess on a free loopback port; returns it and its URL."""
    from rsigym.serve import start_server_process

    return start_server_process(ENV_ID, run_dir, sets=[f"{key}={value}" for key, value in ENV_KWARGS.items()])


def records_match(run_dir: Path, runs: list[dict[str, Any]]) -> dict[str, Any]:
    """The server's records against what the served runs played: one record per rollout, in order, with the
    seed, task and reward the trainer saw."""
    from rsigym.records.jsonl import read_records

    by_agent: dict[str, list[tuple[int, str, float]]] = {}
    for record in read_records(run_dir / "records.jsonl"):
        rewards = [step.reward for step in record.steps]
        by_agent.setdefault(record.agent.id, []).append((record.seed, record.env.task_id, sum(rewards)))
    matched = {f"grpo-s{run['seed']}": sorted(by_agent.get(f"grpo-s{run['seed']}", [])) == sorted(
        tuple(p) for p in run["played"]) for run in runs}
    return {"records": sum(len(v) for v in by_agent.values()), "rollouts": sum(r["episodes"] for r in runs),
            "every_run_matches": all(matched.values()), "by_run": matched}


def identical(a: list[dict[str, Any]], b: list[dict[str, Any]]) -> dict[str, Any]:
    """Paired runs (same seeds) compared step by step: whether every metric is equal, and the largest
    absolute difference of the per-step mean reward and of the final greedy value."""
    reward_gap = max((abs(x["reward"] - y["reward"]) for ra, rb in zip(a, b)
                      for x, y in zip(ra["history"], rb["history"])), default=0.0)
    final_gap = max((abs(ra["final_greedy"] - rb["final_greedy"]) for ra, rb in zip(a, b)), default=0.0)
    same = all(ra["seed"] == rb["seed"] and ra["history"] == rb["history"] and ra["final_greedy"] == rb["final_greedy"]
               and ra["final_sampled"] == rb["final_sampled"] and ra["played"] == rb["played"] for ra, rb in zip(a, b))
    return {"identical": same and len(a) == len(b), "max_abs_step_reward_difference": reward_gap,
            "max_abs_final_greedy_difference": final_gap}


def agreement(reference: list[float], other: list[float], alpha: float = 0.05) -> dict[str, Any]:
    """The run-to-run rule on one final metric: ``other`` agrees with ``reference`` unless Welch's t-test
    rejects equal means at ``alpha`` (two-sided); identical runs agree without a test. Also the minimum
    detectable difference at 80% power, from the reference runs' SD (``(t_{1-alpha/2} + t_{0.8}) * SD *
    sqrt(1/n_r + 1/n_o)``, Welch's degrees of freedom taken as n_r + n_o - 2): what "agree" can and cannot
    rule out. Fewer than 2 runs a side: "insufficient data"."""
    from scipy import stats

    if len(reference) < 2 or len(other) < 2:
        return {"verdict": "insufficient data", "n": [len(reference), len(other)]}
    difference = statistics.fmean(other) - statistics.fmean(reference)
    spread = statistics.stdev(reference)
    if reference == other:
        p_value = 1.0
    elif statistics.pvariance(reference) == 0 and statistics.pvariance(other) == 0:
        p_value = 0.0 if difference else 1.0
    else:
        p_value = float(stats.ttest_ind(other, reference, equal_var=False).pvalue)
    df = len(reference) + len(other) - 2
    mdd = float((stats.t.ppf(1 - alpha / 2, df) + stats.t.ppf(0.8, df))
                * spread * math.sqrt(1 / len(reference) + 1 / len(other)))
    return {"verdict": "agree" if p_value >= alpha else "disagree", "mean_difference": difference,
            "reference_sd": spread, "p_value": p_value, "minimum_detectable_difference": mdd,
            "n": [len(reference), len(other)], "reference_mean": statistics.fmean(reference),
            "other_mean": statistics.fmean(other)}


CALIBRATION_SHIFTS_SD = (0.0, 1.0, 2.0, 3.0)
"""true differences (in run-to-run SDs) of the constructed arms the rule is calibrated on; 0 is the null"""


def rule_calibration(runs: int, pairs: int = 2000, seed: int = 0, alpha: float = 0.05) -> list[dict[str, Any]]:
    """The rule's verdicts on constructed arms with known truth: ``pairs`` pairs of ``runs``-run arms drawn
    from normal distributions one SD wide whose means differ by each of ``CALIBRATION_SHIFTS_SD``. Returns
    per shift the share called "disagree" with its exact (Clopper-Pearson) 95% interval: the null's is the
    false-call rate (should be <= 5%), the others the detection rate."""
    import numpy as np
    from scipy import stats

    rng = np.random.default_rng(seed)
    rows = []
    for shift in CALIBRATION_SHIFTS_SD:
        called = sum(agreement(list(rng.normal(0.0, 1.0, runs)), list(rng.normal(shift, 1.0, runs)), alpha)["verdict"]
                     == "disagree" for _ in range(pairs))
        interval = stats.binomtest(called, pairs).proportion_ci(method="exact")
        rows.append({"shift_sd": shift, "pairs": pairs, "disagree": called, "rate": called / pairs,
                     "ci95": [float(interval.low), float(interval.high)]})
    return rows


def summary(run: dict[str, Any]) -> dict[str, Any]:
    """What the results file keeps of a run (the played episodes are checked, not stored)."""
    return {k: v for k, v in run.items() if k != "played"}


def main(args: Args) -> dict[str, Any]:
    load_start = os.getloadavg()[0]
    print("in-process:", flush=True)
    arms: dict[str, list[dict[str, Any]]] = {"in_process": [in_process(args, s) for s in args.seeds]}
    with tempfile.TemporaryDirectory() as tmp:
        run_dir = Path(tmp) / "served"
        process, url = start_server(run_dir)
        print(f"served at {url}:", flush=True)
        try:
            arms["served"] = [served(args, url, s) for s in args.seeds]
        finally:
            process.terminate()
            process.wait(timeout=60)
        records = records_match(run_dir, arms["served"])
    if args.controls:
        print("controls (in-process): reseeded, then slow", flush=True)
        arms["in_process_reseeded"] = [in_process(args, s + RESEED) for s in args.seeds]
        arms["in_process_slow"] = [in_process(args, s, args.learning_rate * SLOW_LR_FACTOR) for s in args.seeds]
    finals = {name: [r["final_greedy"] for r in runs] for name, runs in arms.items()}
    checks = {name: agreement(finals["in_process"], finals[name]) for name in arms if name != "in_process"}
    result = {
        "env": ENV_ID, "env_kwargs": ENV_KWARGS, "args": dataclasses.asdict(args), "cpu_count": os.cpu_count(),
        "load_average_1min_at_start_and_end": [load_start, os.getloadavg()[0]],
        "identical": identical(arms["in_process"], arms["served"]), "server_records": records,
        "agreement": checks, "rule_calibration": rule_calibration(len(args.seeds)),
        "seconds_per_run": {name: statistics.median(r["seconds"] for r in runs) for name, runs in arms.items()},
        "arms": {name: [summary(r) for r in runs] for name, runs in arms.items()},
    }
    print(render_table(result))
    if args.results:
        Path(args.results).parent.mkdir(parents=True, exist_ok=True)
        Path(args.results).write_text(json.dumps(result, indent=1) + "\n")
    if args.plot:
        plot(result, Path(args.plot))
    return result


def render_table(result: dict[str, Any]) -> str:
    """The Markdown table of a results file (docs/serve.md shows this, rendered from the committed file)."""
    arms = result["arms"]
    labels = {"in_process": "in-process", "served": "served (rsigym serve, loopback)",
              "in_process_reseeded": "control: in-process, reseeded", "in_process_slow":
              f"control: in-process, learning rate x{SLOW_LR_FACTOR:g}"}
    lines = ["| arm | runs | greedy value at start | final greedy value (mean, SD) | vs in-process: difference, p "
             "(MDD) | verdict | s per run |", "|---|---:|---:|---:|---:|---|---:|"]
    for name, runs in arms.items():
        finals = [r["final_greedy"] for r in runs]
        start = statistics.fmean(r["initial_greedy"] for r in runs)
        check = result["agreement"].get(name)
        versus = (f"{check['mean_difference']:+.3f}, {check['p_value']:.3f} ({check['minimum_detectable_difference']:.2f})"
                  if check and "p_value" in check else "-")
        lines.append(f"| {labels.get(name, name)} | {len(runs)} | {start:.3f} | {statistics.fmean(finals):.3f}, "
                     f"{statistics.stdev(finals) if len(finals) > 1 else 0.0:.3f} | {versus} | "
                     f"{check['verdict'] if check else '(reference)'} | {result['seconds_per_run'][name]:.1f} |")
    same = result["identical"]
    records = result["server_records"]
    lines.append(
        f"\nServed vs in-process, run by run: {'identical' if same['identical'] else 'NOT identical'} (largest "
        f"difference of a step's mean reward {same['max_abs_step_reward_difference']:.3g}, of a final greedy value "
        f"{same['max_abs_final_greedy_difference']:.3g}); the server wrote {records['records']} records for "
        f"{records['rollouts']} rollouts, {'each' if records['every_run_matches'] else 'NOT each'} with the seed, "
        f"task and reward the trainer got. {result['env']}, {result['args']['steps']} GRPO steps of "
        f"{result['args']['prompts_per_step']} tasks x {result['args']['group_size']} rollouts, "
        f"{result['cpu_count']} cores.")
    calibration = result.get("rule_calibration") or []
    if calibration:
        null, *shifts = calibration
        lines.append(
            f"\nThe rule on constructed arms ({len(result['args']['seeds'])} runs each, {null['pairs']} pairs per row, "
            f"known truth): a null (equal means) called \"disagree\" in {null['rate']:.1%} "
            f"[{null['ci95'][0]:.1%}, {null['ci95'][1]:.1%}]; a true difference of "
            + ", ".join(f"{row['shift_sd']:g} SD detected in {row['rate']:.1%} [{row['ci95'][0]:.1%}, {row['ci95'][1]:.1%}]"
                        for row in shifts)
            + " (exact 95% intervals; MDD: the difference detected with 80% power at the in-process runs' SD).")
    return "\n".join(lines)


def plot(result: dict[str, Any], path: Path) -> Path:
    """Two panels (per-step mean training reward; greedy value over the tasks), each arm's mean over its runs
    with a band from its lowest to its highest run; the served arm dashed over the in-process one."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    styles = {"in_process": ("C0", "-", "in-process"), "served": ("C3", "--", "served over HTTP"),
              "in_process_reseeded": ("C2", ":", "control: reseeded"),
              "in_process_slow": ("C7", "-.", f"control: lr x{SLOW_LR_FACTOR:g}")}
    figure, axes = plt.subplots(1, 2, figsize=(10, 3.6))
    for axis, key, title in ((axes[0], "reward", "mean reward of the step's rollouts"),
                             (axes[1], "eval_accuracy", "greedy value, mean over the 30 tasks")):
        for name, runs in result["arms"].items():
            colour, style, label = styles.get(name, ("C9", "-", name))
            steps = [h["step"] for h in runs[0]["history"] if h.get(key) is not None]
            values = [[h[key] for h in r["history"] if h.get(key) is not None] for r in runs]
            if key == "eval_accuracy":  # the start point: the warm start's greedy value
                steps = [0, *steps]
                values = [[r["initial_greedy"], *v] for r, v in zip(runs, values)]
            columns = list(zip(*values))
            mean = [statistics.fmean(c) for c in columns]
            axis.plot(steps, mean, color=colour, linestyle=style, linewidth=1.6, label=f"{label} ({len(runs)} runs)")
            axis.fill_between(steps, [min(c) for c in columns], [max(c) for c in columns], color=colour,
                              alpha=0.12 if name != "served" else 0.0)
        axis.set_xlabel("GRPO step")
        axis.set_title(title, fontsize=10)
        axis.grid(alpha=0.3)
    axes[1].legend(fontsize=8, loc="lower right")
    figure.suptitle(f"GRPO on {result['env']} (max_trials=1): through rsigym serve vs in-process; bands: lowest "
                    "to highest run", fontsize=10)
    figure.tight_layout()
    path.parent.mkdir(parents=True, exist_ok=True)
    figure.savefig(path, dpi=100)
    plt.close(figure)
    return path


def parse_args(argv: list[str] | None = None) -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", choices=sorted(PRESETS), default="default")
    parser.add_argument("--seeds", type=int, nargs="+")
    parser.add_argument("--steps", type=int)
    parser.add_argument("--results")
    parser.add_argument("--plot")
    options = parser.parse_args(argv)
    args = PRESETS[options.preset]
    changes = {k: (tuple(v) if isinstance(v, list) else v) for k, v in vars(options).items()
               if k != "preset" and v is not None}
    return dataclasses.replace(args, **changes)


if __name__ == "__main__":
    main(parse_args())
