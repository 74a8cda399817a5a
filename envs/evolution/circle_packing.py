"""``circle_packing_26``: pack 26 disjoint circles in the unit square, maximising the sum of radii.

A candidate defines ``pack()`` returning ``(centres, radii)``: 26 (x, y) pairs and 26 radii. The
sandboxed runner only calls it and reports the packing; ``check_packing`` (host side) rejects
non-finite values first, then a wrong count, negative radii, circles leaving the square and
overlapping pairs, all with the one tolerance ``TOLERANCE``, and recomputes the sum of radii
itself (a score the candidate reports is ignored). Deterministic; full evaluation
only. References: the best published sums are about 2.635 (AlphaEvolve 2.635, later 2.63598);
the seed program scores about 0.96.
"""

from __future__ import annotations

import math
from typing import Any, Sequence

import numpy as np

from .harness import RUNNER_PRELUDE
from .seeds_circles import CIRCLE_SEEDS
from .task_base import EvalResult, register_task

__all__ = ["CirclePackingTask", "check_packing", "TOLERANCE", "CIRCLES", "BEST_KNOWN"]

CIRCLES = 26
BEST_KNOWN = 2.635
# One tolerance for every constraint: a circle may poke out of the square, and two circles may
# overlap, by at most this much (touching circles computed in floating point must pass).
TOLERANCE = 1e-9

# The candidate side (see ``harness``): call pack() and report the packing; the host checks it.
CANDIDATE = RUNNER_PRELUDE + r'''
def _fail(text):
    emit({"error": text})
    _result.close()
    os._exit(0)


if LEFTOVERS:
    _fail(LEFTOVERS)
try:
    candidate = load_candidate()
except CandidateError as exc:
    _fail(str(exc))
try:
    out = candidate["pack"]()
    centres, radii = out
    import numpy as np
    centres = np.asarray(centres, dtype=float).tolist()
    radii = np.asarray(radii, dtype=float).tolist()
except BaseException as exc:
    _fail(describe("pack() failed", exc))
emit({"centres": centres, "radii": radii})
'''


def check_packing(centres: Any, radii: Any, n: int = CIRCLES, tol: float = TOLERANCE) -> tuple[float | None, str]:
    """``(sum of radii, "")`` for a valid packing, else ``(None, reason)``.

    Order of checks: shapes, finiteness, count, signs, containment, pairwise non-overlap.
    """
    try:
        xy = np.asarray(centres, dtype=float)
        r = np.asarray(radii, dtype=float)
    except (TypeError, ValueError) as exc:
        return None, f"centres and radii must be numbers: {exc}"
    if xy.ndim != 2 or xy.shape[1:] != (2,) or r.ndim != 1:
        return None, f"expected centres of shape (n, 2) and radii of shape (n,), got {xy.shape} and {r.shape}"
    if not (np.all(np.isfinite(xy)) and np.all(np.isfinite(r))):
        return None, "non-finite value (NaN or inf) in centres or radii"
    if len(xy) != n or len(r) != n:
        return None, f"expected {n} circles, got {len(xy)} centres and {len(r)} radii"
    if np.any(r < 0):
        return None, f"negative radius {float(r.min()):.6g} (circle {int(np.argmin(r))})"
    low = xy - r[:, None]
    high = xy + r[:, None]
    outside = np.maximum(-low, high - 1.0).max(axis=1)  # (n,): how far each circle leaves the square
    if np.any(outside > tol):
        i = int(np.argmax(outside))
        return None, f"circle {i} leaves the unit square by {float(outside[i]):.3g}"
    gaps = np.sqrt(((xy[:, None, :] - xy[None, :, :]) ** 2).sum(-1)) - (r[:, None] + r[None, :])  # (n, n)
    np.fill_diagonal(gaps, np.inf)
    if np.any(gaps < -tol):
        a, b = (int(v) for v in np.unravel_index(int(np.argmin(gaps)), gaps.shape))
        return None, f"circles {a} and {b} overlap by {float(-gaps[a, b]):.3g}"
    return float(math.fsum(float(v) for v in r)), ""


class CirclePackingTask:
    """The circle-packing task; see the module docstring."""

    name = "circle_packing_26"
    entry_point = "pack"
    has_partial = False
    partial_cost = 1.0
    description = (f"Define pack() returning (centres, radii): {CIRCLES} circles inside the unit square, "
                   "pairwise disjoint; the score is the sum of radii (best known about 2.635).")
    candidate_program = CANDIDATE
    harness_program: str | None = None  # no harness process: the reported packing is checked in full here

    def __init__(self, timeout_s: float = 20.0) -> None:
        if not timeout_s > 0:
            raise ValueError(f"timeout_s must be > 0, got {timeout_s}")
        self._timeout_s = float(timeout_s)
        self.seed_program = CIRCLE_SEEDS["rings"]
        self.library: dict[str, str] = dict(CIRCLE_SEEDS)

    def spec(self) -> dict[str, Any]:
        return {"name": self.name, "circles": CIRCLES, "tolerance": TOLERANCE, "timeout_s": self._timeout_s}

    def harness_input(self, kind: str) -> bytes:
        raise ValueError(f"{self.name} has no harness process")

    def check_kind(self, kind: str) -> None:
        if kind != "full":
            raise ValueError(f"{self.name} has only full evaluations, not {kind!r}")

    def timeout_s(self, kind: str) -> float:
        return self._timeout_s

    def cost(self, kind: str) -> float:
        return 1.0

    def score(self, kind: str, payload: dict[str, Any]) -> EvalResult:
        value, reason = check_packing(payload.get("centres"), payload.get("radii"))
        return EvalResult(kind, value, reason, 1.0, {"circles": CIRCLES} if value is not None else {})

    def merge(self, partial: EvalResult, rest: EvalResult) -> EvalResult:
        raise ValueError(f"{self.name} has no partial evaluation")


def valid_reference_packing() -> tuple[Sequence[Sequence[float]], Sequence[float]]:
    """A 5x5 grid of radius-0.1 circles plus one in a gap: a valid packing with sum 2.4 + 0.1*sqrt(2)."""
    centres = [[0.1 + 0.2 * i, 0.1 + 0.2 * j] for i in range(5) for j in range(5)] + [[0.2, 0.2]]
    radii = [0.1] * 25 + [0.1 * math.sqrt(2) - 0.1]
    return centres, radii


register_task(CirclePackingTask.name)(CirclePackingTask)
