"""The policy side of code repair, read from a run's records (``rsigym run coderepair_policy``).

Per agent: the coder's candidate quality (share of proposed candidates that pass the public tests,
from the simulator's labels) before and after the drift, the hidden-test pass of the final
programs, and the joint protocol's decisions (accepted / rejected pairs, and how many carried a
new coder mix). Then the agent with the coder updated (``joint``) against the same agent with the
coder never changed (``adaptive``, the control) per (seed, problem) cell after the warm-up:
two-way (seed x problem) bootstrap CI and MDD (``rsigym.report.crossed``).

Run: ``python benchmarks/coderepair_policy.py RUN_DIR [--treated joint] [--control adaptive]``.
"""

from __future__ import annotations

import argparse
from collections import defaultdict
from pathlib import Path

import numpy as np
from rich.console import Console
from rich.table import Table

from rsigym.report.crossed import crossed_bootstrap
from rsigym.envs.coderepair.analyses import paired_cells, per_problem_outcomes, warmup_cells
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("run_dir", type=Path)
    parser.add_argument("--treated", default="joint")
    parser.add_argument("--control", default="adaptive")
    parser.add_argument("--warmup", type=int, default=8)
    args = parser.parse_args(argv)
    records = [r for r in read_records(args.run_dir / RECORDS_FILE) if r.final and isinstance(r.final.state, dict)]
    if not records:
        raise SystemExit(f"no code-repair records in {args.run_dir / RECORDS_FILE}")
    quality: dict[str, dict[bool, list[float]]] = defaultdict(lambda: defaultdict(list))
    events: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))
    for record in records:
        state = record.final.state  # type: ignore[union-attr]
        for problem in state.get("problems", []):
            for rnd in problem["rounds"]:
                labels = [float(x) for x in rnd["labels"] if x is not None]
                quality[record.agent.id][bool(problem.get("drifted"))] += labels
        for decision in state.get("wm_decisions", []):
            if decision.get("event") in ("accept", "reject"):
                events[record.agent.id][decision["event"]] += 1
                if "coder" in decision:
                    events[record.agent.id][f"{decision['event']} with a new mix"] += 1
    outcomes, missing = per_problem_outcomes(records, "hidden_tests")
    table = Table(title=f"code repair policy side ({args.run_dir.name}): candidate quality = public-pass share of proposed candidates")
    for column in ("agent", "quality before drift", "quality after drift", "hidden pass", "missing", "protocol decisions"):
        table.add_column(column)
    for agent in sorted(quality):
        before, after = quality[agent][False], quality[agent][True]
        hidden = list(outcomes.get(agent, {}).values())
        table.add_row(agent, f"{np.mean(before):.3f} ({len(before)})" if before else "-",
                      f"{np.mean(after):.3f} ({len(after)})" if after else "-",
                      f"{np.mean(hidden):.3f}" if hidden else "-", str(missing.get(agent, 0)),
                      ", ".join(f"{k}: {v}" for k, v in sorted(events[agent].items())) or "-")
    console = Console(width=200)
    console.print(table)
    cells = paired_cells(outcomes, args.treated, args.control, warmup_cells(records, args.warmup))
    if len({k[0] for k in cells}) < 2 or len({k[1] for k in cells}) < 5:
        print(f"{args.treated} vs {args.control}: insufficient data ({len(cells)} cells)")
        return 0
    result = crossed_bootstrap(cells)
    low, high = result.ci
    call = "no difference shown" if low <= 0 <= high else "better" if low > 0 else "worse"
    print(f"{args.treated} vs {args.control} (hidden pass, unit: seed x problem cell, warm-up {args.warmup} excluded): "
          f"delta {result.estimate:+.3f}, 95% CI [{low:+.3f}, {high:+.3f}], MDD {result.mdd:.3f}, "
          f"{result.n_seeds} seeds x {result.n_problems} problems ({result.n_cells} cells): {call}")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
