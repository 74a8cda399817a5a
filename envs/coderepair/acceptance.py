"""The co-update protocol's acceptance check: a new (predictor, selection, mix) pair against the
retained one, by a normalised, paired off-policy comparison on held-out rounds, with a bootstrap CI
over problems and a margin.

A pair's value is the public-pass rate of its greedy picks. Only the executed candidate of a logged
round has an outcome, so it is estimated off-policy, by the self-normalised doubly robust (SN-DR)
estimator over the held-out rows ``r``::

    V = sum_r rho_r q(x_r[pick_r]) / sum_r rho_r  +  sum_r rho_r w_r (y_r - q(x_r[chosen_r])) / sum_r rho_r w_r
    w_r = 1[pick_r == chosen_r] / propensity_r

``q`` is an outcome model fitted on other rows (the protocol passes the new predictor, fitted on the
window's non-held-out rows; without a refit there is no model that has not seen the held-out rows,
and ``q = None`` makes it plain self-normalised IPW). The propensities are known, so the estimate is unbiased whatever ``q``
is; ``q`` only lowers the variance (inverse-propensity weighting alone sees a new pair's picks only
on the few audit rows that executed them). Both pairs are scored with the same ``q``: where they
pick the same candidate their terms are equal. ``rho_r`` is the executed candidate's probability ratio under the
pair's coder mix (1 without a mix; with one, rows whose origins were not told are skipped). Each
value is clipped to [0, 1]: a pass rate, so the unnormalised estimate's 1.453 cannot recur.

Cross-fitting: the window's problems are cut into k interleaved folds; each fold's rows are scored
with a new predictor (and ``q``) fitted on the other folds, so every row is judged by a fit that has
not seen it and all the window's rows count. (With a new coder mix, one held-out fold: the mix is
re-estimated on the other rows.) The difference (new - retained) is paired per problem: a bootstrap resamples held-out problems
(all rows of a problem together) and recomputes both values on the same resample. The new pair is
accepted only when the difference exceeds ``margin`` and the CI's lower end is above 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable, Sequence

import numpy as np

from .coder_mix import CoderMix, executed_ratio
from .predictors import Predictor

__all__ = ["Pair", "Fold", "PairComparison", "LossComparison", "pair_components", "crossfit_value", "compare_pairs",
           "compare_losses"]


@dataclass(frozen=True)
class Pair:
    predictor: Predictor
    known_failure_penalty: float
    mix: CoderMix | None = None


@dataclass(frozen=True)
class PairComparison:
    retained_value: float
    new_value: float
    difference: float
    ci: tuple[float, float]
    margin: float
    problems: int
    rows: int
    accept: bool

    def to_json(self) -> dict[str, Any]:
        return {"estimator": "self-normalised doubly robust, paired per problem",
                "retained_value": round(self.retained_value, 4), "new_value": round(self.new_value, 4),
                "difference": round(self.difference, 4), "ci": [round(self.ci[0], 4), round(self.ci[1], 4)],
                "margin": self.margin, "held_problems": self.problems, "held_rows": self.rows, "new_wins": self.accept}


def pair_components(rows: Sequence[Any], pair: Pair, outcome_model: Predictor | None, known_failure_column: int
                    ) -> tuple[np.ndarray, np.ndarray]:
    """Per row ``(rho, rho q_pick, rho w res, rho w)``, shape (N, 4), and each row's problem ``t`` (N,)."""
    parts, problems = [], []
    for row in rows:
        if pair.mix is not None and row.origins is None:
            continue
        # the executed candidate's probability ratio under the pair's mix (only its origin is told),
        # capped as the protocol caps 1/propensity
        rho = min(executed_ratio(row.origins, pair.mix), 10.0) if pair.mix is not None else 1.0
        q = outcome_model.predict(row.features) if outcome_model is not None else np.zeros(len(row.features))  # (C,)
        scores = pair.predictor.predict(row.features) - pair.known_failure_penalty * row.features[:, known_failure_column]
        pick = int(np.argmax(scores))
        w = float(pick == row.chosen) / row.propensity
        parts.append((rho, rho * q[pick], rho * w * (row.outcome - q[row.chosen]), rho * w))
        problems.append(row.t)
    return np.asarray(parts, dtype=float).reshape(-1, 4), np.asarray(problems)


def _values(sums: np.ndarray) -> np.ndarray:
    """SN-DR values from component sums (..., 4), clipped to [0, 1]."""
    direct = np.divide(sums[..., 1], sums[..., 0], out=np.zeros_like(sums[..., 0]), where=sums[..., 0] > 0)
    correction = np.divide(sums[..., 2], sums[..., 3], out=np.zeros_like(sums[..., 0]), where=sums[..., 3] > 0)
    return np.clip(direct + correction, 0.0, 1.0)


@dataclass(frozen=True)
class Fold:
    """Held-out rows, the new predictor fitted without them and the outcome model ``q`` for them."""

    rows: Sequence[Any]
    new_predictor: Predictor
    outcome_model: Predictor | None


def crossfit_value(folds: Sequence[Fold], pair_for: Callable[[Fold], Pair], known_failure_column: int) -> float:
    """A pair's SN-DR value over the folds' rows, each scored with its own fold's ``q`` (0 when no row counts)."""
    parts = [pair_components(f.rows, pair_for(f), f.outcome_model, known_failure_column)[0] for f in folds]
    stacked = np.concatenate(parts) if parts else np.zeros((0, 4))
    return float(_values(stacked.sum(axis=0))) if len(stacked) else 0.0


def _by_problem(parts: np.ndarray, problems: np.ndarray, order: np.ndarray) -> np.ndarray:
    """Component sums per problem in ``order`` (P, 4)."""
    index = np.searchsorted(order, problems)
    out = np.zeros((len(order), 4))
    np.add.at(out, index, parts)
    return out


def compare_pairs(folds: Sequence[Fold], retained_for: Callable[[Fold], Pair], new_for: Callable[[Fold], Pair],
                  known_failure_column: int, *, margin: float = 0.02, confidence: float = 0.95, bootstraps: int = 2000,
                  seed: int = 0) -> PairComparison:
    """New vs retained pair on the folds' held-out rows (see the module docstring)."""
    sides = []
    for pair_for in (retained_for, new_for):
        found = [pair_components(f.rows, pair_for(f), f.outcome_model, known_failure_column) for f in folds]
        sides.append((np.concatenate([p for p, _ in found]) if found else np.zeros((0, 4)),
                      np.concatenate([t for _, t in found]) if found else np.zeros(0)))
    (old_parts, old_t), (new_parts, new_t) = sides
    rows = sum(len(f.rows) for f in folds)
    order = np.unique(np.concatenate([old_t, new_t]))
    if len(order) < 2:
        return PairComparison(0.0, 0.0, 0.0, (0.0, 0.0), margin, len(order), rows, False)
    old_sums, new_sums = _by_problem(old_parts, old_t, order), _by_problem(new_parts, new_t, order)   # (P, 4)
    old_value, new_value = float(_values(old_sums.sum(axis=0))), float(_values(new_sums.sum(axis=0)))
    draws = np.random.default_rng([seed, 0xACCE]).integers(len(order), size=(bootstraps, len(order)))  # (B, P)
    differences = _values(new_sums[draws].sum(axis=1)) - _values(old_sums[draws].sum(axis=1))       # (B,)
    tail = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(differences, [tail, 1 - tail]))
    difference = new_value - old_value
    return PairComparison(old_value, new_value, difference, (low, high), margin, len(order), rows,
                          difference > margin and low > 0)


@dataclass(frozen=True)
class LossComparison:
    """Held-out log-loss of the retained minus the new predictor on the executed candidates."""

    retained_loss: float
    new_loss: float
    improvement: float
    ci: tuple[float, float]
    margin: float
    problems: int
    rows: int
    accept: bool

    def to_json(self) -> dict[str, Any]:
        return {"estimator": "self-normalised IPW log-loss on executed candidates, paired per problem",
                "retained_loss": round(self.retained_loss, 4), "new_loss": round(self.new_loss, 4),
                "improvement": round(self.improvement, 4), "ci": [round(self.ci[0], 4), round(self.ci[1], 4)],
                "margin": self.margin, "held_problems": self.problems, "held_rows": self.rows, "new_wins": self.accept}


def _log_loss(p: float, y: float) -> float:
    p = min(max(p, 1e-4), 1 - 1e-4)
    return -(y * np.log(p) + (1 - y) * np.log(1 - p))


def compare_losses(folds: Sequence[Fold], retained: Predictor | Callable[[Fold], Predictor],
                   weight: Callable[[Any], float], *,
                   margin: float = 0.02, confidence: float = 0.95, bootstraps: int = 2000,
                   seed: int = 0) -> LossComparison:
    """Does the new predictor (each fold's, fitted without the fold) predict the executed outcomes
    of held-out rows better than the retained one?

    Every held-out row counts (its executed candidate and outcome), weighted by ``weight(row)``
    (clipped 1/propensity, so the loss speaks for every candidate, not only the ones the policy
    liked); the mean is self-normalised by the weights, so it is a log-loss per row whatever the
    weights. The difference (retained - new) is paired per problem and bootstrapped over
    problems; the new predictor wins when the improvement exceeds ``margin`` (nats per row) and the
    CI's lower end is above 0. This is the comparison with evidence on every row: a pair's value
    sees a new selection's picks only on the audit rows that happened to execute them.

    ``retained`` is one predictor for every fold, or a function of the fold (a retained model that
    is itself fitted, cross-fitted like the new one: nested models compared on the same folds).
    """
    parts, problems = [], []
    for fold in folds:
        old_model = retained if hasattr(retained, "predict") else retained(fold)
        for row in fold.rows:
            x = row.features[row.chosen:row.chosen + 1]
            w = weight(row)
            old = _log_loss(float(old_model.predict(x)[0]), row.outcome)
            new = _log_loss(float(fold.new_predictor.predict(x)[0]), row.outcome)
            parts.append((w, w * old, w * new))
            problems.append(row.t)
    if not parts:
        return LossComparison(0.0, 0.0, 0.0, (0.0, 0.0), margin, 0, 0, False)
    arr, t = np.asarray(parts, dtype=float), np.asarray(problems)
    order = np.unique(t)
    sums = np.zeros((len(order), 3))
    np.add.at(sums, np.searchsorted(order, t), arr)                                            # (P, 3)
    total = sums.sum(axis=0)
    old_loss, new_loss = float(total[1] / total[0]), float(total[2] / total[0])
    if len(order) < 2:
        return LossComparison(old_loss, new_loss, old_loss - new_loss, (0.0, 0.0), margin, len(order), len(arr), False)
    draws = np.random.default_rng([seed, 0x1055]).integers(len(order), size=(bootstraps, len(order)))  # (B, P)
    resampled = sums[draws].sum(axis=1)                                                        # (B, 3)
    improvement = (resampled[:, 1] - resampled[:, 2]) / resampled[:, 0]
    tail = (1 - confidence) / 2
    low, high = (float(x) for x in np.quantile(improvement, [tail, 1 - tail]))
    gain = old_loss - new_loss
    return LossComparison(old_loss, new_loss, gain, (low, high), margin, len(order), len(arr), gain > margin and low > 0)
