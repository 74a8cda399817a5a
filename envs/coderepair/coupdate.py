"""The co-update protocol: versioned predictions, a reliability check per version, adaptation only
when the check says "off" and data suffice, per-component checks, and the pair acceptance check on
a held-out time split, with the retained pair kept when the new one does not win.

The logged data are the executed candidates only: each row holds the round's features, the
chosen index, its propensity (the behaviour policy's probability of that choice, randomised
audits included) and the public-test outcome. Inverse-propensity weights (1 / propensity) undo
the selection: weighted, the executed rows speak for every candidate the coder proposed, so the
calibration check and the refit are not biased toward the candidates the policy liked. Weights are
clipped at ``max_weight`` (a few audit rows with weight 1/0.05 would otherwise be the whole
sample); the check's Kish effective sample size says how much evidence is left.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Callable

import numpy as np

from .coder_mix import CoderMix, RoundOrigins, candidate_quality, executed_ratio, reestimate
from .predictors import Predictor, make_predictor
from .reliability import ReliabilityCheck

__all__ = ["LoggedRound", "Policy", "CoUpdateState", "ipw_value", "version_id"]


@dataclass(frozen=True)
class LoggedRound:
    t: int                     # problems finished before this round (the time axis)
    features: np.ndarray       # (C, F)
    chosen: int
    propensity: float
    outcome: float             # 1.0: the executed candidate passed the public tests
    version: str
    predicted: float           # the version's prediction for the executed candidate
    origins: RoundOrigins | None = None  # the executed candidate's origin etc., told once the problem is over


@dataclass(frozen=True)
class Policy:
    """Greedy on ``prediction - known_failure_penalty * known_failure``; the audit rate is fixed."""

    known_failure_penalty: float = 1.0

    def greedy(self, predictions: np.ndarray, features: np.ndarray, known_failure_column: int) -> int:
        scores = predictions - self.known_failure_penalty * features[:, known_failure_column]
        return int(np.argmax(scores))


def version_id(number: int, predictor_kind: str, fingerprint: Any) -> str:
    """``wm-NNNN-<8 hex>``: the version number and a hash of what defines the version."""
    digest = hashlib.sha256(repr((predictor_kind, fingerprint)).encode()).hexdigest()[:8]
    return f"wm-{number:04d}-{digest}"


def ipw_value(rows: list[LoggedRound], predictor: Predictor, policy: Policy, known_failure_column: int,
              mix: CoderMix | None = None) -> float:
    """Inverse-propensity estimate of the public-pass rate of the pair's greedy picks on logged rounds.

    With ``mix`` (the policy side), each round is also re-weighted by the executed candidate's
    probability ratio under ``mix`` vs the mix in force (``executed_ratio``; the other candidates'
    origins are never told, so it is approximate, see ``coder_mix``), clipped at 10 as the whole-set
    ratio was, and self-normalised by those ratios; rows without origins are skipped.
    """
    if mix is not None:
        rows = [r for r in rows if r.origins is not None]
    if not rows:
        return 0.0
    total, norm = 0.0, 0.0
    for row in rows:
        ratio = min(executed_ratio(row.origins, mix), 10.0) if mix is not None and row.origins is not None else 1.0
        pick = policy.greedy(predictor.predict(row.features), row.features, known_failure_column)
        total += ratio * float(pick == row.chosen) * row.outcome / row.propensity
        norm += ratio
    return total / norm


def _weighted_brier(rows: list[LoggedRound], predictor: Predictor, max_weight: float) -> float:
    p = np.array([predictor.predict(r.features[r.chosen:r.chosen + 1])[0] for r in rows])
    y = np.array([r.outcome for r in rows])
    w = np.array([min(1.0 / r.propensity, max_weight) for r in rows])
    return float(np.average((y - p) ** 2, weights=w))


@dataclass
class CoUpdateState:
    """Predictor + policy pair, its versions and the audit log of every protocol decision."""

    predictor_kind: str
    known_failure_column: int
    check: ReliabilityCheck = field(default_factory=ReliabilityCheck)
    min_fit_rows: int = 60
    holdout: float = 0.3
    max_adaptations: int = 5
    policy_grid: tuple[float, ...] = (0.0, 0.5, 1.0)
    seed: int = 0
    max_weight: float = 10.0
    mix: CoderMix | None = None  # the coder's mutation mix when the policy side is updated too, else None
    n_candidates: int = 4
    predictor: Predictor = field(init=False)
    policy: Policy = field(default_factory=Policy)
    version: str = field(init=False)
    versions: int = field(default=0, init=False)
    adaptations: int = field(default=0, init=False)
    rows: list[LoggedRound] = field(default_factory=list)
    audit: list[dict[str, Any]] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.predictor = make_predictor("static")
        self.version = version_id(0, "static", "hand-set weights")

    def _fit(self, rows: list[LoggedRound]) -> Predictor:
        X = np.stack([r.features[r.chosen] for r in rows])  # (N, F)
        y = np.array([r.outcome for r in rows])
        w = np.array([self.weight(r) for r in rows])
        return make_predictor(self.predictor_kind, seed=self.seed).fit(X, y, w)

    def _new_version(self, rows: list[LoggedRound]) -> str:
        self.versions += 1
        return version_id(self.versions, self.predictor_kind, [(r.t, r.chosen, r.outcome) for r in rows])

    def weight(self, row: LoggedRound) -> float:
        return min(1.0 / row.propensity, self.max_weight)

    def log(self, t: int, event: str, **details: Any) -> dict[str, Any]:
        entry = {"t": t, "event": event, "version": self.version, **details}
        self.audit.append(entry)
        return entry

    def fit_initial(self, t: int) -> None:
        """End of warm-up: the first fitted version, on every logged round."""
        if len(self.rows) < 2:
            self.log(t, "warmup_fit_skipped", reason=f"{len(self.rows)} logged rounds")
            return
        self.predictor, self.version = self._fit(self.rows), self._new_version(self.rows)
        self.log(t, "warmup_fit", rows=len(self.rows))

    def reliability(self, t: int) -> str:
        """Check the current version on the rounds it predicted; returns the verdict."""
        mine = [r for r in self.rows if r.version == self.version]
        result = self.check.check([r.predicted for r in mine], [r.outcome for r in mine],
                                  [self.weight(r) for r in mine])
        self.log(t, "reliability_check", result=result.to_json())
        return result.verdict

    def adapt(self, t: int) -> None:
        """The protocol at a check point; every branch is logged.

        The predictor is refitted only when its check says "off"; with a coder mix (the policy
        side), a re-estimated mix is proposed at every check point with data. Each new component
        is checked on the held-out (later) rounds: the predictor's reliability, the selection
        policy's value, the mix's candidate quality; then the new pair (mix, predictor, selection)
        against the retained pair. All of it is accepted together, or nothing.
        """
        verdict = self.reliability(t)
        if verdict != "off" and self.mix is None:
            self.log(t, "keep", reason=verdict)
            return
        if self.adaptations >= self.max_adaptations:
            self.log(t, "keep", reason=f"adaptation budget spent ({self.max_adaptations})")
            return
        if len(self.rows) < self.min_fit_rows:
            self.log(t, "keep", reason=f"insufficient data to adapt ({len(self.rows)} < {self.min_fit_rows} rounds)")
            return
        cut = int(len(self.rows) * (1 - self.holdout))
        fit_rows, held = self.rows[:cut], self.rows[cut:]
        refit = verdict == "off"
        new_mix = self._propose_mix(fit_rows, held)
        if not refit and new_mix is None:
            self.log(t, "keep", reason=f"{verdict}; no executed rounds with origins to re-estimate the coder's mix")
            return
        self.adaptations += 1
        candidate = self._fit(fit_rows) if refit else self.predictor
        col = self.known_failure_column
        value: Callable[[Predictor, Policy, list[LoggedRound], CoderMix | None], float] = \
            lambda pr, po, rs, mx: ipw_value(rs, pr, po, col, mx)
        new_policy = max((Policy(k) for k in self.policy_grid), key=lambda po: value(self.predictor, po, fit_rows, None))
        details: dict[str, Any] = {"fit_rows": len(fit_rows), "held_rows": len(held), "refit_predictor": refit}
        predictor_ok = True
        if refit:
            predictor_check = self.check.check([candidate.predict(r.features[r.chosen:r.chosen + 1])[0] for r in held],
                                               [r.outcome for r in held], [self.weight(r) for r in held])
            predictor_ok = predictor_check.verdict != "off"
            details["predictor_check"] = predictor_check.to_json()
        policy_ok = value(self.predictor, new_policy, held, None) >= value(self.predictor, self.policy, held, None)
        details["policy"] = {"retained": self.policy.known_failure_penalty, "new": new_policy.known_failure_penalty,
                             "passes": policy_ok}
        coder_ok = True
        if new_mix is not None and self.mix is not None:
            told = [(r.origins, r.chosen, r.propensity, r.outcome) for r in held if r.origins is not None]
            quality = (candidate_quality(told, self.mix, self.n_candidates, self.max_weight),
                       candidate_quality(told, new_mix, self.n_candidates, self.max_weight))
            coder_ok = quality[1] >= quality[0]
            details["coder"] = {"retained": self.mix.to_json(), "new": new_mix.to_json(), "retained_quality":
                                round(quality[0], 4), "new_quality": round(quality[1], 4), "passes": coder_ok}
        retained = (value(self.predictor, self.policy, held, self.mix), _weighted_brier(held, self.predictor, self.max_weight))
        new = (value(candidate, new_policy, held, new_mix or self.mix), _weighted_brier(held, candidate, self.max_weight))
        wins = new[0] > retained[0] or (new[0] == retained[0] and new[1] < retained[1])
        details["pair"] = {"retained_value": round(retained[0], 4), "retained_brier": round(retained[1], 4),
                           "new_value": round(new[0], 4), "new_brier": round(new[1], 4), "new_wins": wins}
        if predictor_ok and policy_ok and coder_ok and wins:
            old = self.version
            self.policy = new_policy
            if refit:
                self.predictor, self.version = candidate, self._new_version(fit_rows)
            if new_mix is not None:
                self.mix = new_mix
            self.log(t, "accept", replaced=old, **details)
        else:
            self.log(t, "reject", reason="the new pair does not win" if not wins else "a component check failed",
                     **details)

    def _propose_mix(self, fit_rows: list[LoggedRound], held: list[LoggedRound]) -> CoderMix | None:
        """The coder's mix re-estimated from the executed rounds of ``fit_rows`` (None: no policy side or no data)."""
        if self.mix is None:
            return None
        told = [(r.origins, r.chosen, r.propensity, r.outcome) for r in fit_rows if r.origins is not None]
        if len(told) < 2 or not any(r.origins is not None for r in held):
            return None
        number = int(self.mix.version.split("-")[1]) + 1
        return reestimate(told, number, max_weight=self.max_weight)
