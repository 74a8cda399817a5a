"""Probe-v0's analysis ``probe_guesses``: how many guesses each agent needs, per condition."""

from __future__ import annotations

from collections import defaultdict
from pathlib import Path
from typing import Sequence

from rsigym.records import Trajectory
from rsigym.report import ReportSection, condition_label, md_text, register_analysis
from rsigym.report.stats import bootstrap_ci

__all__ = ["probe_guesses"]


@register_analysis("probe_guesses")
def probe_guesses(records: Sequence[Trajectory], out_dir: Path) -> ReportSection:
    """Guesses to the secret per agent x condition (solved episodes), and the share solved."""
    guesses: dict[tuple[str, str], list[float]] = defaultdict(list)
    episodes: dict[tuple[str, str], int] = defaultdict(int)
    for record in records:
        state = record.final.state if record.final else None
        if not isinstance(state, dict) or "guesses" not in state:
            continue  # not a Probe record, or an infra error
        cell = (record.agent.id, condition_label(record.env.condition))
        episodes[cell] += 1
        if state.get("solved"):
            guesses[cell].append(float(len(state["guesses"])))
    lines = ["| agent | condition | episodes | solved | mean guesses | 95% CI |", "|---|---|---:|---:|---:|---|"]
    for cell in sorted(episodes):
        values = guesses[cell]
        mean = f"{sum(values) / len(values):.2f}" if values else "-"
        low, high = bootstrap_ci(values)
        ci = f"[{low:.2f}, {high:.2f}]" if values else "-"
        lines.append(f"| {md_text(cell[0])} | {md_text(cell[1])} | {episodes[cell]} | {len(values)} | {mean} | {ci} |")
    solved = sum(len(v) for v in guesses.values())
    return ReportSection("Probe: guesses to the secret", "\n".join(lines),
                         f"{solved} of {sum(episodes.values())} Probe episodes solved")
