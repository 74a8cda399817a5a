"""Size limits on agent actions, checked before any validation that could choke on them.

An agent may send anything: a list nested 10,000 deep, a 50 MB string, an integer with 5,000
digits. jsonschema, ``json.dumps`` and ``repr`` all recurse, so such a value raises
``RecursionError`` inside the env, and a huge integer cannot even be written as JSON text.
``action_limit_error`` walks the value with an explicit stack (it cannot overflow itself) and
says, in one line, which limit a value breaks; every env calls it (through ``JsonActions`` or
directly) before it looks at an action, and turns the message into an error observation.
"""

from __future__ import annotations

import reprlib
from dataclasses import dataclass
from typing import Any

import numpy as np

__all__ = ["ActionLimits", "DEFAULT_ACTION_LIMITS", "action_limit_error", "short_repr"]


@dataclass(frozen=True)
class ActionLimits:
    """Bounds on one action. The defaults are far above what any env's schema needs (the
    largest legitimate action, a DataSelection submission, holds about 5,000 integers)."""

    max_depth: int = 32            # containers inside containers
    max_items: int = 200_000       # values of every kind, containers included
    max_chars: int = 2_000_000     # characters of every string and key together
    max_abs_int: int = 2**63 - 1   # JSON integers beyond 64 bits are refused (SQLite, numpy)


DEFAULT_ACTION_LIMITS = ActionLimits()

def action_limit_error(action: Any, limits: ActionLimits = DEFAULT_ACTION_LIMITS) -> str | None:
    """None when ``action`` is within ``limits``, else a one-line reason naming the limit.

    Containers are dicts, lists, tuples, sets and numpy arrays; anything else that is not a
    JSON-like scalar is left for the schema check to reject (its message names the type).
    """
    stack: list[tuple[Any, int]] = [(action, 0)]
    items = chars = 0
    while stack:
        value, depth = stack.pop()
        items += 1
        if items > limits.max_items:
            return f"action too large: more than {limits.max_items} values"
        if isinstance(value, (str, bytes)):
            chars += len(value)
            if chars > limits.max_chars:
                return f"action too large: more than {limits.max_chars} characters of text"
        elif isinstance(value, (int, np.integer)) and not isinstance(value, bool):
            # abs() of a huge int is cheap; its decimal text (what the message would show) is not
            if abs(int(value)) > limits.max_abs_int:
                return f"integer out of range: more than 64 bits ({int(value).bit_length()} bits)"
        elif isinstance(value, np.ndarray):
            if value.ndim > limits.max_depth or value.size > limits.max_items - items:
                return f"action too large: an array of shape {value.shape}"
            if value.dtype == object:  # its elements may be containers themselves
                stack.extend((item, depth + value.ndim) for item in value.ravel().tolist())
            else:
                items += value.size
        elif isinstance(value, (dict, list, tuple, set, frozenset)):
            if depth >= limits.max_depth:
                return f"action nested too deep: more than {limits.max_depth} levels"
            if len(value) > limits.max_items - items:
                return f"action too large: more than {limits.max_items} values"
            if isinstance(value, dict):
                for key, item in value.items():
                    stack.append((key, depth + 1))
                    stack.append((item, depth + 1))
            else:
                stack.extend((item, depth + 1) for item in value)
    return None


def short_repr(value: Any, max_chars: int = 80) -> str:
    """``repr`` cut to ``max_chars``, for error messages that quote a bad value.

    Safe where ``repr`` is not: on values nested thousands deep (``reprlib`` stops at 3 levels)
    and on integers too long to print (``repr`` raises ValueError beyond 4,300 digits).
    """
    if isinstance(value, int) and value.bit_length() > 128:
        return f"<int of {value.bit_length()} bits>"
    short = reprlib.Repr()
    short.maxlevel, short.maxstring, short.maxother, short.maxlong = 3, 60, 60, 40
    try:
        text = short.repr(value)
    except Exception:  # a hostile __repr__, or an int reprlib still prints in full
        text = f"<{type(value).__name__}>"
    return text[:max_chars]
