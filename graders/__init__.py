"""Graders: the Grader protocol, the registry by name, fixed-trajectory regrading.

Third-party graders join through the entry-point group ``rsigym.graders``.
"""

from .base import (ENTRY_POINT_GROUP, NEEDS, Grader, available_graders, get_grader, grade_record,
                   register_grader)
from .blackbox import BlackBoxBestValue
from .probe import ProbeAnswerCheck, ProbeGuessEfficiency
from .regrade import regrade

__all__ = [
    "BlackBoxBestValue", "ENTRY_POINT_GROUP", "NEEDS", "Grader", "ProbeAnswerCheck",
    "ProbeGuessEfficiency", "available_graders", "get_grader", "grade_record", "register_grader", "regrade",
]
