"""Calibration of the recursion test of ``workflow_generations.py`` on constructed runs with a known preference.

The recursion test reads, per run (the unit), how many of gen-1's judge's decided comparisons
prefer the gen-2-designed workflow, and calls "gen-2 designs preferred" when the bootstrap-over-
runs 95% interval of the pooled share lies above one half (``run_summary``/``recursion_verdict``).
Here each constructed design has ``--runs`` runs; run r has the decided-comparison count of a run
of the committed results (``results/workflow_generations.json``, drawn with replacement) and
its own true preference p_r, drawn from a Beta with mean ``p`` and concentration kappa (runs
differ, as real runs do; kappa 0 gives every run p); its wins are Binomial(d_r, p_r). By default
two kappas: 0, and the spread the committed runs show (method of moments, ``estimated_kappa``).

* positive control: p = 0.64 (the paper's share): the test must call "gen-2 designs preferred"
  in >= 80% of designs;
* null: p = 0.5: it may call a preference (either side) in <= 5%;
* the minimum detectable share: the smallest p on the grid called in >= 80% of designs.

Counts with exact (Clopper-Pearson) 95% CIs; the unit of each count is the constructed design.
This calibrates the statistic on records of the real shape, not the generation pipeline itself
(no gen-2 known to design better workflows is shipped).

    python benchmarks/workflow_recursion_calibration.py --designs 200 --out benchmarks/results/workflow_recursion_calibration.json
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

import numpy as np
from scipy import stats as st

sys.path.insert(0, str(Path(__file__).resolve().parent))
import workflow_generations as generations  # noqa: E402

RESULTS = Path(__file__).resolve().parent / "results" / "workflow_recursion_calibration.json"
GRID = (0.5, 0.56, 0.6, 0.64, 0.7, 0.75, 0.8)


def design(p: float, decided: list[int], runs: int, kappa: float, rng: np.random.Generator) -> list[dict[str, Any]]:
    """One constructed design: ``runs`` per-run records with true mean preference ``p``."""
    out = []
    for r in range(runs):
        d = int(decided[int(rng.integers(len(decided)))])
        p_r = p if kappa <= 0 else float(rng.beta(p * kappa, (1 - p) * kappa))
        wins = int(rng.binomial(d, p_r))
        out.append({"seed": r, "gen1": 0.5, "gen2": 0.5, "gen2_seedspec": 0.5,
                    "prefer_gen2": wins, "prefer_gen1": d - wins, "ties": 0})
    return out


def proportion(k: int, n: int) -> dict[str, Any]:
    ci = st.binomtest(k, n).proportion_ci(confidence_level=0.95, method="exact")
    return {"k": k, "n": n, "rate": k / n, "low": float(ci.low), "high": float(ci.high)}


def estimated_kappa(per_run: list[dict[str, Any]]) -> float:
    """Beta concentration of per-run preferences by the method of moments (beta-binomial intra-run
    correlation rho, kappa = (1 - rho) / rho); 0 (every run alike) when no extra spread shows."""
    b = np.array([r["prefer_gen2"] for r in per_run], dtype=float)
    n = b + np.array([r["prefer_gen1"] for r in per_run], dtype=float)
    b, n = b[n > 0], n[n > 0]
    p = b.sum() / n.sum()
    spread = float(np.sum(n * (b / n - p) ** 2) / (len(n) - 1))
    n0 = float((n.sum() - np.sum(n ** 2) / n.sum()) / (len(n) - 1))
    rho = (spread - p * (1 - p)) / (spread + (n0 - 1) * p * (1 - p))
    return 0.0 if rho <= 0 else float((1 - rho) / rho)


def main(designs: int, runs: int, kappas: list[float] | None, seed: int, resamples: int,
         out: str | None) -> dict[str, Any]:
    """Every kappa (default: 0 and the one the committed runs show) over the grid of true shares."""
    started = time.perf_counter()
    committed = json.loads(generations.RESULTS.read_text())["per_run"]
    decided = [r["prefer_gen2"] + r["prefer_gen1"] for r in committed]
    kappas = kappas if kappas is not None else [0.0, round(estimated_kappa(committed), 2)]
    cases = [calibrate(designs, runs, kappa, decided, seed, resamples) for kappa in kappas]
    result = {"args": {"designs": designs, "runs": runs, "kappas": kappas, "seed": seed, "resamples": resamples,
                       "decided_per_run_from": "results/workflow_generations.json"},
              "estimated_kappa": estimated_kappa(committed), "cases": cases, "wall_s": time.perf_counter() - started}
    print(render(result))
    if out:
        Path(out).write_text(json.dumps(result, indent=1, sort_keys=True) + "\n")
    return result


def calibrate(designs: int, runs: int, kappa: float, decided: list[int], seed: int, resamples: int) -> dict[str, Any]:
    """Calls over ``designs`` constructed designs per true share of the grid, at one ``kappa``."""
    rng = np.random.default_rng([seed, int(kappa * 1000)])
    grid: dict[str, Any] = {}
    for p in GRID:
        calls = {"gen-2 designs preferred": 0, "gen-1 designs preferred": 0, "no detectable preference": 0,
                 "insufficient data": 0}
        for i in range(designs):
            summary = generations.run_summary(design(p, decided, runs, kappa, rng), resamples=resamples, seed=i)
            calls[summary.get("recursion_verdict", "insufficient data")] += 1
        grid[f"{p:.2f}"] = {"calls": calls, "gen2_called": proportion(calls["gen-2 designs preferred"], designs),
                            "any_called": proportion(designs - calls["no detectable preference"]
                                                     - calls["insufficient data"], designs)}
    positive, null = grid["0.64"]["gen2_called"], grid["0.50"]["any_called"]
    mds = next((float(p) for p, row in grid.items() if float(p) > 0.5 and row["gen2_called"]["rate"] >= 0.8), None)
    return {"kappa": kappa, "designs": designs, "grid": grid, "positive": positive, "null": null,
            "positive_met": positive["rate"] >= 0.8, "null_met": null["rate"] <= 0.05, "min_detectable_share": mds}


def _rate(p: dict[str, Any]) -> str:
    return f"{p['k']}/{p['n']} [{p['low']:.2f}, {p['high']:.2f}]"


def render(result: dict[str, Any]) -> str:
    """The sentence of docs/families/workflow.md for a calibration result."""
    a = result["args"]
    parts = []
    for case in result["cases"]:
        spread = ("every run the same share" if case["kappa"] <= 0
                  else f"per-run shares spread as in the committed runs (Beta, concentration {case['kappa']:g})")
        mds = "beyond the grid" if case["min_detectable_share"] is None else f"{case['min_detectable_share']:.2f}"
        parts.append(f"with {spread}, a true share of 0.64 is called gen-2-preferred in {_rate(case['positive'])} "
                     f"({'met' if case['positive_met'] else 'not met'}: >= 80% required), a share of 0.5 is called "
                     f"either way in {_rate(case['null'])} ({'met' if case['null_met'] else 'not met'}: <= 5% "
                     f"required), smallest share called in >= 80%: {mds}")
    return (f"Recursion-test calibration (`benchmarks/workflow_recursion_calibration.py`, "
            f"`benchmarks/results/workflow_recursion_calibration.json`: {a['designs']} constructed designs per true "
            f"share, each of {a['runs']} runs with decided-comparison counts drawn from the committed runs; unit: the "
            f"design; exact 95% CIs): " + "; ".join(parts) + ".")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--designs", type=int, default=200)
    parser.add_argument("--runs", type=int, default=20)
    parser.add_argument("--kappas", type=float, nargs="+", default=None,
                        help="Beta concentrations of per-run shares (default: 0 and the committed runs' estimate)")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--resamples", type=int, default=2000)
    parser.add_argument("--out", default=None)
    ns = parser.parse_args()
    main(ns.designs, ns.runs, ns.kappas, ns.seed, ns.resamples, ns.out)
    sys.exit(0)
