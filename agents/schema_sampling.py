"""Draw random instances of a JSON Schema: what the offline ``rsigym/random`` model answers.

No well-kept library samples *valid* instances of arbitrary schemas with a seeded generator
(hypothesis-jsonschema is built for property tests, not seeded draws), so this covers the subset
env action schemas use: object, integer, number (``x-log`` for log scale), boolean, string, array,
enum, const, oneOf/anyOf.
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np

__all__ = ["sample_instance"]

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
