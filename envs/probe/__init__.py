"""``rsigym/Probe-v0``: the kernel's own number-guessing test fixture (see ProbeEnv)."""

from .env import PROBE_CONDITIONS, ProbeEnv, check_with_source, run_oracle, write_oracle
from .tasks import ProbeTask, make_task, task_ids

__all__ = ["ProbeEnv", "ProbeTask", "PROBE_CONDITIONS", "check_with_source", "make_task", "run_oracle", "task_ids", "write_oracle"]
