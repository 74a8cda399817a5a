"""Report section of ExperimentForecast-v0: metric tables per condition, verdicts against ``zero``, the curve.

* **Table**: per (agent, condition) the episode means of MAE, Spearman (rounds with constant
  predictions left out and counted), NDCG@3, its chance-corrected lift, Regret@3 (best of 3,
  primary; mean of 3) and the best gain found after 24 selections.
* **Verdicts** (unit of inference: the target; each episode is paired with ``zero``'s episode of
  the same task, condition and seed, and each target's mean difference, divided by the reference's
  mean regret there, is one value): the mean Regret@3 difference agent - zero over targets with a 95% t interval over targets; "beats zero"
  when the whole CI is below 0, "insufficient data" under ``min_pairs`` pairs or 3 targets.
* **Experience** (``experience_effect``): the same agent with and without experience, round 1
  and the curve, normalised per target, per-target rows; ``zero`` is the floor.
* **Ground truth**: rounds whose best candidate is noise (a placebo or not significant) are
  counted, and Regret@3 is shown without them; the share of episodes in which ``zero`` found the
  pool's best says whether the selections saturate the pool.
* **Controls that can fail**: ``random`` against ``zero`` must not beat it (both are blind); and
  the feedback-use control: an agent's advantage under ``shuffled_gains`` against its advantage
  under ``in_env`` (same observed mode), "removed" when the shuffled advantage is below half the
  in-env one or its CI includes 0.
* **Plot**: the best true gain found against the number of selections, mean over episodes.
"""

from __future__ import annotations

import math
import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

from rsigym.records import Trajectory
from rsigym.report import ReportSection, condition_label, md_code, md_text, register_analysis
from rsigym.report.stats import cluster_t_ci

from .experience_effect import experience_markdown, target_scales
from .graders import round_means

__all__ = ["forecast_analysis", "episode_rows", "advantage_over"]

METRICS = ("mae", "spearman", "ndcg", "ndcg_lift", "regret_best", "regret_mean")
BLIND_AGENTS = ("zero", "random")
MIN_TARGETS = 3


def episode_rows(records: Sequence[Trajectory]) -> tuple[list[dict[str, Any]], int]:
    """One row per scored episode (agent, condition, task, seed, round means, curve); and how many were unscored."""
    rows, unscored = [], 0
    for record in records:
        state = record.final.state if record.final else None
        if not isinstance(state, dict) or not state.get("rounds") or record.termination != "budget_exhausted":
            unscored += 1
            continue
        rows.append({"agent": record.agent.id, "condition": condition_label(record.env.condition),
                     "condition_name": (record.env.condition or {}).get("name", "in_env"),
                     "observed": ((record.env.condition or {}).get("params") or {}).get("observed", "mean"),
                     "task": record.env.task_id, "seed": record.seed, "rep": record.rep,
                     "best_gain": state["best_gain"], "curve": state["best_gain_by_selection"],
                     "round_regret": [r["metrics"]["regret_best"] for r in state["rounds"]],
                     "round_noise": [bool(r.get("best_is_noise", False)) for r in state["rounds"]],
                     "gain_sd": state.get("target_gain_sd"),
                     "found_pool_best": state["best_gain"] is not None and state["best_gain"] >= state["pool_best_gain"],
                     **round_means(state["rounds"])})
    return rows, unscored


def advantage_over(rows: list[dict[str, Any]], agent: str, reference: str, condition: str,
                   metric: str = "regret_best") -> tuple[float, tuple[float, float], int, int]:
    """Mean (agent - reference) of ``metric`` over targets (each target's mean over its paired
    episodes is one value), its t interval over targets, the pair count and the target count.
    Regret differences are divided by the target's scale (``target_scales``: the reference's mean
    regret there; gains differ 50x between targets), so every target weighs the same."""
    ref = {(r["task"], r["seed"], r["rep"]): r[metric] for r in rows
           if r["agent"] == reference and r["condition"] == condition}
    scale = target_scales(rows, reference) if metric.startswith("regret") else {}
    pairs = [((r[metric] - ref[(r["task"], r["seed"], r["rep"])]) / scale.get(r["task"], 1.0), r["task"]) for r in rows
             if r["agent"] == agent and r["condition"] == condition and (r["task"], r["seed"], r["rep"]) in ref
             and not math.isnan(r[metric]) and not math.isnan(ref[(r["task"], r["seed"], r["rep"])])]
    if not pairs:
        return math.nan, (math.nan, math.nan), 0, 0
    mean, low, high, targets = cluster_t_ci([d for d, _ in pairs], [t for _, t in pairs])
    return mean, (low, high), len(pairs), targets


def _fmt(value: float, digits: int = 3) -> str:
    return "n/a" if value is None or (isinstance(value, float) and math.isnan(value)) else f"{value:+.{digits}f}"


def _mean(values: list[float]) -> float:
    finite = [v for v in values if not math.isnan(v)]
    return statistics.mean(finite) if finite else math.nan


@register_analysis("forecast")
def forecast_analysis(records: Sequence[Trajectory], out_dir: Path, *, reference: str = "zero",
                      min_pairs: int = 5) -> ReportSection:
    """Tables, verdicts against ``reference`` with their controls, and the best-gain curve (see the module doc)."""
    rows, unscored = episode_rows(records)
    groups: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    for row in rows:
        groups[(row["condition"], row["agent"])].append(row)
    lines = ["| condition | agent | episodes | MAE | Spearman (NaN rounds) | NDCG@3 | lift | Regret@3 best | "
             "Regret@3 mean | best gain @24 |", "|---|---|---|---|---|---|---|---|---|---|"]
    for (condition, agent), members in sorted(groups.items()):
        nan_rounds = sum(m["spearman_missing"] for m in members)
        lines.append(f"| {md_text(condition)} | {md_text(agent)} | {len(members)} | {_mean([m['mae'] for m in members]):.3f} | "
                     f"{_fmt(_mean([m['spearman'] for m in members]), 2)} ({nan_rounds}) | "
                     f"{_mean([m['ndcg'] for m in members]):.3f} | {_fmt(_mean([m['ndcg_lift'] for m in members]), 2)} | "
                     f"{_mean([m['regret_best'] for m in members]):.4f} | {_mean([m['regret_mean'] for m in members]):.4f} | "
                     f"{_fmt(_mean([m['best_gain'] for m in members]), 4)} |")
    verdict_lines, verdicts = _verdicts(rows, reference, min_pairs)
    experience_lines, experience_verdicts = experience_markdown(rows)
    plot = _curve_plot(groups, out_dir)
    markdown = "\n".join([
        f"Episodes scored: {len(rows)}; unscored (agent error, infra error, early stop): {unscored}. "
        "Unit of inference: the target (episodes are paired with the reference's episode of the same task, "
        "condition and seed; each target's mean difference is one value).", "", *_ground_truth_lines(rows, reference),
        "", *lines, "", f"### Regret@3 (best of 3) against {md_code(reference)}", "", *verdict_lines,
        "", *experience_lines])
    return ReportSection("Experiment forecasting", markdown,
                         "; ".join(verdicts + experience_verdicts) or "insufficient data", [plot] if plot else [])


def _ground_truth_lines(rows: list[dict[str, Any]], reference: str) -> list[str]:
    """Noisy rounds, and whether the blind reference saturates the pool (finds its best in most episodes)."""
    episodes = {(r["task"], r["seed"], r["rep"], r["condition"]): r for r in rows if r["agent"] == reference}
    rounds = [n for r in episodes.values() for n in r["round_noise"]]
    found = sum(r["found_pool_best"] for r in episodes.values())
    by_task: dict[str, list[bool]] = defaultdict(list)
    for r in episodes.values():
        by_task[r["task"]] += r["round_noise"]
    noisy = ", ".join(f"{md_text(t)} {sum(v)}/{len(v)}" for t, v in sorted(by_task.items()))
    if not episodes:
        return [f"No {md_code(reference)} episodes: the saturation and noise checks need them."]
    return [f"Ground truth: rounds whose best candidate is noise (a placebo or not significant), in {md_code(reference)}'s "
            f"episodes: {sum(rounds)}/{len(rounds)} ({noisy}); Regret@3 without them is the `curve_real` reading "
            f"below. Saturation: {md_code(reference)} found the pool's best in {found}/{len(episodes)} episodes "
            f"({'saturated: most episodes' if found * 2 > len(episodes) else 'not saturated'})."]


def _verdicts(rows: list[dict[str, Any]], reference: str, min_pairs: int) -> tuple[list[str], list[str]]:
    lines = ["| condition | agent | pairs | targets | Regret@3 / reference's, agent - reference [95% CI over targets] | verdict |",
             "|---|---|---|---|---|---|"]
    summary: list[str] = []
    advantage: dict[tuple[str, str, str], tuple[float, tuple[float, float], int, int]] = {}
    conditions = sorted({r["condition"] for r in rows})
    agents = sorted({r["agent"] for r in rows} - {reference})
    for condition in conditions:
        for agent in agents:
            mean, ci, n, targets = advantage_over(rows, agent, reference, condition)
            if n == 0:
                continue
            advantage[(agent, condition, "")] = (mean, ci, n, targets)
            verdict = ("insufficient data" if n < min_pairs or targets < MIN_TARGETS else "beats the reference"
                       if ci[1] < 0 else "worse than the reference" if ci[0] > 0 else "indistinguishable")
            lines.append(f"| {md_text(condition)} | {md_text(agent)} | {n} | {targets} | {mean:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}] | "
                         f"{verdict} |")
            if agent in BLIND_AGENTS:
                ok = verdict != "beats the reference"
                summary.append(f"blind control {md_text(agent)} in {md_text(condition)}: {'passes' if ok else 'FAILS'} "
                               f"({mean:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}], n={n})")
            elif condition.startswith("in_env"):
                summary.append(f"{md_text(agent)} in {md_text(condition)}: {verdict} ({mean:+.4f} [{ci[0]:+.4f}, {ci[1]:+.4f}], n={n})")
    lines += ["", "Feedback-use control (advantage = reference - agent Regret@3; shuffled_gains vs in_env, same "
              "observed mode):", "", "| agent | observed | in_env advantage | shuffled advantage | share kept | verdict |",
              "|---|---|---|---|---|---|"]
    for agent in agents:
        if agent in BLIND_AGENTS:
            continue
        for condition in conditions:
            if not condition.startswith("in_env"):
                continue
            shuffled = condition.replace("in_env", "shuffled_gains", 1)
            if (agent, shuffled, "") not in advantage:
                continue
            real, real_ci, n_real, _ = advantage[(agent, condition, "")]
            shuf, shuf_ci, n_shuf, _ = advantage[(agent, shuffled, "")]
            if min(n_real, n_shuf) < min_pairs or not real_ci[1] < 0:
                verdict = "insufficient data" if min(n_real, n_shuf) < min_pairs else "no in_env advantage to remove"
                share = math.nan
            else:
                share = shuf / real
                verdict = "removed" if share < 0.5 or shuf_ci[1] >= 0 else "NOT removed"
            lines.append(f"| {md_text(agent)} | {md_text(condition)} | {-real:+.4f} | {-shuf:+.4f} | {_fmt(share, 2)} | {verdict} |")
            summary.append(f"shuffled_gains control for {md_text(agent)} ({md_text(condition)}): {verdict}")
    return lines, summary


def _curve_plot(groups: dict[tuple[str, str], list[dict[str, Any]]], out_dir: Path) -> str | None:
    if not groups:
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(7.5, 4.5))
    for (condition, agent), members in sorted(groups.items()):
        length = min(len(m["curve"]) for m in members)
        if length == 0:
            continue
        mean_curve = [statistics.mean(m["curve"][i] for m in members) for i in range(length)]
        ax.plot(range(1, length + 1), mean_curve, marker=".", label=f"{agent} / {condition}")
    ax.set_xlabel("selections made")
    ax.set_ylabel("best true gain found (mean over episodes)")
    ax.axhline(0.0, color="grey", linewidth=0.8)
    ax.legend(fontsize=6, ncol=2)
    fig.tight_layout()
    name = "forecast_best_gain_curve.png"
    out_dir.mkdir(parents=True, exist_ok=True)
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
