"""What a forecaster may see: the conditions of ExperimentForecast-v0 and the visible archive they make.

A condition decides which archive records are visible besides the episode's own executed
candidates, and what observed gain each shows:

* ``no_experience``: none; only the candidates the episode has executed.
* ``in_env``: the target environment's records outside the episode's candidate pool.
* ``cross_env``: every other environment's records, minus every record in a group of any
  intervention in the episode's candidate pool (near duplicates would be answers, and an agent
  with memory could carry one from round to round, so the whole pool's groups are hidden).
* ``shuffled_gains``: ``in_env`` with every observed gain of the target environment (archive and
  executed feedback alike) taken from a permutation of that environment's records: the
  feedback-use control. Scores always use the true gains.

Each takes ``observed``: ``mean`` (the 8-seed mean gain and its paired SE) or ``single_seed``
(one seed's gain, drawn per record and episode, as a single real run would show).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from rsigym.conditions import ConditionRegistry

from .archive import ArchiveRecord

__all__ = ["ExperienceCondition", "FORECAST_CONDITIONS", "CONDITION_NAMES", "Observed", "observed_gain"]

CONDITION_NAMES = ("no_experience", "in_env", "cross_env", "shuffled_gains")
Observed = Literal["mean", "single_seed"]


@dataclass(frozen=True)
class ExperienceCondition:
    """A condition as the env applies it: which records are visible, and how gains are observed."""

    name: str = "in_env"
    observed: Observed = "mean"

    def __post_init__(self) -> None:
        if self.name not in CONDITION_NAMES:
            raise ValueError(f"unknown forecast condition {self.name!r}; known: {', '.join(CONDITION_NAMES)}")
        if self.observed not in ("mean", "single_seed"):
            raise ValueError(f"observed must be 'mean' or 'single_seed', got {self.observed!r}")

    def visible(self, target: str, records: tuple[ArchiveRecord, ...], pool_ids: set[str]) -> list[ArchiveRecord]:
        """The archive records visible for the whole episode (executed candidates come on top)."""
        if self.name == "no_experience":
            return []
        if self.name in ("in_env", "shuffled_gains"):
            return [r for r in records if r.environment == target and r.intervention not in pool_ids]
        pool_groups = {r.group for r in records if r.intervention in pool_ids}
        return [r for r in records if r.environment != target and r.group not in pool_groups]


FORECAST_CONDITIONS: ConditionRegistry[ExperienceCondition] = ConditionRegistry("forecast")


def _factory(name: str) -> Callable[..., ExperienceCondition]:
    def make(observed: Observed = "mean") -> ExperienceCondition:
        return ExperienceCondition(name, observed)
    make.__doc__ = f"The {name!r} experience condition (observed: 'mean' or 'single_seed')."
    return make


no_experience = _factory("no_experience")
in_env = _factory("in_env")
cross_env = _factory("cross_env")
shuffled_gains = _factory("shuffled_gains")


def observed_gain(record: ArchiveRecord, observed: Observed, rng_draw: float) -> tuple[float, float | None]:
    """(gain shown, SE shown or None) of ``record``; ``rng_draw`` in [0, 1) picks the single seed."""
    if observed == "mean":
        return record.gain, record.gain_se
    index = min(int(rng_draw * len(record.gains)), len(record.gains) - 1)
    return record.gains[index], None


def shuffled_sources(records: list[ArchiveRecord], rng: np.random.Generator) -> dict[str, ArchiveRecord]:
    """A permutation of ``records``: intervention id -> the record whose gains it shows."""
    order = rng.permutation(len(records))
    return {records[i].intervention: records[int(j)] for i, j in enumerate(order)}
