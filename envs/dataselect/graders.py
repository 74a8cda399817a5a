"""Graders of ``rsigym/DataSelection-v0``: the three judgements kept apart (gain over the random
reference, whether the top group is the best, Spearman of the predicted order)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["SelectionGain", "TopGroupIsBest", "OrderSpearman"]


def _metrics(record: Trajectory) -> dict[str, Any]:
    metrics = snapshot_state(record, "submission", "data-selection").get("metrics")
    if not metrics:
        raise ValueError("the episode ended without a scored submission")
    return metrics


@register_grader("dataselect_gain")
@dataclass(frozen=True)
class SelectionGain:
    """The top group's score minus the paired random reference (a penalised submission: -1)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        m = _metrics(record)
        details = {k: m.get(k) for k in ("gain_ci", "percentile", "top_score", "random_mean", "penalised")}
        return Grade(self.name, self.version, float(m["gain"]), details)


@register_grader("dataselect_top_is_best")
@dataclass(frozen=True)
class TopGroupIsBest:
    """1.0 when the predicted top group scored best (a near tie is reported in details, scored 0)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        m = _metrics(record)
        return Grade(self.name, self.version, float(bool(m["top_is_best"])),
                     {"tie": m.get("top_tie"), "actual_best": m.get("actual_best")})


@register_grader("dataselect_spearman")
@dataclass(frozen=True)
class OrderSpearman:
    """Spearman between the predicted order and the groups' actual scores, with its ceiling."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        m = _metrics(record)
        return Grade(self.name, self.version, float(m["spearman"]), {"ceiling": m.get("spearman_ceiling")})
