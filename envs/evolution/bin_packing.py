"""``bin_packing_online`` (FunSearch-style): a priority function for online bin packing.

A candidate defines ``priority(item, bins)``: ``bins`` are the remaining capacities of every open
bin the item fits in, followed by one empty bin (capacity ``capacity``); the item goes to the
argmax. Instances are generated here, deterministically: ``instances`` lists of ``items`` sizes
drawn from Weibull(shape 3, scale 45), rounded and clipped to [1, capacity] (FunSearch's
OR-Weibull; capacity 100). Online is enforced (``online``): a harness process the candidate
cannot reach holds the instances and asks for one item at a time; it returns the bin of every
item, and the host checks the assignment (every bin within capacity) and counts the bins itself.

Score (maximised): minus the mean excess bins over the L1 lower bound ``ceil(sum / capacity)``,
in percent. Full evaluation: all instances. Partial: the first ``partial_instances``, costing
``partial_instances / instances`` of a full one. ``rest``: the others, merged with a partial.
"""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import numpy as np

from .online import CANDIDATE, HARNESS
from .seeds_binpack import BINPACK_SEEDS
from .task_base import EvalResult, register_task

__all__ = ["BinPackingTask", "generate_instances", "verify_assignment"]

WEIBULL_SHAPE, WEIBULL_SCALE = 3.0, 45.0

def generate_instances(instances: int, items: int, capacity: int, seed: int) -> list[np.ndarray]:
    """``instances`` arrays of ``items`` integer sizes (as float64), Weibull(3, 45) in [1, capacity]."""
    out = []
    for index in range(instances):
        rng = np.random.default_rng([seed, index])
        sizes = np.clip(np.round(rng.weibull(WEIBULL_SHAPE, items) * WEIBULL_SCALE), 1, capacity)
        out.append(sizes.astype(np.float64))
    return out


def verify_assignment(items: np.ndarray, assign: np.ndarray, capacity: float) -> tuple[int | None, str]:
    """``(bins used, "")`` when every item sits in a bin within capacity, else ``(None, reason)``."""
    if assign.shape != items.shape:
        return None, f"expected a bin for each of {len(items)} items, got {assign.shape[0]}"
    if assign.min(initial=0) < 0 or assign.max(initial=0) >= len(items):
        return None, "bin index out of range"
    loads = np.bincount(assign, weights=items)
    if np.any(loads > capacity + 1e-9):
        b = int(np.argmax(loads))
        return None, f"bin {b} holds {loads[b]:g} > capacity {capacity:g}"
    return int(np.count_nonzero(loads)), ""


class BinPackingTask:
    """Online bin packing with a partial evaluation; see the module docstring."""

    name = "bin_packing_online"
    entry_point = "priority"
    has_partial = True
    description = ("Define priority(item, bins) returning one score per bin (bins = remaining capacities of the "
                   "open bins the item fits, then one empty bin); the item goes to the highest score. Score: "
                   "minus the mean % of bins above the L1 lower bound (higher is better).")
    candidate_program = CANDIDATE
    harness_program: str | None = HARNESS

    def __init__(self, instances: int = 30, partial_instances: int = 8, items: int = 5000,
                 capacity: int = 100, instance_seed: int = 2024, timeout_s: float | None = None) -> None:
        if not 1 <= partial_instances < instances:
            raise ValueError(f"need 1 <= partial_instances < instances, got {partial_instances} and {instances}")
        if items < 1 or capacity < 2:
            raise ValueError(f"need items >= 1 and capacity >= 2, got {items} and {capacity}")
        self.instances, self.partial_instances = int(instances), int(partial_instances)
        self.items, self.capacity, self.instance_seed = int(items), int(capacity), int(instance_seed)
        self.partial_cost = self.partial_instances / self.instances
        # Generous: about 40 us per item and instance in the sandbox, plus interpreter start-up.
        self._timeout_s = float(timeout_s) if timeout_s else 10.0 + 2e-4 * self.items * self.instances
        self._items = generate_instances(self.instances, self.items, self.capacity, self.instance_seed)
        self.lower_bounds = [math.ceil(float(x.sum()) / self.capacity) for x in self._items]
        self.seed_program = BINPACK_SEEDS["first_fit"]
        self.library: dict[str, str] = dict(BINPACK_SEEDS)

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "instances": self.instances, "partial_instances": self.partial_instances,
                "items": self.items, "capacity": self.capacity, "instance_seed": self.instance_seed,
                "timeout_s": self._timeout_s}

    def harness_input(self, kind: str) -> bytes:
        """What the harness process reads on stdin: a JSON line, then the items as float64."""
        first, last = self._range(kind)
        header = {"first": first, "capacity": self.capacity, "items": [len(x) for x in self._items[first:last]]}
        return json.dumps(header).encode() + b"\n" + np.concatenate(self._items[first:last]).astype("<f8").tobytes()

    def check_kind(self, kind: str) -> None:
        self._range(kind)

    def _range(self, kind: str) -> tuple[int, int]:
        ranges = {"partial": (0, self.partial_instances), "full": (0, self.instances),
                  "rest": (self.partial_instances, self.instances)}
        if kind not in ranges:
            raise ValueError(f"unknown evaluation kind {kind!r}; known: {', '.join(ranges)}")
        return ranges[kind]

    def timeout_s(self, kind: str) -> float:
        first, last = self._range(kind)
        return 5.0 + self._timeout_s * (last - first) / self.instances

    def cost(self, kind: str) -> float:
        first, last = self._range(kind)
        return (last - first) / self.instances

    def score(self, kind: str, payload: dict[str, Any]) -> EvalResult:
        first, last = self._range(kind)
        encoded = payload.get("assignments")
        if payload.get("first") != first or not isinstance(encoded, list) or len(encoded) != last - first:
            return EvalResult(kind, None, "the harness returned a malformed result", self.cost(kind))
        excess: list[float] = []
        for index, text in zip(range(first, last), encoded):
            try:
                assign = np.frombuffer(base64.b64decode(text, validate=True), dtype=np.int32)
            except (ValueError, TypeError):
                return EvalResult(kind, None, "the harness returned a malformed assignment", self.cost(kind))
            bins, reason = verify_assignment(self._items[index], assign, float(self.capacity))
            if bins is None:
                return EvalResult(kind, None, f"instance {index}: {reason}", self.cost(kind))
            excess.append(100.0 * (bins - self.lower_bounds[index]) / self.lower_bounds[index])
        return EvalResult(kind, -float(np.mean(excess)), "", self.cost(kind), {"first": first, "excess_pct": excess})

    def merge(self, partial: EvalResult, rest: EvalResult) -> EvalResult:
        """The full result from a partial and a rest evaluation of the same program."""
        if not partial.ok:
            return partial
        if not rest.ok:
            return EvalResult("full", None, rest.reason, partial.cost + rest.cost)
        excess = list(partial.details["excess_pct"]) + list(rest.details["excess_pct"])
        return EvalResult("full", -float(np.mean(excess)), "", partial.cost + rest.cost,
                          {"first": 0, "excess_pct": excess})


register_task(BinPackingTask.name)(BinPackingTask)
