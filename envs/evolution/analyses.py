"""The record-only analysis of ``rsigym/ProgramEvolution-v0`` batteries (``evolution``).

Metrics, from each record's end-state snapshot (its ``curve``: best full score after every
evaluation, with the full evaluations, full-evaluation equivalents and generator tokens spent):

* full evaluations to reach a target score: the first crossing of the **mean** curve over
  seeds (the paper's measure), and per seed;
* tokens (generator, plus the allocator's own) spent by then;
* best score at a fixed full-evaluation budget;
* full-evaluation equivalents to the target with and without the exploration the run paid for;
* missed new bests: estimated over all turned-away candidates from the explored ones (each stands
  for 1/``explore_p``), with a 95% Clopper-Pearson interval; "unknown" when nothing was explored;
* each run's policy history (``[policy] ...`` lines in the allocator's rationales): every
  challenger, when it was proposed, the disagreements, accepted or rejected and why.

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
from rsigym.report import ReportSection, md_code, md_file_name, md_text, register_analysis

from .evoalloc import POLICY_EVENT, missed_new_bests_estimate

__all__ = ["best_curve", "evaluations_to_reach", "mean_curve", "first_crossing", "missed_new_bests",
           "policy_events", "turned_away", "evolution_analysis"]


def _state(record: Trajectory) -> dict[str, Any]:
    return snapshot_state(record, "curve", "program-evolution")


def _spent(point: dict[str, Any], x: str) -> float:
    if x == "with_exploration":  # full-evaluation equivalents, counterfactual exploration included
        return float(point["full_equivalents"]) + float(point.get("exploration_cost", 0.0))
    return float(point[x])


def best_curve(record: Trajectory, x: str = "full_evaluations") -> list[tuple[float, float]]:
    """``(spent, best score)`` after each evaluation, ``spent`` measured by ``x``.

    ``x``: ``full_evaluations``, ``full_equivalents`` (partials counted) or ``with_exploration``
    (full equivalents plus the counterfactual evaluations exploration ran, which the agent's budget
    does not pay but the run does).
    """
    return [(_spent(p, x), float(p["best_score"])) for p in _state(record)["curve"] if p["best_score"] is not None]


def turned_away(state: dict[str, Any]) -> int:
    """Candidates the agent turned away: discarded, or stopped after a partial evaluation (not duplicates)."""
    counts = state["counts"]
    stopped = int(counts["partial"]) - int(counts["rest"]) - int(counts.get("duplicate", 0))
    return int(counts["discard"]) + max(stopped, 0)


def missed_new_bests(states: Sequence[dict[str, Any]]) -> str:
    """Estimated new bests among turned-away candidates (explored ones weighted by 1/explore_p), with a 95% CI."""
    away = sum(turned_away(s) for s in states)
    explored = sum(int(s["exploration"]["evaluations"]) for s in states)
    found = sum(int(s["exploration"]["missed_new_bests"]) for s in states)
    if away == 0:
        return "0 (nothing turned away)"
    estimate, low, high = missed_new_bests_estimate(away, min(explored, away), min(found, explored, away))
    if explored == 0:
        return f"unknown (0 of {away} explored; CI [0, {away}])"
    return f"{estimate:.2g} [{low:.2g}, {high:.2g}] ({found} seen in {explored} of {away} explored)"


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
        lines += [f"### {md_text(task)}", "", f"Target: {_fmt(target)} ({'given' if (targets or {}).get(task) is not None else f'mean final best of {md_code(baseline)}'}); "
                  f"fixed budget for the best-score column: {budget} full evaluations.", "",
                  "| allocator | runs | full evals to target (mean curve) | full-equivalents to target (mean curve, "
                  "partials counted) | full-equivalents to target incl. exploration (mean curve) | median per run | "
                  f"tokens to target (median) | best at {budget} full | final best (mean) | partial evals (mean) | "
                  "missed new bests (est. [95% CI], explored x 1/explore_p) | exploration cost |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---|---:|"]
        per_run: dict[str, dict[tuple[int, int], float | None]] = {}
        for agent, group in sorted(agents.items()):
            xs, ys = mean_curve(group)
            crossing = first_crossing(xs, ys, target) if target is not None else None
            xe, ye = mean_curve(group, x="full_equivalents")
            crossing_equivalents = first_crossing(xe, ye, target) if target is not None else None
            xx, yx = mean_curve(group, x="with_exploration")
            crossing_exploring = first_crossing(xx, yx, target) if target is not None else None
            reach = {(r.seed, r.rep): (evaluations_to_reach(r, target) if target is not None else None) for r in group}
            per_run[agent] = reach
            reached = [v for v in reach.values() if v is not None]
            tokens = [_tokens_at(r, target) for r in group if target is not None]
            tokens_reached = [t for t in tokens if t is not None]
            states = [_state(r) for r in group]
            lines.append(
                f"| {md_text(agent)} | {len(group)} | {_fmt(crossing, 'g')} | {_fmt(crossing_equivalents, 'g')} | "
                f"{_fmt(crossing_exploring, 'g')} | "
                f"{_fmt(float(np.median(reached)) if len(reached) == len(group) else None, 'g')} | "
                f"{_fmt(float(np.median(tokens_reached)) if len(tokens_reached) == len(group) else None, '.0f')} | "
                f"{np.mean([_best_at(best_curve(r), budget) for r in group]):.4g} | "
                f"{np.mean([s['best_score'] for s in states]):.4g} | "
                f"{np.mean([s['counts']['partial'] for s in states]):.1f} | "
                f"{missed_new_bests(states)} | "
                f"{sum(s['exploration']['cost'] for s in states):.2f} |")
            reached_text = "not reached" if crossing is None else f"{crossing:g} full evals"
            verdicts.append(f"{md_text(task)}/{md_text(agent)}: {reached_text} to {_fmt(target)}")
        runs = sorted({key for reach in per_run.values() for key in reach})
        several_reps = any(rep for _, rep in runs)
        labels = [f"seed {seed}" + (f" rep {rep}" if several_reps else "") for seed, rep in runs]
        lines += ["", "Full evaluations to reach the target, per run:", "",
                  "| allocator | " + " | ".join(labels) + " |", "|---|" + "---:|" * len(runs)]
        for agent, reach in sorted(per_run.items()):
            lines.append(f"| {md_text(agent)} | " + " | ".join(_fmt(reach.get(key), "g") for key in runs) + " |")
        lines.append("")
        lines += _policy_history(agents)
        plots.append(_plot(out_dir, task, agents, target))
    if not groups:
        return ReportSection("Program evolution", "no program-evolution records", "no records")
    return ReportSection("Program evolution", "\n".join(lines), "; ".join(verdicts), plots)


def policy_events(record: Trajectory) -> list[str]:
    """The policy-history lines (``[policy] ...``) an allocator wrote into its action rationales."""
    events = []
    for step in record.steps:
        rationale = step.action.get("rationale") if isinstance(step.action, dict) else None
        for line in str(rationale or "").splitlines():
            if line.startswith(POLICY_EVENT):
                events.append(line[len(POLICY_EVENT):])
    return events


def _policy_history(agents: dict[str, list[Trajectory]]) -> list[str]:
    """Each challenger of each run: proposed when, the disagreements, accepted or rejected and why."""
    lines: list[str] = []
    for agent, group in sorted(agents.items()):
        runs = [(r, policy_events(r)) for r in sorted(group, key=lambda r: (r.seed, r.rep))]
        if not any(events for _, events in runs):
            continue
        lines += [f"Policy history of {md_text(agent)}:", ""]
        for record, events in runs:
            verdicts = [e for e in events if " accepted at " in e or " rejected at " in e]
            accepted = sum(" accepted at " in e for e in verdicts)
            lines.append(f"- seed {record.seed} rep {record.rep}: {sum(' proposed at ' in e for e in events)} "
                         f"challengers, {accepted} accepted, {len(verdicts) - accepted} rejected")
            lines += [f"  - {md_text(e)}" for e in events]  # the allocator's own text: an agent's words
        lines.append("")
    return lines


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
    name = md_file_name(f"evolution_{task}.png")  # a task id is a name from the records, not a path
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
