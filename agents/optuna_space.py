"""Gymnasium action spaces as Optuna search spaces, and Optuna trial params back to actions.

An env's typed action space gives the bounds and kinds; its JSON ``action_schema`` adds what a
Gymnasium space cannot say: a log scale (``"x-log": true`` or ``"format": "log"``), a set of
allowed values (``enum``), tighter ``minimum``/``maximum``. Actions built from trial params are
valid for both, so they pass ``action_space.contains`` and the env's ``JsonActions``.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
from gymnasium import spaces

if TYPE_CHECKING:
    from optuna.distributions import BaseDistribution

__all__ = ["optuna_distributions", "action_from_params"]

_SCALAR_SHAPES = ((), (1,))


def optuna_distributions(action_space: spaces.Space[Any],
                         action_schema: dict[str, Any] | None = None) -> dict[str, BaseDistribution]:
    """One Optuna distribution per key of a ``Dict`` action space.

    ``Discrete`` maps to ``IntDistribution`` (from ``start``), a scalar float ``Box`` to
    ``FloatDistribution``, an integer ``Box`` to ``IntDistribution``; a key whose schema has an
    ``enum`` maps to ``CategoricalDistribution`` over its values. ``log=True`` when the schema
    property has ``"x-log": true`` or ``"format": "log"``.

    Raises:
        TypeError: the space is not a ``Dict``, or a key holds a space with no Optuna
            counterpart (nested ``Dict``, ``Text``, ``MultiBinary``, ...); the message names it.
        ValueError: a ``Box`` that is not scalar, unbounded, empty after the schema's bounds,
            log-scaled with a bound <= 0, or an ``enum`` value outside the space; names the key.
    """
    from optuna.distributions import CategoricalDistribution, FloatDistribution, IntDistribution

    action_space = _dict_space(action_space)
    properties = _properties(action_space, action_schema)
    distributions: dict[str, BaseDistribution] = {}
    for key, space in action_space.spaces.items():
        prop = properties.get(key) or {}
        log = prop.get("x-log") is True or prop.get("format") == "log"
        low, high, integral = _bounds(key, space, prop)
        if "enum" in prop:
            distributions[key] = CategoricalDistribution(_choices(key, space, prop["enum"], low, high))
            continue
        if log and low <= 0:
            raise ValueError(f"action key {key!r}: a log scale needs a positive lower bound, got {low}")
        if integral:
            distributions[key] = IntDistribution(int(low), int(high), log=log)
        else:
            distributions[key] = FloatDistribution(low, high, log=log)
    return distributions


def action_from_params(params: dict[str, Any], action_space: spaces.Space[Any],
                       action_schema: dict[str, Any] | None = None) -> dict[str, Any]:
    """The action for a trial's params: ints for ``Discrete``, arrays of the ``Box`` dtype.

    A float cast to a narrower dtype (``float32(1e-5) < 1e-5``) is moved one step inwards, so the
    action stays inside the schema's bounds as well as the space's.
    """
    action_space = _dict_space(action_space)
    properties = _properties(action_space, action_schema)
    action: dict[str, Any] = {}
    for key, space in action_space.spaces.items():
        if key not in params:
            raise ValueError(f"trial params lack action key {key!r} (got {sorted(params)})")
        value = params[key]
        if isinstance(space, spaces.Discrete):
            named = _named_choices(space, (properties.get(key) or {}).get("enum"))
            action[key] = str(value) if named else int(value)
            continue
        assert isinstance(space, spaces.Box)  # _bounds admits only Discrete and Box
        low, high, _ = _bounds(key, space, properties.get(key) or {})
        x = np.asarray(value, dtype=space.dtype).reshape(space.shape)
        if np.issubdtype(space.dtype, np.floating) and not low <= x.item() <= high:
            inwards = np.inf if x.item() < low else -np.inf
            x = np.asarray(np.nextafter(x, np.asarray(inwards, dtype=space.dtype))).reshape(space.shape)
        action[key] = x
    return action


def _dict_space(action_space: spaces.Space[Any]) -> spaces.Dict:
    if not isinstance(action_space, spaces.Dict):
        raise TypeError(f"Optuna agents need a Dict action space, got {action_space}")
    return action_space


def _properties(action_space: spaces.Dict, action_schema: dict[str, Any] | None) -> dict[str, Any]:
    """The schema's properties, after checking that the schema and the space name the same keys."""
    schema = action_schema or {}
    properties: dict[str, Any] = schema.get("properties") or {}
    missing = [k for k in schema.get("required", []) if k not in action_space.spaces]
    if missing:
        raise ValueError(f"action schema requires key {missing[0]!r}, which the action space lacks")
    if schema.get("additionalProperties") is False:
        extra = [k for k in action_space.spaces if k not in properties]
        if extra:
            raise ValueError(f"action key {extra[0]!r} is in the action space but not allowed by the schema")
    return properties


def _bounds(key: str, space: spaces.Space[Any], prop: dict[str, Any]) -> tuple[float, float, bool]:
    """(low, high, integral) of a key: the space's bounds narrowed by the schema's."""
    if isinstance(space, spaces.Discrete):
        low, high, integral = float(space.start), float(space.start + space.n - 1), True
    elif isinstance(space, spaces.Box):
        if space.shape not in _SCALAR_SHAPES:
            raise ValueError(f"action key {key!r}: only scalar Box spaces map to Optuna, got shape {space.shape}")
        if np.issubdtype(space.dtype, np.integer):
            integral = True
        elif np.issubdtype(space.dtype, np.floating):
            integral = False
        else:
            raise TypeError(f"action key {key!r}: Box of dtype {space.dtype} has no Optuna distribution")
        low, high = float(space.low.item()), float(space.high.item())
        if not (math.isfinite(low) and math.isfinite(high)):
            raise ValueError(f"action key {key!r}: Optuna needs finite bounds, got [{low}, {high}]")
    elif isinstance(space, spaces.Dict):
        raise TypeError(f"action key {key!r}: nested Dict spaces are not supported; flatten them")
    else:
        raise TypeError(f"action key {key!r}: {type(space).__name__} spaces have no Optuna "
                        f"distribution (use Box or Discrete)")
    low = max(low, float(prop.get("minimum", low)))
    high = min(high, float(prop.get("maximum", high)))
    if integral:
        low, high = float(math.ceil(low)), float(math.floor(high))
    if low > high:
        raise ValueError(f"action key {key!r}: empty range [{low}, {high}] after the schema's bounds")
    return low, high, integral


def _named_choices(space: spaces.Space[Any], enum: Any) -> bool:
    """A ``Discrete(n)`` whose schema names its n values (``optimizer: enum [adam, sgd, ...]``):
    Optuna samples the names, which is the JSON action the env accepts."""
    return (isinstance(space, spaces.Discrete) and isinstance(enum, list) and len(enum) == int(space.n)
            and all(isinstance(v, str) for v in enum))


def _choices(key: str, space: spaces.Space[Any], enum: Any, low: float, high: float) -> tuple[Any, ...]:
    """The schema's enum, checked to lie inside the space (numbers, or one name per Discrete value)."""
    if not isinstance(enum, list) or not enum:
        raise ValueError(f"action key {key!r}: enum must be a non-empty list, got {enum!r}")
    if _named_choices(space, enum):
        return tuple(enum)
    integral = isinstance(space, spaces.Discrete) or np.issubdtype(space.dtype, np.integer)
    for value in enum:
        number = isinstance(value, (int, float)) and not isinstance(value, bool)
        if not number or (integral and value != int(value)) or not low <= value <= high:
            raise ValueError(f"action key {key!r}: enum value {value!r} is not in the action space {space}")
    return tuple(enum)
