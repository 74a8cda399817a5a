"""The co-update protocol: versioned predictions, a reliability check per version, adaptation only
when the check says "off" and data suffice, per-component checks, and the pair acceptance check
(``acceptance``: a normalised paired comparison with a CI and a margin) on held-out problems, with
the retained pair kept when the new one does not win.

Drift: the protocol looks at a **window** of the newest ``window`` problems. The check judges the
current version on the rounds of the window it predicted; a refit uses the window's rows except an
interleaved held-out subset (every k-th problem, k = round(1 / holdout)), on which the new and the
retained pair are compared; an accepted new predictor is then refitted on the whole window. Only
accepted adaptations count against ``max_adaptations``: a version whose check keeps saying "off" is
re-tried at every later check point as evidence arrives. Every decision, with its CI, margin and
the rows used, goes into the audit log (the record's ``wm_decisions``).

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

from .acceptance import Fold, Pair, compare_losses, compare_pairs, crossfit_value
from .coder_mix import CoderMix, RoundOrigins, candidate_quality, reestimate
from .predictors import Predictor, make_predictor
from .reliability import ReliabilityCheck

__all__ = ["LoggedRound", "Policy", "CoUpdateState", "version_id"]


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


def _unweighted(row: LoggedRound) -> float:
    return 1.0


@dataclass
class CoUpdateState:
    """Predictor + policy pair, its versions and the audit log of every protocol decision."""

    predictor_kind: str
    known_failure_column: int
    check: ReliabilityCheck = field(default_factory=ReliabilityCheck)
    min_fit_rows: int = 20
    holdout: float = 0.3               # share of the window's problems held out (every round(1/holdout)-th)
    max_adaptations: int = 5           # accepted adaptations
    window: int = 40                   # problems: the newest ones the check and the refit look at
    margin: float = 0.02               # pair value: a new mix must win by more than this (CI above 0); a new
                                       # predictor's pair must not be estimated worse by more than this
    loss_margin: float = 0.01          # a new predictor's held-out log-loss must improve by more (nats per row)
    policy_grid: tuple[float, ...] = (0.0, 0.5, 1.0)
    segment: int = 200                 # problems: the most a refit looks back from the regime's start
    refresh_growth: float = 1.5        # a refresh is tried once the regime holds this many times the rows
                                       # the deployed version was fitted on (0: never refresh)
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
    # In doubt: the current version's latest decisive check ("off" or "reliable") said "off". A check
    # can fall back to "insufficient evidence" while in doubt (the audits it triggers lower the
    # effective sample size); the doubt stays until a check says "reliable" or a new version is
    # accepted, and the refit is re-tried meanwhile.
    in_doubt: bool = field(default=False, init=False)
    # The regime: the first problem of the relation the deployed version was fitted to (a change
    # point estimated when a refit is accepted) and the rows that version was fitted on.
    anchor: int = field(default=0, init=False)
    version_rows: int = field(default=0, init=False)
    refreshes: int = field(default=0, init=False)

    def __post_init__(self) -> None:
        self.predictor = make_predictor("static")
        self.version = version_id(0, "static", "hand-set weights")

    def _fit(self, rows: list[LoggedRound], kind: str | None = None) -> Predictor:
        X = np.stack([r.features[r.chosen] for r in rows])  # (N, F)
        y = np.array([r.outcome for r in rows])
        w = np.array([self.weight(r) for r in rows])
        return make_predictor(kind or self.predictor_kind, seed=self.seed).fit(X, y, w)

    def _crossfit(self, rows: list[LoggedRound], kind: str | None = None) -> list[Fold]:
        """Interleaved folds of ``rows``' problems, each with a ``kind`` predictor fitted on the others."""
        every = max(2, round(1 / self.holdout))
        folds = []
        for f in range(every):
            held, rest = [r for r in rows if r.t % every == f], [r for r in rows if r.t % every != f]
            if held and rest:
                fitted = self._fit(rest, kind)
                folds.append(Fold(held, fitted, fitted))
        return folds

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
        """End of warm-up: a fitted version replaces static only with evidence.

        Nested models, cross-fitted on the logged rounds' problems and compared by held-out log-loss
        (``compare_losses``: margin ``loss_margin``, CI above 0): static; static recalibrated (its
        logit plus a fitted intercept: the same ranking, so the same picks); the full correction
        (the ``offset`` kind's slopes, or another kind's own fit). The recalibration is taken when it
        beats static; the full fit only when it beats both static and the recalibration. With no
        evidence the version stays static: a world model cannot start below the verifier it extends.
        """
        self.version_rows = len(self.rows)  # static stands on the warm-up's evidence too
        if len(self.rows) < 2:
            self.log(t, "warmup_fit_skipped", reason=f"{len(self.rows)} logged rounds")
            return
        full = self._crossfit(self.rows)
        if len(full) < 2:
            self.log(t, "warmup_keep_static", reason=f"{len(self.rows)} logged rounds make fewer than 2 folds")
            return
        seed = self.seed * 100_003 + t
        details: dict[str, Any] = {"rows": len(self.rows), "predictor": self.predictor_kind, "folds": len(full)}
        full_vs_static = compare_losses(full, self.predictor, self.weight, margin=self.loss_margin, seed=seed)
        details["full_vs_static"] = full_vs_static.to_json()
        chosen: str | None = self.predictor_kind if full_vs_static.accept else None
        if self.predictor_kind == "offset":
            recal = self._crossfit(self.rows, "recalibrated")
            recal_vs_static = compare_losses(recal, self.predictor, self.weight, margin=self.loss_margin, seed=seed)
            by_fold = {id(f.rows[0]): f.new_predictor for f in recal}
            full_vs_recal = compare_losses(full, lambda f: by_fold[id(f.rows[0])], self.weight,
                                           margin=self.loss_margin, seed=seed)
            details["recalibrated_vs_static"], details["full_vs_recalibrated"] = (recal_vs_static.to_json(),
                                                                                  full_vs_recal.to_json())
            chosen = ("offset" if full_vs_static.accept and full_vs_recal.accept else
                      "recalibrated" if recal_vs_static.accept else None)
        if chosen is None:
            self.log(t, "warmup_keep_static", reason="no fitted model beats static on held-out log-loss", **details)
            return
        self.predictor, self.version = self._fit(self.rows, chosen), self._new_version(self.rows)
        self.log(t, "warmup_fit", chosen=chosen, **details)

    def window_rows(self, t: int) -> list[LoggedRound]:
        return [r for r in self.rows if r.t >= t - self.window]

    def regime_rows(self, t: int, start: int | None = None) -> list[LoggedRound]:
        """The rows since ``start`` (default: the regime's anchor), at most ``segment`` problems back."""
        first = max(self.anchor if start is None else start, t - self.segment)
        return [r for r in self.rows if r.t >= first]

    def change_point(self, t: int) -> tuple[int, dict[str, Any]]:
        """Where the newest regime starts: the CUSUM of the deployed version's log-likelihood.

        Over the regime's rows in time order, l_i = the log-probability the deployed predictor gave
        the executed outcome; the split is where |sum_{j <= k}(l_j - mean l)| peaks (the single
        change in the mean that fits them best by least squares: after a drift the model is
        confidently wrong, so l drops far more sharply than the mean residual moves). The start is moved back so that at least
        ``min_fit_rows`` rows follow it: a refit never stands on fewer rows than the protocol needs.
        """
        rows = self.regime_rows(t)
        if len(rows) <= self.min_fit_rows:
            return self.anchor, {"rows": len(rows), "estimate": None}
        X = np.stack([r.features[r.chosen] for r in rows])  # (N, F)
        y = np.array([r.outcome for r in rows])
        q = np.clip(self.predictor.predict(X), 1e-6, 1 - 1e-6)  # (N,)
        loglik = y * np.log(q) + (1 - y) * np.log(1 - q)  # (N,)
        cusum = np.cumsum(loglik - loglik.mean())  # (N,)
        split = int(np.argmax(np.abs(cusum[:-1])))
        estimate = rows[split + 1].t
        start = min(estimate, rows[-self.min_fit_rows].t)
        return start, {"rows": len(rows), "estimate": estimate, "start": start,
                       "mean_loglik_before": round(float(loglik[:split + 1].mean()), 4),
                       "mean_loglik_after": round(float(loglik[split + 1:].mean()), 4)}

    def refresh_due(self, t: int) -> bool:
        """A refit of the trusted version on its grown regime is due (``refresh_growth`` times the rows
        it was fitted on; never for a version that no evidence stands behind, e.g. before warm-up)."""
        return self.refresh_growth > 0 and self.version_rows > 0 and len(self.regime_rows(t)) >= max(self.min_fit_rows,
                                                                           self.refresh_growth * self.version_rows)

    def split(self, rows: list[LoggedRound]) -> tuple[list[LoggedRound], list[LoggedRound], int]:
        """(fit rows, held-out rows, k): every k-th problem held out, whole problems on one side."""
        every = max(2, round(1 / self.holdout))
        held = [r for r in rows if r.t % every == every - 1]
        return [r for r in rows if r.t % every != every - 1], held, every

    def reliability(self, t: int) -> str:
        """Check the current version on the window's rounds it predicted; returns the verdict."""
        mine = [r for r in self.window_rows(t) if r.version == self.version]
        # Unweighted: the pick depends only on the round's features (and the audit coin), so under a
        # calibrated model P(pass | features) = predicted holds on the picked rows as on any: every
        # executed row is evidence, no inverse-propensity weight lowers the effective sample size.
        result = self.check.check([r.predicted for r in mine], [r.outcome for r in mine])
        self.log(t, "reliability_check", result=result.to_json())
        if result.verdict != "insufficient evidence":
            self.in_doubt = result.verdict == "off"
        return result.verdict

    def adapt(self, t: int) -> None:
        """The protocol at a check point; every branch is logged.

        The predictor is refitted only while in doubt (the latest decisive check said "off"); with a coder mix (the policy
        side), a re-estimated mix is proposed at every check point with data. Each new component
        is checked on the held-out problems: the predictor's reliability, the selection policy's
        value, the mix's candidate quality; then the new pair (mix, predictor, selection) against
        the retained pair (``acceptance.compare_pairs``). All of it is accepted together, or nothing.
        """
        verdict = self.reliability(t)
        refresh = not self.in_doubt and self.refresh_due(t)
        if not self.in_doubt and self.mix is None and not refresh:
            self.log(t, "keep", reason=verdict)
            return
        if verdict != "off" and self.in_doubt:
            self.log(t, "in_doubt", reason=f"check says {verdict}; the last decisive check said off: re-tried")
        if self.adaptations >= self.max_adaptations and not refresh:
            self.log(t, "keep", reason=f"adaptation budget spent ({self.max_adaptations} accepted)")
            return
        start, change = self.change_point(t) if self.in_doubt else (self.anchor, None)
        window = self.regime_rows(t, start)
        if len(window) < self.min_fit_rows:
            self.log(t, "keep", reason=f"insufficient data to adapt ({len(window)} < {self.min_fit_rows} rounds "
                                       f"since problem {start})")
            return
        fit_rows, held = self.split(window)[:2]
        if not held or not fit_rows:
            self.log(t, "keep", reason=f"no held-out or no fitting problems in the newest {self.window} problems")
            return
        refit = self.in_doubt or refresh
        new_mix = self._propose_mix(fit_rows, held)
        if not refit and new_mix is None:
            self.log(t, "keep", reason=f"{verdict}; no executed rounds with origins to re-estimate the coder's mix")
            return
        col, every = self.known_failure_column, self.split(window)[2]
        if refit and new_mix is None:  # cross-fitted: each fold's rows scored by a fit on the other folds
            folds = []
            for f in range(every):
                held_f = [r for r in window if r.t % every == f]
                fitted = self._fit([r for r in window if r.t % every != f]) if held_f else self.predictor
                folds.append(Fold(held_f, fitted, fitted))
        else:  # a new mix is estimated on fit_rows: one held-out fold; without a refit no model is unseen by
            # the held-out rows (the deployed version is refitted on its window), so q = None: plain SNIPW
            candidate = self._fit(fit_rows) if refit else self.predictor
            folds = [Fold(held, candidate, candidate if refit else None)]
        scored = [r for f in folds for r in f.rows]

        def value(pair_for: Callable[[Fold], Pair]) -> float:
            return crossfit_value(folds, pair_for, col)

        new_policy = max((Policy(k) for k in self.policy_grid),
                         key=lambda po: value(lambda f: Pair(f.new_predictor, po.known_failure_penalty)))
        details: dict[str, Any] = {"window_problems": self.window, "window_rows": len(window), "folds": len(folds),
                                   "held_rows": len(scored), "held_out_every": every, "refit_predictor": refit,
                                   "regime_start": start, "refresh": refresh}
        if change is not None:
            details["change_point"] = change
        predictor_ok = True
        if refit:
            predictor_check = self.check.check([f.new_predictor.predict(r.features[r.chosen:r.chosen + 1])[0]
                                                for f in folds for r in f.rows],
                                               [r.outcome for r in scored], [self.weight(r) for r in scored])
            retained_check = self.check.check([self.predictor.predict(r.features[r.chosen:r.chosen + 1])[0] for r in scored],
                                              [r.outcome for r in scored], [self.weight(r) for r in scored])
            # the new predictor must not be "off" where the retained one is fine; where both are off
            # on the same held-out rows (a window that spans a drift), the loss comparison decides
            predictor_ok = predictor_check.verdict != "off" or retained_check.verdict == "off"
            details["retained_check"] = retained_check.to_json()
            details["predictor_check"] = predictor_check.to_json()
        policy_ok = (value(lambda f: Pair(self.predictor, new_policy.known_failure_penalty))
                     >= value(lambda f: Pair(self.predictor, self.policy.known_failure_penalty)))
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
        comparison = compare_pairs(folds, lambda f: Pair(self.predictor, self.policy.known_failure_penalty, self.mix),
                                   lambda f: Pair(f.new_predictor, new_policy.known_failure_penalty, new_mix or self.mix),
                                   col, margin=self.margin, seed=self.seed * 100_003 + t)
        details["pair"] = comparison.to_json()
        if refit:
            # A new predictor is judged where every held-out row is evidence: its log-loss on the
            # executed candidates (cross-fitted, paired per problem, CI and margin), unweighted as
            # in the reliability check: a pick depends on the features (and the audit coin) only,
            # so P(pass | features) is the same on executed rows as on any, and clipped 1/propensity
            # weights would only shrink the evidence (in the drift benchmark they held the first
            # accepted refit back by 10-30 problems). The pair's
            # value sees a new selection's picks only on the audit rows that executed them (a CI of
            # about +-0.4 at 60 problems), so it is a guard here: not estimated worse by more than
            # the margin.
            losses = compare_losses(folds, self.predictor, _unweighted, margin=self.loss_margin,
                                    seed=self.seed * 100_003 + t)
            guard = comparison.difference >= -self.margin
            details["loss"] = losses.to_json()
            details["pair_guard"] = {"passes": guard, "rule": f"new pair value >= retained - {self.margin}"}
            wins, why = losses.accept and guard, ("the new predictor's held-out log-loss does not improve by the "
                                                  "margin with its CI above 0" if not losses.accept else
                                                  "the new pair's value is estimated worse than the retained's")
        else:
            wins, why = comparison.accept, "the new pair does not win by the margin with its CI above 0"
        if predictor_ok and policy_ok and coder_ok and wins:
            old = self.version
            if refresh:
                self.refreshes += 1
            else:
                self.adaptations += 1
            self.policy = new_policy
            if refit:  # checked on rows its fits had not seen; deployed refitted on the whole regime
                self.predictor, self.version = self._fit(window), self._new_version(window)
                self.in_doubt = False  # the new version has predicted nothing yet
                self.anchor, self.version_rows = start, len(window)
                details["deployed_fit_rows"] = len(window)
            if new_mix is not None:
                self.mix = new_mix
            self.log(t, "accept", replaced=old, accepted=self.adaptations, **details)
        else:
            if refresh:  # the grown regime did not earn a new version: wait for it to grow again
                self.version_rows = len(window)
            self.log(t, "reject", reason=why if wins is False and predictor_ok and policy_ok and coder_ok
                     else "a component check failed", **details)

    def _propose_mix(self, fit_rows: list[LoggedRound], held: list[LoggedRound]) -> CoderMix | None:
        """The coder's mix re-estimated from the executed rounds of ``fit_rows`` (None: no policy side or no data)."""
        if self.mix is None:
            return None
        told = [(r.origins, r.chosen, r.propensity, r.outcome) for r in fit_rows if r.origins is not None]
        if len(told) < 2 or not any(r.origins is not None for r in held):
            return None
        number = int(self.mix.version.split("-")[1]) + 1
        return reestimate(told, number, max_weight=self.max_weight)
