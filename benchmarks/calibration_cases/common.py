"""The row every calibration case returns."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass
class Case:
    """One analysis run on one agent whose truth is known.

    ``expected`` and ``observed`` are short human-readable labels (e.g. "no effect" / "effect,
    CI [0.02, 0.11]"); ``ok`` is whether the observed verdict matches the expected one.
    """

    analysis: str
    agent: str
    expected: str
    observed: str
    ok: bool
    family: str = ""
    seconds: float = 0.0
