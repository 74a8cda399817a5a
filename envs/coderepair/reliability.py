"""Reliability check of a predictor version on the outcomes it was judged against.

Inputs are the probabilities a version predicted for executed candidates, the observed outcomes,
and inverse-propensity weights (only the executed candidate is observed; the weights undo the
selection so the check speaks for every candidate, see ``agents``). Verdicts:

* ``insufficient evidence``: fewer than ``min_samples`` outcomes, or a Kish effective sample size
  under ``min_samples / 2`` (a few huge weights);
* ``off``: Spiegelhalter's z beyond ``z_crit``; or the weighted expected calibration error above
  ``ece_bound`` and beyond what calibrated predictions give by chance; or the Brier skill over the
  (weighted) base rate shown below ``min_skill``;
* ``reliable`` otherwise.

"By chance" is measured by consistency resampling (Broecker and Smith, 2007): outcomes redrawn from
the predictions themselves (``y* ~ Bernoulli(p)``, ``resamples`` times, a fixed seed) give the
distribution of ECE and skill for a calibrated model with these predictions and weights. ECE is
biased upward in small samples (10 bins of 30 outcomes give about 0.12 for a perfect model), so the
ECE rule needs ECE above that distribution's ``1 - alpha`` quantile; the skill rule needs skill
below ``min_skill`` by more than ``z_crit`` of that distribution's standard deviations. ``alpha`` is the
two-sided tail of ``z_crit`` (0.01 at 2.58), so each rule has the z test's false-alarm rate.

Spiegelhalter (1986): z = sum w (y - p)(1 - 2p) / sqrt(sum w^2 (1 - 2p)^2 p (1 - p)), standard
normal for calibrated predictions. Written here because no kept library offers the weighted form.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any, Sequence

import numpy as np
from scipy.stats import norm

__all__ = ["ReliabilityCheck", "ReliabilityResult", "spiegelhalter_z", "weighted_ece", "brier_skill"]


def spiegelhalter_z(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    p = np.clip(p, 1e-6, 1 - 1e-6)
    denominator = np.sqrt(np.sum(w ** 2 * (1 - 2 * p) ** 2 * p * (1 - p)))
    return float(np.sum(w * (y - p) * (1 - 2 * p)) / denominator) if denominator > 0 else 0.0


def weighted_ece(p: np.ndarray, y: np.ndarray, w: np.ndarray, bins: int = 10) -> float:
    """Weighted expected calibration error over equal-width probability bins."""
    index = np.minimum((p * bins).astype(int), bins - 1)
    total, ece = float(np.sum(w)), 0.0
    for b in range(bins):
        mask = index == b
        if mask.any():
            weight = float(np.sum(w[mask]))
            ece += weight / total * abs(float(np.average(y[mask] - p[mask], weights=w[mask])))
    return ece


def brier_skill(p: np.ndarray, y: np.ndarray, w: np.ndarray) -> float:
    """1 - Brier / Brier of the weighted base rate (0: no better than the base rate)."""
    base = float(np.average(y, weights=w))
    reference = float(np.average((y - base) ** 2, weights=w))
    brier = float(np.average((y - p) ** 2, weights=w))
    return 1.0 - brier / reference if reference > 0 else 0.0


@dataclass(frozen=True)
class ReliabilityResult:
    verdict: str  # reliable | off | insufficient evidence
    n: int
    effective_n: float
    z: float | None = None
    ece: float | None = None
    skill: float | None = None
    reasons: list[str] = field(default_factory=list)

    def to_json(self) -> dict[str, Any]:
        return {k: (round(v, 4) if isinstance(v, float) else v) for k, v in asdict(self).items()}


@dataclass(frozen=True)
class ReliabilityCheck:
    """The check's thresholds; ``check(p, y, w)`` gives the verdict (see the module docstring)."""

    min_samples: int = 30
    z_crit: float = 2.58
    ece_bound: float = 0.15
    min_skill: float = 0.0
    resamples: int = 400

    def _null(self, p: np.ndarray, w: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ECE, skill) of ``resamples`` outcome sets drawn from ``p`` itself: their spread under calibration."""
        draws = (np.random.default_rng(0x5EED).random((self.resamples, p.size)) < p).astype(float)  # (B, N)
        return (np.array([weighted_ece(p, ys, w) for ys in draws]),
                np.array([brier_skill(p, ys, w) for ys in draws]))

    def check(self, predicted: Sequence[float], outcomes: Sequence[float],
              weights: Sequence[float] | None = None) -> ReliabilityResult:
        p = np.asarray(predicted, dtype=float)
        y = np.asarray(outcomes, dtype=float)
        w = np.ones_like(p) if weights is None else np.asarray(weights, dtype=float)
        if not (p.shape == y.shape == w.shape):
            raise ValueError(f"predictions, outcomes and weights differ in length: {p.shape}, {y.shape}, {w.shape}")
        if np.any((p < 0) | (p > 1)) or np.any(w < 0) or not set(np.unique(y)) <= {0.0, 1.0}:
            raise ValueError("predictions must be in [0, 1], outcomes 0/1, weights >= 0")
        n = int(p.size)
        effective = float(np.sum(w) ** 2 / np.sum(w ** 2)) if n and np.sum(w) > 0 else 0.0
        if n < self.min_samples or effective < self.min_samples / 2:
            return ReliabilityResult("insufficient evidence", n, effective,
                                     reasons=[f"n={n}, effective n={effective:.1f} < minimum {self.min_samples}"])
        z, ece, skill = spiegelhalter_z(p, y, w), weighted_ece(p, y, w), brier_skill(p, y, w)
        alpha = float(2 * norm.sf(self.z_crit))
        ece_limit, skill_limit = self.ece_bound, self.min_skill
        if self.resamples:  # 0: the bare thresholds
            ece_null, skill_null = self._null(p, w)
            ece_limit = max(self.ece_bound, float(np.quantile(ece_null, 1 - alpha)))
            skill_limit = self.min_skill - self.z_crit * float(np.std(skill_null))
        reasons = []
        if abs(z) > self.z_crit:
            reasons.append(f"|Spiegelhalter z| = {abs(z):.2f} > {self.z_crit}")
        if ece > ece_limit:
            reasons.append(f"ECE {ece:.3f} > {ece_limit:.3f} (bound {self.ece_bound}, chance {1 - alpha:.3f} quantile)")
        if skill < skill_limit:
            reasons.append(f"Brier skill {skill:.3f} < {skill_limit:.3f} ({self.min_skill} less z_crit chance SDs) over the base rate")
        return ReliabilityResult("off" if reasons else "reliable", n, effective, z, ece, skill, reasons)
