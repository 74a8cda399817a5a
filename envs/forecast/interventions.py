"""The intervention type, its near-duplicate group keys, and the lint over a catalogue.

An intervention changes a research environment's baseline config by a **diff** (knob -> new
value). Its **group key** names the change as ``component:knob:direction`` (``up``/``down`` for a
number, ``on``/``off`` for a switch, ``reseed``/``rename`` for placebos) or ``swap:<knob>=<value>``
for a categorical swap. Records in one group are near duplicates: the cross-environment condition
hides every record in a candidate's group, so a forecaster cannot look its answer up.

**Placebo** interventions change nothing the metric depends on (a logging interval, a run name),
or only redraw a seed whose effect averages to zero: their true gain is 0 by construction.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass, field
from typing import Any, Iterable, Mapping

__all__ = ["Intervention", "normalised_diff", "lint_catalogue", "GROUP_PATTERN"]

GROUP_PATTERN = re.compile(r"^(?:[a-z_]+:[a-z0-9_]+:(?:up|down|on|off|reseed|rename)|swap:[a-z0-9_]+=[a-z0-9_.\-]+)$")


@dataclass(frozen=True)
class Intervention:
    """One change to a research environment's baseline recipe.

    Attributes:
        id: ``<environment>/<slug>``, unique across the catalogue.
        text: what a researcher would write in a lab notebook.
        diff: knob -> new value, applied on top of the baseline config.
        group: the near-duplicate group key (see the module docstring).
        placebo: true gain 0 by construction.
    """

    id: str
    text: str
    diff: Mapping[str, Any] = field(default_factory=dict)
    group: str = ""
    placebo: bool = False

    @property
    def environment(self) -> str:
        return self.id.split("/", 1)[0]

    @property
    def component(self) -> str:
        return self.group.split(":", 1)[0]

    @property
    def knob(self) -> str:
        if self.group.startswith("swap:"):
            return self.group[5:].split("=", 1)[0]
        return self.group.split(":")[1]

    @property
    def direction(self) -> str:
        if self.group.startswith("swap:"):
            return "swap"
        return self.group.split(":")[2]


def _direction(baseline: Any, value: Any) -> str:
    if isinstance(value, bool) or isinstance(baseline, bool):
        return "on" if value else "off"
    if isinstance(value, (int, float)) and isinstance(baseline, (int, float)):
        if value == baseline:
            return "same"
        if value == 0:      # 0 disables a knob such as gradient clipping: off, not merely down
            return "off"
        return "up" if value > baseline else "down"
    return f"={value}"


def normalised_diff(diff: Mapping[str, Any], baseline: Mapping[str, Any]) -> frozenset[tuple[str, str]]:
    """The diff as a set of (knob, direction or ``=value``): what the group key must be a function of."""
    return frozenset((knob, _direction(baseline.get(knob), value)) for knob, value in diff.items())


def log_step(diff: Mapping[str, Any], baseline: Mapping[str, Any], knob: str) -> float:
    """log(new / old) of a positive numeric knob (0 when either is missing, zero or categorical)."""
    old, new = baseline.get(knob), diff.get(knob)
    if isinstance(old, bool) or isinstance(new, bool) or not isinstance(old, (int, float)) \
            or not isinstance(new, (int, float)) or old <= 0 or new <= 0:
        return 0.0
    return math.log(new / old)


def lint_catalogue(interventions: Iterable[Intervention], baselines: Mapping[str, Mapping[str, Any]]) -> list[str]:
    """Every problem of a catalogue, one line each (an empty list is a clean catalogue).

    Checks: ids unique and prefixed by a known environment; group keys well formed; every diff
    knob exists in its baseline and changes it; the same normalised diff implies the same group
    (within an environment and across environments that share the knob); a ``swap:k=v`` group
    sets ``k`` to ``v``; placebos sit in the ``placebo`` component and vice versa.
    """
    problems: list[str] = []
    seen: set[str] = set()
    group_of: dict[frozenset[tuple[str, str]], tuple[str, str]] = {}
    for iv in interventions:
        if iv.id in seen:
            problems.append(f"{iv.id}: duplicate id")
        seen.add(iv.id)
        baseline = baselines.get(iv.environment)
        if baseline is None:
            problems.append(f"{iv.id}: unknown environment {iv.environment!r}")
            continue
        if not GROUP_PATTERN.match(iv.group):
            problems.append(f"{iv.id}: group {iv.group!r} is not component:knob:direction or swap:knob=value")
        if not iv.diff:
            problems.append(f"{iv.id}: empty diff")
        for knob, value in iv.diff.items():
            if knob not in baseline:
                problems.append(f"{iv.id}: knob {knob!r} is not in the baseline config")
            elif baseline[knob] == value and type(baseline[knob]) is type(value):
                problems.append(f"{iv.id}: knob {knob!r} already is {value!r} in the baseline")
        if iv.group.startswith("swap:"):
            knob, _, value = iv.group[5:].partition("=")
            if str(iv.diff.get(knob)) != value:
                problems.append(f"{iv.id}: group {iv.group!r} but the diff sets {knob}={iv.diff.get(knob)!r}")
        if iv.placebo != (iv.component == "placebo"):
            problems.append(f"{iv.id}: placebo={iv.placebo} but group {iv.group!r}")
        key = normalised_diff(iv.diff, baseline)
        if key in group_of and group_of[key][0] != iv.group:
            other_group, other_id = group_of[key]
            problems.append(f"{iv.id}: same normalised diff as {other_id} but group {iv.group!r} != {other_group!r}")
        group_of.setdefault(key, (iv.group, iv.id))
    return problems
