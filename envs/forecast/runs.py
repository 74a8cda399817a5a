"""What one training run of a research environment returns, and the one-thread guard it runs under."""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from typing import Iterator

import torch

__all__ = ["RunResult", "one_thread"]


@dataclass(frozen=True)
class RunResult:
    """The outcome of one seeded training run.

    Attributes:
        metric: the environment's metric (a loss, or an error rate), NaN when the run crashed.
        curve: the training loss (or metric) logged during the run, for the curve summary.
        crashed: the run diverged or failed; the archive floors its metric and marks it.
    """

    metric: float
    curve: list[float] = field(default_factory=list)
    crashed: bool = False


@contextlib.contextmanager
def one_thread() -> Iterator[None]:
    """Run torch on one intra-op thread (the archive's runs are timed and reproduced that way)."""
    before = torch.get_num_threads()
    torch.set_num_threads(1)
    try:
        yield
    finally:
        torch.set_num_threads(before)
