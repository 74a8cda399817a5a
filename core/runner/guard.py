"""Run guard: when to start no further episode (a cost limit that holds, or errors that repeat).

Cost limit. Checking the spending only after each record lets every episode already in flight
finish past the limit: with 2 workers x 16 in flight a limit of 0.001 USD once spent 0.0046. So
each episode *reserves* a share of what is left under the limit before it starts, and starts only
if its estimated cost fits in what no other episode has reserved. The estimate is the dearest
finished episode of the same agent seen in this run (all roles, LiteLLM's prices times the
observed tokens, or the local count's where a provider's usage could not be trusted). Before an
agent has finished an episode its cost is unknown: then at most one episode of unknown cost per
worker is in flight, each reserving an equal part of what is left.

The reservation is also a cap the episode carries (``EpisodeSpec.spend_cap_usd``): every model
call of the episode asks it first (``rsigym.llm.spending``), and a call past it is not sent (the
episode ends as ``infra_error`` with an error starting "cost limit:", run again on resume).
Checked only between episodes, a first episode of unknown cost once played all its 10 calls and
spent 2.15x the limit. So the spending ends at most one call per episode in flight above the
limit. An episode reserves up to ``HEADROOM`` times its estimate, so one that costs more than that
is cut off even while the limit is far.

Consecutive errors. When ``max_consecutive`` episodes in a row (in the order they finish) end in
the same LLM failure that retrying cannot fix (a bad key, an unknown model, a rejected request),
every further episode would too: the guard stops the run and keeps that error in full.
"""

from __future__ import annotations

import dataclasses
import math
import re
import threading
from dataclasses import dataclass, field

from rsigym.llm.provider_errors import is_unrecoverable_text
from rsigym.records.trajectory import Trajectory

from ..scenario.spec import EpisodeSpec
from .capacity import episode_can_spend

__all__ = ["RunGuard"]

_WHERE = re.compile(r"\s*\[[^\]]*:\d+ in [^\]]*\]$")
HEADROOM = 2.0  # an episode may spend this many times the dearest one seen before it starts


@dataclass
class RunGuard:
    """Admission of episodes under a cost limit, and the consecutive-error stop.

    Args:
        cost_limit_usd: Spending the run must not pass (None: no limit).
        max_consecutive_errors: Identical unrecoverable errors in a row that stop the run (0: never).
        unknown_cost_slots: Episodes of an agent whose cost is not yet known allowed in flight
            (one per worker).
        spent_usd: Already spent before the first episode (the endpoint check).
    """

    cost_limit_usd: float | None = None
    max_consecutive_errors: int = 5
    unknown_cost_slots: int = 1
    spent_usd: float = 0.0
    reserved: dict[str, float] = field(default_factory=dict)  # key in flight -> its cap (share of the limit)
    unknown: set[str] = field(default_factory=set)  # keys in flight whose agent's cost is not known yet
    dearest_usd: dict[str, float] = field(default_factory=dict)      # agent id -> dearest episode seen
    cost_stopped: bool = False
    error_stopped: str | None = None  # the error, in full, that stopped the run
    _last_error: str | None = None
    _repeats: int = 0

    def __post_init__(self) -> None:
        self._lock = threading.Lock()
        self.spent_usd = self.spent_usd if self.spent_usd > 0 else 0.0

    def admit(self, spec: EpisodeSpec) -> EpisodeSpec | None:
        """``spec`` to start now, with its share of the cost limit as its cap (reserved until it
        finishes); None when it may not start now."""
        with self._lock:
            if self.error_stopped is not None:
                return None
            if self.cost_limit_usd is None or not episode_can_spend(spec):
                self.reserved[spec.key] = 0.0  # a free episode (scripted agent, offline model) runs whatever the limit
                return spec
            if self.cost_stopped:
                return None
            self.reserved.pop(spec.key, None)  # a retried episode (its worker died) reserves anew
            self.unknown.discard(spec.key)
            room = self.cost_limit_usd - self.spent_usd - sum(self.reserved.values())
            estimate = self.dearest_usd.get(spec.agent.id)
            if estimate is None:
                free = max(1, self.unknown_cost_slots) - len(self.unknown)
                ok, cap = room > 0 and free > 0, room / max(free, 1)
            else:
                ok, cap = room > 0 and room >= estimate, min(room, HEADROOM * estimate)
            if ok and self.spent_usd < self.cost_limit_usd:
                self.reserved[spec.key] = cap
                if estimate is None:
                    self.unknown.add(spec.key)
                return dataclasses.replace(spec, spend_cap_usd=cap)
            if not self.reserved:  # nothing in flight will change the picture: the run is over
                self.cost_stopped = True
            return None

    def finished(self, record: Trajectory) -> None:
        """Release the episode's reservation, count its cost and its error."""
        with self._lock:
            self.reserved.pop(record.episode_key, None)
            self.unknown.discard(record.episode_key)
            cost = float(record.usage.cost_usd)
            cost = cost if math.isfinite(cost) and cost > 0 else 0.0  # a negative or NaN cost (a record of a lying provider) buys no room
            self.spent_usd += cost
            agent = record.agent.id
            self.dearest_usd[agent] = max(self.dearest_usd.get(agent, 0.0), cost)
            if record.termination == "infra_error" and is_unrecoverable_text(record.error):
                error = _WHERE.sub("", (record.error or "").strip())
                self._repeats = self._repeats + 1 if error == self._last_error else 1
                self._last_error = error
                if self.max_consecutive_errors and self._repeats >= self.max_consecutive_errors:
                    self.error_stopped = error
            else:
                self._last_error, self._repeats = None, 0

    def repeats_the_stop(self, record: Trajectory) -> bool:
        """Whether ``record`` ended in the error that stopped the run (an episode that was in flight
        when it stopped): such a record is not written, so the episode runs again on resume."""
        with self._lock:
            return (self.error_stopped is not None and record.termination == "infra_error"
                    and _WHERE.sub("", (record.error or "").strip()) == self.error_stopped)

    def stop(self) -> bool:
        """True once no further episode may start: an error that repeats, or the cost limit with
        nothing in flight (``admit`` sets it; a free episode is still admitted past the limit)."""
        with self._lock:
            return self.error_stopped is not None or self.cost_stopped
