"""The run grid shared by the post-training benchmarks: seed blocks, cached runs, presets, results files.

A benchmark compares variants on every run of a block (warm starts x seeds). Block ``b`` uses warm
starts ``b * W .. b * W + W - 1`` and seeds ``100 * (b + 1) + j``, so two blocks share no random
number. Each run's JSON result is cached under a hash of its arguments: a benchmark cut short
resumes, and blocks or variants can be spread over processes (``--runs-only``). Results files hold
no wall-clock time and no path, so the same command gives the same bytes.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
import math
import statistics
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

from posttrain_regenerate import rerun_tolerance
from posttrain_verdicts import block_summary, claim_verdicts, power_arms, run_key, stability_column

from rsigym.cache import atomic_write_bytes, cache_key

BLOCK_NAMES = [chr(ord("A") + i) for i in range(26)] + [f"A{chr(ord('A') + i)}" for i in range(26)]
"""block names: A .. Z, then AA .. AZ (the power study replicates up to 52 blocks)"""
RUN_ONLY_KEYS = ("seconds", "plot")
"""run results that vary between identical runs (wall time) or with the output folder (a path)"""


def block_units(block: int, warm_starts: int, seeds: int) -> list[tuple[int, int]]:
    """(warm start, seed) pairs of block ``block``."""
    return [(block * warm_starts + w, 100 * (block + 1) + s) for w in range(warm_starts) for s in range(seeds)]


def cached_run(run: Callable[[Any], dict], run_args: Any, out: Path) -> dict:
    """``run(run_args)`` without its wall time and paths, kept in ``out/run-cache`` under a hash of the arguments."""
    name = type(run_args).__module__.rsplit(".", 1)[-1]
    path = out / "run-cache" / f"{name}-{cache_key(name + '-run', dataclasses.asdict(run_args))}.json"
    if path.exists():
        return json.loads(path.read_text())
    result = {k: v for k, v in run(run_args).items() if k not in RUN_ONLY_KEYS}
    path.parent.mkdir(parents=True, exist_ok=True)
    atomic_write_bytes(path, json.dumps(result).encode())
    return json.loads(json.dumps(result))  # the same values a cached read gives (tuples as lists)


def run_blocks(blocks: Sequence[int], warm_starts: int, seeds: int, variants: Sequence[str],
               make_run: Callable[[str, int, int], tuple[Callable[[Any], dict], Any]], out: Path
               ) -> dict[str, dict[str, dict[str, dict]]]:
    """``{block name: {variant: {run key: result}}}``; ``make_run(variant, warm start, seed)`` gives the
    function and its arguments. Runs go warm start by warm start, so each warm start trains once."""
    results: dict[str, dict[str, dict[str, dict]]] = {}
    for block in blocks:
        per_variant: dict[str, dict[str, dict]] = {v: {} for v in variants}
        for warm_start, seed in block_units(block, warm_starts, seeds):
            for variant in variants:
                run, run_args = make_run(variant, warm_start, seed)
                per_variant[variant][run_key(warm_start, seed)] = cached_run(run, run_args, out)
        results[BLOCK_NAMES[block]] = per_variant
    return results


def power_runs(args: Any, arms: Sequence[dict[str, Any]],
               make_run: Callable[[str, int, int], tuple[Callable[[Any], dict], Any]]
               ) -> dict[str, dict[str, dict[str, dict]]]:
    """The runs of the power study: every variant an arm compares, on blocks ``0 .. args.power_blocks - 1``
    (each an independent replication of one block of the design; runs shared with the tables come from
    the cache)."""
    variants = sorted({a["variant"] for a in arms} | {a["baseline"] for a in arms})
    return run_blocks(range(args.power_blocks), args.warm_starts, args.seeds, variants, make_run, Path(args.out_dir))


def power_summary(args: Any, runs: dict[str, dict[str, dict[str, dict]]],
                  run_metrics: Callable[[dict], dict[str, float]], arms: Sequence[dict[str, Any]],
                  metrics: Sequence[str]) -> dict[str, Any]:
    """``power``: detection and false-call rates of every arm over the power blocks (``power_arms``; none
    without blocks); ``tolerance``: how far a rerun may move a block mean (``rerun_tolerance``, from the
    null arm: the baseline against itself with other random draws)."""
    per_run = {b: {v: {k: run_metrics(r) for k, r in rs.items()} for v, rs in block.items()}
               for b, block in runs.items()}
    null = next((a for a in arms if a["arm"] == "null"), None)
    return {"power": power_arms(per_run, arms) if per_run else [],
            "tolerance": rerun_tolerance(per_run, null["baseline"], null["variant"], metrics, 1.0 / args.eval_size)
            if null and per_run
            else None}


def write_results(path: str, results: dict) -> None:
    """The results file, byte for byte the same for the same results."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(results, indent=1) + "\n")


def parse_preset_args(description: str, presets: dict[str, Any], argv: list[str] | None = None) -> Any:
    """``--preset NAME`` picks the settings; ``--blocks``, ``--variants``, ``--out-dir``, ``--results``,
    ``--runs-only`` and ``--power-blocks`` override them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--preset", choices=sorted(presets), default="default")
    parser.add_argument("--blocks", type=int, nargs="+")
    parser.add_argument("--variants", nargs="+")
    parser.add_argument("--out-dir")
    parser.add_argument("--results")
    parser.add_argument("--runs-only", action="store_true")
    parser.add_argument("--power-blocks", type=int, help="replications (blocks) of the power study")
    ns = parser.parse_args(argv)
    changes: dict[str, Any] = {k: v for k, v in (("out_dir", ns.out_dir), ("results", ns.results)) if v is not None}
    if ns.blocks is not None:
        changes["blocks"] = tuple(ns.blocks)
    if ns.variants is not None:
        changes["variants"] = tuple(ns.variants)
    if ns.runs_only:
        changes["runs_only"] = True
    if ns.power_blocks is not None:
        changes["power_blocks"] = ns.power_blocks
    return dataclasses.replace(presets[ns.preset], **changes)


def window_mean(history: list[dict], key: str, first: bool, share: float = 0.1) -> float:
    """Mean of ``key`` over the first or last ``share`` of a run's steps."""
    if not history:
        return math.nan  # a run of no steps
    n = max(1, int(len(history) * share))
    return statistics.fmean(r[key] for r in (history[:n] if first else history[-n:]))


def summarise_blocks(args: Any, runs: dict[str, dict[str, dict[str, dict]]],
                     run_metrics: Callable[[dict], dict[str, float]], regime: Callable[[dict], dict[str, Any]],
                     baseline: str, metrics: Sequence[str], claims: Sequence[dict[str, Any]]) -> dict[str, Any]:
    """The results file of a benchmark: settings (no paths), per block its runs, regime and paired
    differences against ``baseline``, the stability column and the verdict of every claim whose two
    variants ran."""
    per_run = {b: {v: {k: run_metrics(r) for k, r in rs.items()} for v, rs in block.items()}
               for b, block in runs.items()}
    summaries = {b: block_summary(per_run[b], baseline, metrics) for b in per_run}
    settings = {k: v for k, v in dataclasses.asdict(args).items() if k not in ("out_dir", "results", "runs_only")}
    return {
        "settings": {**settings, "blocks": list(args.blocks), "variants": list(args.variants)},
        "blocks": {b: {"units": [list(u) for u in block_units(index, args.warm_starts, args.seeds)],
                       "regime": regime(runs[b]), "variants": summaries[b]}
                   for index, b in zip(args.blocks, per_run)},
        "stability": {v: {m: stability_column(summaries, baseline, v, m) for m in metrics} for v in args.variants},
        "claims": claim_verdicts(per_run, [c for c in claims if {c["variant"], c["baseline"]} <= set(args.variants)]),
    }
