"""Report analyses of HyperparamSearch-v0 batteries (registered by name for scenario files).

* ``hpo_feedback``: feedback sensitivity by replay (``replay``), per agent and per adaptation,
  with t intervals clustered by record (the decision points of one episode share its history);
* ``hpo_cold_start``: how far the first learning rate moves when the description is swapped,
  against two resampling controls (re-asked, and a no-op edit); a verdict only when the swap
  effect exceeds both controls with a t interval over adaptations;
* ``hpo_compare``: first-proposal quality against the random-search pool, matched final test
  nRMSE (wins, and a Wilcoxon signed-rank test on per-adaptation mean differences: the seeds of
  one adaptation share its test set and source model, so they are not independent pairs), and
  convergence curves.

Only the first two query agents; none of them runs a trial.
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, md_text, register_analysis

from .replay import cold_start_replay, replay_decision_points

__all__ = ["feedback_analysis", "cold_start_analysis", "compare_analysis", "OPPOSITE_TARGET",
           "clustered_mean_ci", "swapped_description", "adaptation_names"]

# The cold-start swap: each target family is described as the other one.
OPPOSITE_TARGET = {"advection": ("burgers", 0.01), "burgers": ("advection", 1.0)}
MIN_WILCOXON_CLUSTERS = 6  # the smallest n whose two-sided exact p can be below 0.05
MIN_CLUSTERS = 3  # fewer adaptations than this: no CI, so no verdict


def _by_agent(records: Sequence[Trajectory], agents: Sequence[str] | None) -> dict[str, list[Trajectory]]:
    groups: dict[str, list[Trajectory]] = defaultdict(list)
    for record in records:
        if record.termination != "infra_error" and record.final and (agents is None or record.agent.id in agents):
            groups[record.agent.id].append(record)
    return dict(sorted(groups.items()))


def clustered_mean_ci(values: Sequence[float], clusters: Sequence[Any], seed: int = 0,
                      min_clusters: int = MIN_CLUSTERS) -> tuple[float, float, float, int]:
    """Mean of per-cluster means and its 95% t interval over clusters.

    Correlated values (the decision points of one record, the proposals of one adaptation) are
    averaged within their cluster first, so the interval treats only independent units as
    independent. A t interval (n - 1 degrees of freedom), not a bootstrap: with the 4-12 clusters
    of a battery a percentile bootstrap is too narrow (in hpo_quick it gave the prompt-seeded random
    agent, 4 records, a sensitivity CI of [-0.173, -0.079], excluding its true 0). Returns (mean, low, high, clusters); low and high are nan with fewer than
    ``min_clusters`` clusters. ``seed`` is unused (kept for a resampling alternative).
    """
    from scipy import stats

    groups: dict[Any, list[float]] = defaultdict(list)
    for value, cluster in zip(values, clusters):
        if math.isfinite(value):
            groups[cluster].append(value)
    means = np.array([float(np.mean(v)) for _, v in sorted(groups.items(), key=lambda item: str(item[0]))])
    if means.size == 0:
        return (math.nan, math.nan, math.nan, 0)
    mean = float(means.mean())
    if means.size < min_clusters:
        return (mean, math.nan, math.nan, int(means.size))
    half = float(stats.t.ppf(0.975, means.size - 1) * means.std(ddof=1) / math.sqrt(means.size))
    return (mean, mean - half, mean + half, int(means.size))


def _ci(low: float, high: float, fmt: str = "+.3f") -> str:
    return f"[{low:{fmt}}, {high:{fmt}}]" if math.isfinite(low) else "- (too few clusters)"


@register_analysis("hpo_feedback")
def feedback_analysis(records: Sequence[Trajectory], out_dir: Path, *, agents: Sequence[str] | None = None,
                      k: int = 3, max_points: int = 4, seed: int = 0) -> ReportSection:
    """Permuted-scores distance minus notation-control distance, at recorded decision points."""
    lines = ["Replays at recorded decision points (no trial is run; the recorded conversation is resent up "
             "to the decision point): the next proposal with the validation scores deranged among the "
             "evaluated configs, and with the same scores in scientific notation; K="
             f"{k} proposals each; normalised config distance. CIs: t intervals over records "
             f"(per-record means; no CI and no verdict with fewer than {MIN_CLUSTERS} records). "
             "'reproduced': replayed originals with the recorded seed equal to the recorded decision.", "",
             "| agent | records | decision points | reproduced | distance (permuted) | distance (notation) | "
             "sensitivity | 95% CI | uses feedback |",
             "|---|---:|---:|---:|---:|---:|---:|---|---|"]
    per_task = ["", "Per adaptation (CI over the records of that adaptation):", "",
                "| agent | adaptation | records | decision points | sensitivity | 95% CI |",
                "|---|---|---:|---:|---:|---|"]
    verdicts = []
    for agent, group in _by_agent(records, agents).items():
        points = [p for r in group for p in replay_decision_points(r, k=k, max_points=max_points, seed=seed)]
        if not points:
            continue
        mean, low, high, clusters = clustered_mean_ci([p.sensitivity for p in points],
                                                      [p.episode_key for p in points], seed)
        uses = "yes" if low > 0 else ("not shown" if math.isfinite(low) else "no verdict")
        lines.append(f"| {md_text(agent)} | {clusters} | {len(points)} | {sum(p.reproduced for p in points)}/{len(points)} | "
                     f"{np.nanmean([p.permuted_distance for p in points]):.3f} | "
                     f"{np.nanmean([p.notation_distance for p in points]):.3f} | {mean:+.3f} | "
                     f"{_ci(low, high)} | {uses} |")
        verdicts.append(f"{md_text(agent)}: sensitivity {mean:+.3f} {_ci(low, high)} ({uses})")
        for task in sorted({p.task_id for p in points}):
            mine = [p for p in points if p.task_id == task]
            t_mean, t_low, t_high, n = clustered_mean_ci([p.sensitivity for p in mine],
                                                         [p.episode_key for p in mine], seed, min_clusters=2)
            per_task.append(f"| {md_text(agent)} | {md_text(task)} | {n} | {len(mine)} | {t_mean:+.3f} | "
                            f"{_ci(t_low, t_high) if math.isfinite(t_low) else '- (one record)'} |")
    lines += per_task
    lines += ["", "Caveat (as in the paper): sensitivity to feedback does not show that the response "
              "is sensible, nor that it explains a final advantage."]
    return ReportSection("Feedback sensitivity (replays)", "\n".join(lines), "; ".join(verdicts))


def adaptation_names() -> list[str]:
    """The env's task ids: its twelve source-to-target adaptations."""
    from .adaptations import ADAPTATIONS  # the one place this module names the adaptation table

    return list(ADAPTATIONS)


def swapped_description(task: str) -> str:
    """The task's description with its target equation described as the other family."""
    from .env import task_description
    from .pde import PDE

    target_kind = "advection" if task.split("->")[-1].startswith("adv") else "burgers"
    family, coefficient = OPPOSITE_TARGET[target_kind]
    return task_description(task, target=PDE(family, coefficient))  # type: ignore[arg-type]


@register_analysis("hpo_cold_start")
def cold_start_analysis(records: Sequence[Trajectory], out_dir: Path, *, agents: Sequence[str] | None = None,
                        k: int = 3, seed: int = 0, tasks: str | Sequence[str] = "all") -> ReportSection:
    """First-learning-rate shift under a swapped description, against re-ask and no-op controls.

    Args:
        tasks: ``"all"`` asks on every adaptation the env lists (step 0 needs no trial, so the
            analysis is not limited to the adaptations run); ``"run"`` only those in the records;
            or a list of adaptation names.
    """
    lines = ["The step-0 observation with the target equation described as the other family "
             f"(advection <-> Burgers), K={k} proposals per adaptation; shift of the first learning rate "
             "in decades. Controls: the same observation re-asked with other seeds, and a no-op edit "
             "(one trailing space). Excess = swap - control, mean over adaptations, 95% t interval over "
             "adaptations. Task-conditioned only when the swap exceeds both controls (both CIs above 0).", "",
             "| agent | adaptations | swap | re-ask | no-op edit | excess over re-ask | 95% CI | "
             "excess over no-op | 95% CI | task-conditioned |",
             "|---|---:|---:|---:|---:|---:|---|---:|---|---|"]
    verdicts = []
    for agent, group in _by_agent(records, agents).items():
        if tasks == "all":
            names = adaptation_names()
        elif tasks == "run":
            names = sorted({str(r.final.state["task_id"]) for r in group if r.final})
        else:
            names = list(tasks)
        budget = int(group[0].final.state["budget"]) if group[0].final else 20
        replays = [cold_start_replay(group[0].agent, task, budget, swapped_description(task), k=k, seed=seed)
                   for task in names]
        stats = {}
        for control in ("reask", "noop"):
            stats[control] = clustered_mean_ci([r.excess(control) for r in replays], names, seed)
        conditioned = all(stats[c][1] > 0 for c in stats)
        decided = all(math.isfinite(stats[c][1]) for c in stats)
        label = "yes" if conditioned else ("not shown" if decided else "no verdict")

        def mean_of(field: str) -> float:
            return float(np.nanmean([np.nanmean(getattr(r, field)) for r in replays]))

        lines.append(f"| {md_text(agent)} | {len(names)} | {mean_of('swap'):.3f} | {mean_of('reask'):.3f} | "
                     f"{mean_of('noop'):.3f} | {stats['reask'][0]:+.3f} | {_ci(*stats['reask'][1:3])} | "
                     f"{stats['noop'][0]:+.3f} | {_ci(*stats['noop'][1:3])} | {label} |")
        verdicts.append(f"{md_text(agent)}: swap {mean_of('swap'):.2f} decades, excess over no-op "
                        f"{stats['noop'][0]:+.2f} {_ci(*stats['noop'][1:3], fmt='+.2f')} ({label})")
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
             f"wins vs {md_text(random_agent)} | wins vs {md_text(tpe_agent)} | adaptations | Wilcoxon p vs {md_text(random_agent)} |",
             "|---|---:|---:|---:|---|---|---:|---:|"]
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
        by_task: dict[str, list[float]] = defaultdict(list)  # matched seeds of one adaptation: one cluster
        for key in shared:
            by_task[key[0]].append(test[agent][key] - test[random_agent][key])
        diffs = [float(np.mean(v)) for _, v in sorted(by_task.items())]
        p = (wilcoxon(diffs).pvalue if agent != random_agent and len(diffs) >= MIN_WILCOXON_CLUSTERS and any(diffs)
             else math.nan)
        mean_test = np.mean(list(test[agent].values())) if test[agent] else math.nan
        lines.append(f"| {md_text(agent)} | {len(group)} | {np.mean(percentiles) if percentiles else math.nan:.1f} | "
                     f"{mean_test:.4f} | {cells[0]} | {cells[1]} | {len(diffs) if agent != random_agent else '-'} | "
                     f"{p:.3g} |")
    cache = [r.final.state.get("trial_cache") or {} for g in groups.values() for r in g if r.final]
    lines += ["", "Wins count matched (adaptation, seed) runs. The Wilcoxon signed-rank test pairs "
              "per-adaptation mean differences (seeds of one adaptation share its test set and source "
              f"model, so they are one cluster); no p-value below {MIN_WILCOXON_CLUSTERS} adaptations.",
              "", f"Trial cache at the end of each episode (per worker process, summed): "
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
