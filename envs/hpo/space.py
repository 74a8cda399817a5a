"""The fine-tuning configuration space: action schema, typed space, parsing and distances."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["OPTIMIZERS", "LOSSES", "LR_RANGE", "Config", "ACTION_SCHEMA", "action_space", "config_from_action",
           "config_distance"]

OPTIMIZERS = ("adam", "adamw", "sgd_momentum", "rmsprop")
LOSSES = ("mse", "l1", "relative_l2", "huber")
LR_RANGE = (1e-5, 1e-1)

ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "description": "the next fine-tuning configuration to try",
    "required": ["learning_rate", "optimizer", "loss"],
    "additionalProperties": False,
    "properties": {
        "learning_rate": {"type": "number", "minimum": LR_RANGE[0], "maximum": LR_RANGE[1], "x-log": True,
                          "description": "base learning rate, log-uniform range"},
        "optimizer": {"enum": list(OPTIMIZERS)},
        "loss": {"enum": list(LOSSES), "description": "training loss"},
    },
}


@dataclass(frozen=True)
class Config:
    """One fine-tuning configuration (epochs and batch size are fixed by the preset)."""

    learning_rate: float
    optimizer: str
    loss: str

    def to_dict(self) -> dict[str, Any]:
        return {"learning_rate": self.learning_rate, "optimizer": self.optimizer, "loss": self.loss}


def action_space() -> spaces.Dict:
    # float64 so the log-scale bounds survive exactly; Discrete indexes OPTIMIZERS / LOSSES
    return spaces.Dict({
        "learning_rate": spaces.Box(LR_RANGE[0], LR_RANGE[1], shape=(), dtype=np.float64),
        "optimizer": spaces.Discrete(len(OPTIMIZERS)),
        "loss": spaces.Discrete(len(LOSSES)),
    })


def config_from_action(action: Any) -> Any:
    """Map a typed action (indices, numpy scalars) onto the JSON form; JSON actions pass through."""
    if not isinstance(action, dict):
        return action
    out = dict(action)
    for key, names in (("optimizer", OPTIMIZERS), ("loss", LOSSES)):
        value = out.get(key)
        if isinstance(value, (int, np.integer)) and not isinstance(value, bool) and 0 <= int(value) < len(names):
            out[key] = names[int(value)]
    if isinstance(out.get("learning_rate"), (np.floating, np.ndarray)):
        out["learning_rate"] = float(np.asarray(out["learning_rate"]).reshape(-1)[0])
    return out


def config_distance(a: Config, b: Config) -> float:
    """Normalised distance: |log10 lr| difference over the log range, categorical mismatch 1,
    averaged over the three dimensions (so it lies in [0, 1])."""
    span = math.log10(LR_RANGE[1]) - math.log10(LR_RANGE[0])
    lr = abs(math.log10(a.learning_rate) - math.log10(b.learning_rate)) / span
    return (lr + float(a.optimizer != b.optimizer) + float(a.loss != b.loss)) / 3.0
