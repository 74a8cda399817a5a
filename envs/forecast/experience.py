"""What a forecaster may see: the conditions of ExperimentForecast-v0 and the visible archive they make.

A condition decides which archive records are visible besides the episode's own executed
candidates, and what observed gain each shows:

* ``no_experience``: none; only the candidates the episode has executed.
* ``in_env``: the target environment's records outside the episode's candidate pool.
* ``cross_env``: every other environment's records, minus every record in a group of any
  intervention in the episode's candidate pool (near duplicates would be answers, and an agent
  with memory could carry one from round to round, so the whole pool's groups are hidden).
  ``sources: [names]`` chooses the source environments; ``related_only: true`` keeps only the
  target's twin (``RELATED``: the other charlm corpus, the other digits model, the same breast
  cancer data under the other model family, the other regression data set, the other sequence, the
  same study on other data; tabular-wine, clf-circles and clf-hastie have none, so they see
  nothing), the paper's "related environment" transfer question.
* ``shuffled_gains``: ``in_env`` with every observed gain of the target environment (archive and
  executed feedback alike) taken from a permutation of that environment's records: the
  feedback-use control. Scores always use the true gains.

Each takes ``observed``: ``mean`` (the mean gain over the paired seeds, and its paired SE) or ``single_seed``
(one seed's gain, drawn per record and episode, as a single real run would show).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Callable, Literal

import numpy as np

from rsigym.conditions import ConditionRegistry

from .archive import ArchiveRecord

__all__ = ["ExperienceCondition", "FORECAST_CONDITIONS", "CONDITION_NAMES", "Observed", "RELATED", "observed_gain"]

CONDITION_NAMES = ("no_experience", "in_env", "cross_env", "shuffled_gains")
Observed = Literal["mean", "single_seed"]
RELATED = {"charlm-pydoc": ("charlm-stdlib",), "charlm-stdlib": ("charlm-pydoc",),
           "digits-mlp": ("digits-cnn",), "digits-cnn": ("digits-mlp",), "tabular-bc": ("bc-mlp",),
           "bc-mlp": ("tabular-bc",), "tabular-wine": (), "regress-diabetes": ("regress-friedman",),
           "regress-friedman": ("regress-diabetes",), "seq-ar": ("seq-season",), "seq-season": ("seq-ar",),
           "seq-threshold": ("seq-ar",), "clf-moons": ("clf-sparse",), "clf-sparse": ("clf-moons",), "clf-circles": (),
           "clf-hastie": (), "knn-blobs": ("knn-digits",), "knn-digits": ("knn-blobs",),
           "text-topics": ("text-spam",), "text-spam": ("text-topics",), "regress-friedman3": ("regress-friedman",),
           "regress-sparse": ("regress-diabetes",), "regress-friedman2": ("regress-friedman",),
           "regress-lowrank": ("regress-sparse",), "regress-uncorrelated": ("regress-sparse",),
           "seq-chaos": ("seq-threshold",), "seq-arma": ("seq-ar",), "seq-period7": ("seq-season",),
           "svm-moons": ("clf-moons",), "svm-bc": ("tabular-bc",), "knn-wine": ("tabular-wine",),
           "clf-quantiles": ("clf-circles",), "text-sentiment": ("text-spam",), "text-authors": ("text-topics",),
           "text-topics-lr": ("text-topics",), "text-spam-nb": ("text-spam",), "knn-patches": ("knn-digits",), "svm-patches": ("knn-patches",), "logreg-patches": ("knn-patches",),
           "clf-iris": ("clf-moons",), "regress-scurve": ("regress-friedman",), "regress-swissroll": ("regress-scurve",),
           "regress-linnerud": ("regress-diabetes",), "seq-walk": ("seq-ar",), "seq-twoseason": ("seq-period7",),
           "seq-resonant": ("seq-ar",)}


@dataclass(frozen=True)
class ExperienceCondition:
    """A condition as the env applies it: which records are visible, and how gains are observed."""

    name: str = "in_env"
    observed: Observed = "mean"
    sources: tuple[str, ...] | None = None  # cross_env only: the source environments (None: all others)
    related_only: bool = False              # cross_env only: the target's twin alone

    def __post_init__(self) -> None:
        if self.name not in CONDITION_NAMES:
            raise ValueError(f"unknown forecast condition {self.name!r}; known: {', '.join(CONDITION_NAMES)}")
        if self.observed not in ("mean", "single_seed"):
            raise ValueError(f"observed must be 'mean' or 'single_seed', got {self.observed!r}")
        if (self.sources is not None or self.related_only) and self.name != "cross_env":
            raise ValueError(f"sources and related_only are params of cross_env, not of {self.name!r}")
        if self.sources is not None:
            unknown = sorted(set(self.sources) - set(RELATED))
            if unknown or not self.sources:
                raise ValueError(f"cross_env sources must name research environments ({', '.join(RELATED)}); "
                                 f"got {list(self.sources)!r}")

    def visible(self, target: str, records: tuple[ArchiveRecord, ...], pool_ids: set[str]) -> list[ArchiveRecord]:
        """The archive records visible for the whole episode (executed candidates come on top)."""
        if self.name == "no_experience":
            return []
        if self.name in ("in_env", "shuffled_gains"):
            return [r for r in records if r.environment == target and r.intervention not in pool_ids]
        pool_groups = {r.group for r in records if r.intervention in pool_ids}
        sources = self.source_environments(target, {r.environment for r in records})
        return [r for r in records if r.environment in sources and r.group not in pool_groups]

    def source_environments(self, target: str, known: set[str]) -> set[str]:
        """The environments of ``known`` whose records ``cross_env`` shows for ``target`` (never the target)."""
        chosen = set(self.sources) if self.sources is not None else set(known)
        if self.related_only:
            chosen &= set(RELATED.get(target, ()))
        return chosen - {target}


FORECAST_CONDITIONS: ConditionRegistry[ExperienceCondition] = ConditionRegistry("forecast")


def _factory(name: str) -> Callable[..., ExperienceCondition]:
    def make(observed: Observed = "mean") -> ExperienceCondition:
        return ExperienceCondition(name, observed)
    make.__doc__ = f"The {name!r} experience condition (observed: 'mean' or 'single_seed')."
    return make


no_experience = _factory("no_experience")
in_env = _factory("in_env")
shuffled_gains = _factory("shuffled_gains")


def cross_env(observed: Observed = "mean", sources: list[str] | None = None,
              related_only: bool = False) -> ExperienceCondition:
    """The 'cross_env' experience condition: other environments' records (``sources``: which ones;
    ``related_only``: the target's twin alone); observed 'mean' or 'single_seed'."""
    if not isinstance(related_only, bool):
        raise ValueError(f"related_only must be true or false, got {related_only!r}")
    if sources is not None and not (isinstance(sources, (list, tuple)) and all(isinstance(x, str) for x in sources)):
        raise ValueError(f"sources must be a list of environment names, got {sources!r}")
    return ExperienceCondition("cross_env", observed, tuple(sources) if sources is not None else None, related_only)


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
