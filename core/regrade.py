"""Fixed-trajectory regrading: new grades on old records, old grades kept."""

from __future__ import annotations

import copy
from typing import Iterable

from rsigym.records.trajectory import Trajectory

from .grader import Grader, grade_record

__all__ = ["regrade"]


def regrade(records: Iterable[Trajectory], grader: Grader) -> list[Trajectory]:
    """Return copies of ``records`` with one more grade each, ``source="regrade"``.

    The trajectories themselves are untouched, so any score difference against the live grades
    comes from the grading rule alone (TRACE's fixed-trajectory regrading).
    """
    out = []
    for record in records:
        new = copy.deepcopy(record)
        new.grades.append(grade_record(grader, new, source="regrade"))
        out.append(new)
    return out
