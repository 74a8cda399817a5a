"""Graders of ``rsigym/Workflow-v0``: the delivered workspace scored against the hidden key."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

from .tasks import grade_workspace, make_task

__all__ = ["WorkflowScore", "WorkflowAnswer"]


def _regrade(record: Trajectory) -> tuple[float, dict]:
    state = snapshot_state(record, "files", "workflow")
    if "task_salt" not in state:
        raise ValueError("the record has no task_salt: it predates salted workflow tasks (grader v2)")
    task = make_task(state["task_id"], state["task_salt"])
    if task.key_sha256 != state["answer_sha256"]:
        raise ValueError(f"the answer key of {task.task_id} changed since the episode ran")
    files = {**task.files, **state["files"]}
    return grade_workspace(task, files)


@register_grader("workflow_score")
@dataclass(frozen=True)
class WorkflowScore:
    """0.8 x answer vs key + 0.1 valid results.json + 0.1 complete report.md, recomputed from the record."""

    name: ClassVar[str]
    version: ClassVar[str] = "2"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        score, details = _regrade(record)
        return Grade(self.name, self.version, score, details)


@register_grader("workflow_answer")
@dataclass(frozen=True)
class WorkflowAnswer:
    """The answer's score against the hidden key alone (0 without a valid results.json)."""

    name: ClassVar[str]
    version: ClassVar[str] = "2"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        _, details = _regrade(record)
        return Grade(self.name, self.version, float(details["answer_score"]), {"method": details["method"]})
