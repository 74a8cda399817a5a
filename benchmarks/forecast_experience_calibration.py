"""Can the within-agent experience verdict fail, and what does it detect at the shipped design?

    python benchmarks/forecast_experience_calibration.py [--designs 60] [--null-designs 2000]   # --json: results file

Constructed records with known truth, run through the verdict code itself
(``experience_effect.experience_effects``: the target as the unit, a t interval over targets, the
even/odd seed-block stability check). A design is the shipped one of
``benchmarks/forecast_transfer.py``: its number of targets and of seeds per target. In each
design every target t gets a true effect ``delta_t = delta + tau * z_t`` (effects that differ by
target) and every seed a paired difference ``delta_t + sigma * e_ts``, in units of the blind
picker's regret (the verdict's units). ``sigma`` (within a target) and ``tau`` (between targets'
true effects, ``tau^2 = sd_between^2 - sigma^2 / seeds``) are the medians over the real
forecasters' agent x condition cells of one reading in
``benchmarks/results/forecast_transfer.json``, per reading: ``curve`` (the mean Regret@3 over the
rounds) and ``round1`` (the one-shot pick, far noisier per seed). The null arm has no effect on any
target (delta = 0, tau = 0). Printed per reading and arm: designs where the verdict says "helps"
(found) or calls an effect (helps or hurts), with exact Clopper-Pearson 95% intervals, and the
median MDD the verdict printed (the MDD of its t test over targets, ``experience_effect.cluster_mdd``);
and the MDDs measured on the real forecasters. ``--null-designs`` runs the null arm again on many
more designs: the verdict's false-call rate (its size) with a tight exact interval, since 60
designs cannot tell a 5% test from a 7% one (an exact 5% test calls 4 or more of 60 nulls one
time in three).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats

ROOT = Path(__file__).resolve().parents[1]
TRANSFER = ROOT / "benchmarks" / "results" / "forecast_transfer.json"
RESULTS = ROOT / "benchmarks" / "results" / "forecast_experience_calibration.json"
EFFECTS = (0.0, 0.10, 0.15, 0.20, 0.30, 0.78)      # 0.78: the paper's regret cut, in the same units
POSITIVE_CONTROL = 0.30      # the smallest effect of EFFECTS above every median MDD the design prints
MDD_BOUND = 0.15


def noise_from(transfer: dict[str, Any], reading: str) -> tuple[float, float, int, int]:
    """(sigma within a target, tau between targets' true effects, targets, seeds): medians over ``reading``'s cells."""
    seeds = int(transfer["design"]["seeds"])
    cells = [v for k, v in transfer["variance"].items() if k.endswith("|" + reading)
             and not math.isnan(v["sd_within_target"])]
    sigma = statistics.median(v["sd_within_target"] for v in cells)
    tau = statistics.median(math.sqrt(max(0.0, v["sd_between_targets"] ** 2 - v["sd_within_target"] ** 2 / seeds))
                            for v in cells)
    return sigma, tau, int(transfer["design"]["targets"]), seeds


def constructed_rows(effect: float, sigma: float, tau: float, targets: int, seeds: int,
                     rng: np.random.Generator) -> list[dict[str, Any]]:
    """Episode rows of one design: agent ``a`` with and without experience, and ``zero`` (scale 1)."""
    rows = []
    true_effects = -effect + (tau * rng.standard_normal(targets) if effect else np.zeros(targets))
    for t in range(targets):
        task = f"target-{t:02d}"
        for seed in range(seeds):
            base = 1.0 + 0.3 * rng.standard_normal()
            delta = true_effects[t] + sigma * rng.standard_normal()
            common = {"task": task, "seed": seed, "rep": 0, "observed": "mean", "round_noise": [False]}
            rows.append({**common, "agent": "zero", "condition": "no_experience", "condition_name": "no_experience",
                         "round_regret": [1.0], "regret_best": 1.0})
            rows.append({**common, "agent": "a", "condition": "no_experience", "condition_name": "no_experience",
                         "round_regret": [base], "regret_best": base})
            rows.append({**common, "agent": "a", "condition": "in_env", "condition_name": "in_env",
                         "round_regret": [base + delta], "regret_best": base + delta})
    return rows


def exact_ci(k: int, n: int) -> tuple[float, float]:
    ci = stats.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return float(ci.low), float(ci.high)


def calibrate(designs: int, sigma: float, tau: float, targets: int, seeds: int, seed: int = 0,
              effects: tuple[float, ...] = EFFECTS) -> list[dict[str, Any]]:
    from rsigym.envs.forecast.experience_effect import experience_effects
    out = []
    for effect in effects:
        rng = np.random.default_rng([seed, int(round(effect * 1000))])
        found = called = 0
        mdds = []
        for _ in range(designs):
            verdict = next(e for e in experience_effects(constructed_rows(effect, sigma, tau, targets, seeds, rng))
                           if e["agent"] == "a" and e["reading"] == "round1")
            found += verdict["verdict"] == "helps"
            called += verdict["verdict"] in ("helps", "hurts")
            mdds.append(verdict["mdd"])
        out.append({"effect": effect, "designs": designs, "found": found, "found_ci": exact_ci(found, designs),
                    "called": called, "called_ci": exact_ci(called, designs), "median_mdd": statistics.median(mdds)})
    return out


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--designs", type=int, default=60, help="constructed designs per arm (>= 50)")
    parser.add_argument("--null-designs", type=int, default=2000,
                        help="designs of the second, larger null arm (the verdict's size); 0 skips it")
    parser.add_argument("--json", action="store_true", help="write benchmarks/results/forecast_experience_calibration.json")
    args = parser.parse_args(argv)
    transfer = json.loads(TRANSFER.read_text())
    result: dict[str, Any] = {"positive_control": POSITIVE_CONTROL, "mdd_bound": MDD_BOUND, "readings": {}}
    ok = True
    for reading in ("curve", "round1"):
        sigma, tau, targets, seeds = noise_from(transfer, reading)
        arms = calibrate(args.designs, sigma, tau, targets, seeds)
        measured = [v["mdd"] for k, v in transfer["experience"].items()
                    if k.endswith("|" + reading) and not math.isnan(v["mdd"])]
        print(f"reading {reading}: {targets} targets (the unit) x {seeds} seeds; median noise of the real "
              f"forecasters' cells: sigma {sigma:.3f} within a target, tau {tau:.3f} between targets' true effects")
        print(f"  measured MDD of the real forecasters: {min(measured):.3f} .. {max(measured):.3f} "
              f"(median {statistics.median(measured):.3f}; cells <= {MDD_BOUND}: "
              f"{sum(m <= MDD_BOUND for m in measured)}/{len(measured)})")
        print(f"  {'true effect':>12} {'designs':>8} {'found (helps)':>22} {'called (helps|hurts)':>26} {'median MDD':>11}")
        for arm in arms:
            print(f"  {arm['effect']:>12.2f} {arm['designs']:>8} "
                  f"{arm['found']:>5}/{arm['designs']} [{arm['found_ci'][0]:.2f}, {arm['found_ci'][1]:.2f}]     "
                  f"{arm['called']:>5}/{arm['designs']} [{arm['called_ci'][0]:.2f}, {arm['called_ci'][1]:.2f}]        "
                  f"{arm['median_mdd']:.3f}")
        positive = next(a for a in arms if a["effect"] == POSITIVE_CONTROL)
        null = next(a for a in arms if a["effect"] == 0.0)
        design_mdd = statistics.median(a["median_mdd"] for a in arms if a["effect"] > 0)
        size = None
        if args.null_designs:
            big = calibrate(args.null_designs, sigma, tau, targets, seeds, seed=1, effects=(0.0,))[0]
            size = {k: big[k] for k in ("designs", "called", "called_ci", "found", "found_ci")}
            print(f"  null again on {big['designs']} designs (the verdict's size): {big['called']} called "
                  f"= {big['called'] / big['designs']:.3f} [{big['called_ci'][0]:.3f}, {big['called_ci'][1]:.3f}]")
        # The size is judged on every null design (60 designs cannot tell 5% from 7%: the larger arm is
        # there to measure it); the positive control on its own arm.
        null_called = null["called"] + (size["called"] if size else 0)
        null_designs = null["designs"] + (size["designs"] if size else 0)
        passed = positive["found"] >= 0.8 * positive["designs"] and null_called <= 0.05 * null_designs
        ok = ok and passed
        low, high = exact_ci(null_called, null_designs)
        print(f"  positive control (effect {POSITIVE_CONTROL}): {positive['found']}/{positive['designs']} found; "
              f"null: {null_called}/{null_designs} called = {null_called / null_designs:.3f} [{low:.3f}, {high:.3f}] "
              f"(every null design; {null['called']}/{null['designs']} in the first arm) -> "
              f"{'calibrated' if passed else 'NOT calibrated'}; "
              f"MDD at the design (median over the arms with an effect) {design_mdd:.3f} "
              f"({'<=' if design_mdd <= MDD_BOUND else '>'} {MDD_BOUND})")
        result["readings"][reading] = {"sigma": sigma, "tau": tau, "targets": targets, "seeds": seeds, "arms": arms,
                                       "measured_mdd": sorted(measured), "calibrated": passed,
                                       "null_pooled": {"called": null_called, "designs": null_designs,
                                                       "called_ci": [low, high]},
                                       "design_mdd": design_mdd, "null_size": size}
    if args.json:
        RESULTS.write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
