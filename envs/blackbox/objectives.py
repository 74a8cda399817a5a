"""BlackBox tasks: a deterministic synthetic "validation score" over four training hyperparameters.

The objective has the shape of a small hyperparameter search, with the couplings that make
one-at-a-time tuning fail: the best learning rate depends on the optimizer, the depth and the
momentum (a larger momentum raises the effective step, ``lr / (1 - momentum)``). It is smooth
and concave in (log10 learning rate, momentum) for each (layers, optimizer), so its maximum and
minimum over the domain are known exactly: the optimum is 1.0, at the task's targets, and the
worst value lies at a corner of the box.
"""

from __future__ import annotations

import hashlib
import itertools
import math
from dataclasses import dataclass
from typing import Any, Mapping

from rsigym.spaces import split_task_ids


__all__ = [
    "BlackBoxTask", "LAYERS_RANGE", "LEARNING_RATE_RANGE", "MOMENTUM_RANGE", "OPTIMIZERS",
    "SPLITS", "make_task", "parse_task_id", "task_ids",
]

OPTIMIZERS = ("sgd", "adam", "rmsprop")
LEARNING_RATE_RANGE = (1e-5, 1e-1)
MOMENTUM_RANGE = (0.0, 0.99)
LAYERS_RANGE = (1, 6)  # inclusive
SPLITS = {"train": range(0, 30), "test": range(30, 50)}

# Adaptive optimizers want a smaller step than SGD: their best log10 learning rate is shifted by
# this much from the task's SGD target.
OPTIMIZER_LOG10_LR_SHIFT = (0.0, -1.0, -0.6)
# Curvatures of the penalty terms, chosen so that each hyperparameter matters at the scale of
# its range: a decade of learning rate costs 0.6, a 0.3 momentum error about 0.27, a layer 0.05.
LR_CURVATURE = 0.6
MOMENTUM_CURVATURE = 3.0
LAYERS_CURVATURE = 0.05
MOMENTUM_TO_LOG10_LR = 0.8   # effective step grows with momentum
LAYERS_TO_LOG10_LR = -0.15   # deeper nets want a smaller step


def _uniform(digest: bytes, i: int) -> float:
    """The i-th uniform number in [0, 1) read from a digest (8 bytes each)."""
    return int.from_bytes(digest[8 * i:8 * i + 8], "big") / 2.0**64


@dataclass(frozen=True)
class BlackBoxTask:
    """One objective: the targets the agent must find, known to the env and graders only."""

    task_id: str
    log10_lr_target: float     # best log10 learning rate for SGD at the target depth and momentum
    momentum_target: float
    layers_target: int
    best_optimizer: int
    optimizer_penalty: tuple[float, float, float]  # 0 for the best optimizer

    def value(self, config: Mapping[str, Any]) -> float:
        """The objective at ``config`` (keys learning_rate, momentum, layers, optimizer); max 1.0."""
        log10_lr = math.log10(float(config["learning_rate"]))
        momentum = float(config["momentum"])
        layers, optimizer = int(config["layers"]), int(config["optimizer"])
        momentum_error = momentum - self.momentum_target
        layers_error = layers - self.layers_target
        lr_target = (self.log10_lr_target + OPTIMIZER_LOG10_LR_SHIFT[optimizer]
                     + LAYERS_TO_LOG10_LR * layers_error)
        lr_error = log10_lr + MOMENTUM_TO_LOG10_LR * momentum_error - lr_target
        return (1.0 - LR_CURVATURE * lr_error**2 - MOMENTUM_CURVATURE * momentum_error**2
                - LAYERS_CURVATURE * layers_error**2 - self.optimizer_penalty[optimizer])

    def optimum_config(self) -> dict[str, Any]:
        """Where the objective reaches 1.0: every penalty term is zero there."""
        log10_lr = self.log10_lr_target + OPTIMIZER_LOG10_LR_SHIFT[self.best_optimizer]
        return {"learning_rate": 10.0**log10_lr, "momentum": self.momentum_target,
                "layers": self.layers_target, "optimizer": self.best_optimizer}

    @property
    def optimum(self) -> float:
        return 1.0

    @property
    def worst(self) -> float:
        """The minimum over the domain: for fixed (layers, optimizer) the objective is concave in
        (log10 lr, momentum), so its minimum over the box is at one of the four corners."""
        corners = itertools.product(LEARNING_RATE_RANGE, MOMENTUM_RANGE,
                                    range(LAYERS_RANGE[0], LAYERS_RANGE[1] + 1), range(len(OPTIMIZERS)))
        return min(self.value({"learning_rate": lr, "momentum": m, "layers": n, "optimizer": o})
                   for lr, m, n, o in corners)

    def normalised(self, value: float) -> float:
        """``value`` mapped to [0, 1]: 0 at the worst point of the domain, 1 at the optimum."""
        return min(max((value - self.worst) / (self.optimum - self.worst), 0.0), 1.0)


def parse_task_id(task_id: str) -> int:
    prefix, _, number = task_id.partition("-")
    if prefix != "bb" or not number.isdigit() or int(number) not in range(SPLITS["test"].stop):
        raise ValueError(f"not a blackbox task id: {task_id!r} (expected bb-000 .. bb-049)")
    return int(number)


def make_task(task_id: str) -> BlackBoxTask:
    """Build a task from its id alone: the targets are read from a hash, no random state."""
    index = parse_task_id(task_id)
    digest = hashlib.sha256(f"blackbox/{index}".encode()).digest()
    best = int(digest[-1]) % len(OPTIMIZERS)
    penalties = tuple(0.0 if o == best else 0.05 + 0.25 * _uniform(digest, 2 + o) for o in range(3))
    return BlackBoxTask(
        task_id=task_id,
        # SGD target in [-3.5, -2]; with the optimizer shifts the best lr stays in [1e-4.5, 1e-2],
        # well inside the searchable [1e-5, 1e-1].
        log10_lr_target=-3.5 + 1.5 * _uniform(digest, 0),
        momentum_target=0.5 + 0.45 * _uniform(digest, 1),
        layers_target=2 + int(digest[-2]) % 4,
        best_optimizer=best,
        optimizer_penalty=(penalties[0], penalties[1], penalties[2]),
    )


def task_ids(split: str | None = None) -> list[str]:
    return split_task_ids("blackbox", "bb", SPLITS, split)
