"""The policy side of the co-update: the mixture coder's mutation mix, re-estimated from executed failures.

The offline coder draws each candidate from its problem's catalogue; an entry's base probability
is the simulator's (its kind's rate shared over the kind's entries), and a **mix** multiplies it by
a weight per origin (``rewrite:<style>``, ``mutant:<operator>``, ``crash:<kind>``) and
renormalises: ``q_w(e) = base(e) w(origin(e)) / Z_w``, ``Z_w = sum_o B(o) w(o)`` with ``B(o)`` the
base mass of origin ``o`` in that round. The uniform mix is the coder as it ships.

After a problem ends the env tells the agent, for each of its rounds, the **executed** candidate's
origin, the weights in force and ``B``; nothing of that reaches the agent while the problem's
rounds are live (it would say which live candidate is a rewrite), and the origins of the candidates
that were not executed are never told (their origin all but gives their outcome: a rewrite passes
the public tests, a crash fails them; ``leakcheck`` tests it). ``B`` and the weights may be told:
they describe the coder's distribution, fixed before the draw and the same for every candidate of
the round, so they cannot rank one candidate above another; they give the normaliser ``Z_w``, so
the executed candidate's probability under any mix is exact:

* ``executed_ratio``: ``q_new(e) / q_in_force(e)`` of the executed candidate ``e``.
* ``reestimate``: the new mix from executed outcomes: per origin, the propensity-weighted public
  pass rate of the executed candidates of that origin, shrunk toward the overall rate (a
  ``prior`` of pseudo-rounds), scaled so the best origin has weight 1 and floored at ``floor``
  (a coder cannot drop a failure mode altogether, and every origin keeps support for the checks).
* ``candidate_quality``: the public-pass rate of one generated candidate under a mix, from the
  executed candidates (each weighted ``executed_ratio / (C * propensity)``; self-normalised): the
  coder's own check.

The pair's value (``acceptance.pair_components``) re-weights each logged round by ``executed_ratio``
(self-normalised). That moves the executed candidate to the new mix but keeps the round's other
candidates as logged (their origins are not told), so when the greedy pick depends on what else
was drawn it is approximate; so was the earlier whole-set ratio, which also needed every origin.
"""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field
from typing import Any, Mapping, Sequence

import numpy as np

__all__ = ["CoderMix", "RoundOrigins", "reestimate", "candidate_quality", "executed_ratio"]


@dataclass(frozen=True)
class RoundOrigins:
    """What the env discloses about one round once its problem is over (the executed candidate only)."""

    origin: str                            # origin of the executed candidate
    mass: Mapping[str, float]              # B(o): base mass of each origin in this round (sums to 1)
    weights: Mapping[str, float]           # the mix in force for this round ("*": the default, else 1)


@dataclass(frozen=True)
class CoderMix:
    """Origin weights (missing: 1) and a version id ``mix-NNNN-<hash>``."""

    weights: Mapping[str, float] = field(default_factory=dict)
    version: str = "mix-0000-uniform"
    default: float = 1.0                   # weight of an origin not in ``weights``

    def weight(self, origin: str) -> float:
        return float(self.weights.get(origin, self.default))

    def normaliser(self, mass: Mapping[str, float]) -> float:
        return float(sum(b * self.weight(o) for o, b in mass.items()))

    def to_json(self) -> dict[str, Any]:
        return {"version": self.version, "default": round(self.default, 4),
                "weights": {k: round(v, 4) for k, v in sorted(self.weights.items())}}

    def action(self) -> dict[str, float]:
        """The env's ``coder_weights`` action field (``"*"``: the default weight)."""
        return {**{k: round(float(v), 6) for k, v in self.weights.items()}, "*": round(self.default, 6)}


def _old_weight(info: RoundOrigins, origin: str) -> float:
    return float(info.weights.get(origin, info.weights.get("*", 1.0)))


def executed_ratio(info: RoundOrigins, new: CoderMix) -> float:
    """q_new(e) / q_in_force(e) of the executed candidate (exact: both normalisers are known)."""
    old_z = sum(b * _old_weight(info, o) for o, b in info.mass.items())
    new_z = new.normaliser(info.mass)
    return (new.weight(info.origin) / new_z) / (_old_weight(info, info.origin) / old_z)


def candidate_quality(rows: Sequence[tuple[RoundOrigins, int, float, float]], mix: CoderMix,
                      n_candidates: int, max_weight: float = 10.0) -> float:
    """Self-normalised estimate of a generated candidate's public-pass rate under ``mix``.

    Args:
        rows: ``(origins, chosen, propensity, outcome)`` per executed round (``origins``: what the
            env told of it, the executed candidate's origin; ``chosen`` its index, unused here).
        mix: The mix to evaluate (the one in force gives the plain propensity-weighted rate).
        n_candidates: C.
        max_weight: Clip of each row's weight ``ratio / (C * propensity)``.
    """
    weights = np.array([min(executed_ratio(info, mix) / (n_candidates * p), max_weight) for info, _, p, _ in rows])
    outcomes = np.array([y for *_, y in rows])
    return float(np.sum(weights * outcomes) / np.sum(weights)) if weights.size and weights.sum() > 0 else float("nan")


def reestimate(rows: Sequence[tuple[RoundOrigins, int, float, float]], number: int, *, prior: float = 4.0,
               floor: float = 0.2, max_weight: float = 10.0) -> CoderMix:
    """The mix re-estimated from executed outcomes (see the module docstring); ``number`` versions it."""
    if not rows:
        raise ValueError("reestimate needs at least one executed round with its origins")
    w = np.array([min(1.0 / p, max_weight) for _, _, p, _ in rows])
    y = np.array([outcome for *_, outcome in rows])
    overall = float(np.sum(w * y) / np.sum(w))
    origins = [info.origin for info, *_ in rows]
    rates: dict[str, float] = {}
    for origin in sorted(set(origins)):
        mine = np.array([o == origin for o in origins])
        rates[origin] = float((np.sum(w[mine] * y[mine]) + prior * overall) / (np.sum(w[mine]) + prior))
    top = max(rates.values())
    if top <= 0:  # nothing passed: no origin is better than another
        return CoderMix({}, f"mix-{number:04d}-uniform")
    weights = {o: max(floor, r / top) for o, r in rates.items()}
    default = max(floor, overall / top)    # an origin never executed: the overall rate
    digest = hashlib.sha256(repr((sorted(weights.items()), default)).encode()).hexdigest()[:8]
    return CoderMix(weights, f"mix-{number:04d}-{digest}", default)
