"""An episode's share of a run's cost limit, checked before every call of the one LLM client.

The run's cost guard (``rsigym.runner.guard``) admits an episode with a share of what is left under
``--cost-limit``; the episode runs inside ``metered(SpendMeter(share_usd))``. Every call of
``rsigym.llm.client.complete`` in that thread asks the meter first (``admit``) and charges what
it cost once it returns (``charge``: the provider's price, or the local count's where the
provider's usage could not be trusted). A call is refused once the episode has spent its share, so
the episode stops within one call of it instead of playing on to its end: a first episode of 10
calls against a provider whose price the guard could not yet know spent 2.15x a limit of 0.006 USD.

A call that costs nothing (a model without a price) is never refused: it cannot pass a cost limit.
A context variable, like the call deadline: each episode thread has its own meter.
"""

from __future__ import annotations

import contextlib
import contextvars
import math
from dataclasses import dataclass
from typing import Iterator

__all__ = ["SpendMeter", "metered", "current_meter", "COST_LIMIT_KIND", "COST_LIMIT_PREFIX"]

COST_LIMIT_KIND = "cost_limit"  # ``LLMError.kind`` of a call refused by the meter
COST_LIMIT_PREFIX = "cost limit:"  # how its message (and so the episode's recorded error) starts


@dataclass
class SpendMeter:
    """What one episode may spend (``cap_usd``) and has spent (``spent_usd``) on model calls."""

    cap_usd: float
    spent_usd: float = 0.0
    calls: int = 0

    def __post_init__(self) -> None:
        self.cap_usd = self.cap_usd if math.isfinite(self.cap_usd) and self.cap_usd > 0 else 0.0

    def refusal(self) -> str | None:
        """Why the next call may not be sent, or None when it may."""
        if self.spent_usd > 0 and self.spent_usd >= self.cap_usd:
            return (f"this episode's share of the run's cost limit ({self.cap_usd:.6f} USD) is "
                    f"spent ({self.spent_usd:.6f} USD in {self.calls} calls); the call was not sent")
        return None

    def charge(self, cost_usd: float) -> None:
        """Count one answered call (a negative or NaN price buys no room)."""
        self.calls += 1
        self.spent_usd += cost_usd if math.isfinite(cost_usd) and cost_usd > 0 else 0.0


_METER: contextvars.ContextVar[SpendMeter | None] = contextvars.ContextVar("rsigym_spend_meter", default=None)


@contextlib.contextmanager
def metered(meter: SpendMeter | None) -> Iterator[None]:
    """Within the block, this thread's model calls ask ``meter`` first and are charged to it
    (None: no cap)."""
    if meter is None:
        yield
        return
    token = _METER.set(meter)
    try:
        yield
    finally:
        _METER.reset(token)


def current_meter() -> SpendMeter | None:
    """The calling thread's meter, or None (no cost limit)."""
    return _METER.get()
