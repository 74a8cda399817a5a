"""Report section of DataSelection-v0: per selector, the five groups' actual scores with their
predicted order and the random-reference band, aggregated over repeated selection runs; the
gain verdict of each run (better / indistinguishable / worse than random, from its CI), ties
reported as ties, a warning when students sit at the floor, and the sandbox that ran
``run_python``."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, md_text, register_analysis

__all__ = ["dataselect_groups"]


def _metrics(record: Trajectory) -> dict[str, Any] | None:
    state = record.final.state if record.final else None
    if not isinstance(state, dict) or "submission" not in state:
        return None
    metrics = state.get("metrics")
    return metrics if metrics and not metrics.get("penalised") else None


@register_analysis("dataselect_groups")
def dataselect_groups(records: Sequence[Trajectory], out_dir: Path) -> ReportSection:
    """Table and plot of group scores by predicted rank, with the random band, per (pool, agent)."""
    runs: dict[tuple[str, str], list[dict[str, Any]]] = defaultdict(list)
    penalised: dict[tuple[str, str], int] = defaultdict(int)
    for record in records:
        pool = str((record.final.state or {}).get("pool", {}).get("name", "?")) if record.final else "?"
        metrics = _metrics(record)
        if metrics is None:
            penalised[(pool, record.agent.id)] += 1
        else:
            runs[(pool, record.agent.id)].append(metrics)
    lines = ["| pool | agent | runs | gain (mean) | gains [95% CI] | vs random (better/indist./worse) | "
             "top is best | top ties | Spearman (mean) | ceiling |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    verdicts: dict[tuple[str, str], str] = {}
    for (pool, agent), ms in sorted(runs.items()):
        gains = [m["gain"] for m in ms]
        ceilings = [m["spearman_ceiling"] for m in ms if m.get("spearman_ceiling") is not None]
        counts = {v: sum(m.get("gain_verdict") == v for m in ms) for v in ("better", "indistinguishable", "worse")}
        verdicts[(pool, agent)] = _agent_verdict(counts, len(ms))
        lines.append(f"| {md_text(pool)} | {md_text(agent)} | {len(ms)} | {statistics.mean(gains):+.4f} | "
                     + " ".join(f"{g:+.4f} [{m['gain_ci'][0]:+.3f},{m['gain_ci'][1]:+.3f}]" for g, m in zip(gains, ms))
                     + f" | {counts['better']}/{counts['indistinguishable']}/{counts['worse']} | "
                     f"{sum(bool(m['top_is_best']) for m in ms)}/{len(ms)} | {sum(bool(m['top_tie']) for m in ms)} | "
                     f"{statistics.mean(m['spearman'] for m in ms):.2f} | "
                     + (f"{statistics.mean(ceilings):.2f}" if ceilings else "n/a") + " |")
    for key, count in sorted(penalised.items()):
        lines.append(f"| {md_text(key[0])} | {md_text(key[1])} | {count} without a scored submission | | | | | | | |")
    lines += ["", _sandbox_line(records)]
    warning = _floor_warning(runs)
    if warning:
        lines += ["", warning]
    plots = [_plot(out_dir, runs)] if runs else []
    if runs:
        verdict = "Against the random reference (every run's gain CI): " + "; ".join(
            f"{md_text(agent)} on {md_text(pool)}: {v}" for (pool, agent), v in sorted(verdicts.items())) + "."
    else:
        verdict = "No scored submission."
    return ReportSection("Data selection: groups by predicted rank", "\n".join(lines), verdict, plots)


def _agent_verdict(counts: dict[str, int], n: int) -> str:
    """``better`` / ``worse`` than random when every run's CI says so, else how the runs split."""
    if counts["better"] == n:
        return "better than random"
    if counts["worse"] == n:
        return "worse than random"
    if counts["indistinguishable"] == n:
        return "indistinguishable from random"
    return f"mixed ({counts['better']} better, {counts['indistinguishable']} indistinguishable, {counts['worse']} worse)"


def _sandbox_line(records: Sequence[Trajectory]) -> str:
    """Which sandbox ran ``run_python`` (from each record's ``sandbox``), counted over episodes."""
    used: dict[str, int] = defaultdict(int)
    for record in records:
        info = record.sandbox or {}
        if not info.get("opened"):
            used[f"not used (policy {info.get('policy', '?')})"] += 1
        else:
            provider = info.get("provider", "?")
            label = "local subprocess, UNSANDBOXED (opt-in local_unsafe)" if provider == "local" else str(provider)
            used[label] += 1
    return "Sandbox of run_python: " + ", ".join(f"{md_text(k)} in {v} episodes" for k, v in sorted(used.items())) + "."


def _floor_warning(runs: dict[tuple[str, str], list[dict[str, Any]]]) -> str | None:
    """A warning when students sit at the floor: categories at <= FLOOR everywhere, or whole groups there."""
    from .evaluation import FLOOR

    floor: set[str] = set()
    low_groups = total_groups = 0
    for ms in runs.values():
        for m in ms:
            floor.update(m.get("floor_categories") or [])
            low_groups += sum(s <= FLOOR for s in m["group_scores"])
            total_groups += len(m["group_scores"])
    parts = []
    if floor:
        parts.append(f"categories {md_text(', '.join(sorted(floor)))} score <= {FLOOR} for every group and random draw of a run")
    if total_groups and low_groups:
        parts.append(f"{low_groups} of {total_groups} groups score <= {FLOOR} overall")
    if not parts:
        return None
    return ("**Warning: students at the floor** (" + "; ".join(parts) + "): differences there carry no "
            "information about the data; use bigger groups or evaluation sets before reading the order.")


def _plot(out_dir: Path, runs: dict[tuple[str, str], list[dict[str, Any]]]) -> str:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    keys = sorted(runs)
    fig, axes = plt.subplots(1, len(keys), figsize=(3.2 * len(keys), 3.2), squeeze=False, sharey=False)
    for ax, key in zip(axes[0], keys):
        for m in runs[key]:
            # x: predicted rank (1 = predicted best); y: the group's actual score
            scores = [m["group_scores"][g] for g in m["order"]]
            ax.plot(range(1, len(scores) + 1), scores, marker="o", alpha=0.7)
        draws = np.concatenate([m["random_draw_means"] for m in runs[key]])
        ax.axhspan(float(draws.min()), float(draws.max()), color="grey", alpha=0.25, label="random draws")
        ax.axhline(float(draws.mean()), color="grey", linestyle="--")
        ax.set_title(f"{key[1]} ({key[0]})", fontsize=8)
        ax.set_xlabel("predicted rank")
        ax.set_xticks(range(1, 6))
    axes[0][0].set_ylabel("actual score")
    axes[0][0].legend(fontsize=7)
    fig.tight_layout()
    name = "dataselect_groups.png"
    fig.savefig(out_dir / name, dpi=110)
    plt.close(fig)
    return name
