"""Depth and size caps on what a record stores of each step (observation, action, info).

An agent can emit anything (a list nested 500 deep, a 5 MB message) and an env can echo it back.
The env refuses such an action (``rsigym.records.action_limits``), but the record must still store what
happened without overflowing a reader's stack or writing a 10 MB line. ``cap_for_record``
returns a copy within the caps; every cut is marked in place, so a reader can tell a stored value
from a truncated one:

* a container deeper than ``max_depth`` becomes ``{"__rsigym_truncated__": "...", "preview": ...}``;
* a string beyond the budget keeps its head and ends with ``...[rsigym truncated: N chars]``.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np

from .action_limits import short_repr
from .redact import redacted_excerpt

__all__ = ["RecordLimits", "DEFAULT_RECORD_LIMITS", "TRUNCATED_KEY", "cap_for_record", "is_truncated"]

TRUNCATED_KEY = "__rsigym_truncated__"


@dataclass(frozen=True)
class RecordLimits:
    """Caps on one stored value (one step's observation, action or info)."""

    max_depth: int = 48               # containers inside containers (records nest a few levels)
    max_string_chars: int = 200_000   # one string (a long program or message is ~20k)
    max_total_chars: int = 1_000_000  # every string of the value together
    max_items: int = 100_000          # entries of one list or mapping


DEFAULT_RECORD_LIMITS = RecordLimits()


def is_truncated(value: Any) -> bool:
    """Whether a stored value (or anything inside it) was cut by ``cap_for_record``."""
    stack = [value]
    while stack:
        item = stack.pop()
        if isinstance(item, dict):
            if TRUNCATED_KEY in item:
                return True
            stack.extend(item.values())
        elif isinstance(item, list):
            stack.extend(item)
        elif isinstance(item, str) and item.endswith("chars]") and "...[rsigym truncated: " in item:
            return True
    return False


def cap_for_record(value: Any, limits: RecordLimits = DEFAULT_RECORD_LIMITS) -> Any:
    """A copy of ``value`` within ``limits``, cuts marked; values within them come back equal."""
    budget = [limits.max_total_chars]
    return _cap(value, 0, limits, budget)


def _cap_string(text: str, limits: RecordLimits, budget: list[int]) -> str:
    keep = min(limits.max_string_chars, max(budget[0], 0))
    if len(text) <= keep:
        budget[0] -= len(text)
        return text
    budget[0] -= keep
    return f"{redacted_excerpt(text, keep)}...[rsigym truncated: {len(text)} chars]"  # no secret cut in half


def _cap(value: Any, depth: int, limits: RecordLimits, budget: list[int]) -> Any:
    if isinstance(value, str):
        return _cap_string(value, limits, budget)
    if isinstance(value, bytes):
        return _cap_string(value.decode("utf-8", errors="replace"), limits, budget)
    if isinstance(value, np.ndarray):
        if value.ndim + depth > limits.max_depth or value.size > limits.max_total_chars:
            return {TRUNCATED_KEY: f"an array of shape {value.shape}", "preview": short_repr(value, 200)}
        return value
    if isinstance(value, (dict, list, tuple, set, frozenset)):
        if depth >= limits.max_depth:
            return {TRUNCATED_KEY: f"nested deeper than {limits.max_depth} levels",
                    "preview": short_repr(value, 200)}
        if isinstance(value, dict):
            capped = {(_cap_string(k, limits, budget) if isinstance(k, str) else k): _cap(v, depth + 1, limits, budget)
                      for k, v in list(value.items())[:limits.max_items]}
            if len(value) > limits.max_items:
                capped[TRUNCATED_KEY] = f"{len(value) - limits.max_items} more entries"
            return capped
        items = [_cap(v, depth + 1, limits, budget) for v in list(value)[:limits.max_items]]
        if len(value) > limits.max_items:
            items.append({TRUNCATED_KEY: f"{len(value) - limits.max_items} more items"})
        if isinstance(value, tuple):
            return tuple(items)
        if isinstance(value, (set, frozenset)):
            try:
                return type(value)(items)
            except TypeError:  # a marker (a dict) cannot go in a set
                return items
        return items
    return value
