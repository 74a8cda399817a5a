"""Identical reruns: how much a score moves when nothing but the repetition changes.

TRACE's noise floor. Configurations that differ only in ``rep`` are reruns of one another; their
pass/fail flip rate (per rerun pair, and the share of tasks whose result flips), tau-bench's
pass^k, the one-way ICC across tasks and the minimum detectable difference of two single runs say
how large a treatment effect must be before a single comparison can show it. The report gives
one row per agent and condition: pooling conditions would count one task several times.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Sequence

from rsigym.records import Trajectory, canonical_json
from rsigym.report import ReportSection, condition_label, md_code, md_text, register_analysis

from rsigym.report.stats import (
    flip_rate, icc_oneway, minimum_detectable_difference, pass_hat_k, single_run_difference_sd, task_flip_share,
)
from .trace import matches_condition, record_score
from .trace_report import plot_name

__all__ = ["RerunNoise", "rerun_noise", "reruns_analysis"]


@dataclass(frozen=True)
class RerunNoise:
    """Noise across identical reruns (configurations that differ only in ``rep``)."""

    grader: str
    configurations: int  # groups with >= 2 scored reruns
    flip_rate: float     # share of disagreeing rerun pairs, pass = score >= 0.5
    flip_ci_low: float   # Wilson interval, see ``stats.flip_rate``
    flip_ci_high: float
    icc: float
    sd_single_run_difference: float
    mdd: float  # minimum detectable difference of two single runs over ``configurations`` tasks
    per_task: dict[str, tuple[float, float, float]] = field(default_factory=dict)  # (rate, low, high)
    task_flip_share: float = math.nan  # share of configurations whose reruns do not all agree
    task_flip_ci_low: float = math.nan  # Wilson interval
    task_flip_ci_high: float = math.nan
    pass_hat_k: dict[int, float] = field(default_factory=dict)  # k -> pass^k, k = 1 .. fewest reruns


def rerun_noise(records: Sequence[Trajectory], grader: str, condition: str | None = None) -> RerunNoise:
    """Flip rate (suite and per task) with Wilson CIs, ICC(1,1) and the MDD of two single runs.

    A configuration is everything but ``rep`` (env, kwargs, task, condition, agent, seed); each
    with two or more scored reruns is one row. ``condition`` keeps records of that condition
    only (by name or label, "identity"/"none" meaning the unmodified env); None keeps every
    condition, each in its own configurations. Infra-error and ungraded records are left out.
    The MDD uses the pooled within-configuration variance (``single_run_difference_sd``) and
    n = the number of configurations, at alpha 0.05 and power 0.8. With ``condition`` None and
    several conditions in the records, n counts a task once per condition: ask per condition
    (``reruns_analysis`` does). ``pass_hat_k`` runs k from 1 to the largest rerun count, each k
    over the configurations with at least k reruns.
    """
    groups: dict[str, list[float]] = defaultdict(list)
    task_of: dict[str, str] = {}
    for record in records:
        if record.termination == "infra_error":
            continue
        if condition is not None and not matches_condition(record.env.condition, condition):
            continue
        score = record_score(record, grader)
        if score is None:
            continue
        env = record.env
        key = canonical_json([env.id, env.kwargs, env.task_id, env.condition, asdict(record.agent),
                              record.seed])
        groups[key].append(score)
        task_of[key] = str(env.task_id)
    rows = {k: v for k, v in groups.items() if len(v) >= 2}
    rate, low, high = flip_rate(rows)
    per_task = {task: flip_rate({k: v for k, v in rows.items() if task_of[k] == task})
                for task in sorted({task_of[k] for k in rows})}
    sd = single_run_difference_sd(list(rows.values()))
    mdd = minimum_detectable_difference(sd, len(rows)) if rows else math.nan
    share, share_low, share_high, _ = task_flip_share(rows)
    most = max((len(v) for v in rows.values()), default=0)
    return RerunNoise(grader, len(rows), rate, low, high, icc_oneway(list(rows.values())), sd, mdd,
                      per_task, share, share_low, share_high,
                      {k: pass_hat_k(rows, k) for k in range(1, most + 1)})


@register_analysis("reruns")
def reruns_analysis(records: Sequence[Trajectory], out_dir: Path, *, grader: str = "reward",
                    condition: str | None = None) -> ReportSection:
    """Per agent and condition: flip rate per rerun pair and per task, each with its Wilson CI,
    pass^k, ICC, SD of single-run differences and MDD; a plot. ``condition`` keeps one."""
    cells: dict[tuple[str, str], list[Trajectory]] = defaultdict(list)
    for record in records:
        cells[(record.agent.id, condition_label(record.env.condition))].append(record)
    results = {key: rerun_noise(group, grader, condition) for key, group in sorted(cells.items())}
    results = {k: n for k, n in results.items() if n.configurations > 0}
    scope = f"condition {md_text(condition)}" if condition else "each condition apart"
    lines = [f"Identical reruns of {md_code(grader)} ({scope}): configurations that differ only in rep. "
             "Flip rate = share of rerun pairs whose pass/fail (score >= 0.5) disagree; task flip "
             "share = share of tasks whose reruns do not all agree (the per-task reading); both "
             "with 95% Wilson CIs. pass^k = chance that k reruns of a task all pass (tau-bench). "
             "ICC(1,1) one-way; MDD = smallest difference two single runs detect over these tasks "
             "(alpha 0.05, power 0.8).", ""]
    if not results:
        return ReportSection("Rerun noise", "\n".join(lines + ["No configuration has two reruns."]),
                             "no reruns")
    most = max(max(n.pass_hat_k, default=0) for n in results.values())
    lines += ["| agent | condition | tasks | flip rate (pairs) | 95% CI | task flip share | 95% CI | "
              + " | ".join(f"pass^{k}" for k in range(1, most + 1)) + " | ICC | SD single-run diff | MDD |",
              "|---|---|---:|---:|---|---:|---|" + "---:|" * most + "---:|---:|---:|"]
    for (agent, label), noise in results.items():
        hats = " | ".join(f"{noise.pass_hat_k[k]:.3f}" if k in noise.pass_hat_k else "-"
                          for k in range(1, most + 1))
        lines.append(f"| {md_text(agent)} | {md_text(label)} | {noise.configurations} | {noise.flip_rate:.3f} | "
                     f"[{noise.flip_ci_low:.3f}, {noise.flip_ci_high:.3f}] | {noise.task_flip_share:.3f} | "
                     f"[{noise.task_flip_ci_low:.3f}, {noise.task_flip_ci_high:.3f}] | {hats} | "
                     f"{noise.icc:.3f} | {noise.sd_single_run_difference:.3f} | {noise.mdd:.3f} |")
    lines += ["", "<details><summary>Per-task flip rates</summary>", "",
              "| agent | condition | task | flip rate | 95% CI |", "|---|---|---|---:|---|"]
    for (agent, label), noise in results.items():
        for task, (rate, low, high) in noise.per_task.items():
            lines.append(f"| {md_text(agent)} | {md_text(label)} | {md_text(task)} | {rate:.3f} | [{low:.3f}, {high:.3f}] |")
    lines += ["", "</details>"]
    verdict = "; ".join(f"{md_text(a)}/{md_text(c)}: flip rate {n.flip_rate:.3f} [{n.flip_ci_low:.3f}, {n.flip_ci_high:.3f}], "
                        f"task flip share {n.task_flip_share:.3f}, MDD {n.mdd:.3f}"
                        for (a, c), n in results.items())
    name = plot_name("trace_flip_rates", [grader, condition], ["reward", None])
    return ReportSection("Rerun noise", "\n".join(lines), verdict,
                         [_plot_flip_rates(out_dir / name, {f"{a}/{c}": n for (a, c), n in results.items()})])


def _plot_flip_rates(path: Path, results: dict[str, RerunNoise]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    agents = list(results)
    rates = [results[a].flip_rate for a in agents]
    errors = [[r - results[a].flip_ci_low for a, r in zip(agents, rates)],
              [results[a].flip_ci_high - r for a, r in zip(agents, rates)]]
    fig, ax = plt.subplots(figsize=(max(4.0, 0.8 * len(agents) + 1.5), 3.6))
    ax.bar(range(len(agents)), rates, yerr=errors, capsize=4, color="#4C72B0")
    ax.set_xticks(range(len(agents)), agents, fontsize=7, rotation=30, ha="right")
    ax.set_ylim(0, 1)
    ax.set_ylabel("flip rate (rerun pairs)")
    ax.set_title("Identical reruns: flip rate with 95% Wilson CI", fontsize=9)
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
    return path.name
