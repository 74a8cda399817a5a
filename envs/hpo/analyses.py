"""Report analyses of HyperparamSearch-v0 batteries (registered by name for scenario files).

* ``hpo_feedback``: feedback sensitivity by replay (``replay``), per agent, with a bootstrap CI;
* ``hpo_cold_start``: how far the first learning rate moves when the description is swapped;
* ``hpo_compare``: first-proposal quality against the random-search pool, matched final test
  nRMSE (wins, Wilcoxon signed-rank), and convergence curves.

Only the first two query agents; none of them runs a trial.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, register_analysis

from .replay import cold_start_shift, replay_decision_points

__all__ = ["feedback_analysis", "cold_start_analysis", "compare_analysis", "OPPOSITE_TARGET"]

# The cold-start swap: each target family is described as the other one.
OPPOSITE_TARGET = {"advection": ("burgers", 0.01), "burgers": ("advection", 1.0)}


def _by_agent(records: Sequence[Trajectory], agents: Sequence[str] | None) -> dict[str, list[Trajectory]]:
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for record in records:
        if record.termination != "infra_error" and record.final and (agents is None or record.agent.id in agents):
            groups[record.agent.id].append(record)
    return dict(sorted(groups.items()))


def _mean_ci(values: Sequence[float], seed: int = 0) -> tuple[float, float, float]:
    from rsigym.stats import paired_bootstrap_ci

    clean = [v for v in values if math.isfinite(v)]
    if not clean:
        return (math.nan, math.nan, math.nan)
    low, high = paired_bootstrap_ci(clean, seed=seed)
    return (float(np.mean(clean)), low, high)


@register_analysis("hpo_feedback")
def feedback_analysis(records: Sequence[Trajectory], out_dir: Path, *, agents: Sequence[str] | None = None,
                      k: int = 3, max_points: int = 4, seed: int = 0) -> ReportSection:
    """Permuted-scores distance minus notation-control distance, at recorded decision points."""
    lines = ["Replays at recorded decision points (no trial is run): the next proposal with the "
             "validation scores deranged among the evaluated configs, and with the same scores in "
             f"scientific notation; K={k} proposals each; normalised config distance.", "",
             "| agent | decision points | distance (permuted) | distance (notation) | sensitivity | 95% CI | uses feedback |",
             "|---|---:|---:|---:|---:|---|---|"]
    verdicts = []
    for agent, group in _by_agent(records, agents).items():
        points = [p for r in group for p in replay_decision_points(r, k=k, max_points=max_points, seed=seed)]
        if not points:
            continue
        mean, low, high = _mean_ci([p.sensitivity for p in points], seed)
        uses = bool(low > 0)
        lines.append(f"| {agent} | {len(points)} | {np.nanmean([p.permuted_distance for p in points]):.3f} | "
                     f"{np.nanmean([p.notation_distance for p in points]):.3f} | {mean:+.3f} | "
                     f"[{low:+.3f}, {high:+.3f}] | {'yes' if uses else 'not shown'} |")
        verdicts.append(f"{agent}: sensitivity {mean:+.3f} [{low:+.3f}, {high:+.3f}]")
    lines += ["", "Caveat (as in the paper): sensitivity to feedback does not show that the response "
              "is sensible, nor that it explains a final advantage."]
    return ReportSection("Feedback sensitivity (replays)", "\n".join(lines), "; ".join(verdicts))


@register_analysis("hpo_cold_start")
def cold_start_analysis(records: Sequence[Trajectory], out_dir: Path, *, agents: Sequence[str] | None = None,
                        k: int = 3, seed: int = 0) -> ReportSection:
    """Mean |log10| shift of the first learning rate under a swapped target description."""
    from .env import task_description
    from .pde import PDE

    lines = ["The step-0 observation with the target equation described as the other family "
             f"(advection <-> Burgers), K={k} proposals; shift of the first learning rate in decades.", "",
             "| agent | episodes | mean shift (decades) | 95% CI |", "|---|---:|---:|---|"]
    verdicts = []
    for agent, group in _by_agent(records, agents).items():
        shifts = []
        for record in group:
            task = record.final.state["task_id"] if record.final else None
            kind = task.split("->")[1].rstrip("0123456789.") if task else ""
            family, coefficient = OPPOSITE_TARGET["advection" if kind.startswith("adv") else "burgers"]
            swapped = task_description(task, target=PDE(family, coefficient))  # type: ignore[arg-type]
            shifts.append(cold_start_shift(record, swapped, k=k, seed=seed))
        mean, low, high = _mean_ci(shifts, seed)
        lines.append(f"| {agent} | {len(group)} | {mean:.3f} | [{low:.3f}, {high:.3f}] |")
        verdicts.append(f"{agent}: {mean:.3f} decades")
    return ReportSection("Cold-start description swap", "\n".join(lines), "; ".join(verdicts))


def _trials(record: Trajectory) -> list[dict[str, Any]]:
    return list((record.final.state or {}).get("trials", [])) if record.final else []


@register_analysis("hpo_compare")
def compare_analysis(records: Sequence[Trajectory], out_dir: Path, *, random_agent: str = "random-search",
                     tpe_agent: str = "tpe") -> ReportSection:
    """First-proposal percentile in the random pool; matched test nRMSE; convergence curves."""
    from scipy.stats import wilcoxon

    groups = _by_agent(records, None)
    pool: dict[tuple[str, int], list[float]] = defaultdict(list)
    for record in groups.get(random_agent, []):
        state = record.final.state if record.final else {}
        pool[(state["task_id"], state["seed"])] += [t["val_nrmse"] for t in _trials(record)]
    test: dict[str, dict[tuple[str, int], float]] = defaultdict(dict)
    for agent, group in groups.items():
        for record in group:
            state = record.final.state if record.final else {}
            if state.get("test_nrmse") is not None:
                test[agent][(state["task_id"], state["seed"])] = float(state["test_nrmse"])
    lines = ["| agent | episodes | first-proposal percentile in the random pool | mean test nRMSE | "
             f"wins vs {random_agent} | wins vs {tpe_agent} | Wilcoxon p vs {random_agent} |",
             "|---|---:|---:|---:|---|---|---:|"]
    for agent, group in groups.items():
        percentiles = []
        for record in group:
            state, trials = record.final.state if record.final else {}, _trials(record)
            reference = pool.get((str(state.get("task_id")), int(state.get("seed") or 0)), [])
            if trials and reference:
                percentiles.append(100.0 * float(np.mean([v < trials[0]["val_nrmse"] for v in reference])))
        cells = []
        for other in (random_agent, tpe_agent):
            shared = sorted(set(test[agent]) & set(test.get(other, {})))
            wins = sum(test[agent][key] < test[other][key] for key in shared)
            cells.append(f"{wins}/{len(shared)}" if shared and other != agent else "-")
        shared = sorted(set(test[agent]) & set(test.get(random_agent, {})))
        diffs = [test[agent][key] - test[random_agent][key] for key in shared]
        p = wilcoxon(diffs).pvalue if agent != random_agent and len(diffs) >= 6 and any(diffs) else math.nan
        mean_test = np.mean(list(test[agent].values())) if test[agent] else math.nan
        lines.append(f"| {agent} | {len(group)} | {np.mean(percentiles) if percentiles else math.nan:.1f} | "
                     f"{mean_test:.4f} | {cells[0]} | {cells[1]} | {p:.3g} |")
    cache = [r.final.state.get("trial_cache") or {} for g in groups.values() for r in g if r.final]
    lines += ["", f"Trial cache at the end of each episode (per worker process, summed): "
              f"{sum(c.get('hits', 0) for c in cache)} hits, {sum(c.get('misses', 0) for c in cache)} misses, "
              f"{sum(c.get('train_calls', 0) for c in cache)} fine-tunings run; this analysis runs none."]
    plot = _convergence_plot(out_dir, groups)
    return ReportSection("Search quality", "\n".join(lines), f"{len(groups)} agents compared", [plot])


def _convergence_plot(out_dir: Path, groups: dict[str, list[Trajectory]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for agent, group in groups.items():
        curves = [np.minimum.accumulate([t["val_nrmse"] for t in _trials(r)]) for r in group if _trials(r)]
        if not curves:
            continue
        length = min(len(c) for c in curves)
        mean = np.mean([c[:length] for c in curves], axis=0)
        ax.plot(range(1, length + 1), mean, marker="o", markersize=3, label=agent)
    ax.set_xlabel("trial")
    ax.set_ylabel("best validation nRMSE so far (mean)")
    ax.set_yscale("log")
    ax.legend(fontsize=8)
    ax.set_title("Convergence", fontsize=9)
    fig.tight_layout()
    name = "hpo_convergence.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
