"""Gymnasium spaces and values on the wire: JSON descriptions a remote client rebuilds spaces from.

Only Gymnasium's own space types travel (``Dict``, ``Tuple``, ``Box``, ``Discrete``, ``Text``,
``MultiBinary``, ``MultiDiscrete``); a subclass (an env's own ``Text`` or ``Dict``) travels as the
Gymnasium type it extends, so the client never imports or unpickles anything the server names.
Imports nothing beyond Gymnasium and numpy: ``rsigym.remote`` uses it without a server stack.
"""

from __future__ import annotations

from typing import Any

import numpy as np
from gymnasium import spaces

__all__ = ["describe_space", "build_space", "value_from_wire"]


def _number(value: Any) -> Any:
    """A bound as JSON: non-finite floats as strings ("inf", "-inf", "nan")."""
    if isinstance(value, float) and not np.isfinite(value):
        return "nan" if np.isnan(value) else ("inf" if value > 0 else "-inf")
    return value


def _bounds(array: np.ndarray) -> Any:
    def walk(value: Any) -> Any:
        return [walk(v) for v in value] if isinstance(value, list) else _number(value)

    return walk(array.tolist())


def describe_space(space: spaces.Space[Any]) -> dict[str, Any]:
    """A JSON description of ``space`` (``build_space`` reads it back)."""
    if isinstance(space, spaces.Dict):
        return {"type": "Dict", "spaces": {str(k): describe_space(v) for k, v in space.spaces.items()}}
    if isinstance(space, spaces.Tuple):
        return {"type": "Tuple", "spaces": [describe_space(s) for s in space.spaces]}
    if isinstance(space, spaces.Box):
        return {"type": "Box", "low": _bounds(space.low), "high": _bounds(space.high),
                "shape": list(space.shape), "dtype": str(space.dtype)}
    if isinstance(space, spaces.Discrete):
        return {"type": "Discrete", "n": int(space.n), "start": int(space.start)}
    if isinstance(space, spaces.Text):
        return {"type": "Text", "min_length": int(space.min_length), "max_length": int(space.max_length),
                "charset": "".join(sorted(space.character_set))}
    if isinstance(space, spaces.MultiBinary):
        return {"type": "MultiBinary", "n": np.asarray(space.n).tolist()}
    if isinstance(space, spaces.MultiDiscrete):
        return {"type": "MultiDiscrete", "nvec": space.nvec.tolist(), "start": space.start.tolist(),
                "dtype": str(space.dtype)}
    raise TypeError(f"cannot describe a {type(space).__name__} space on the wire")


def _array(values: Any, dtype: str) -> np.ndarray:
    return np.asarray(np.asarray(values, dtype=object).astype(float) if dtype.startswith("float") else values,
                      dtype=dtype)


def build_space(description: dict[str, Any]) -> spaces.Space[Any]:
    """The Gymnasium space ``describe_space`` described."""
    kind = description.get("type")
    if kind == "Dict":
        return spaces.Dict({k: build_space(v) for k, v in description["spaces"].items()})
    if kind == "Tuple":
        return spaces.Tuple([build_space(v) for v in description["spaces"]])
    if kind == "Box":
        dtype = description["dtype"]
        return spaces.Box(low=_array(description["low"], dtype), high=_array(description["high"], dtype),
                          shape=tuple(description["shape"]), dtype=np.dtype(dtype).type)
    if kind == "Discrete":
        return spaces.Discrete(int(description["n"]), start=int(description["start"]))
    if kind == "Text":
        return spaces.Text(max_length=int(description["max_length"]), min_length=int(description["min_length"]),
                           charset=description["charset"])
    if kind == "MultiBinary":
        return spaces.MultiBinary(description["n"])
    if kind == "MultiDiscrete":
        dtype = description["dtype"]
        return spaces.MultiDiscrete(np.asarray(description["nvec"], dtype=dtype), dtype=np.dtype(dtype).type,
                                    start=np.asarray(description["start"], dtype=dtype))
    raise ValueError(f"unknown space type on the wire: {kind!r}")


def value_from_wire(space: spaces.Space[Any], value: Any) -> Any:
    """A JSON value (as ``rsigym.records.to_jsonable`` wrote it) as a member of ``space``: arrays for
    ``Box`` and the multi spaces, numpy integers for ``Discrete``, tuples for ``Tuple``."""
    if isinstance(space, spaces.Dict) and isinstance(value, dict):
        return {k: value_from_wire(space.spaces[k], v) if k in space.spaces else v for k, v in value.items()}
    if isinstance(space, spaces.Tuple) and isinstance(value, list):
        return tuple(value_from_wire(s, v) for s, v in zip(space.spaces, value))
    if isinstance(space, spaces.Box):
        return _array(value, str(space.dtype)).reshape(space.shape)
    if isinstance(space, spaces.Discrete) and isinstance(value, int):
        return np.int64(value)
    if isinstance(space, (spaces.MultiBinary, spaces.MultiDiscrete)):
        return np.asarray(value, dtype=space.dtype)
    return value
