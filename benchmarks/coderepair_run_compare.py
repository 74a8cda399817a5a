"""Two runs of a code repair scenario (an old commit and this one): did the runner change anything
an honest agent does or scores, and how long did each step take?

Per (agent, seed) record, the unit: the same actions, the same public outcomes per round, the same
``hidden_tests`` grade (its per-problem pass/fail, re-executed at grading time by each commit's
own runner); per agent, the problems solved under the hidden tests, and the seconds per step
(episode wall time over steps, median over the agent's records).

Run: ``python benchmarks/coderepair_run_compare.py BEFORE_DIR AFTER_DIR`` (two ``rsigym run``
output folders of the same scenario).
"""

from __future__ import annotations

import argparse
import statistics
from datetime import datetime
from pathlib import Path
from typing import Any

from rich.console import Console
from rich.table import Table

from rsigym.records.jsonl import read_records


def _by_key(folder: Path) -> dict[tuple[str, int], Any]:
    return {(r.agent.id, r.seed): r for r in read_records(folder / "records.jsonl").records}


def _grade(record: Any, name: str) -> dict[str, bool]:
    return next((dict(g.details.get("passed") or {}) for g in record.grades if g.grader == name), {})


def _public(record: Any) -> list[Any]:
    return [(s.info or {}).get("executed", {}).get("public_pass") for s in record.steps]


def _seconds_per_step(record: Any) -> float:
    took = datetime.fromisoformat(record.finished_at) - datetime.fromisoformat(record.started_at)
    return took.total_seconds() / max(len(record.steps), 1)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("before", type=Path)
    parser.add_argument("after", type=Path)
    args = parser.parse_args()
    before, after = _by_key(args.before), _by_key(args.after)
    common = sorted(set(before) & set(after))
    table = Table(title=f"{args.before} -> {args.after} ({len(common)} records in both)")
    for col in ("agent", "records", "same actions", "same public outcomes", "same hidden_tests grade",
                "solved before", "solved after", "s/step before", "s/step after", "ratio"):
        table.add_column(col, justify="right")
    for agent in sorted({a for a, _ in common}):
        keys = [k for k in common if k[0] == agent]
        same_actions = sum([s.action for s in before[k].steps] == [s.action for s in after[k].steps] for k in keys)
        same_public = sum(_public(before[k]) == _public(after[k]) for k in keys)
        same_grade = sum(_grade(before[k], "hidden_tests") == _grade(after[k], "hidden_tests") for k in keys)
        solved = [sum(sum(_grade(run[k], "hidden_tests").values()) for k in keys) for run in (before, after)]
        step_s = [statistics.median(_seconds_per_step(run[k]) for k in keys) for run in (before, after)]
        table.add_row(agent, str(len(keys)), str(same_actions), str(same_public), str(same_grade), str(solved[0]),
                      str(solved[1]), f"{step_s[0]:.3f}", f"{step_s[1]:.3f}", f"{step_s[1] / step_s[0]:.2f}")
    Console(width=160).print(table)
    missing = sorted(set(before) ^ set(after))
    if missing:
        print(f"records in only one run: {missing}")


if __name__ == "__main__":
    main()
