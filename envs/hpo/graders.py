"""Graders of ``rsigym/HyperparamSearch-v0`` (scores are errors: lower is better)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["FinalTestError", "BestValidationError"]


def _state(record: Trajectory) -> dict:
    return snapshot_state(record, "trials", "hyperparameter-search")


@register_grader("hpo_test_nrmse")
@dataclass(frozen=True)
class FinalTestError:
    """Test nRMSE of the best-validation configuration, read once at the end (lower is better)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = _state(record)
        if state.get("test_nrmse") is None:
            raise ValueError("the episode ended before its budget: no test evaluation")
        return Grade(self.name, self.version, float(state["test_nrmse"]), {"best": state.get("best")})


@register_grader("hpo_best_val_nrmse")
@dataclass(frozen=True)
class BestValidationError:
    """The lowest validation nRMSE among the episode's trials (lower is better)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = _state(record)
        values = [t["val_nrmse"] for t in state["trials"]]
        if not values:
            raise ValueError("no trial was run")
        return Grade(self.name, self.version, float(min(values)), {"trials": len(values)})
