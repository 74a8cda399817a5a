"""Scores per grading rule x agent x condition: the one grouping that the report's summary, the
viewer's summary grid and the inspect export all show, so their means are the same numbers.

A grading rule is (grader, version, params): a regrade with a new version or other parameters is a
different ruler. Each record counts its latest grade of each rule; a grade without a score (the
grader raised) is counted apart, never as a zero. Infra errors have no grades.
"""

from __future__ import annotations

from collections import Counter, defaultdict
from typing import Any, Sequence

from ..records.trajectory import Grade, Trajectory
from .report_parts import condition_label

__all__ = ["Rule", "Cell", "params_label", "latest_grades", "score_cells", "rule_names"]

Rule = tuple[str, str, str]  # (grader, version, params label)
Cell = tuple[str, str]       # (agent id, condition label)


def params_label(params: dict[str, Any]) -> str:
    return ", ".join(f"{k}={v}" for k, v in sorted(params.items()))


def latest_grades(record: Trajectory) -> dict[Rule, Grade]:
    """The latest grade of each rule of ``record`` (later grades replace earlier ones)."""
    latest: dict[Rule, Grade] = {}
    for grade in record.grades:
        latest[(grade.grader, grade.version, params_label(grade.params))] = grade
    return latest


def score_cells(records: Sequence[Trajectory]) -> tuple[dict[Rule, dict[Cell, list[float]]], Counter[tuple[Rule, Cell]]]:
    """(scores by rule and cell in record order, grader errors by rule and cell)."""
    scores: dict[Rule, dict[Cell, list[float]]] = defaultdict(lambda: defaultdict(list))
    failed: Counter[tuple[Rule, Cell]] = Counter()
    for record in records:
        cell = (record.agent.id, condition_label(record.env.condition))
        for rule, grade in latest_grades(record).items():
            if grade.score is None:
                failed[(rule, cell)] += 1
            else:
                scores[rule][cell].append(float(grade.score))
    return {rule: dict(cells) for rule, cells in scores.items()}, failed


def rule_names(rules: Sequence[Rule] | set[Rule]) -> dict[Rule, str]:
    """A short, unique name per rule: the grader's name where the run has one rule of that grader,
    else the name with its version and parameters (``action_match v2 (only_writes=True)``)."""
    per_grader = Counter(rule[0] for rule in rules)
    names = {}
    for grader, version, params in rules:
        if per_grader[grader] == 1:
            names[(grader, version, params)] = grader
        else:
            names[(grader, version, params)] = f"{grader} v{version}" + (f" ({params})" if params else "")
    return names
