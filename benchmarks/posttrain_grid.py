"""The run grid shared by the post-training benchmarks: seed blocks, cached runs, presets, results files.

A benchmark compares variants on every run of a block (warm starts x seeds). Block ``b`` uses warm
starts ``b * W .. b * W + W - 1``; its rollout (or distillation) seeds follow the benchmark's seeding scheme
(``block_units``): ``"block"``, seeds ``100 * (b + 1) + j`` shared by the block's warm starts, or ``"unit"``,
seeds of their own per warm start. Either way two blocks share no random number. Each run's JSON result is cached under a hash of its arguments: a benchmark cut short
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


SEEDINGS = ("block", "unit")
"""seeding schemes of a block's runs (``block_units``); a settings object without ``seeding`` uses ``"block"``"""
UNIT_SEED_STRIDE = 10_000
"""``"unit"`` seeding: warm start ``w``'s seeds are ``UNIT_SEED_STRIDE * (w + 1) + j``, so a shifted seed (a reseeded
null adds 1000; a run draws from seed, seed + 1 and seed + 2) stays inside its own warm start's range"""


def seeding_of(args: Any) -> str:
    """The seeding scheme of a benchmark's settings (``"block"`` where they name none: the scheme before
    ``"unit"`` existed)."""
    seeding = getattr(args, "seeding", "block")
    if seeding not in SEEDINGS:
        raise ValueError(f"unknown seeding {seeding!r}; expected one of {', '.join(SEEDINGS)}")
    return str(seeding)


def block_units(block: int, warm_starts: int, seeds: int, seeding: str = "block") -> list[tuple[int, int]]:
    """(warm start, seed) pairs of block ``block``.

    ``"block"``: every warm start of the block draws from the same seeds ``100 * (block + 1) + j``, so the
    block's runs share their rollout stream and the block mean carries that stream's luck, which the
    within-block interval does not see (a null arm was called 2.35x as often as its within-block spread
    predicts: ``posttrain_null_calibration.py``). ``"unit"``: each warm start has seeds of its own
    (``UNIT_SEED_STRIDE``), so the block's warm starts are independent units."""
    starts = range(block * warm_starts, (block + 1) * warm_starts)
    if seeding == "block":
        return [(w, 100 * (block + 1) + s) for w in starts for s in range(seeds)]
    if seeding == "unit":
        return [(w, UNIT_SEED_STRIDE * (w + 1) + s) for w in starts for s in range(seeds)]
    raise ValueError(f"unknown seeding {seeding!r}; expected one of {', '.join(SEEDINGS)}")


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
               make_run: Callable[[str, int, int], tuple[Callable[[Any], dict], Any]], out: Path,
               seeding: str = "block") -> dict[str, dict[str, dict[str, dict]]]:
    """``{block name: {variant: {run key: result}}}``; ``make_run(variant, warm start, seed)`` gives the
    function and its arguments; ``seeding``: ``block_units``'s scheme. Runs go warm start by warm start, so
    each warm start trains once."""
    results: dict[str, dict[str, dict[str, dict]]] = {}
    for block in blocks:
        per_variant: dict[str, dict[str, dict]] = {v: {} for v in variants}
        for warm_start, seed in block_units(block, warm_starts, seeds, seeding):
            for variant in variants:
                run, run_args = make_run(variant, warm_start, seed)
                per_variant[variant][run_key(warm_start, seed)] = cached_run(run, run_args, out)
        results[BLOCK_NAMES[block]] = per_variant
    return results


POWER_STORE_EXCLUDED = ("blocks", "variants", "power_blocks", "out_dir", "results", "runs_only", "power_store",
                        "power_only")
"""settings that do not change a power block's runs (the rest, the design, must match a power store's)"""


def power_design(args: Any) -> dict[str, Any]:
    """The settings that make a power block's runs what they are (a power store holds blocks of one design),
    the seeding scheme always among them."""
    return {**{k: v for k, v in dataclasses.asdict(args).items() if k not in POWER_STORE_EXCLUDED},
            "seeding": seeding_of(args)}


def read_power_store(path: str, args: Any) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """``{block name: {variant: {run key: metrics}}}`` of the blocks a power store holds ({} without one); a
    store of another design is an error, not a silent mix. A store whose design names no seeding was written
    before the schemes had names: its blocks are ``"block"``-seeded, so a ``"unit"``-seeded study refuses it."""
    if not path or not Path(path).exists():
        return {}
    store = json.loads(Path(path).read_text())
    design = {"seeding": "block", **store["design"]}
    wanted = json.loads(json.dumps(power_design(args)))
    if design != wanted:
        differing = sorted(k for k in set(design) | set(wanted) if design.get(k) != wanted.get(k))
        raise ValueError(f"{path} holds power blocks of another design (differs in {', '.join(differing)}); "
                         "move it away to start a new power study")
    return dict(store["blocks"])


def write_power_store(path: str, args: Any, blocks: dict[str, dict[str, dict[str, dict[str, float]]]]) -> None:
    """The power store, blocks in the order they were made (A .. Z, AA ..), byte for byte the same for the same
    blocks."""
    ordered = {name: blocks[name] for name in sorted(blocks, key=lambda name: (len(name), name))}
    atomic_write_bytes(Path(path), (json.dumps({"design": power_design(args), "blocks": ordered}, indent=1)
                                    + "\n").encode())


def power_runs(args: Any, arms: Sequence[dict[str, Any]],
               make_run: Callable[[str, int, int], tuple[Callable[[Any], dict], Any]],
               run_metrics: Callable[[dict], dict[str, float]]) -> dict[str, dict[str, dict[str, dict[str, float]]]]:
    """The per-run metrics of the power study: every variant an arm compares, on blocks
    ``0 .. args.power_blocks - 1`` (each an independent replication of one block of the design; runs shared
    with the tables come from the cache).

    With ``args.power_store`` (a committed file), a block it holds is read from it and every block run here
    is added to it as soon as it is done: the study grows by the missing blocks only, across sessions and
    machines whose run cache is gone. The store keeps each run's metrics exactly (JSON floats round-trip),
    so the summary is the one the runs themselves give.
    """
    variants = sorted({a["variant"] for a in arms} | {a["baseline"] for a in arms})
    store_path = getattr(args, "power_store", "")
    stored = read_power_store(store_path, args)
    out: dict[str, dict[str, dict[str, dict[str, float]]]] = {}
    for block in range(args.power_blocks):
        name = BLOCK_NAMES[block]
        if name in stored and set(variants) <= set(stored[name]):
            out[name] = {v: stored[name][v] for v in variants}
            continue
        runs = run_blocks([block], args.warm_starts, args.seeds, variants, make_run, Path(args.out_dir),
                          seeding_of(args))[name]
        out[name] = {v: {k: run_metrics(r) for k, r in rs.items()} for v, rs in runs.items()}
        if store_path:
            stored = {**read_power_store(store_path, args), name: out[name]}  # re-read: another process may add
            write_power_store(store_path, args, stored)
    return out


def power_summary(args: Any, per_run: dict[str, dict[str, dict[str, dict[str, float]]]],
                  arms: Sequence[dict[str, Any]], metrics: Sequence[str]) -> dict[str, Any]:
    """``power``: detection and false-call rates of every arm over the power blocks (``power_arms``; none
    without blocks); ``tolerance``: how far a rerun may move a block mean (``rerun_tolerance``, from the
    null arm: the baseline against itself with other random draws). ``per_run``: ``power_runs``'s."""
    null = next((a for a in arms if a["arm"] == "null"), None)
    return {"power": power_arms(per_run, arms) if per_run else [],
            "tolerance": rerun_tolerance(per_run, null["baseline"], null["variant"], metrics, 1.0 / args.eval_size)
            if null and per_run
            else None}


def update_power(args: Any, power: dict[str, Any]) -> dict[str, Any]:
    """``--power-only``: the committed results file with its power study (``power``, ``tolerance`` and the
    ``power_blocks`` setting) replaced, everything else as it was: what the whole command writes when the
    table blocks' runs are the ones that made the file."""
    results = json.loads(Path(args.results).read_text())
    results["settings"]["power_blocks"] = args.power_blocks
    results.update(power)
    return results


def write_results(path: str, results: dict) -> None:
    """The results file, byte for byte the same for the same results."""
    if path:
        Path(path).parent.mkdir(parents=True, exist_ok=True)
        Path(path).write_text(json.dumps(results, indent=1) + "\n")


def parse_preset_args(description: str, presets: dict[str, Any], argv: list[str] | None = None) -> Any:
    """``--preset NAME`` picks the settings; ``--blocks``, ``--variants``, ``--out-dir``, ``--results``,
    ``--runs-only``, ``--power-blocks`` and ``--power-only`` override them."""
    parser = argparse.ArgumentParser(description=description)
    parser.add_argument("--preset", choices=sorted(presets), default="default")
    parser.add_argument("--blocks", type=int, nargs="+")
    parser.add_argument("--variants", nargs="+")
    parser.add_argument("--out-dir")
    parser.add_argument("--results")
    parser.add_argument("--runs-only", action="store_true")
    parser.add_argument("--power-blocks", type=int, help="replications (blocks) of the power study")
    parser.add_argument("--power-only", action="store_true",
                        help="run only the power study's missing blocks and replace it in the results file")
    ns = parser.parse_args(argv)
    changes: dict[str, Any] = {k: v for k, v in (("out_dir", ns.out_dir), ("results", ns.results)) if v is not None}
    if ns.blocks is not None:
        changes["blocks"] = tuple(ns.blocks)
    if ns.variants is not None:
        changes["variants"] = tuple(ns.variants)
    if ns.runs_only:
        changes["runs_only"] = True
    if ns.power_only:
        changes["power_only"] = True
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
    settings = {k: v for k, v in dataclasses.asdict(args).items()
                if k not in ("out_dir", "results", "runs_only", "power_store", "power_only")}
    return {
        "settings": {**settings, "blocks": list(args.blocks), "variants": list(args.variants)},
        "blocks": {b: {"units": [list(u) for u in block_units(index, args.warm_starts, args.seeds, seeding_of(args))],
                       "regime": regime(runs[b]), "variants": summaries[b]}
                   for index, b in zip(args.blocks, per_run)},
        "stability": {v: {m: stability_column(summaries, baseline, v, m) for m in metrics} for v in args.variants},
        "claims": claim_verdicts(per_run, [c for c in claims if {c["variant"], c["baseline"]} <= set(args.variants)]),
    }
