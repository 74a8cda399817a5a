"""Report section of DataSelection-v0: per selector, the five groups' actual scores with their
predicted order and the random-reference band, aggregated over repeated selection runs."""

from __future__ import annotations

import statistics
from collections import defaultdict
from pathlib import Path
from typing import Any, Sequence

import numpy as np

from rsigym.records import Trajectory
from rsigym.report import ReportSection, register_analysis

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
    lines = ["| pool | agent | runs | gain (mean) | gains | top is best | ties | Spearman (mean) | ceiling |",
             "|---|---|---|---|---|---|---|---|---|"]
    for (pool, agent), ms in sorted(runs.items()):
        gains = [m["gain"] for m in ms]
        ceilings = [m["spearman_ceiling"] for m in ms if m.get("spearman_ceiling") is not None]
        lines.append(f"| {pool} | {agent} | {len(ms)} | {statistics.mean(gains):+.4f} | "
                     + " ".join(f"{g:+.4f} [{m['gain_ci'][0]:+.3f},{m['gain_ci'][1]:+.3f}]" for g, m in zip(gains, ms))
                     + f" | {sum(m['top_is_best'] for m in ms)}/{len(ms)} | {sum(m['top_tie'] for m in ms)} | "
                     f"{statistics.mean(m['spearman'] for m in ms):.2f} | "
                     + (f"{statistics.mean(ceilings):.2f}" if ceilings else "n/a") + " |")
    for key, count in sorted(penalised.items()):
        lines.append(f"| {key[0]} | {key[1]} | {count} without a scored submission | | | | | | |")
    plots = [_plot(out_dir, runs)] if runs else []
    best = max(runs.items(), key=lambda kv: statistics.mean(m["gain"] for m in kv[1]), default=None)
    verdict = (f"Highest mean gain over the random reference: {best[0][1]} on {best[0][0]} "
               f"({statistics.mean(m['gain'] for m in best[1]):+.4f} over {len(best[1])} runs)." if best
               else "No scored submission.")
    return ReportSection("Data selection: groups by predicted rank", "\n".join(lines), verdict, plots)


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
