"""Cost of one HyperparamSearch-v0 trial, and whether fine-tuning beats the un-fine-tuned source model.

Table 1, trial time. Data and the source model of ``TIMING_ADAPTATION`` are prepared first, then
``--configs`` different configurations are fine-tuned with ``training.fine_tune`` (the uncached
path, so every trial really trains) and timed end to end: training plus scoring the validation
rollouts. The test rollouts are scored once per episode (for the best configuration), timed apart
and shown per episode and per trial of a 20-trial episode. Target at the ``default`` preset: a
median trial <= 10 s. A ``paper`` trial (20 epochs at 256 cells) takes over ten minutes on one CPU
core, so it is measured per epoch: on the real ``paper`` dataset (our solvers, 1024 cells), one
full epoch of the trial's own training loop and one validation scoring are timed for each of
``--paper-configs`` configurations, and the trial time is ``epochs x epoch + validation``. The
source weights do not change the cost, so that probe starts from an un-pretrained network (the
100-epoch pretraining is a once-per-machine cache, outside the trial). Finally a cruder *estimate*
from timed optimizer and rollout steps on random tensors is printed for both presets, so its
error against the measured rows can be judged.

Table 2, adaptation. Each source model's rollout nRMSE on its own equation; then per adaptation the
validation nRMSE of the un-fine-tuned source model (zero-shot) next to the best fine-tuned one
over ``--learning-rates`` x adam x mse (cached trials: rerunning the table is cheap).

Run: ``python benchmarks/hpo_trial.py [--preset default] [--configs 5] [--paper-configs 3] [--skip-paper]``.
"""

from __future__ import annotations

import argparse
import math
import statistics
import time
from dataclasses import dataclass

import torch
from rich.console import Console
from rich.table import Table

from rsigym.envs.hpo import training
from rsigym.envs.hpo.adaptations import ADAPTATIONS, SOURCES
from rsigym.envs.hpo.data import Preset, dataset, get_preset
from rsigym.envs.hpo.fno import FNO1d, rollout
from rsigym.envs.hpo.training import TrialConfig, TrialRunner

TARGET_S = {"default": 10.0}
TIMING_ADAPTATION = "adv0.4->adv1.0"  # advection data are quick to generate; trial cost is the same for all
TIMING_CONFIGS = (
    TrialConfig(1e-3, "adam", "mse"), TrialConfig(3e-4, "adamw", "l1"), TrialConfig(1e-2, "sgd_momentum", "huber"),
    TrialConfig(1e-4, "rmsprop", "relative_l2"), TrialConfig(3e-3, "adam", "relative_l2"),
    TrialConfig(3e-2, "sgd_momentum", "mse"), TrialConfig(1e-3, "adamw", "huber"),
)
EVAL_BATCH = 256  # rollout's default batch


@dataclass
class Args:
    """Benchmark settings (``main`` takes them; the CLI fills them)."""

    preset: str = "default"
    """preset whose trials are measured"""
    configs: int = 5
    """trials timed (distinct configurations)"""
    skip_paper: bool = False
    """skip the ``paper`` preset (its per-epoch measurement and its estimate)"""
    paper_configs: int = 3
    """configurations whose ``paper`` epoch is measured (0: estimate only)"""
    estimate_steps: int = 20
    """optimizer steps (and rollout steps) timed per estimate"""
    adaptations: tuple[str, ...] = ()
    """adaptations (task ids) of table 2 (all twelve when empty)"""
    learning_rates: tuple[float, ...] = (1e-4, 1e-3, 1e-2)
    """the fine-tuning grid of table 2 (with adam and mse)"""
    seed: int = 0
    """dataset seed of the trials"""
    threads: tuple[int, ...] = (1,)
    """intra-op thread counts to measure trials with (``training.TRAIN_THREADS``)"""


def measure_trials(preset: Preset, configs: int, seed: int) -> tuple[list[float], list[float]]:
    """Seconds per uncached trial of ``TIMING_ADAPTATION`` (train + validation), and per test scoring.

    Data and pretraining are prepared beforehand.
    """
    adaptation = ADAPTATIONS[TIMING_ADAPTATION]
    dataset(adaptation.target, preset, seed)
    training.source_model(adaptation.source, preset)
    seconds, test_seconds = [], []
    for config in TIMING_CONFIGS[:configs]:
        started = time.perf_counter()
        result = training.fine_tune(adaptation, seed, config, preset)
        seconds.append(time.perf_counter() - started)
        if result.state is not None:
            started = time.perf_counter()
            training.evaluate(result.state, adaptation.target, preset, seed, splits=("test",))
            test_seconds.append(time.perf_counter() - started)
    return seconds, test_seconds


def measure_by_epoch(preset: Preset, configs: int, seed: int) -> tuple[list[float], list[float], list[float]]:
    """Per configuration: (trial seconds = epochs x epoch + validation, epoch seconds, validation seconds).

    Real data of ``preset`` and the trial's own loop (``training._fit`` for one epoch, then
    ``training._score`` on the validation split), from an un-pretrained network of the same shape.
    """
    adaptation = ADAPTATIONS[TIMING_ADAPTATION]
    splits = dataset(adaptation.target, preset, seed)
    trials, epochs, vals = [], [], []
    for config in TIMING_CONFIGS[:configs]:
        with training._one_thread():
            model = training._model(preset, torch.Generator().manual_seed(seed))
            optimizer = training._optimizer(config.optimizer, model.parameters(), config.learning_rate)
            started = time.perf_counter()
            training._fit(model, splits.train, 1, preset.batch_size, optimizer, config.loss,
                          torch.Generator().manual_seed(seed))
            epoch = time.perf_counter() - started
            started = time.perf_counter()
            training._score(model, splits.val)
            val = time.perf_counter() - started
        trials.append(preset.epochs * epoch + val)
        epochs.append(epoch)
        vals.append(val)
    return trials, epochs, vals


def estimate_trial(preset: Preset, steps: int) -> float:
    """Seconds per trial extrapolated from ``steps`` timed optimizer and rollout steps."""
    generator = torch.Generator().manual_seed(0)
    model = FNO1d(preset.modes, preset.width, preset.layers, preset.input_steps, generator=generator)
    optimizer = torch.optim.Adam(model.parameters(), lr=1e-4)
    x = torch.randn(preset.batch_size, preset.input_steps, preset.store_cells, generator=generator)
    y = torch.randn(preset.batch_size, preset.store_cells, generator=generator)
    previous = torch.get_num_threads()
    torch.set_num_threads(training.TRAIN_THREADS)
    try:
        for index in range(steps + 2):  # two warm-up steps
            if index == 2:
                started = time.perf_counter()
            loss = ((model(x) - y) ** 2).mean()
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
        train_step = (time.perf_counter() - started) / steps
        u = torch.randn(EVAL_BATCH, preset.input_steps + steps, preset.store_cells, generator=generator) * 1e-3
        started = time.perf_counter()
        rollout(model, u, preset.input_steps)
        rollout_step = (time.perf_counter() - started) / steps
    finally:
        torch.set_num_threads(previous)
    windows = preset.n_train * (preset.n_times - preset.input_steps)
    train_steps = preset.epochs * math.ceil(windows / preset.batch_size)
    rollout_steps = math.ceil(preset.n_val / EVAL_BATCH) * (preset.n_times - preset.input_steps)
    return train_steps * train_step + rollout_steps * rollout_step


def adaptation_rows(preset: Preset, adaptations: tuple[str, ...], learning_rates: tuple[float, ...],
                    seed: int) -> tuple[list[tuple[str, float]], list[tuple[str, float, float, float]]]:
    """Source models on their own equation; per adaptation (zero-shot, best fine-tuned, its lr)."""
    sources = []
    for source in SOURCES:
        state, _ = training.source_model(source, preset)
        sources.append((source.key, training.evaluate(state, source, preset, seed)[0]))
    runner, rows = TrialRunner(preset), []
    for name in adaptations or tuple(ADAPTATIONS):
        zero_shot = runner.zero_shot(name, seed)[0]
        tuned = {lr: runner.run(name, seed, TrialConfig(lr, "adam", "mse")).val_nrmse for lr in learning_rates}
        best_lr = min(tuned, key=tuned.__getitem__)
        rows.append((name, zero_shot, tuned[best_lr], best_lr))
    return sources, rows


def main(args: Args | None = None) -> dict:
    """Run both tables, print them, and return ``{"timing": {...}, "sources": ..., "adaptation": ...}``."""
    args = args or Args()
    preset = get_preset(args.preset)
    console = Console(width=120)  # wide enough for the tables when piped to a file
    timing = Table(title="HyperparamSearch-v0: seconds per fine-tuning trial (uncached: train + validation)")
    for column in ("preset", "how", "threads", "trials", "median s", "min s", "max s", "target s", "verdict"):
        timing.add_column(column, justify="left" if column in ("preset", "how", "verdict") else "right")
    results: dict = {"timing": {}}
    target = TARGET_S.get(preset.name)
    default_threads = training.TRAIN_THREADS
    try:
        for threads in args.threads:
            training.TRAIN_THREADS = threads
            measured, tests = measure_trials(preset, args.configs, args.seed)
            median = statistics.median(measured)
            verdict = "" if target is None else ("PASS" if median <= target else "MISS")
            timing.add_row(preset.name, "measured", str(threads), str(len(measured)), f"{median:.2f}",
                           f"{min(measured):.2f}", f"{max(measured):.2f}", "-" if target is None else f"{target:g}",
                           verdict)
            results["timing"][f"{preset.name}/{threads}"] = median
            if tests:
                test_median = statistics.median(tests)
                timing.add_row(preset.name, "test scoring, once per episode", str(threads), str(len(tests)),
                               f"{test_median:.2f}", f"{min(tests):.2f}", f"{max(tests):.2f}", "-",
                               f"{test_median / 20:.2f} s per trial of 20")
                results["timing"][f"{preset.name}/{threads}/test"] = test_median
    finally:
        training.TRAIN_THREADS = default_threads
    paper = get_preset("paper")
    if not args.skip_paper and preset.name != "paper" and args.paper_configs > 0:
        default_threads, training.TRAIN_THREADS = training.TRAIN_THREADS, 1
        try:
            trials, epochs, vals = measure_by_epoch(paper, args.paper_configs, args.seed)
        finally:
            training.TRAIN_THREADS = default_threads
        median = statistics.median(trials)
        timing.add_row("paper", f"measured: 1 of {paper.epochs} epochs x {paper.epochs} + validation", "1",
                       str(len(trials)), f"{median:.1f}", f"{min(trials):.1f}", f"{max(trials):.1f}", "-",
                       f"epoch {statistics.median(epochs):.1f} s, val {statistics.median(vals):.1f} s")
        results["timing"]["paper/1/by_epoch"] = median
    estimates = [preset] + ([paper] if not args.skip_paper and preset.name != "paper" else [])
    for estimated in estimates:  # the measured preset's estimate shows how far to trust the paper one
        seconds = estimate_trial(estimated, args.estimate_steps)
        results["timing"][f"{estimated.name}/estimated"] = seconds
        timing.add_row(estimated.name, "estimated", str(training.TRAIN_THREADS), "-", f"{seconds:.1f}", "", "",
                       "-", "check" if estimated is preset else "report")
    console.print(timing)

    sources, rows = adaptation_rows(preset, args.adaptations, args.learning_rates, args.seed)
    own = Table(title=f"Source models on their own equation ({preset.name}, val nRMSE)")
    own.add_column("source")
    own.add_column("val nRMSE", justify="right")
    for key, value in sources:
        own.add_row(key, f"{value:.4f}")
    console.print(own)
    adapt = Table(title=f"Zero-shot vs fine-tuned ({preset.name}, val nRMSE, adam + mse, "
                        f"lr in {{{', '.join(f'{lr:g}' for lr in args.learning_rates)}}})")
    for column in ("adaptation", "zero-shot", "best fine-tuned", "best lr", "fine-tuning helps"):
        adapt.add_column(column, justify="left" if column == "adaptation" else "right")
    for name, zero_shot, tuned, lr in rows:
        adapt.add_row(name, f"{zero_shot:.4f}", f"{tuned:.4f}", f"{lr:g}", "yes" if tuned < zero_shot else "no")
    console.print(adapt)
    helped = sum(tuned < zero_shot for _, zero_shot, tuned, _ in rows)
    console.print(f"fine-tuning helps on {helped} of {len(rows)} adaptations")
    results.update(sources=dict(sources), adaptation={name: {"zero_shot": z, "fine_tuned": t, "lr": lr}
                                                      for name, z, t, lr in rows})
    return results


def _parse() -> Args:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--preset", default="default")
    parser.add_argument("--configs", type=int, default=5)
    parser.add_argument("--skip-paper", action="store_true")
    parser.add_argument("--paper-configs", type=int, default=3)
    parser.add_argument("--estimate-steps", type=int, default=20)
    parser.add_argument("--adaptations", "--conditions", dest="adaptations", nargs="*", default=[])
    parser.add_argument("--learning-rates", type=float, nargs="*", default=[1e-4, 1e-3, 1e-2])
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--threads", type=int, nargs="*", default=[1])
    ns = parser.parse_args()
    return Args(ns.preset, ns.configs, ns.skip_paper, ns.paper_configs, ns.estimate_steps, tuple(ns.adaptations),
                tuple(ns.learning_rates), ns.seed, tuple(ns.threads))


if __name__ == "__main__":
    main(_parse())
