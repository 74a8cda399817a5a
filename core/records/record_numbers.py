"""Numbers in records: strict JSON has no NaN or Infinity, so records store the markers ``"nan"``,
``"inf"`` and ``"-inf"`` (``rsigym.records.trajectory.to_jsonable`` writes them) and readers turn them back
into floats here. A hostile line's bare ``NaN`` or ``Infinity`` (which Python's json reads) is read
as the marker first; a NaN where an integer belongs (a seed, a repetition) makes the line
unreadable, so it is set aside (``records.jsonl.bad``), never shown as a blank page.
"""

from __future__ import annotations

import math
from typing import Any

from .action_limits import short_repr

__all__ = ["non_finite_marker", "read_number", "read_int"]

_NON_FINITE = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def non_finite_marker(constant: str) -> str:
    """``json.loads(..., parse_constant=non_finite_marker)``: a hostile line's bare ``NaN`` or
    ``Infinity`` (not JSON, but Python's json reads it) becomes the marker a record stores."""
    return {"NaN": "nan", "Infinity": "inf", "-Infinity": "-inf"}[constant]


def read_number(value: Any, field_name: str) -> Any:
    """A numeric field of a record as read from disk: a number (an int stays an int), or a
    non-finite marker (``"nan"``, ``"inf"``, ``"-inf"``) read back as that float; anything else is a
    ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise ValueError(f"{field_name} is not a number: {short_repr(value)}")
    if isinstance(value, str):
        if value not in _NON_FINITE:
            raise ValueError(f"{field_name} is not a number: {short_repr(value)}")
        return _NON_FINITE[value]
    return value


def read_int(value: Any, field_name: str) -> int:
    """An integer field of a record (seed, rep, step index): NaN or text there is a ``ValueError``."""
    if isinstance(value, bool) or not isinstance(value, int):
        raise ValueError(f"{field_name} is not an integer: {short_repr(value)}")
    return value
