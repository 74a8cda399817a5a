"""What the viewer's tables show, in a compact form: the summary grid and one row per episode.

Rows travel as arrays, their names (agents, conditions, tasks, terminations, models) as indices
into one list each, so 50,000 episodes cost a few MB of page, not twenty. Scores are named per
grading rule exactly as the report's summary and the inspect export name them
(``rsigym.report.score_cells``), so the grid's means are the report's.
"""

from __future__ import annotations

from typing import Any, Sequence

import numpy as np

from ..records.trajectory import Trajectory
from ..report.report import condition_label
from ..report.score_cells import latest_grades, rule_names, score_cells
from ..report.stats import bootstrap_ci

__all__ = ["episode_rows", "summary_grid", "ROW_FIELDS", "NAMED_FIELDS"]

# The fields of a row, in order; a name field holds an index into ``names[field]``; "scores" is a
# list with one entry per rule (``rules`` order): a number, null (no grade) or "error".
ROW_FIELDS = ("agent", "condition", "task", "seed", "rep", "termination", "steps", "reward", "tokens",
              "cost_usd", "model", "error", "scores")
NAMED_FIELDS = ("agent", "condition", "task", "termination", "model")


class _Names:
    def __init__(self) -> None:
        self.lists: dict[str, list[Any]] = {field: [] for field in NAMED_FIELDS}
        self._index: dict[str, dict[Any, int]] = {field: {} for field in NAMED_FIELDS}

    def __call__(self, field: str, value: Any) -> int:
        index = self._index[field]
        if value not in index:
            index[value] = len(self.lists[field])
            self.lists[field].append(value)
        return index[value]


def episode_rows(records: Sequence[Trajectory]) -> dict[str, Any]:
    """``{"fields", "names", "rules", "rows"}``: one compact row per record (see ``ROW_FIELDS``)."""
    rules_by_key = rule_names({rule for record in records for rule in latest_grades(record)})
    ordered = sorted(rules_by_key, key=lambda rule: rules_by_key[rule])
    position = {rule: n for n, rule in enumerate(ordered)}
    names = _Names()
    rows = []
    for record in records:
        scores: list[Any] = [None] * len(ordered)
        for rule, grade in latest_grades(record).items():
            scores[position[rule]] = "error" if grade.score is None else grade.score
        u = record.usage
        rows.append([
            names("agent", record.agent.id), names("condition", condition_label(record.env.condition)),
            names("task", str(record.env.task_id)), record.seed, record.rep, names("termination", record.termination),
            len(record.steps), record.total_reward, u.prompt_tokens + u.completion_tokens, u.cost_usd,
            names("model", record.agent.model), record.error, scores])
    return {"fields": list(ROW_FIELDS), "names": names.lists, "rules": [rules_by_key[r] for r in ordered],
            "rows": rows}


def summary_grid(records: Sequence[Trajectory], *, confidence: float = 0.95) -> list[dict[str, Any]]:
    """One cell per (rule, agent, condition): n, mean and the report's bootstrap CI, grader errors."""
    scores, failed = score_cells(records)
    names = rule_names({rule for record in records for rule in latest_grades(record)})
    cells = []
    for rule, by_cell in scores.items():
        for (agent, condition), values in by_cell.items():
            low, high = bootstrap_ci(values, confidence=confidence)
            cells.append({"rule": names[rule], "agent": agent, "condition": condition, "n": len(values),
                          "mean": float(np.mean(values)), "low": low, "high": high,
                          "errors": failed[(rule, (agent, condition))]})
    for (rule, (agent, condition)), count in failed.items():  # a cell where every grade failed
        if (agent, condition) not in scores.get(rule, {}):
            cells.append({"rule": names[rule], "agent": agent, "condition": condition, "n": 0, "mean": None,
                          "low": None, "high": None, "errors": count})
    return sorted(cells, key=lambda c: (c["agent"], c["condition"], c["rule"]))
