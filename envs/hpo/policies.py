"""Offline models for HyperparamSearch-v0: a prior-plus-refinement heuristic and a blind control.

Both read only what an LLM would read (the latest observation text), through LiteLLM's custom
provider, so the whole feedback-attribution protocol runs without a key:

* ``rsigym/hpo_heuristic``: a learning-rate prior from the target equation, then local
  refinement around the best configuration so far. It uses its feedback, so permuting the
  scores among the evaluated configurations moves its next proposal.
* ``rsigym/hpo_blind``: the same prior and a fixed schedule that ignores the history: the
  control whose feedback sensitivity must be indistinguishable from zero.
"""

from __future__ import annotations

import math
import re
from typing import Any

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy

__all__ = ["prior_learning_rate", "heuristic_proposal", "blind_proposal"]

_TARGET = re.compile(r"Target: (advection|burgers)\((?:beta|nu)=([0-9.eE+-]+)\)")
LR_LOW, LR_HIGH = 1e-5, 1e-1
# Step factors around the best learning rate, cycled: wide first, then finer.
_STEPS = (3.0, 1 / 3.0, 1.7, 1 / 1.7, 1.3, 1 / 1.3)


def _latest_observation(request: OfflineRequest) -> str:
    for message in reversed(request.messages):
        content = str(message.get("content") or "")
        if message.get("role") in ("user", "tool") and "## History" in content:
            return content
    return ""


def prior_learning_rate(text: str) -> float:
    """A prior from the target equation: stiffer (less viscous, faster) targets get smaller steps."""
    match = _TARGET.search(text)
    if match is None:
        return 1e-3
    kind, coefficient = match.group(1), float(match.group(2))
    if kind == "advection":  # faster transport -> sharper fronts per step -> smaller learning rate
        return float(min(max(1e-3 / max(coefficient, 0.1) ** 0.5, LR_LOW), LR_HIGH))
    return float(min(max(3e-4 * (coefficient / 0.01) ** 0.25, LR_LOW), LR_HIGH))


def _clip(lr: float) -> float:
    return float(min(max(lr, LR_LOW), LR_HIGH))


def heuristic_proposal(text: str) -> dict[str, Any]:
    from rsigym.envs.hpo.render import parse_history

    trials = parse_history(text)
    if not trials:
        return {"learning_rate": prior_learning_rate(text), "optimizer": "adam", "loss": "mse"}
    best, _ = min(trials, key=lambda t: t[1] if math.isfinite(t[1]) else math.inf)
    n = len(trials)
    optimizer, loss = best.optimizer, best.loss
    if n % 4 == 3:  # now and then, try a neighbouring optimizer or loss at the best rate
        optimizer = "adamw" if optimizer == "adam" else "adam"
    elif n % 4 == 1 and n > 1:
        loss = "relative_l2" if loss == "mse" else "mse"
    lr = _clip(best.learning_rate * _STEPS[(n - 1) % len(_STEPS)])
    return {"learning_rate": lr, "optimizer": optimizer, "loss": loss}


def blind_proposal(text: str) -> dict[str, Any]:
    from rsigym.envs.hpo.render import parse_history

    n = len(parse_history(text))  # only how many trials were run, never their scores
    prior = prior_learning_rate(text)
    schedule = (1.0, 3.0, 1 / 3.0, 10.0, 0.1, 1.7, 1 / 1.7, 30.0, 1 / 30.0)
    return {"learning_rate": _clip(prior * schedule[n % len(schedule)]),
            "optimizer": ("adam", "adamw", "rmsprop", "sgd_momentum")[(n // 3) % 4],
            "loss": ("mse", "relative_l2", "l1", "huber")[(n // 2) % 4]}


@register_offline_policy("hpo_heuristic")
def heuristic_policy(request: OfflineRequest) -> OfflineReply:
    """A prior over configurations, then local refinement around the best scores seen so far."""
    return OfflineReply(action=heuristic_proposal(_latest_observation(request)))


@register_offline_policy("hpo_blind")
def blind_policy(request: OfflineRequest) -> OfflineReply:
    """The same prior and a fixed schedule that ignores the scores: the feedback-blind control."""
    return OfflineReply(action=blind_proposal(_latest_observation(request)))
