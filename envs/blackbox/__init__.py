"""``rsigym/BlackBox-v0``: a kernel test fixture, budgeted maximisation of a synthetic objective
shaped like a hyperparameter search (see BlackBoxEnv)."""

from .env import VALUE_BOUND, BlackBoxEnv
from .objectives import OPTIMIZERS, BlackBoxTask, make_task, task_ids

__all__ = ["BlackBoxEnv", "BlackBoxTask", "OPTIMIZERS", "VALUE_BOUND", "make_task", "task_ids"]
