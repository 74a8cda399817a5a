"""CodeRepair-v0 agents: which candidate gets the one online execution.

* ``static_verifier``: the hand-set scorer (``StaticPredictor``), never updated, greedy (no audit
  picks): the paper's capacity-matched verifier on the same features.
* ``static_verifier_audit``: the same scorer with randomised audit picks (a separately named
  variant: its audits cost it picks the greedy verifier would not make).
* ``fixed_world_model``: the static scorer during warm-up, then a predictor fitted once on the
  warm-up rounds and frozen. The default predictor (``offset``) is the static scorer plus a
  penalised correction learned from executed outcomes: with little evidence it stays the static
  scorer.
* ``adaptive_world_model``: as fixed, then the co-update protocol (``coupdate``) every
  ``check_every`` problems, on the newest ``window`` problems.
* ``coderepair_random``: a uniform pick (the blind control).

``adaptive_world_model`` with ``update_coder: true`` also updates the **policy side**: the mixture
coder's mutation mix, re-estimated from executed failures (``coder_mix``) and sent to the env as
``coder_weights`` once accepted by the joint protocol (new mix, new predictor and new selection each
checked, then the new pair against the retained pair; every decision in the record). Without it
(the default) the coder is never changed: the control for what the policy update adds.

The fixed and adaptive world models pick greedily and, with probability ``audit_rate`` (the adaptive
one ``doubt_audit_rate`` while in doubt), uniformly at random
(a randomised audit); each action carries the predictions, the propensity of the pick, the
version id and the protocol decisions since the last action, which the env records. (A check
point falling after the stream's last problem changes no choice and has no action to ride on: it
is not recorded.)
"""

from __future__ import annotations

from typing import Any

import json

import numpy as np

from rsigym.agent import register_agent
from rsigym.records import AgentSpec, Usage

from dataclasses import replace

from .coder_mix import CoderMix, RoundOrigins
from .coupdate import CoUpdateState, LoggedRound
from .features import FEATURE_NAMES, candidate_features
from .predictors import PREDICTOR_KINDS
from .mutation import canonical_form
from .reliability import ReliabilityCheck

__all__ = ["WorldModelAgent", "RandomPickAgent"]

_KNOWN_FAILURE = FEATURE_NAMES.index("known_failure")
_MODES = {"static_verifier": "static", "static_verifier_audit": "static", "fixed_world_model": "fixed",
          "adaptive_world_model": "adaptive"}
# Audits are cheap while the model is trusted (5% of picks) and frequent while the adaptive model's
# latest check says "off" (``doubt_audit_rate``, 10%): exploration goes where there is doubt, so a
# model that is right loses little to it and a model that has gone off gathers evidence quickly.
_DEFAULT_AUDIT = {"static_verifier": 0.0, "static_verifier_audit": 0.05, "fixed_world_model": 0.05, "adaptive_world_model": 0.05}
# After warm-up, a trusted world model explores little: the fixed one never refits (its audits would
# buy nothing), the adaptive one keeps a trickle so a drift among the candidates it does not pick
# can still show.
_TRUSTED_AUDIT = {"fixed_world_model": 0.0, "adaptive_world_model": 0.01}
_PARAMS = {"predictor", "audit_rate", "warmup", "check_every", "min_fit_rows", "holdout", "max_adaptations",
           "min_samples", "z_crit", "ece_bound", "min_skill", "update_coder", "window", "margin", "loss_margin",
           "doubt_audit_rate", "trusted_audit_rate"}


class WorldModelAgent:
    """See the module docstring; ``params``: ``predictor`` (offset | logistic | torch | boosting),
    ``audit_rate``, ``warmup``, ``check_every`` and ``window`` (problems), ``min_fit_rows``,
    ``holdout`` (share of the window's problems held out), ``max_adaptations`` (accepted ones),
    ``margin`` (of the pair comparison), ``loss_margin`` (of the held-out log-loss comparison),
    ``doubt_audit_rate`` (adaptive only: the audit rate while in doubt) and the reliability
    thresholds ``min_samples``, ``z_crit``, ``ece_bound``, ``min_skill``."""

    def __init__(self, spec: AgentSpec) -> None:
        unknown = set(spec.params) - _PARAMS
        if unknown:
            raise TypeError(f"{spec.kind} takes {sorted(_PARAMS)}, got unknown {sorted(unknown)}")
        self.spec, self.mode = spec, _MODES[spec.kind]
        p = spec.params
        self.predictor_kind = str(p.get("predictor", "offset"))
        if self.predictor_kind not in PREDICTOR_KINDS:
            raise TypeError(f"predictor must be one of {', '.join(PREDICTOR_KINDS)}, got {self.predictor_kind!r}")
        self.audit_rate = float(p.get("audit_rate", _DEFAULT_AUDIT[spec.kind]))
        if spec.kind == "static_verifier" and self.audit_rate != 0:
            raise TypeError(f"static_verifier is greedy (audit_rate 0); use static_verifier_audit for audits, "
                            f"got audit_rate {self.audit_rate}")
        if spec.kind != "static_verifier" and not 0 < self.audit_rate <= 1:
            raise TypeError(f"audit_rate must be in (0, 1], got {self.audit_rate}")
        self.warmup, self.check_every = int(p.get("warmup", 20)), int(p.get("check_every", 10))
        self.check = ReliabilityCheck(int(p.get("min_samples", 30)), float(p.get("z_crit", 2.58)),
                                      float(p.get("ece_bound", 0.15)), float(p.get("min_skill", 0.0)))
        self.min_fit_rows, self.holdout = int(p.get("min_fit_rows", 20)), float(p.get("holdout", 0.3))
        self.max_adaptations = int(p.get("max_adaptations", 5))
        self.window, self.margin = int(p.get("window", 40)), float(p.get("margin", 0.02))
        self.loss_margin = float(p.get("loss_margin", 0.01))
        self.doubt_audit_rate = float(p.get("doubt_audit_rate", 0.1 if spec.kind == "adaptive_world_model" else self.audit_rate))
        self.trusted_audit_rate = float(p.get("trusted_audit_rate", _TRUSTED_AUDIT.get(spec.kind, self.audit_rate)))
        if spec.kind in _TRUSTED_AUDIT and not 0 <= self.trusted_audit_rate <= 1:
            raise TypeError(f"trusted_audit_rate must be in [0, 1], got {self.trusted_audit_rate}")
        if spec.kind not in _TRUSTED_AUDIT and "trusted_audit_rate" in p:
            raise TypeError(f"trusted_audit_rate is a param of the world models, not of {spec.kind}")
        if spec.kind != "adaptive_world_model" and "doubt_audit_rate" in p:
            raise TypeError(f"doubt_audit_rate is a param of adaptive_world_model only, not of {spec.kind}")
        if spec.kind == "adaptive_world_model" and not 0 < self.doubt_audit_rate <= 1:
            raise TypeError(f"doubt_audit_rate must be in (0, 1], got {self.doubt_audit_rate}")
        if not 0 < self.holdout < 1 or self.window < 2 or self.margin < 0:
            raise TypeError(f"holdout must be in (0, 1), window >= 2 problems and margin >= 0, got holdout "
                            f"{self.holdout}, window {self.window}, margin {self.margin}")
        self.update_coder = p.get("update_coder", False)
        if not isinstance(self.update_coder, bool):
            raise TypeError(f"update_coder must be true or false, got {self.update_coder!r}")
        if self.update_coder and spec.kind != "adaptive_world_model":
            raise TypeError(f"update_coder is a param of adaptive_world_model only, not of {spec.kind}")
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self.rng = np.random.default_rng([int(seed), 0xC0DE])
        self.state = CoUpdateState(self.predictor_kind, _KNOWN_FAILURE, self.check, seed=int(seed),
                                   min_fit_rows=self.min_fit_rows, holdout=self.holdout, max_adaptations=self.max_adaptations,
                                   window=self.window, margin=self.margin, loss_margin=self.loss_margin,
                                   mix=CoderMix() if self.update_coder else None)
        self._mix_sent = CoderMix().version
        self._problem_rows = 0  # index of the current problem's first logged round
        info = task_info.get("info") or {}
        self._entry, self._problem = info.get("entry"), info.get("problem_id")
        self._failed_forms: set[str] = set()
        self._problems_done = 0
        self._pending: list[dict[str, Any]] = []
        self._forms: list[str | None] = []
        self._last: tuple[np.ndarray, int, float, float] | None = None

    def act(self, observation: dict[str, Any]) -> Any:
        codes = [str(c) for c in observation["candidates"]]
        try:
            checks = json.loads(str(observation.get("checks") or "[]"))
        except ValueError:  # truncated checks: the check features are neutral
            checks = []
        features = candidate_features(codes, self._entry or "", int(observation["round"]) - 1, self._failed_forms,
                                      checks if isinstance(checks, list) and len(checks) == len(codes) else None)
        predictions = self.state.predictor.predict(features)                    # (C,)
        greedy = self.state.policy.greedy(predictions, features, _KNOWN_FAILURE)
        rate = self._rate()
        audit = bool(self.rng.random() < rate)
        choice = int(self.rng.integers(len(codes))) if audit else greedy
        propensity = (1 - rate) * float(choice == greedy) + rate / len(codes)
        self._last = (features, choice, propensity, float(predictions[choice]))
        self._forms = [canonical_form(code, self._entry or "") for code in codes]
        decisions, self._pending = self._pending, []
        action = {"candidate": choice, "predictions": [round(float(x), 6) for x in predictions],
                  "propensity": round(propensity, 6), "audit": audit, "wm_version": self.state.version,
                  "decisions": decisions}
        if self.state.mix is not None and self.state.mix.version != self._mix_sent:  # an accepted new mix
            action["coder_weights"], self._mix_sent = self.state.mix.action(), self.state.mix.version
        return action

    def _rate(self) -> float:
        """The audit rate of the next pick: ``audit_rate`` in warm-up (and always for the static
        variants), ``doubt_audit_rate`` while the adaptive model is in doubt, ``trusted_audit_rate``
        otherwise (a fixed model never refits, so its audits after warm-up buy nothing)."""
        if self.mode == "static" or self._problems_done < self.warmup:
            return self.audit_rate
        if self.mode == "adaptive" and self.state.in_doubt:
            return self.doubt_audit_rate
        return self.trusted_audit_rate

    def observe(self, reward: float, observation: dict[str, Any], info: dict[str, Any]) -> None:
        executed = info.get("executed")
        if not executed or self._last is None:
            return
        features, choice, propensity, predicted = self._last
        self.state.rows.append(LoggedRound(self._problems_done, features, choice, propensity,
                                           float(executed["public_pass"]), self.state.version, predicted))
        if not executed["public_pass"] and self._forms[choice] is not None:
            self._failed_forms.add(self._forms[choice])  # type: ignore[arg-type]
        if info.get("problem_id") != executed["problem_id"]:  # the problem ended
            self._attach_origins(executed.get("finished_rounds") or [])
            self._problems_done += 1
            self._failed_forms = set()
            self._entry, self._problem = info.get("entry"), info.get("problem_id")
            self._protocol()

    def _attach_origins(self, rounds: list[dict[str, Any]]) -> None:
        """The env's account of the finished problem's rounds (the executed candidates' origins) goes
        onto their logged rows."""
        mine = self.state.rows[self._problem_rows:]
        if len(rounds) == len(mine) and all(r.get("origin_mass") and r.get("candidate") == row.chosen
                                            for r, row in zip(rounds, mine)):  # else rows stay without origins
            for i, (row, told) in enumerate(zip(mine, rounds)):
                origins = RoundOrigins(str(told["origin"]), dict(told["origin_mass"]), dict(told["mix"]))
                self.state.rows[self._problem_rows + i] = replace(row, origins=origins)
        self._problem_rows = len(self.state.rows)

    def _protocol(self) -> None:
        before = len(self.state.audit)
        t = self._problems_done
        if self.mode != "static" and t == self.warmup:
            self.state.fit_initial(t)
        elif t > self.warmup and (t - self.warmup) % self.check_every == 0:
            if self.mode == "adaptive":
                self.state.adapt(t)
            else:  # static and fixed are checked too (reported), never adapted
                verdict = self.state.reliability(t)
                self.state.log(t, "keep", reason=f"{self.mode}: never adapted (check said {verdict})")
        self._pending += self.state.audit[before:]


class RandomPickAgent:
    """Picks uniformly at random (the blind control); deterministic in its seed."""

    def __init__(self, spec: AgentSpec) -> None:
        if spec.params:
            raise TypeError(f"coderepair_random takes no params, got {sorted(spec.params)}")
        self.spec, self.last_usage = spec, Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self.rng = np.random.default_rng([int(seed), 0xB11D])

    def act(self, observation: dict[str, Any]) -> Any:
        n = len(observation["candidates"])
        return {"candidate": int(self.rng.integers(n)), "propensity": round(1.0 / n, 6)}


for _kind in _MODES:
    register_agent(_kind)(WorldModelAgent)
register_agent("coderepair_random")(RandomPickAgent)
