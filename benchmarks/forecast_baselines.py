"""ExperimentForecast-v0: do kNN and ridge beat ``zero`` on Regret@3, and does ``shuffled_gains`` remove it?

For every target environment and ``--seeds`` episode seeds, each forecaster plays a full episode
(8 rounds x 16 candidates, top 3 executed) under each condition; its episode is paired with
``zero``'s episode of the same task, condition and seed. Table 1: per (condition, agent), the
mean Regret@3 (best of 3), the mean paired difference to zero with a paired bootstrap 95% CI,
Spearman, NDCG@3 lift and the best gain after 24 selections. Table 2, the feedback-use control:
the in_env advantage over zero next to the shuffled_gains advantage and the share kept.
``random`` is the blind control (it must not beat zero); ``oracle`` is the ceiling. Also prints
the wall time per episode (median over agents) against ``zero``'s, measured in the same run.

Run: ``python benchmarks/forecast_baselines.py [--seeds 10] [--conditions in_env shuffled_gains cross_env no_experience]``.
"""

from __future__ import annotations

import argparse
import statistics
import time

from rich.console import Console
from rich.table import Table

from rsigym.envs.forecast.evaluate import episode
from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS
from rsigym.report.stats import paired_bootstrap_ci

AGENTS = ["forecast_zero", "forecast_random", "forecast_knn", "forecast_ridge", "forecast_group_prior", "forecast_oracle",
          "llm"]


def main(seeds: int, conditions: list[str]) -> None:
    console = Console()
    tasks = list(RESEARCH_ENVIRONMENTS)
    results: dict[tuple[str, str], list[dict]] = {}
    seconds: dict[str, list[float]] = {a: [] for a in AGENTS}
    for condition in conditions:
        for agent in AGENTS:
            rows = []
            for task in tasks:
                for seed in range(seeds):
                    start = time.perf_counter()
                    rows.append(episode(agent, task, condition, seed,
                                        model="rsigym/forecast_heuristic" if agent == "llm" else None))
                    seconds[agent].append(time.perf_counter() - start)
            results[(condition, agent)] = rows
    table = Table(title=f"Regret@3 against zero ({len(tasks)} tasks x {seeds} seeds = {len(tasks) * seeds} pairs)")
    for column in ("condition", "agent", "Regret@3", "minus zero [95% CI]", "Spearman", "NDCG lift", "best gain @24"):
        table.add_column(column)
    advantage = {}
    for (condition, agent), rows in results.items():
        zero = results[(condition, "forecast_zero")]
        deltas = [a["regret_best"] - b["regret_best"] for a, b in zip(rows, zero)]
        low, high = paired_bootstrap_ci(deltas)
        advantage[(condition, agent)] = (-statistics.mean(deltas), high)
        spearmans = [r["spearman"] for r in rows if r["spearman"] == r["spearman"]]
        table.add_row(condition, agent, f"{statistics.mean(r['regret_best'] for r in rows):.4f}",
                      f"{statistics.mean(deltas):+.4f} [{low:+.4f}, {high:+.4f}]",
                      f"{statistics.mean(spearmans):+.3f}" if spearmans else "n/a",
                      f"{statistics.mean(r['ndcg_lift'] for r in rows):+.3f}",
                      f"{statistics.mean(r['best_gain'] for r in rows):+.4f}")
    console.print(table)
    if "in_env" in conditions and "shuffled_gains" in conditions:
        control = Table(title="Feedback-use control: advantage over zero (zero's Regret@3 minus the agent's)")
        for column in ("agent", "in_env", "shuffled_gains", "share kept"):
            control.add_column(column)
        for agent in AGENTS[1:]:
            real, shuffled = advantage[("in_env", agent)][0], advantage[("shuffled_gains", agent)][0]
            control.add_row(agent, f"{real:+.4f}", f"{shuffled:+.4f}", f"{shuffled / real:.2f}" if real > 0 else "n/a")
        console.print(control)
    timing = Table(title="Wall time per episode (median)")
    for column in ("agent", "s", "ratio to zero"):
        timing.add_column(column)
    for agent in AGENTS:
        timing.add_row(agent, f"{statistics.median(seconds[agent]):.3f}",
                       f"{statistics.median(seconds[agent]) / statistics.median(seconds['forecast_zero']):.1f}")
    console.print(timing)


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seeds", type=int, default=10)
    parser.add_argument("--conditions", nargs="+", default=["in_env", "shuffled_gains", "cross_env", "no_experience"])
    args = parser.parse_args()
    main(args.seeds, args.conditions)
