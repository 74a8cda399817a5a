"""Provider limits shared by a Ray cluster: one actor holds every provider's gate.

With the local backend each worker process has its own gates (``rsigym.llm.limits``), so a provider
sees up to workers x the cap. On Ray the runner actors of every node pass each model call through
one ``ProviderLimiter`` actor instead: the concurrency cap, its halving on a 429 and the RPM/TPM
budgets hold for the whole cluster. A call costs two small actor calls (an acquire it waits for, a
release it does not), a millisecond or two next to a model call's hundreds.

A runner that dies holding slots would keep them for ever: the driver calls ``forget(holder)``
when it sees a runner die, which frees them, and any granted to it later.

The limiter is restarted by Ray when its process or node dies (its calls are retried on the new
one, which starts with free slots). A runner that finds it dead for good (its restarts spent, or
the runner's own node cut off) does not fail its model calls: from then on it gates them itself
with the run's limits (``SharedGate``'s fallback), so the cap holds per runner instead of per
cluster, and the driver notes it in the run's summary.
"""

from __future__ import annotations

import contextlib
import logging
import threading
import time
import uuid
from typing import Any, Callable, Iterator

from rsigym.llm import limits

__all__ = ["ProviderLimiter", "SharedGate"]

log = logging.getLogger(__name__)
_WAIT_STEP_S = 1.0  # a caller waits for its slot in steps, so that an episode's deadline can land between


class ProviderLimiter:
    """The body of the limiter actor (a threaded actor: each waiting ``acquire`` holds a thread).

    Args:
        config: The run's limits (``limits:`` and ``--max-connections``), for the whole cluster.
        default_cap: The cap of a provider without ``max_connections``: every episode in flight.
    """

    def __init__(self, config: limits.LimitsConfig, default_cap: int) -> None:
        self._lock = threading.Lock()
        self.configure(config, default_cap)

    def configure(self, config: limits.LimitsConfig, default_cap: int) -> None:
        """Start afresh with these limits (a new run on a reused pool)."""
        with self._lock:
            self._config, self._default_cap = config, max(1, int(default_cap))
            self._gates: dict[str, limits.ProviderGate] = {}
            self._held: dict[str, tuple[limits.ProviderGate, Any, int]] = {}  # ticket -> gate, ticket, holder
            self._released_early: set[str] = set()  # tickets given back before they were granted
            self._forgotten: set[int] = set()

    def _gate(self, provider: str) -> limits.ProviderGate:
        with self._lock:
            gate = self._gates.get(provider)
            if gate is None:
                gate = self._gates[provider] = limits.ProviderGate(
                    provider, self._config.for_provider(provider), default_cap=self._default_cap)
            return gate

    def acquire(self, provider: str, holder: int, ticket_id: str) -> float:
        """Wait for a slot of ``provider``; returns the seconds waited."""
        gate = self._gate(provider)
        began = time.monotonic()
        ticket = gate.acquire()
        with self._lock:
            dropped = holder in self._forgotten or ticket_id in self._released_early
            self._released_early.discard(ticket_id)
            if not dropped:
                self._held[ticket_id] = (gate, ticket, holder)
        if dropped:  # its caller is gone or gave up waiting: the slot goes straight back
            gate.release(ticket, limits.Slot())
        return time.monotonic() - began

    def release(self, ticket_id: str, ok: bool, throttled: bool, tokens: int) -> None:
        """Give a slot back with the call's outcome (a 429 halves the cap, as in one process)."""
        with self._lock:
            entry = self._held.pop(ticket_id, None)
            if entry is None:
                self._released_early.add(ticket_id)
                return
        gate, ticket, _ = entry
        gate.release(ticket, limits.Slot(ok=ok, throttled=throttled, tokens=tokens))

    def forget(self, holder: int) -> int:
        """Free the slots of a runner that died; returns how many it held."""
        with self._lock:
            self._forgotten.add(holder)
            mine = [key for key, (_, _, who) in self._held.items() if who == holder]
            entries = [self._held.pop(key) for key in mine]
        for gate, ticket, _ in entries:
            gate.release(ticket, limits.Slot())
        return len(entries)

    def restarted(self) -> bool:
        """Whether Ray restarted this limiter (its statistics then cover the calls since)."""
        import ray

        return bool(ray.get_runtime_context().was_current_actor_reconstructed)

    def snapshot(self) -> list[limits.GateStats]:
        """Every provider's statistics, for the run's summary."""
        with self._lock:
            gates = list(self._gates.values())
        return [limits.stats_of(gate) for gate in gates]


class SharedGate:
    """A gate of this process that asks the limiter actor for each slot (``limits.Gate``).

    Args:
        limiter: The ``ProviderLimiter`` actor.
        provider: The provider key this gate serves.
        holder: The runner's number (its slots are freed if it dies).
        fallback: Makes this process's own gate for ``provider``, used once the limiter is dead.
    """

    def __init__(self, limiter: Any, provider: str, holder: int,
                 fallback: Callable[[str], limits.Gate]) -> None:
        self._limiter, self._provider, self._holder = limiter, provider, holder
        self._fallback = fallback
        self._local: limits.Gate | None = None

    def _shared_slot(self, ticket_id: str) -> limits.Slot | None:
        """A slot granted by the limiter; None when the limiter is dead for good (then this
        process gates its calls itself from now on)."""
        import ray

        granted = self._limiter.acquire.remote(self._provider, self._holder, ticket_id)
        outcome = limits.Slot()
        while True:
            try:
                outcome.waited_s = float(ray.get(granted, timeout=_WAIT_STEP_S))
                return outcome
            except ray.exceptions.GetTimeoutError:
                continue
            except ray.exceptions.ActorUnavailableError:  # restarting or briefly unreachable: ask again
                granted = self._limiter.acquire.remote(self._provider, self._holder, ticket_id)
            except ray.exceptions.RayActorError as exc:
                if self._local is None:
                    log.warning("the provider limiter is gone (%s): this runner gates %s on its own",
                                type(exc).__name__, self._provider)
                    self._local = self._fallback(self._provider)
                return None

    @contextlib.contextmanager
    def slot(self) -> Iterator[limits.Slot]:
        ticket_id = uuid.uuid4().hex
        outcome = None if self._local is not None else self._shared_slot(ticket_id)
        if outcome is None:
            assert self._local is not None
            with self._local.slot() as own:
                yield own
            return
        try:
            yield outcome
        finally:  # not waited for; given back before it was granted, the limiter drops it on grant
            self._limiter.release.remote(ticket_id, outcome.ok, outcome.throttled, outcome.tokens)
