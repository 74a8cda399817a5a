"""Graders of ``rsigym/ExperimentForecast-v0``: the episode's best gain and the per-round forecasting metrics.

All read the end-state snapshot only, so any of them regrades a fixed trajectory. A round whose
Spearman is undefined (constant predictions) is left out of the mean and counted in details.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["BestGainFound", "RoundRegret", "RoundSpearman", "RoundNdcgLift", "RoundMae", "round_means"]


def _rounds(record: Trajectory) -> list[dict[str, Any]]:
    rounds = snapshot_state(record, "rounds", "experiment-forecast")["rounds"]
    if not rounds:
        raise ValueError("the episode ended before its first scored round")
    return rounds


def round_means(rounds: list[dict[str, Any]]) -> dict[str, Any]:
    """Mean of every round metric over the rounds (None values left out), and how many were None."""
    keys = [k for k in rounds[0]["metrics"] if k != "spearman_nan"]
    out: dict[str, Any] = {}
    for key in keys:
        values = [r["metrics"][key] for r in rounds if r["metrics"][key] is not None]
        out[key] = sum(values) / len(values) if values else math.nan
        out[f"{key}_missing"] = len(rounds) - len(values)
    out["rounds"] = len(rounds)
    return out


@register_grader("forecast_best_gain")
@dataclass(frozen=True)
class BestGainFound:
    """The best true gain among the executed candidates (the autoresearch score)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = snapshot_state(record, "rounds", "experiment-forecast")
        if state.get("best_gain") is None:
            raise ValueError("nothing was executed")
        return Grade(self.name, self.version, float(state["best_gain"]),
                     {"by_selection": state["best_gain_by_selection"], "pool_best_gain": state["pool_best_gain"]})


def _metric_grade(grader: Any, record: Trajectory, key: str) -> Grade:
    means = round_means(_rounds(record))
    return Grade(grader.name, grader.version, float(means[key]), {**means})


@register_grader("forecast_regret")
@dataclass(frozen=True)
class RoundRegret:
    """Mean Regret@3 (best of the 3 executed) over rounds; mean-of-3 regret in details."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        return _metric_grade(self, record, "regret_best")


@register_grader("forecast_spearman")
@dataclass(frozen=True)
class RoundSpearman:
    """Mean Spearman over rounds with a defined value; NaN rounds counted in ``spearman_missing``."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        return _metric_grade(self, record, "spearman")


@register_grader("forecast_ndcg_lift")
@dataclass(frozen=True)
class RoundNdcgLift:
    """Mean chance-corrected NDCG@3 lift over rounds (NDCG itself in details)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        return _metric_grade(self, record, "ndcg_lift")


@register_grader("forecast_mae")
@dataclass(frozen=True)
class RoundMae:
    """Mean absolute error of the predicted gains over rounds."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        return _metric_grade(self, record, "mae")
