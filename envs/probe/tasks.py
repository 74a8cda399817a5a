"""Probe tasks: each secret number is defined by a tiny oracle program run in the sandbox."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass

from rsigym.spaces import split_task_ids

__all__ = ["ProbeTask", "make_task", "task_ids", "ORACLE_TEMPLATE", "parse_task_id"]

# The oracle is a program, not a lookup, so every answer check really executes untrusted-style
# code in the sandbox. It prints one word per guess given: higher, lower or
# correct.
ORACLE_TEMPLATE = """\
import sys
SECRET = ({a} * {b} + {c}) % {span} + {low}
for arg in sys.argv[1:]:
    guess = int(arg)
    print("higher" if guess < SECRET else "lower" if guess > SECRET else "correct")
"""

SPLITS = {"train": range(0, 100), "test": range(100, 150)}


@dataclass(frozen=True)
class ProbeTask:
    task_id: str
    low: int
    high: int
    oracle_source: str
    secret: int  # known to the env and graders only; the agent never sees it

    @property
    def oracle_sha256(self) -> str:
        return hashlib.sha256(self.oracle_source.encode()).hexdigest()


def parse_task_id(task_id: str) -> int:
    prefix, _, number = task_id.partition("-")
    if prefix != "probe" or not number.isdigit():
        raise ValueError(f"not a probe task id: {task_id!r} (expected probe-NNN)")
    return int(number)


def make_task(task_id: str, low: int = 0, high: int = 100) -> ProbeTask:
    """Build a task deterministically from its id and range (no randomness, no global state)."""
    index = parse_task_id(task_id)
    digest = hashlib.sha256(f"probe/{index}".encode()).digest()
    a, b, c = (int.from_bytes(digest[i:i + 4], "big") % 9973 for i in (0, 4, 8))
    span = high - low + 1
    source = ORACLE_TEMPLATE.format(a=a, b=b, c=c, span=span, low=low)
    return ProbeTask(task_id, low, high, source, secret=(a * b + c) % span + low)


def task_ids(split: str | None = None) -> list[str]:
    return split_task_ids("probe", "probe", SPLITS, split)
