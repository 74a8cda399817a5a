"""``rsigym/CodeRepair-v0``: code repair on HumanEval with a co-updated world model choosing which
of 4 candidates gets the one online execution per round (see ``CodeRepairEnv``)."""

from .env import CODEREPAIR_CONDITIONS, TASKS, CodeRepairEnv
from .problems import Problem, Suite, build_suite

__all__ = ["CodeRepairEnv", "CODEREPAIR_CONDITIONS", "TASKS", "Problem", "Suite", "build_suite"]
