"""The record-only analysis of ``rsigym/ProgramEvolution-v0`` batteries (``evolution``).

Metrics, from each record's end-state snapshot (its ``curve``: best full score after every
evaluation, with the full evaluations, full-evaluation equivalents and generator tokens spent):

* full evaluations to reach a target score: the first crossing of the **mean** curve over
  seeds (the paper's measure), and per seed;
* tokens (generator, plus the allocator's own) spent by then;
* best score at a fixed full-evaluation budget;
* missed new bests: turned-away candidates that counterfactual exploration showed to be new bests.

The target defaults to the baseline agent's mean final best (``always_full``): "to reach the
baseline's score".
"""

from __future__ import annotations

import math
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.grader import snapshot_state
from rsigym.records import Trajectory
from rsigym.report import ReportSection, register_analysis

__all__ = ["best_curve", "evaluations_to_reach", "mean_curve", "first_crossing",
           "evolution_analysis"]


def _state(record: Trajectory) -> dict[str, Any]:
    return snapshot_state(record, "curve", "program-evolution")


def best_curve(record: Trajectory, x: str = "full_evaluations") -> list[tuple[float, float]]:
    """``(spent, best score)`` after each evaluation, ``spent`` measured by ``x``."""
    return [(float(p[x]), float(p["best_score"])) for p in _state(record)["curve"] if p["best_score"] is not None]


def _best_at(curve: list[tuple[float, float]], spent: float) -> float:
    values = [best for used, best in curve if used <= spent + 1e-9]
    return max(values) if values else math.nan


def evaluations_to_reach(record: Trajectory, target: float, x: str = "full_evaluations") -> float | None:
    """The first ``x`` at which the best score reaches ``target``; None when it never does."""
    for used, best in best_curve(record, x):
        if best >= target - 1e-12:
            return used
    return None


def mean_curve(records: Sequence[Trajectory], x: str = "full_evaluations") -> tuple[np.ndarray, np.ndarray]:
    """Mean best score over records at each integer spend 0..max (a record's last value carries on)."""
    curves = [best_curve(r, x) for r in records]
    top = int(math.ceil(max((c[-1][0] for c in curves if c), default=0.0)))
    xs = np.arange(top + 1, dtype=float)
    values = np.array([[_best_at(c, v) for v in xs] for c in curves])  # (records, xs)
    return xs, values.mean(axis=0)


def first_crossing(xs: np.ndarray, ys: np.ndarray, target: float) -> float | None:
    hits = np.nonzero(ys >= target - 1e-12)[0]
    return float(xs[hits[0]]) if len(hits) else None


def _fmt(value: float | None, spec: str = ".4g") -> str:
    return "not reached" if value is None or (isinstance(value, float) and math.isnan(value)) else format(value, spec)


@register_analysis("evolution")
def evolution_analysis(records: Sequence[Trajectory], out_dir: Path, *, baseline: str = "always_full",
                       targets: dict[str, float] | None = None, at_full_evaluations: int | None = None) -> ReportSection:
    """Per task and allocator: full evaluations and tokens to a target, best at a fixed budget, misses."""
    groups: dict[str, dict[str, list[Trajectory]]] = defaultdict(lambda: defaultdict(list))
    for record in records:
        if record.termination != "infra_error" and record.final and "curve" in (record.final.state or {}):
            groups[record.final.state["task_id"]][record.agent.id].append(record)
    lines, verdicts, plots = [], [], []
    for task, agents in sorted(groups.items()):
        base = agents.get(baseline)
        target = (targets or {}).get(task)
        if target is None and base:
            target = float(np.mean([_state(r)["best_score"] for r in base]))
        budget = at_full_evaluations or int(min(max(c[0] for c in best_curve(r)) for g in agents.values() for r in g))
        lines += [f"### {task}", "", f"Target: {_fmt(target)} ({'given' if (targets or {}).get(task) is not None else f'mean final best of {baseline}'}); "
                  f"fixed budget for the best-score column: {budget} full evaluations.", "",
                  "| allocator | runs | full evals to target (mean curve) | full-equivalents to target (mean curve, "
                  "partials counted) | median per run | tokens to target (median) | "
                  f"best at {budget} full | final best (mean) | partial evals (mean) | missed new bests | exploration cost |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        per_run: dict[str, dict[tuple[int, int], float | None]] = {}
        for agent, group in sorted(agents.items()):
            xs, ys = mean_curve(group)
            crossing = first_crossing(xs, ys, target) if target is not None else None
            xe, ye = mean_curve(group, x="full_equivalents")
            crossing_equivalents = first_crossing(xe, ye, target) if target is not None else None
            reach = {(r.seed, r.rep): (evaluations_to_reach(r, target) if target is not None else None) for r in group}
            per_run[agent] = reach
            reached = [v for v in reach.values() if v is not None]
            tokens = [_tokens_at(r, target) for r in group if target is not None]
            tokens_reached = [t for t in tokens if t is not None]
            states = [_state(r) for r in group]
            lines.append(
                f"| {agent} | {len(group)} | {_fmt(crossing, 'g')} | {_fmt(crossing_equivalents, 'g')} | "
                f"{_fmt(float(np.median(reached)) if len(reached) == len(group) else None, 'g')} | "
                f"{_fmt(float(np.median(tokens_reached)) if len(tokens_reached) == len(group) else None, '.0f')} | "
                f"{np.mean([_best_at(best_curve(r), budget) for r in group]):.4g} | "
                f"{np.mean([s['best_score'] for s in states]):.4g} | "
                f"{np.mean([s['counts']['partial'] for s in states]):.1f} | "
                f"{sum(s['exploration']['missed_new_bests'] for s in states)} | "
                f"{sum(s['exploration']['cost'] for s in states):.2f} |")
            reached_text = "not reached" if crossing is None else f"{crossing:g} full evals"
            verdicts.append(f"{task}/{agent}: {reached_text} to {_fmt(target)}")
        runs = sorted({key for reach in per_run.values() for key in reach})
        several_reps = any(rep for _, rep in runs)
        labels = [f"seed {seed}" + (f" rep {rep}" if several_reps else "") for seed, rep in runs]
        lines += ["", "Full evaluations to reach the target, per run:", "",
                  "| allocator | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(runs)]
        for agent, reach in sorted(per_run.items()):
            lines.append(f"| {agent} | " + " | ".join(_fmt(reach.get(key), "g") for key in runs) + " |")
        lines.append("")
        plots.append(_plot(out_dir, task, agents, target))
    if not groups:
        return ReportSection("Program evolution", "no program-evolution records", "no records")
    return ReportSection("Program evolution", "\n".join(lines), "; ".join(verdicts), plots)


def _tokens_at(record: Trajectory, target: float | None) -> int | None:
    """Generator tokens when the target was first reached, plus the allocator's over the same steps."""
    if target is None:
        return None
    state = _state(record)
    for point in state["curve"]:
        if point["best_score"] is not None and point["best_score"] >= target - 1e-12:
            spent = point["full_equivalents"]
            agent_tokens = 0
            for step in record.steps:
                agent_tokens += step.usage.prompt_tokens + step.usage.completion_tokens
                budget = (step.info or {}).get("budget") or {}
                if budget.get("full_equivalents_spent", 0.0) >= spent - 1e-9:
                    break
            return int(point["tokens"]) + agent_tokens
    return None


def _plot(out_dir: Path, task: str, agents: dict[str, list[Trajectory]], target: float | None) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6.0, 3.6))
    for agent, group in sorted(agents.items()):
        xs, ys = mean_curve(group)
        ax.step(xs, ys, where="post", label=f"{agent} (n={len(group)})")
    if target is not None:
        ax.axhline(target, color="grey", linestyle="--", linewidth=0.8, label="target")
    ax.set_xlabel("full evaluations")
    ax.set_ylabel("best score so far (mean over seeds)")
    ax.set_title(f"{task}: best score vs full evaluations", fontsize=9)
    ax.legend(fontsize=7)
    fig.tight_layout()
    name = f"evolution_{task}.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
