"""Accuracy and cost of the HPO environment's PDE solvers and datasets.

Three tables, all on random initial conditions drawn like the datasets' (PDEBench-style):

* advection at ``--cells`` (paper: 1024), on initial conditions from the datasets' own test-split
  generator (kinks and windows included; the kinked rows are also reported alone): relative L2
  error at t = 2 of the finite-volume solver (which made the advection data before
  ``DATA_VERSION`` 3) and of the exact-shift cell averages (the data now), both against the exact
  shift averaged with 16 quadrature nodes per cell, per ``beta`` (target < 1e-2);
* Burgers: relative L2 error on the coarsest grid after coarsening, against a fine-grid reference,
  for each grid of ``--burgers-grids``, with the observed orders between neighbouring grids
  (target >= 1.5), the mass conservation error and the growth of max|u| (both should be ~0);
  each grid uses the viscous stepping the datasets use there (``viscous_scheme``);
* wall time to generate one condition's dataset per preset, median of ``--repeats`` runs (one run
  for ``paper``, which takes minutes).

Run: ``python benchmarks/pde_solvers.py [--skip-paper] [--repeats 3] [--samples 64] [--burgers-samples 8]``.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Sequence
from typing import Any

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.envs.hpo.data import PRESETS, _generate, viscous_scheme
from rsigym.envs.hpo.pde import PDE, coarsen, draw_initial_conditions, initial_conditions, solve

ADVECTION_TARGET = 1e-2
ORDER_TARGET = 1.5
DATASET_CONDITIONS = (PDE("advection", 0.4), PDE("burgers", 0.01))  # the two pretraining sources


def advection_errors(cells: int, betas: Sequence[float], samples: int) -> dict[float, dict[str, float]]:
    """Relative L2 at t = 2 of the solver and of the exact-shift averages, against a 16-node reference."""
    from rsigym.envs.hpo.data import split_stream

    params = draw_initial_conditions(split_stream(PDE("advection", 0.4), 0, 2), samples)
    kinked = params.take_abs | params.use_window
    out = {}
    for beta in betas:
        u0 = params.cell_averages(cells)
        reference = params.cell_averages(cells, shift=2.0 * beta, nodes=16)
        solver = solve(PDE("advection", beta), u0, np.array([0.0, 2.0]))[:, -1]
        exact = params.cell_averages(cells, shift=2.0 * beta)

        def rel(u: np.ndarray, rows: Any = slice(None)) -> float:
            return float(np.linalg.norm(u[rows] - reference[rows]) / np.linalg.norm(reference[rows]))

        out[beta] = {"solver": rel(solver), "solver_kinked": rel(solver, kinked) if kinked.any() else float("nan"),
                     "data": rel(exact), "kinked": int(kinked.sum())}
    return out


def burgers_convergence(nu: float, grids: Sequence[int], reference_cells: int, samples: int,
                        t_end: float) -> dict[str, Any]:
    pde, times = PDE("burgers", nu), np.array([0.0, t_end / 2, t_end])
    coarsest = min(grids)
    # One draw of initial conditions at the reference grid; coarser grids get their averages.
    u0_fine = initial_conditions(np.random.default_rng(1), samples, reference_cells)
    reference = coarsen(solve(pde, u0_fine, times, viscous=viscous_scheme(pde, reference_cells))[:, -1],
                        reference_cells // coarsest)                   # (S, coarsest)
    errors, mass_error, max_growth = [], 0.0, 0.0
    for cells in grids:
        u0 = coarsen(u0_fine, reference_cells // cells)
        u = solve(pde, u0, times, viscous=viscous_scheme(pde, cells))  # (S, 3, cells)
        errors.append(float(np.linalg.norm(coarsen(u[:, -1], cells // coarsest) - reference) / np.linalg.norm(reference)))
        mass_error = max(mass_error, float(np.abs(u.sum(-1) - u0.sum(-1)[:, None]).max() / cells))
        max_growth = max(max_growth, float((np.abs(u).max(-1) - np.abs(u0).max(-1)[:, None]).max()))
    orders = [float(np.log2(a / b)) for a, b in zip(errors, errors[1:])]
    return {"errors": errors, "orders": orders, "mass_error": mass_error, "max_growth": max_growth,
            "schemes": [viscous_scheme(pde, cells) for cells in grids]}


def dataset_seconds(preset_name: str, repeats: int) -> dict[str, float]:
    """Median wall time of generating (not loading) one condition's dataset, per condition."""
    preset, seconds = PRESETS[preset_name], {}
    for pde in DATASET_CONDITIONS:
        runs = []
        for _ in range(1 if preset_name == "paper" else repeats):
            started = time.perf_counter()
            _generate(pde, preset, seed=0)  # private on purpose: dataset() would read the cache
            runs.append(time.perf_counter() - started)
        seconds[pde.key] = statistics.median(runs)
    return seconds


def main(cells: int = 1024, betas: Sequence[float] = (0.1, 0.4, 1.0, 4.0), nus: Sequence[float] = (0.01, 0.1),
         burgers_grids: Sequence[int] = (256, 512, 1024), reference_cells: int = 4096, burgers_t: float = 1.0,
         samples: int = 64, burgers_samples: int = 8, repeats: int = 3, presets: Sequence[str] = ("default", "paper")) -> dict[str, dict]:
    console = Console()
    advection = advection_errors(cells, betas, samples)
    kinked = next(iter(advection.values()))["kinked"] if advection else 0
    table = Table(title=f"Advection at {cells} cells, t = 2, {samples} ICs from the test-split generator "
                        f"({kinked} with a kink or window): relative L2 vs the exact shift (16-node averages)")
    for column in ("beta", "steps", "solver (old data)", "solver, kinked ICs", "exact-shift averages (data)",
                   "target", "solver", "data"):
        table.add_column(column, justify="right")
    for beta, errors in advection.items():
        table.add_row(f"{beta:g}", f"{int(np.ceil(2 * abs(beta) * cells / 0.4))}", f"{errors['solver']:.2e}",
                      f"{errors['solver_kinked']:.2e}", f"{errors['data']:.1e}", f"< {ADVECTION_TARGET:.0e}",
                      "PASS" if errors["solver"] < ADVECTION_TARGET else "MISS",
                      "PASS" if errors["data"] < ADVECTION_TARGET else "MISS")
    console.print(table)

    burgers = {nu: burgers_convergence(nu, burgers_grids, reference_cells, burgers_samples, burgers_t) for nu in nus}
    table = Table(title=f"Burgers at t = {burgers_t:g}, {burgers_samples} random ICs, reference {reference_cells} cells "
                        f"coarsened to {min(burgers_grids)}: relative L2 and observed order")
    for column in ("nu", "grid", "viscous", "relative L2", "order", "mass error", "max|u| growth", "verdict"):
        table.add_column(column, justify="right")
    for nu, result in burgers.items():
        orders = [None, *result["orders"]]
        for grid, scheme, error, order in zip(burgers_grids, result["schemes"], result["errors"], orders):
            verdict = "" if order is None else ("PASS" if order >= ORDER_TARGET else "MISS")
            table.add_row(f"{nu:g}", str(grid), scheme, f"{error:.2e}", "" if order is None else f"{order:.2f}",
                          f"{result['mass_error']:.1e}", f"{result['max_growth']:.1e}", verdict)
    console.print(table)

    datasets = {name: dataset_seconds(name, repeats) for name in presets}
    table = Table(title=f"Dataset generation, one condition and seed (median of {repeats}; paper: 1 run)")
    for column in ("preset", "cells (solve -> store)", "trajectories", *(pde.key for pde in DATASET_CONDITIONS)):
        table.add_column(column, justify="right")
    for name, seconds in datasets.items():
        preset = PRESETS[name]
        table.add_row(name, f"{preset.solve_cells} -> {preset.store_cells}",
                      str(preset.n_train + preset.n_val + preset.n_test), *(f"{s:.2f} s" for s in seconds.values()))
    console.print(table)
    return {"advection": advection, "burgers": burgers, "datasets": datasets}


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cells", type=int, default=1024)
    parser.add_argument("--samples", type=int, default=64)
    parser.add_argument("--burgers-samples", type=int, default=8)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--burgers-t", type=float, default=1.0)
    parser.add_argument("--reference-cells", type=int, default=4096)
    parser.add_argument("--skip-paper", action="store_true", help="do not time the paper preset's datasets")
    args = parser.parse_args()
    main(cells=args.cells, samples=args.samples, burgers_samples=args.burgers_samples, repeats=args.repeats, burgers_t=args.burgers_t,
         reference_cells=args.reference_cells, presets=("default",) if args.skip_paper else ("default", "paper"))
