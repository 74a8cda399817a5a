"""The paper's two experiments on the shipped archive: 24 experiment choices, and leave-one-group-out transfer.

    OMP_NUM_THREADS=1 nice -n 15 python benchmarks/forecast_transfer.py --seeds 12   # runs, writes the results file
    python benchmarks/forecast_transfer.py --write       # README block from benchmarks/results/forecast_transfer.json

Every research environment is a target; every agent plays ``no_experience``, ``in_env``
(same-environment experience), ``cross_env`` (every other environment's records) and ``logo``
(only the environments outside the target's group: ``transfer.logo_condition``) at the fixed
budget of 24 choices (``transfer.BUDGET_DESIGN``: 8 rounds, 3 executed of 8 candidates), on the
same seeds, so each condition pairs with ``no_experience`` on the same pool. ``zero`` (the blind
picker) plays once per target and seed: its regret is the unit regrets are divided by. The
results file holds the two tables (``transfer.budget_table``, ``transfer.transfer_table``), the
within-agent experience verdicts with their MDD (``experience_effect.experience_effects``, the
target as the unit), and the variance components the calibration
(``benchmarks/forecast_experience_calibration.py``) draws its constructed designs from. A test
checks that the README block equals what this file renders from the results file.
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
RESULTS = ROOT / "benchmarks" / "results" / "forecast_transfer.json"
CALIBRATION = ROOT / "benchmarks" / "results" / "forecast_experience_calibration.json"
BEGIN, END = "<!-- forecast-transfer:begin -->", "<!-- forecast-transfer:end -->"
AGENTS: tuple[dict[str, Any], ...] = (
    {"id": "knn", "kind": "forecast_knn"}, {"id": "ridge", "kind": "forecast_ridge"},
    {"id": "group_prior", "kind": "forecast_group_prior"},
    {"id": "heuristic", "kind": "llm", "model": "rsigym/forecast_heuristic"},
)
PAPER = {"archive": "9 environments, 2,653 records", "budget_same_env": 0.158, "budget_cross_env": 0.116,
         "transfer_regret_cut": 0.78}
sys.path.insert(0, str(ROOT / "benchmarks"))


def variance_components(rows: list[dict[str, Any]]) -> dict[str, Any]:
    """Per (agent, condition, reading): the SD between targets of their mean normalised deltas and
    the pooled SD of per-seed deltas within a target (what the calibration's designs are drawn from)."""
    from rsigym.envs.forecast.experience_effect import _reading, experience_pairs, target_scales
    scale = target_scales(rows)
    out: dict[str, Any] = {}
    for (agent, condition), pairs in sorted(experience_pairs(rows).items()):
        for reading in ("round1", "curve"):
            by_task: dict[str, list[float]] = {}
            for p in pairs:
                delta = (_reading(p["with"], reading) - _reading(p["without"], reading)) / scale[p["task"]]
                by_task.setdefault(p["task"], []).append(delta)
            means = [statistics.fmean(v) for _, v in sorted(by_task.items())]
            within = [statistics.variance(v) for _, v in sorted(by_task.items()) if len(v) >= 2]
            out[f"{agent}|{condition}|{reading}"] = {
                "targets": len(means), "seeds": min(len(v) for v in by_task.values()),
                "sd_between_targets": statistics.stdev(means) if len(means) >= 2 else math.nan,
                "sd_within_target": math.sqrt(statistics.fmean(within)) if within else math.nan}
    return out


def run(seeds: int, archive_dir: Path | None, rows_path: Path, targets: list[str] | None = None) -> dict[str, Any]:
    """Play every (agent, target, condition, seed), keep the rows in ``rows_path``, and summarise.

    ``targets`` plays only these (a shard: several shards' rows, concatenated, are summarised by ``--from-rows``).
    """
    from rsigym.envs.forecast.archive import load_archive, parse_archive
    from rsigym.envs.forecast.transfer import logo_condition, play

    archive = (parse_archive((archive_dir / "archive.jsonl.gz").read_bytes(),
                             json.loads((archive_dir / "archive_provenance.json").read_text()))
               if archive_dir else load_archive())
    tasks = sorted(archive.baselines) if not targets else sorted(targets)
    rows: list[dict[str, Any]] = []
    started = time.perf_counter()
    for task in tasks:
        for seed in range(seeds):
            rows.append(play({"id": "zero", "kind": "forecast_zero"}, task, {"name": "no_experience"}, seed,
                             archive=archive))
            for agent in AGENTS:
                for label, condition in (("no_experience", {"name": "no_experience"}), ("in_env", {"name": "in_env"}),
                                         ("cross_env", {"name": "cross_env"}), ("logo", logo_condition(task))):
                    rows.append(play(agent, task, condition, seed, archive=archive, label=label))
        print(f"{task}: {len(rows)} episodes, {time.perf_counter() - started:.0f} s", file=sys.stderr, flush=True)
    rows_path.write_text("".join(json.dumps(r, sort_keys=True) + "\n" for r in rows))
    return summarise(rows, seeds, len(archive.records), len(archive.baselines), round(time.perf_counter() - started))


def summarise(rows: list[dict[str, Any]], seeds: int, records: int, environments: int, run_s: int) -> dict[str, Any]:
    """The results file's content from the episode rows."""
    from rsigym.envs.forecast.experience_effect import experience_effects
    from rsigym.envs.forecast.transfer import BUDGET_DESIGN, budget_table, transfer_table
    rows = sorted(rows, key=lambda r: (r["agent"], r["condition"], r["task"], r["seed"]))
    tasks = sorted({r["task"] for r in rows})
    effects = {f"{e['agent']}|{e['condition']}|{e['reading']}": {
        k: e[k] for k in ("mean", "low", "high", "pairs", "targets", "mdd", "verdict")}
        for e in experience_effects(rows) if e["agent"] != "zero" and e["reading"] in ("round1", "curve")}
    return {
        "design": {**BUDGET_DESIGN, "choices": BUDGET_DESIGN["rounds"] * BUDGET_DESIGN["select"], "seeds": seeds,
                   "targets": len(tasks), "agents": [a["id"] for a in AGENTS],
                   "archive_records": records, "archive_environments": environments},
        "episodes": len(rows), "paper": PAPER,
        "budget": budget_table(rows, conditions=("in_env", "cross_env", "logo")),
        "transfer": [{**t, "condition": "logo"} for t in transfer_table(rows, condition="logo")]
        + [{**t, "condition": "cross_env"} for t in transfer_table(rows, condition="cross_env")],
        "experience": effects, "variance": variance_components(rows),
        "blind": _blind(rows),
        "run_s": run_s,
    }


def _blind(rows: list[dict[str, Any]]) -> dict[str, float]:
    """Mean over targets of the blind picker's final best gain and of the pool's best, both / target gain SD."""
    from rsigym.report.stats import cluster_means
    zero = [r for r in rows if r["agent"] == "zero"]
    tasks = [r["task"] for r in zero]
    found = cluster_means([r["best_gain"] / r["gain_sd"] for r in zero], tasks)
    pool = cluster_means([r["pool_best_gain"] / r["gain_sd"] for r in zero], tasks)
    return {"zero_best": statistics.fmean(found.values()), "pool_best": statistics.fmean(pool.values())}


def _f(value: float | None, digits: int = 2) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.{digits}f}"


def _pct(value: float, digits: int = 0) -> str:
    return "n/a" if value is None or math.isnan(value) else f"{100 * value:+.{digits}f}%"


def render(result: dict[str, Any], calibration: dict[str, Any] | None = None) -> str:
    """The README block: design, the two tables with the paper's numbers, the experience MDDs and,
    given ``benchmarks/results/forecast_experience_calibration.json``, the verdict's calibration."""
    d, paper = result["design"], result["paper"]
    lines = [f"Measured by `benchmarks/forecast_transfer.py` ({result['episodes']} episodes: {d['targets']} targets x "
             f"{d['seeds']} seeds x 4 agents x 4 conditions, plus the blind `zero`; archive of "
             f"{d['archive_environments']} environments and {d['archive_records']} records, the paper's "
             f"{paper['archive']}; {result.get('wall', str(result['run_s']) + ' s')}). The unit is the target "
             "environment: each target's mean over its seeds is one value; t intervals over targets, and "
             "target-resampling bootstrap intervals for ratios.", "",
             f"**{d['choices']} experiment choices** ({d['rounds']} rounds, {d['select']} executed of "
             f"{d['candidates']} candidates): final best gain / target gain SD, condition - `no_experience` "
             "[95% CI], and the relative change of the mean (paper: same-environment "
             f"{_pct(paper['budget_same_env'], 1)}, cross-environment {_pct(paper['budget_cross_env'], 1)}). "
             + (f"For scale: the blind picker (`zero`) ends at {result['blind']['zero_best']:.2f} and the pool's best "
                f"is {result['blind']['pool_best']:.2f} on average." if "blind" in result else ""), "",
             "| agent | no experience | same-env (in_env) | relative | cross-env (all others) | relative | "
             "cross-env (other groups) | relative |", "|---|---|---|---|---|---|---|---|"]
    budget = {(b["agent"], b["condition"]): b for b in result["budget"]}
    for agent in d["agents"]:
        cells = []
        for condition in ("in_env", "cross_env", "logo"):
            b = budget.get((agent, condition))
            cells += ["n/a", "n/a"] if b is None else [
                f"{b['best']:.2f} ({_f(b['delta'])} [{_f(b['low'])}, {_f(b['high'])}])",
                f"{_pct(b['relative'])} [{_pct(b['relative_low'])}, {_pct(b['relative_high'])}]"]
        reference = next((b["best_reference"] for (a, _), b in budget.items() if a == agent), math.nan)
        lines.append(f"| {agent} | {reference:.2f} | " + " | ".join(cells) + " |")
    lines += ["", "**Leave-one-group-out transfer**: pre-training experience from every group of environments "
              "but the target's (groups: " + ", ".join(f"{g} ({n})" for g, n in _group_sizes(result).items()) +
              "); selection regret (Regret@3 / the blind picker's) with and without it, and the cut "
              f"1 - regret(with) / regret(without) (paper: cross-environment pre-training cut selection regret by "
              f"{100 * paper['transfer_regret_cut']:.0f}%). Round 1 = the one-shot pick before any feedback:", "",
              "| agent | held-out group | targets | regret without | regret with | cut [95% CI] | difference [95% CI] |",
              "|---|---|---|---|---|---|---|"]
    for t in result["transfer"]:
        if t["reading"] != "round1" or t.get("condition", "logo") != "logo":
            continue
        lines.append(f"| {t['agent']} | {t['group']} | {t['targets']} | {t['regret_reference']:.2f} | {t['regret']:.2f} | "
                     f"{_pct(t['cut'])} [{_pct(t['cut_low'])}, {_pct(t['cut_high'])}] | "
                     f"{_f(t['delta'])} [{_f(t['low'])}, {_f(t['high'])}] |")
    pooled = [t for t in result["transfer"] if t["group"] == "all" and t["reading"] == "curve"
              and t.get("condition", "logo") == "logo"]
    lines += ["", "Over all rounds (the curve), all targets: " + "; ".join(
        f"{t['agent']} {_pct(t['cut'])} [{_pct(t['cut_low'])}, {_pct(t['cut_high'])}]" for t in pooled) + "."]
    mdds = {k: v["mdd"] for k, v in result["experience"].items() if not math.isnan(v["mdd"])}
    called = [f"{k.replace('|', ' ')} {v['verdict']}" for k, v in sorted(result["experience"].items())
              if v["verdict"] not in ("no detectable effect", "insufficient data")]
    lines += ["", f"Within-agent experience verdicts at this design ({d['targets']} targets x {d['seeds']} seeds; "
              "round 1 and curve; in units of the blind picker's regret): MDD "
              f"{min(mdds.values()):.3f} to {max(mdds.values()):.3f} over {len(mdds)} agent x condition x reading "
              "cells (median " + f"{statistics.median(mdds.values()):.3f}" + "); verdicts other than n.s.: "
              + ("; ".join(called) or "none") + "."]
    if calibration is not None:
        lines += ["", "The experience verdict on constructed records with known truth "
                  "(`benchmarks/forecast_experience_calibration.py`; the shipped design: targets as the unit, "
                  "true effects that differ by target, noise = the median of the real forecasters' cells of each "
                  "reading; found = \"helps\", called = \"helps\" or \"hurts\"; exact 95% intervals):", "",
                  "| reading | targets x seeds | noise within / between targets | true effect (blind-regret units) "
                  "| designs | found | called | median MDD |", "|---|---|---|---|---|---|---|---|"]
        for reading, r in calibration["readings"].items():
            for arm in r["arms"]:
                label = f"{arm['effect']:.2f}" + (" (null)" if arm["effect"] == 0 else
                                                   " (positive control)" if arm["effect"] == calibration["positive_control"]
                                                   else " (the paper's cut)" if arm["effect"] == 0.78 else "")
                lines.append(f"| {reading} | {r['targets']} x {r['seeds']} | {r['sigma']:.2f} / {r['tau']:.2f} | {label} | "
                             f"{arm['designs']} | {arm['found']}/{arm['designs']} "
                             f"[{arm['found_ci'][0]:.2f}, {arm['found_ci'][1]:.2f}] | {arm['called']}/{arm['designs']} "
                             f"[{arm['called_ci'][0]:.2f}, {arm['called_ci'][1]:.2f}] | {arm['median_mdd']:.3f} |")
        summary = []
        for reading, r in calibration["readings"].items():
            measured = r["measured_mdd"]
            summary.append(f"{reading} {min(measured):.3f} to {max(measured):.3f} (median {statistics.median(measured):.3f}; "
                           f"{sum(m <= calibration['mdd_bound'] for m in measured)}/{len(measured)} cells <= "
                           f"{calibration['mdd_bound']})")
        lines += ["", "MDD of the real forecasters at this design: " + "; ".join(summary) + "."]
        sized = [(reading, r) for reading, r in calibration["readings"].items() if r.get("null_size")]
        if sized:
            lines += ["", "MDD at the design (the median over the arms with an effect; the MDD of the t test over "
                      "targets): " + "; ".join(f"{reading} {r['design_mdd']:.3f}" for reading, r in sized)
                      + f" (bound {calibration['mdd_bound']}). The null arm again on many designs (the verdict's "
                      "size; 60 designs cannot tell 5% from 7%): " + "; ".join(
                          f"{reading} {r['null_size']['called']}/{r['null_size']['designs']} called = "
                          f"{r['null_size']['called'] / r['null_size']['designs']:.3f} "
                          f"[{r['null_size']['called_ci'][0]:.3f}, {r['null_size']['called_ci'][1]:.3f}]"
                          for reading, r in sized) + "."]
        pooled = [(reading, r) for reading, r in calibration["readings"].items() if r.get("null_pooled")]
        if pooled:
            lines += ["", "The calibration's rule (positive control found in >= 80% of its designs; the null called in "
                      "<= 5% of every null design, both arms): " + "; ".join(
                          f"{reading} null {r['null_pooled']['called']}/{r['null_pooled']['designs']} = "
                          f"{r['null_pooled']['called'] / r['null_pooled']['designs']:.3f} "
                          f"[{r['null_pooled']['called_ci'][0]:.3f}, {r['null_pooled']['called_ci'][1]:.3f}], "
                          + ("calibrated" if r["calibrated"] else "NOT calibrated") for reading, r in pooled) + "."]
    return "\n".join(lines)


def render_files(results: Path = RESULTS, calibration: Path = CALIBRATION) -> str:
    """``render`` of the committed results files."""
    return render(json.loads(results.read_text()),
                  json.loads(calibration.read_text()) if calibration.exists() else None)


def _group_sizes(result: dict[str, Any]) -> dict[str, int]:
    """Targets per group as the results file counted them (the code's groups may have grown since)."""
    from rsigym.envs.forecast.research import ENVIRONMENT_GROUPS
    counted = {t["group"]: t["targets"] for t in result["transfer"] if t["group"] != "all"}
    return {g: counted.get(g, len(members)) for g, members in ENVIRONMENT_GROUPS.items()}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--seeds", type=int, default=0, help="run this many seeds per target and write the results file")
    parser.add_argument("--archive", type=Path, help="an archive folder instead of the shipped archive")
    parser.add_argument("--wall", help="how long the run took, as the README should say it")
    parser.add_argument("--run-s", type=int, help="with --from-rows: the seconds the shards played (summed)")
    parser.add_argument("--out", type=Path, default=RESULTS)
    parser.add_argument("--rows", type=Path, default=Path("runs/forecast_transfer_rows.jsonl"),
                        help="where the episode rows are kept (--from-rows summarises them again)")
    parser.add_argument("--from-rows", action="store_true", help="summarise --rows instead of playing")
    parser.add_argument("--targets", nargs="*", help="play only these targets (a shard; summarise all shards' "
                                                     "concatenated rows with --from-rows)")
    parser.add_argument("--write", action="store_true", help="write the README block from the results file")
    args = parser.parse_args(argv)
    if args.seeds or args.from_rows:
        if args.from_rows:
            from rsigym.envs.forecast.archive import load_archive
            rows = [json.loads(line) for line in args.rows.read_text().splitlines()]
            archive = load_archive()
            result = summarise(rows, len({r["seed"] for r in rows}), len(archive.records), len(archive.baselines),
                               args.run_s if args.run_s is not None
                               else json.loads(args.out.read_text())["run_s"] if args.out.exists() else 0)
        else:
            args.rows.parent.mkdir(parents=True, exist_ok=True)
            result = run(args.seeds, args.archive, args.rows, args.targets)
        if args.wall:
            result["wall"] = args.wall
        args.out.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
        print(render(result))
    if args.write:
        import readme_blocks
        readme_blocks.replace(ROOT / "docs" / "families" / "forecast.md", BEGIN, END, render_files())
        print("README forecast-transfer block written")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
