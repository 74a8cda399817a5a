"""Summaries and README tables of the post-training benchmarks, from their committed results files.

``grpo_dropout.py`` and ``dial_opd.py`` write ``benchmarks/results/*.json`` (per-seed values and
paired differences against the vanilla method); ``posttrain_regime.py`` writes the regime
statistics. This script renders the three as markdown and, with ``--write``, replaces the block
between the ``posttrain-tables`` markers of README.md, so the README's numbers are the results
files' (a test regenerates the block and compares).

Run: ``python benchmarks/posttrain_tables.py [--write]``.
"""

from __future__ import annotations

import argparse
import json
import statistics
import dataclasses
from pathlib import Path
from typing import Any, Callable

from rsigym.cache import atomic_write_bytes, cache_key
from rsigym.stats import paired_bootstrap_ci

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results"
BEGIN, END = "<!-- posttrain-tables:begin -->", "<!-- posttrain-tables:end -->"


def cached_run(run: Callable[[Any], dict], run_args: Any, out: Path) -> dict:
    """``run(run_args)``, its JSON result kept in ``out/run-cache`` under a hash of the arguments.

    A benchmark cut short resumes where it stopped, and its variants can be spread over processes.
    """
    name = type(run_args).__module__.rsplit(".", 1)[-1]
    path = out / "run-cache" / f"{name}-{cache_key(name + '-run', dataclasses.asdict(run_args))}.json"
    if path.exists():
        return json.loads(path.read_text())
    result = run(run_args)
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(result).encode())
    return result


def summarise(per_seed: dict[str, dict[str, list[float]]], baseline: str, metrics: tuple[str, ...],
              seeds: list[int]) -> dict[str, dict[str, Any]]:
    """``{variant: {metric: [value per seed]}}`` -> mean, per-seed values and the paired difference
    against ``baseline`` (same seed, same warm start) with a 95% percentile bootstrap CI."""
    out: dict[str, dict[str, Any]] = {}
    for variant, values in per_seed.items():
        entry: dict[str, Any] = {"per_seed": {m: values[m] for m in values}, "seeds": seeds,
                                 "mean": {m: statistics.fmean(v) for m, v in values.items() if v}}
        paired = {}
        for metric in metrics:
            deltas = [a - b for a, b in zip(values[metric], per_seed[baseline][metric])]
            low, high = paired_bootstrap_ci(deltas, seed=0)
            paired[metric] = {"mean": statistics.fmean(deltas), "ci": [low, high], "deltas": deltas}
        entry[f"vs_{baseline}"] = paired
        out[variant] = entry
    return out


def _delta(entry: dict[str, Any], key: str, metric: str) -> str:
    d = entry[key][metric]
    return f"{d['mean']:+.3f} [{d['ci'][0]:+.3f}, {d['ci'][1]:+.3f}]"


def _seeds(values: list[float]) -> str:
    return " ".join(f"{v:.2f}" for v in values)


def verdict(variants: dict[str, Any], key: str, metric: str, label: str) -> str:
    """One line sorting the variants by where the 95% CI of their paired difference lies."""
    groups: dict[str, list[str]] = {"above 0": [], "below 0": [], "includes 0": []}
    for name, entry in variants.items():
        if name == key.removeprefix("vs_"):
            continue
        low, high = entry[key][metric]["ci"]
        groups["above 0" if low > 0 else "below 0" if high < 0 else "includes 0"].append(f"`{name}`")
    parts = [f"{where}: {', '.join(names)}" for where, names in groups.items() if names]
    return f"CI of the paired difference in {label} — " + "; ".join(parts) + "."


def grpo_table(results: dict[str, Any]) -> str:
    s = results["settings"]
    lines = [f"GRPO on `{s['task']}` (length {s['length']}), {len(s['seeds'])} seeds x {s['steps']} steps x "
             f"{s['prompts_per_step']} prompts x G={s['group_size']}, warm start pinned at {s['sft_steps']} "
             f"supervised steps (greedy {results['warm_start']['greedy_accuracy']:.3f}, sampled Mean@8 "
             f"{results['warm_start']['mean_at_8']:.3f}, Pass@8 {results['warm_start']['pass_at_8']:.3f}); "
             f"held-out {s['eval_size']} targets, 8 samples each at temperature 1. Differences are paired by seed "
             f"against vanilla GRPO, 95% bootstrap CI over seeds.", "",
             "| variant | Mean@8 | Pass@8 | Mean@1 | greedy | distinct right @8 | entropy first→last 10% | "
             "rollouts/prompt (informative groups) | Δ Mean@8 vs vanilla | Δ Pass@8 | Δ greedy | Mean@8 per seed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, entry in results["variants"].items():
        m = entry["mean"]
        lines.append(
            f"| {name} | {m['mean_at_8']:.3f} | {m['pass_at_8']:.3f} | {m['mean_at_1']:.3f} | {m['greedy']:.3f} | "
            f"{m['distinct_correct_at_8']:.2f} | {m['entropy_start']:.3f}→{m['entropy_end']:.3f} | "
            f"{m['rollouts_used_informative']:.2f} | {_delta(entry, 'vs_none', 'mean_at_8')} | "
            f"{_delta(entry, 'vs_none', 'pass_at_8')} | {_delta(entry, 'vs_none', 'greedy')} | "
            f"{_seeds(entry['per_seed']['mean_at_8'])} |")
    lines += ["", verdict(results["variants"], "vs_none", "mean_at_8", "Mean@8 against vanilla GRPO"),
              verdict(results["variants"], "vs_none", "pass_at_8", "Pass@8 against vanilla GRPO")]
    return "\n".join(lines)


def dial_table(results: dict[str, Any]) -> str:
    s, w = results["settings"], results["warm_start"]
    lines = [f"On-policy distillation on `{s['task']}` (length {s['length']}), keep ratio {s['keep_ratio']:g} "
             f"(realised share in the table), {len(s['seeds'])} seeds x {s['steps']} steps x {s['prompts_per_step']} "
             f"prompts; student pinned at {s['student_sft_steps']} supervised steps (greedy "
             f"{w['student_greedy']:.3f}, Mean@8 {w['student_mean_at_8']:.3f}), teacher {s['teacher_sft_steps']} steps "
             f"at temperature {s['teacher_temperature']:g} (greedy {w['teacher_greedy']:.3f}, Mean@8 "
             f"{w['teacher_mean_at_8']:.3f}); low-low: both p < {s['low_prob']:g}. Differences are paired by seed, "
             f"95% bootstrap CI over seeds.", "",
             "| selector | Mean@8 | Pass@8 | greedy | reverse KL last 10% | entropy last 10% | realised share | "
             "low-low among selected | overlap with top-signal | Δ Mean@8 vs all tokens | Δ Mean@8 vs top-signal | "
             "Δ greedy vs all tokens | Mean@8 per seed |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    for name, entry in results["variants"].items():
        m = entry["mean"]
        lines.append(
            f"| {name} | {m['mean_at_8']:.3f} | {m['pass_at_8']:.3f} | {m['greedy']:.3f} | {m['reverse_kl_end']:.3f} | "
            f"{m['entropy_end']:.3f} | {m['selected_share']:.3f} | {m['selected_low_low_share']:.3f} | "
            f"{m['overlap_top_signal']:.3f} | {_delta(entry, 'vs_all', 'mean_at_8')} | "
            f"{_delta(entry, 'vs_top_signal', 'mean_at_8')} | {_delta(entry, 'vs_all', 'greedy')} | "
            f"{_seeds(entry['per_seed']['mean_at_8'])} |")
    lines += ["", verdict(results["variants"], "vs_all", "mean_at_8", "Mean@8 against all-token distillation"),
              verdict(results["variants"], "vs_top_signal", "mean_at_8", "Mean@8 against divergence-only selection")]
    return "\n".join(lines)


def regime_table(results: dict[str, Any]) -> str:
    lines = [f"Regime statistics at the warm start (first {results['settings']['steps']} steps of each method; "
             f"low-low: both p < {results['settings']['low_prob']:g}).", "",
             "| regime | warm start greedy / Mean@8 | distinct rollouts per group | drops with a copy left in "
             "the group | mean p of dropped rollouts | teacher greedy / Mean@8 | tokens with p_t > 0.99 | low-low tokens | "
             "low-low among top-signal picks | DIAL beta 0.5 picks also picked by top-signal |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for name, r in results["regimes"].items():
        lines.append(
            f"| {name} | {r['student_greedy']:.3f} / {r['student_mean_at_8']:.3f} | {r['distinct_share']:.3f} | "
            f"{r['drops_with_copy']}/{r['drops']} | {r['dropped_probability']:.3f} | "
            f"{r['teacher_greedy']:.3f} / {r['teacher_mean_at_8']:.3f} | {r['teacher_sure_share']:.3f} | "
            f"{r['low_low_share']:.3f} | {r['top_signal_low_low_share']:.3f} | {r['dial_overlap_top_signal']:.3f} |")
    return "\n".join(lines)


def render(results_dir: Path = RESULTS) -> str:
    """The README block (without the markers) from the results files present."""
    parts = []
    renderers = (("posttrain_regime.json", regime_table), ("grpo_dropout.json", grpo_table),
                 ("dial_opd.json", dial_table))
    for file_name, renderer in renderers:
        path = results_dir / file_name
        if path.exists():
            parts.append(f"From `benchmarks/results/{file_name}`:\n\n" + renderer(json.loads(path.read_text())))
    return "\n\n".join(parts)


def readme_block(readme: str) -> str:
    """The text between the markers of ``readme``; a clear error when they are missing."""
    if BEGIN not in readme or END not in readme:
        raise ValueError(f"README has no {BEGIN} ... {END} block")
    return readme.split(BEGIN, 1)[1].split(END, 1)[0].strip("\n")


def write_readme(readme_path: Path = ROOT / "README.md", results_dir: Path = RESULTS) -> None:
    text = readme_path.read_text()
    readme_block(text)  # the markers must be there
    before, rest = text.split(BEGIN, 1)
    after = rest.split(END, 1)[1]
    readme_path.write_text(f"{before}{BEGIN}\n{render(results_dir)}\n{END}{after}")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--write", action="store_true", help="replace the README block")
    if parser.parse_args().write:
        write_readme()
    else:
        print(render())
