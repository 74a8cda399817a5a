"""One switch that makes a training run repeat bit for bit on the same machine.

Every random draw in ``agents/train`` already comes from a seeded ``torch.Generator`` or from the
global generator seeded just before the weights are made; what is left is the arithmetic. Matrix
products split their sums over intra-op threads, so a different thread count adds in a different
order and the losses differ in the last bits, which training amplifies (an SFT loss of 1.38299 on
one thread was 1.37957 on two). Hence the thread count is part of a run's settings, and
deterministic algorithms are required (on CPU this refuses the few kernels without a deterministic
path instead of letting them vary silently).
"""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager

import torch

__all__ = ["deterministic"]


@contextmanager
def deterministic(threads: int) -> Iterator[None]:
    """Within the block: torch's intra-op threads pinned to ``threads``, deterministic algorithms
    required. Both are process-wide settings, so they are put back afterwards (a test process or a
    caller's own torch code keeps its own)."""
    if threads < 1:
        raise ValueError(f"threads must be >= 1, got {threads}")
    previous_mode, previous_threads = torch.are_deterministic_algorithms_enabled(), torch.get_num_threads()
    torch.use_deterministic_algorithms(True)
    torch.set_num_threads(threads)
    try:
        yield
    finally:
        torch.use_deterministic_algorithms(previous_mode)
        torch.set_num_threads(previous_threads)
