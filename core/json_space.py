"""JSON actions as a Gymnasium space: seeded draws of valid instances of an env's action schema.

``sample_instance`` draws one random value valid for a JSON Schema. No well-kept library samples
*valid* instances of arbitrary schemas with a seeded generator (hypothesis-jsonschema is built for
property tests, not seeded draws), so this covers the subset env action schemas use: object,
integer, number (``x-log`` for log scale), boolean, string, array, enum, const, oneOf/anyOf.
It is what the offline ``rsigym/random`` model answers, and what ``JsonText.sample`` sends.

``JsonText`` is the action space of an env whose actions are JSON text: it contains any text in
its charset (so LLM agents' replies are in it, valid or not) and samples valid JSON actions, so
``action_space.sample()`` gives actions the env accepts rather than random characters.
"""

from __future__ import annotations

import json
import math
from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["sample_instance", "JsonText"]

_WORDS = ("alpha", "beta", "gamma", "delta", "omega", "sigma", "kappa", "lambda")


def sample_instance(schema: dict[str, Any], rng: np.random.Generator, depth: int = 0) -> Any:
    """One random value valid for ``schema`` (within the supported subset)."""
    if depth > 8:
        return None
    if "const" in schema:
        return schema["const"]
    if "enum" in schema:
        return schema["enum"][int(rng.integers(len(schema["enum"])))]
    for key in ("oneOf", "anyOf"):
        if key in schema:
            options = schema[key]
            return sample_instance(options[int(rng.integers(len(options)))], rng, depth + 1)
    kind = schema.get("type", "object")
    if isinstance(kind, list):
        kind = [k for k in kind if k != "null"][0] if any(k != "null" for k in kind) else "null"
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", properties))
        return {name: sample_instance(sub, rng, depth + 1) for name, sub in properties.items()
                if name in required or rng.random() < 0.5}
    if kind == "integer":
        low = int(schema.get("minimum", schema.get("exclusiveMinimum", -101) + 1))
        high = int(schema.get("maximum", schema.get("exclusiveMaximum", 101) - 1))
        return int(rng.integers(low, high + 1))
    if kind == "number":
        lower = float(schema.get("minimum", schema.get("exclusiveMinimum", -100.0)))
        upper = float(schema.get("maximum", schema.get("exclusiveMaximum", 100.0)))
        if schema.get("x-log") and lower > 0:
            return float(math.exp(rng.uniform(math.log(lower), math.log(upper))))
        return float(rng.uniform(lower, upper))
    if kind == "boolean":
        return bool(rng.random() < 0.5)
    if kind == "string":
        words = int(rng.integers(1, 4))
        text = " ".join(_WORDS[int(rng.integers(len(_WORDS)))] for _ in range(words))
        return text[: schema.get("maxLength", len(text))].ljust(schema.get("minLength", 0), "x")
    if kind == "array":
        low, high = int(schema.get("minItems", 0)), int(schema.get("maxItems", 3))
        return [sample_instance(schema.get("items", {}), rng, depth + 1)
                for _ in range(int(rng.integers(low, max(low, high) + 1)))]
    return None


class JsonText(spaces.Text):
    """Text that holds a JSON action; ``sample()`` draws a valid instance of ``schema`` as JSON.

    ``contains`` is ``Text``'s (any text in the charset, up to ``max_length``): validity is the
    env's to judge and to report as an error observation.
    """

    def __init__(self, schema: dict[str, Any], max_length: int, charset: frozenset[str] | str,
                 seed: int | np.random.Generator | None = None) -> None:
        super().__init__(max_length=max_length, min_length=0, charset=charset, seed=seed)
        self.schema = schema

    def sample(self, mask: Any = None, probability: Any = None) -> str:
        if mask is not None or probability is not None:  # masks speak of characters: Text's own draw
            return super().sample(mask=mask, probability=probability)
        for _ in range(10):  # a draw too long for the space is drawn again
            text = json.dumps(sample_instance(self.schema, self.np_random))
            if len(text) <= self.max_length:
                return text
        return json.dumps(sample_instance(self.schema, self.np_random))[: self.max_length]

    def __repr__(self) -> str:
        return f"JsonText(max_length={self.max_length}, schema keys {sorted(self.schema)})"
