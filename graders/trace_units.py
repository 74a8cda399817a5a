"""TRACE evidence per pair (``Unit``), what is missing, and the worst/best-case fillings of it.

Every pair becomes a ``Unit``: both graders' scores on both sides and whether the behaviour
changed. Pairs with a missing grade, and records left out of pairing (infra errors, records
without a partner; their behaviour is unknown), are the *holes*. ``fillings`` lists the ways to
fill every hole at once at an extreme: the original grader at its worst (baseline passes,
treatment fails) or best, the regrade at its worst, best, or equal on both sides (the hole is
then all grader), and an unknown behaviour as changed or not. A verdict that one filling
changes is withheld.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, replace
from typing import Sequence

from rsigym.records import Trajectory

from .trace import Pair, Pairs, behaviour_diff, join_key, matches_condition, record_score
from .trace_behaviour import Unit

__all__ = ["Missing", "Filling", "pair_units", "holes", "fillings", "fill"]


@dataclass(frozen=True)
class Missing:
    """What pairing and grading left out, for one agent x treatment."""

    ungraded_pairs: int
    infra_records: int
    unpaired_records: int
    duplicates: int = 0
    ungraded_regrade: int = 0  # pairs the regrade grader left without a score on a side

    def text(self) -> str:
        regrade = f", {self.ungraded_regrade} pairs without a regrade grade" if self.ungraded_regrade else ""
        return (f"{self.ungraded_pairs} ungraded pairs, {self.infra_records} infra-error records, "
                f"{self.unpaired_records} unpaired records, {self.duplicates} duplicates{regrade}")

    @property
    def any(self) -> bool:
        return bool(self.ungraded_pairs or self.infra_records or self.unpaired_records or self.ungraded_regrade)


def _scores(record: Trajectory | None, grader: str, regrade: str | None) -> tuple[float | None, float | None]:
    if record is None or record.termination == "infra_error":
        return None, None
    same = regrade == grader
    old = record_score(record, grader, "live" if same else None)
    new = record_score(record, regrade, "regrade" if same else None) if regrade else None
    return old, new


def pair_units(pairs: Sequence[Pair], grader: str, regrade: str | None) -> list[Unit]:
    """One ``Unit`` per pair (behaviour known, scores possibly None)."""
    units = []
    for pair in pairs:
        (b0, b1), (t0, t1) = _scores(pair.baseline, grader, regrade), _scores(pair.treatment, grader, regrade)
        units.append(Unit(pair.task_id, b0, t0, b1, t1, behaviour_diff(pair).changed))
    return units


def holes(units: Sequence[Unit], pairs: Pairs, grader: str, regrade: str | None, agent: str | None,
          baseline: str) -> list[Unit]:
    """Units with a missing score (the regrade's only when ``regrade``), and the left-out
    records of ``agent`` joined with their partner, if any, as units of unknown behaviour."""
    found = [u for u in units if _incomplete(u, regrade is not None)]
    joined: dict[str, dict[str, Trajectory]] = defaultdict(dict)
    for record in pairs.left_out:
        if agent is None or record.agent.id == agent:
            side = "baseline" if matches_condition(record.env.condition, baseline) else "treatment"
            joined[join_key(record)][side] = record
    for key in sorted(joined):
        sides = joined[key]
        (b0, b1), (t0, t1) = _scores(sides.get("baseline"), grader, regrade), _scores(sides.get("treatment"),
                                                                                    grader, regrade)
        task = str(next(iter(sides.values())).env.task_id)
        found.append(Unit(task, b0, t0, b1, t1, changed=False, imputed=True))  # imputed: behaviour unknown
    return found


def _incomplete(unit: Unit, with_regrade: bool) -> bool:
    return (unit.base is None or unit.treat is None
            or (with_regrade and (unit.base_regrade is None or unit.treat_regrade is None)))


@dataclass(frozen=True)
class Filling:
    """One extreme way to fill every hole: ``original`` worst | best; ``regrade`` worst | best
    | equal | None (no regrade); ``changed``: behaviour of a hole whose records are missing."""

    original: str
    regrade: str | None
    changed: bool

    def text(self) -> str:
        regrade = f", regrade {self.regrade}" if self.regrade else ""
        return f"original grader {self.original} case{regrade}, unknown behaviour {'changed' if self.changed else 'identical'}"


def fillings(with_regrade: bool) -> list[Filling]:
    """The extreme fillings: behaviour holes (both graders at an extreme, behaviour changed) and
    grader holes (the original at an extreme, the regrade equal, behaviour identical)."""
    if not with_regrade:
        return [Filling(o, None, c) for c in (True, False) for o in ("worst", "best")]
    return ([Filling(o, r, True) for o in ("worst", "best") for r in ("worst", "best")]
            + [Filling(o, "equal", False) for o in ("worst", "best")])


def fill(unit: Unit, how: Filling, low: float = 0.0, high: float = 1.0) -> Unit:
    """``unit`` with its missing scores and unknown behaviour filled as ``how`` says."""
    def side(value: float | None, extreme: str, baseline: bool) -> float:
        if value is not None:
            return value
        return high if (extreme == "worst") == baseline else low

    base, treat = side(unit.base, how.original, True), side(unit.treat, how.original, False)
    base_r, treat_r = unit.base_regrade, unit.treat_regrade
    if how.regrade == "equal" and (base_r is None or treat_r is None):
        known = base_r if base_r is not None else treat_r
        base_r = treat_r = high if known is None else known
    elif how.regrade in ("worst", "best"):
        base_r, treat_r = side(base_r, how.regrade, True), side(treat_r, how.regrade, False)
    changed = how.changed if unit.imputed else unit.changed
    return replace(unit, base=base, treat=treat, base_regrade=base_r, treat_regrade=treat_r, changed=changed)
