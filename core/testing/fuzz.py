"""Hostile actions for any env: hypothesis strategies and one fuzz loop (needs ``hypothesis``).

The actions are those of the review that made ``ToolUse-v0`` raise: unhashable values
(``{"tool": ["x"]}``), unknown or null kinds, missing keys, nesting 1,000 deep, strings of
megabytes, integers of thousands of digits, NaN and infinities, non-string keys, objects that are
no JSON at all (bytearray, range, complex, sets, also inside a tool call's arguments); plus
valid-shaped actions drawn from the env's own ``action_schema`` and typed actions from its
``action_space``, whole or with one part broken. ``step_checked`` is the check every fuzzed step
must pass: no exception, a finite reward, the observation inside its space, an ``info["error"]``
that is a non-empty string, a JSON ``info`` and a JSON ``snapshot()``.
"""

from __future__ import annotations

import json
import time
import traceback
from dataclasses import dataclass, field
from typing import Any, Callable

import gymnasium as gym
import numpy as np
from hypothesis import HealthCheck, Phase, given, settings
from hypothesis import strategies as st

from rsigym.records.action_limits import short_repr

from .steps import step_checked  # re-exported: it lived here

__all__ = ["actions_for", "from_schema", "hostile_values", "PYTHON_OBJECTS", "FuzzResult", "fuzz_env",
           "step_checked", "Episodes"]


# -- strategies ----------------------------------------------------------------------------------

def _nested(depth: int, kind: str) -> Any:
    value: Any = "bottom"
    for _ in range(depth):  # built in a loop: a recursive builder would overflow first
        value = [value] if kind == "list" else {"k": value}
    return value


class _Opaque:
    """An object no JSON encoder knows."""

    def __repr__(self) -> str:
        return "<opaque>"


# What a Python agent may put anywhere in an action: objects with no JSON form (issue 27, item 8).
PYTHON_OBJECTS = st.sampled_from([bytearray(b"\x00ab"), bytearray(), range(3), range(10**12), complex(1, 2),
                                  complex(float("nan"), float("inf")), {1, 2}, frozenset({"a", "b"}), {3.5, "x"},
                                  [range(2), {1}], {"inner": bytearray(b"x")}, (complex(0, 1),)])

_SCALARS = (st.none() | st.booleans() | st.integers(-10**6, 10**6) | st.floats()
            | st.text(max_size=20) | st.binary(max_size=8))


def hostile_values() -> st.SearchStrategy[Any]:
    """Values no env should accept as a whole action, or as one part of one."""
    return st.one_of(
        _SCALARS,
        st.recursive(_SCALARS, lambda c: st.lists(c, max_size=4) | st.dictionaries(st.text(max_size=6), c, max_size=4),
                     max_leaves=10),
        st.builds(_nested, st.integers(33, 1500), st.sampled_from(["list", "dict"])),
        st.integers(100_000, 2_500_000).map(lambda n: "x" * n),
        st.sampled_from([2**64, -(2**70), 10**5000, float("nan"), float("inf"), -float("inf")]),
        st.sampled_from(["\x00", "\ud800", "\u202e" * 10, "null", "[]", "{}", "NaN", '{"a": [1, 2'], ),
        st.builds(_Opaque),
        PYTHON_OBJECTS,
        st.sampled_from([{1, 2}, frozenset({"a"}), (1, 2), b"\xff\xfe", np.arange(3), np.array([np.nan]),
                         np.array([[1, 2]], dtype=object), {(1, 2): "tuple key"}, {1: "int key"},
                         {None: 1}]),
    )


def _words(schema: Any) -> tuple[list[str], list[Any]]:
    """Property names and enum/const values found anywhere in a schema."""
    keys: set[str] = set()
    values: list[Any] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, dict):
            keys.update(k for k in node.get("properties", {}) if isinstance(k, str))
            if "const" in node:
                values.append(node["const"])
            values.extend(node.get("enum", []))
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    unique = []
    for value in values:
        if value not in unique:
            unique.append(value)
    return sorted(keys), unique


def from_schema(schema: dict[str, Any], depth: int = 0) -> st.SearchStrategy[Any]:
    """Valid instances of the subset of JSON Schema the env action schemas use."""
    if depth > 6:
        return st.none()
    if "const" in schema:
        return st.just(schema["const"])
    if "enum" in schema:
        return st.sampled_from(schema["enum"])
    for key in ("oneOf", "anyOf"):
        if key in schema:
            return st.one_of(*(from_schema(s, depth + 1) for s in schema[key]))
    kind = schema.get("type", "object")
    if kind == "object":
        properties = schema.get("properties", {})
        required = set(schema.get("required", []))
        if not properties:
            return st.dictionaries(st.text(max_size=6), _SCALARS, max_size=3)
        return st.fixed_dictionaries(
            {k: from_schema(v, depth + 1) for k, v in properties.items() if k in required},
            optional={k: from_schema(v, depth + 1) for k, v in properties.items() if k not in required})
    if kind == "integer":
        return st.integers(schema.get("minimum", -10**6), schema.get("maximum", 10**6))
    if kind == "number":
        return st.floats(schema.get("minimum", -1e6), schema.get("maximum", 1e6))
    if kind == "string":
        return st.text(min_size=schema.get("minLength", 0), max_size=min(schema.get("maxLength", 40), 40))
    if kind == "boolean":
        return st.booleans()
    if kind == "array":
        # at most 4 items, unless the schema needs more (ExperimentForecast wants exactly 16)
        min_items = schema.get("minItems", 0)
        return st.lists(from_schema(schema.get("items", {}), depth + 1), min_size=min_items,
                        max_size=max(min(schema.get("maxItems", 4), 4), min_items))
    return _SCALARS


def _json_text(value: Any) -> str:
    try:
        return json.dumps(value, default=repr)
    except (RecursionError, ValueError, TypeError):  # too deep, or an int of 5,000 digits
        return "[" * 2000 + "]" * 2000


def _sampled(space: gym.Space[Any], seed: int) -> Any:
    space.seed(seed)
    return space.sample()


def _broken(action: Any, data: st.DataObject) -> Any:
    """One key of a dict action dropped, or its value replaced by a hostile one."""
    if not isinstance(action, dict) or not action:
        return action
    action = dict(action)
    key = data.draw(st.sampled_from(sorted(action, key=repr)))
    if data.draw(st.booleans()):
        del action[key]
    else:
        action[key] = data.draw(hostile_values())
    return action


def actions_for(env: gym.Env[Any, Any]) -> st.SearchStrategy[Any]:
    """Valid-shaped, typed, broken and hostile actions for ``env``."""
    schema = getattr(env.unwrapped, "action_schema", None) or {}
    keys, words = _words(schema)
    word_or_hostile = st.sampled_from(words) | hostile_values() if words else hostile_values()
    valid = from_schema(schema) if schema else st.none()
    typed = st.integers(0, 2**32 - 1).map(lambda seed: _sampled(env.action_space, seed))
    keyed = (st.dictionaries(st.sampled_from(keys), word_or_hostile, max_size=len(keys) + 1)
             if keys else hostile_values())

    @st.composite
    def broken(draw: st.DrawFn) -> Any:
        return _broken(draw(valid | typed), draw(st.data()))

    @st.composite
    def deep_inside(draw: st.DrawFn) -> Any:  # a valid shape with a hostile value under a known key
        action = draw(valid)
        if isinstance(action, dict) and action:
            key = draw(st.sampled_from(sorted(action)))
            action = {**action, key: draw(st.builds(_nested, st.integers(33, 1200), st.sampled_from(["list", "dict"])))}
        return action

    @st.composite
    def python_objects_inside(draw: st.DrawFn) -> Any:
        """A valid shape with a Python object as one value, or as one value of a mapping inside
        it (a tool call's arguments): the schema check must convert or refuse it, and the env's
        snapshot stay serialisable."""
        action = draw(valid | typed)
        if isinstance(action, dict) and action:
            key = draw(st.sampled_from(sorted(action, key=repr)))
            inner = action[key]
            if isinstance(inner, dict) and draw(st.booleans()):
                inner_keys = sorted((k for k in inner if isinstance(k, str)), key=repr)
                use_known = bool(inner_keys) and draw(st.booleans())
                names: st.SearchStrategy[str] = st.sampled_from(inner_keys) if use_known else st.text(max_size=6)
                inner_key = draw(names)
                action = {**action, key: {**inner, inner_key: draw(PYTHON_OBJECTS)}}
            else:
                action = {**action, key: draw(PYTHON_OBJECTS)}
        return action

    as_text = (valid | keyed).map(_json_text) | st.builds(
        lambda n: "[" * n + "]" * n, st.integers(1000, 200_000))
    return st.one_of(valid, typed, broken(), deep_inside(), python_objects_inside(), keyed, hostile_values(), as_text)


# -- the loop ------------------------------------------------------------------------------------

@dataclass
class FuzzResult:
    env_id: str
    label: str
    actions: int = 0
    exceptions: int = 0
    error_observations: int = 0
    resets: int = 0
    seconds: float = 0.0       # wall time, drawing the actions included
    step_seconds: float = 0.0  # inside env.step and env.reset only
    failures: list[str] = field(default_factory=list)  # the first few, with the action that caused them


class Episodes:
    """One env, reset with a fresh seed whenever an episode ends."""

    def __init__(self, env: gym.Env[Any, Any]) -> None:
        self.env, self.resets, self.done = env, 0, True

    def step(self, action: Any) -> dict[str, Any]:
        if self.done:
            self.env.reset(seed=self.resets)
            self.resets += 1
        _, _, terminated, truncated, info = step_checked(self.env, action)
        self.done = terminated or truncated
        return info


def fuzz_env(make_env: Callable[[], gym.Env[Any, Any]], n_actions: int, *, env_id: str = "", label: str = "",
             keep_failures: int = 5) -> FuzzResult:
    """Step ``n_actions`` hypothesis-drawn actions through the env ``make_env()`` returns; count
    exceptions (the failed check or the env's own), never raise."""
    env = make_env()
    episodes = Episodes(env)
    result = FuzzResult(env_id or getattr(env.spec, "id", "") or type(env.unwrapped).__name__, label)

    @settings(max_examples=n_actions, database=None, derandomize=True, deadline=None,
              phases=[Phase.generate], suppress_health_check=list(HealthCheck))
    @given(actions_for(env))
    def one(action: Any) -> None:
        result.actions += 1
        started = time.perf_counter()
        try:
            info = episodes.step(action)
        except Exception as exc:  # counted, and the episode restarted
            result.step_seconds += time.perf_counter() - started
            result.exceptions += 1
            episodes.done = True
            if len(result.failures) < keep_failures:
                result.failures.append(f"{type(exc).__name__}: {str(exc)[:200]} <- {short_repr(action, 200)}\n"
                                       + "".join(traceback.format_tb(exc.__traceback__)[-3:]))
            return
        result.step_seconds += time.perf_counter() - started
        result.error_observations += "error" in info

    started = time.perf_counter()
    try:
        one()
    finally:
        result.seconds = time.perf_counter() - started
        result.resets = episodes.resets
        env.close()
    return result
