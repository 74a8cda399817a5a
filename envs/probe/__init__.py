"""``rsigym/Probe-v0``: the kernel's own number-guessing test fixture (see ProbeEnv)."""

from .env import PROBE_CONDITIONS, ProbeEnv, run_oracle
from .tasks import ProbeTask, make_task, task_ids

__all__ = ["ProbeEnv", "ProbeTask", "PROBE_CONDITIONS", "make_task", "run_oracle", "task_ids"]
