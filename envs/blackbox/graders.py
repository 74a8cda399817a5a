"""Graders of the kernel's BlackBox-v0 fixture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader
from rsigym.records import Grade, Trajectory

__all__ = ["BlackBoxBestValue"]


@register_grader("blackbox_best")
@dataclass(frozen=True)
class BlackBoxBestValue:
    """The best objective value among the episode's trials, normalised to [0, 1] over the domain.

    0 is the worst value anywhere in the search space, 1 the known optimum (both exact, see
    ``rsigym.envs.blackbox.objectives``). The values are recomputed from the recorded
    configurations without noise, instead of trusting the values the env reported, so a regrade
    checks the trajectory against the objective and observation noise never inflates a score.
    """

    name: ClassVar[str]  # set by register_grader
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.envs.blackbox import make_task

        state = record.final.state if record.final else None
        if not state or not state.get("trials"):
            return Grade(self.name, self.version, 0.0, {"reason": "no trials"})
        task = make_task(state["task_id"])
        values = [task.value(trial) for trial in state["trials"]]
        best = max(values)
        return Grade(self.name, self.version, task.normalised(best), {
            "best_value": best, "best_trial": values.index(best) + 1, "trials": len(values),
            "optimum": task.optimum, "worst": task.worst, "regret": task.optimum - best,
        })
