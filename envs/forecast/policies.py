"""Offline model ``rsigym/forecast_heuristic``: an LLM-shaped forecaster that runs with no key.

It reads only the latest observation text (``render.parse_lines`` reads the experience and
candidate lines back), as an LLM would, and predicts each candidate's gain as a blend of

* a **prior** written from general training lore (placebos 0; very large learning-rate steps,
  plain SGD at an Adam learning rate, less data and label noise hurt; mild schedule changes help
  a little), and
* its **experience**: the mean observed gain of the same group key, else of the same component
  and direction, shrunk towards the prior by ``n / (n + 1)``.

So it uses its feedback (a permutation of the observed gains moves its predictions), and with no
experience it is the prior alone: the "LLM without experience" of the protocol, offline.
"""

from __future__ import annotations

import re
from typing import Any

import numpy as np

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy

from .render import parse_lines

__all__ = ["prior_gain", "heuristic_predictions", "heuristic_policy"]

_RULES: list[tuple[str, float]] = [        # (pattern on "group | text", prior gain), first match wins
    (r"^placebo:", 0.0),
    (r"100x|raw pixel|unscaled|no scaling|remove the (standard )?scaler", -0.5),
    (r"l1 penalty \(solver left", -0.6),
    (r"swap:optimizer=sgd.*same learning rate", -0.4),
    (r"label_noise|random labels", -0.2),
    (r"train_fraction|quarter|10%|half|first 25%", -0.15),
    (r"lr:down", -0.1),
    (r"lr:up.*1\.5x|lr:up.*3x", 0.05),
    (r"lr:up", -0.05),
    (r"swap:schedule=|warmup", 0.02),
    (r"architecture:width:up|architecture:depth:up", 0.01),
    (r"swap:model=", -0.2),
]


def prior_gain(group: str, text: str) -> float:
    """The prior gain of a change from its group key and text (first matching rule, else -0.03)."""
    line = f"{group} | {text}".lower()
    for pattern, value in _RULES:
        if re.search(pattern, line):
            return value
    return -0.03


def _coarse(group: str) -> str:
    if group.startswith("swap:"):
        return group.split("=")[0]
    parts = group.split(":")
    return f"{parts[0]}:{parts[2]}" if len(parts) == 3 else group


def heuristic_predictions(text: str) -> list[float]:
    """The heuristic's predictions for the candidates listed in ``text``."""
    experience, candidates = parse_lines(text)
    predictions = []
    for candidate in candidates:
        prior = prior_gain(candidate["group"], candidate["text"])
        same = [e["gain"] for e in experience if e["group"] == candidate["group"]]
        near = same or [e["gain"] for e in experience if _coarse(e["group"]) == _coarse(candidate["group"])]
        if near and not candidate["group"].startswith("placebo:"):
            weight = len(near) / (len(near) + 1.0)
            predictions.append(weight * float(np.mean(near)) + (1 - weight) * prior)
        else:
            predictions.append(prior)
    return predictions


def _latest_round(request: OfflineRequest) -> str:
    for message in reversed(request.messages):
        content = str(message.get("content") or "")
        if message.get("role") in ("user", "tool") and "## Candidates" in content:
            return content
    return ""


@register_offline_policy("forecast_heuristic")
def heuristic_policy(request: OfflineRequest) -> OfflineReply:
    """Predict from the latest round's text (see the module doc); 16 zeros when no round is found."""
    text = _latest_round(request)
    predictions = heuristic_predictions(text) if text else []
    count = _expected_count(request.schema) or len(predictions) or 16
    predictions = (predictions + [0.0] * count)[:count]
    return OfflineReply(action={"predictions": [round(p, 6) for p in predictions]})


def _expected_count(schema: dict[str, Any] | None) -> int | None:
    try:
        return int(schema["properties"]["predictions"]["minItems"])  # type: ignore[index]
    except (TypeError, KeyError, ValueError):
        return None
