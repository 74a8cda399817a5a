"""Provider limits for the one LLM client: a concurrency cap that adapts to 429s, and RPM/TPM budgets.

Every call of ``rsigym.llm.client.complete`` to a hosted provider passes a ``ProviderGate``, one per
provider and process, shared by all episodes in flight in that process (a runner worker). A
provider is the call's ``api_base`` when it has one, else the prefix of its model string
(``openai`` for ``openai/gpt-4o-mini``); offline ``rsigym/...`` models and mocked replies pass
no gate.

* **Concurrency cap, AIMD.** At most ``cap`` calls are in flight. A 429 halves the cap (at most
  once per window: answers to calls sent before the last decrease do not count again), and
  every successful call sent after the last decrease adds one slot back, up to
  ``max_connections``. The increase is counted per call rather than per round trip, so a cap cut
  to 1 recovers to 32 in 31 good calls: a battery is short, and a per-round-trip increase would
  need ~500 calls to recover.
* **Budgets.** ``rpm`` (requests per minute) is a token bucket refilled continuously, holding one
  second's worth (at least one request), so calls are spread instead of burst. ``tpm`` (tokens
  per minute) cannot be known before a reply, so calls are charged afterwards with the tokens
  the provider reports: a call waits while the bucket is in debt. In-flight calls can overshoot
  the budget by at most their own tokens.

``configure`` sets the limits of this process (the runner does so in each worker before the first
episode); ``snapshot`` reports, per provider, the seconds episodes spent waiting on the cap and
on the budgets, the 429s met, and the cap's trajectory. The limits hold per process: with
``--workers W`` the provider sees up to W times them.
"""

from __future__ import annotations

import math
import threading
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Iterator, Protocol
from contextlib import contextmanager

__all__ = ["ProviderLimits", "LimitsConfig", "ProviderGate", "Gate", "GateStats", "configure", "gate_for",
           "provider_key", "snapshot", "reset", "format_stats", "merge_stats", "use_shared_gates", "Slot", "stats_of"]

TRAJECTORY_POINTS = 200  # a cap's trajectory keeps this many changes at most (first and last kept)


@dataclass(frozen=True)
class ProviderLimits:
    """Limits of one provider. ``max_connections`` None: no cap beyond what 429s impose."""

    max_connections: int | None = None
    rpm: float | None = None
    tpm: float | None = None

    def __post_init__(self) -> None:
        for name in ("max_connections", "rpm", "tpm"):
            value = getattr(self, name)
            if value is not None and not value > 0:
                raise ValueError(f"{name} must be > 0, got {value!r}")


@dataclass(frozen=True)
class LimitsConfig:
    """Limits for every provider (``default``) and per provider (``providers``: key -> limits).

    A key is a model prefix (``openai``, ``anthropic``) or an ``api_base`` URL.
    """

    default: ProviderLimits = ProviderLimits()
    providers: dict[str, ProviderLimits] = field(default_factory=dict)

    def for_provider(self, key: str) -> ProviderLimits:
        return self.providers.get(key) or self.providers.get(key.rstrip("/")) or self.default

    @classmethod
    def parse(cls, raw: dict[str, Any] | None, *, max_connections: int | None = None) -> "LimitsConfig":
        """From a scenario's ``limits:`` mapping; ``max_connections`` (the CLI's) wins over its default."""
        raw = dict(raw or {})
        providers = {str(k): ProviderLimits(**v) for k, v in (raw.pop("providers", None) or {}).items()}
        default = ProviderLimits(**raw)
        if max_connections is not None:
            default = ProviderLimits(max_connections, default.rpm, default.tpm)
        return cls(default, providers)

    def is_set(self) -> bool:
        return self.default != ProviderLimits() or bool(self.providers)


@dataclass
class GateStats:
    """What one gate saw. Waits are summed over calls (episode-seconds, not wall seconds)."""

    provider: str
    calls: int = 0
    throttled: int = 0          # 429s answered
    cap_wait_s: float = 0.0     # waiting for a free slot under the cap
    budget_wait_s: float = 0.0  # waiting on the RPM/TPM budget
    max_connections: int | None = None
    min_cap: int | None = None
    final_cap: int | None = None
    trajectory: list[tuple[float, int]] = field(default_factory=list)  # (seconds since first call, cap)


class _Bucket:
    """A token bucket refilled at ``per_minute / 60`` per second holding ``capacity``; may go into debt."""

    def __init__(self, per_minute: float, capacity: float, clock: Callable[[], float]) -> None:
        self.rate_per_s, self.capacity, self._clock = per_minute / 60.0, capacity, clock
        self.level, self._at = capacity, clock()

    def refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._at) * self.rate_per_s)
        self._at = now

    def wait_s(self, need: float) -> float:
        """Seconds until ``need`` is available (0 now)."""
        self.refill()
        return 0.0 if self.level >= need else (need - self.level) / self.rate_per_s


@dataclass(frozen=True)
class _Ticket:
    epoch: int


class ProviderGate:
    """The cap and budgets of one provider in this process. Thread-safe."""

    def __init__(self, provider: str, limits: ProviderLimits, *, default_cap: int = 64,
                 clock: Callable[[], float] = time.monotonic) -> None:
        self.provider, self.limits, self._clock = provider, limits, clock
        self.max_cap = limits.max_connections or default_cap
        self.cap = float(self.max_cap)
        self.in_flight = 0
        self._epoch = 0
        self._cond = threading.Condition()
        self._rpm = _Bucket(limits.rpm, max(1.0, limits.rpm / 60.0), clock) if limits.rpm else None
        self._tpm = _Bucket(limits.tpm, max(1.0, limits.tpm / 60.0), clock) if limits.tpm else None
        self._started: float | None = None
        self.stats = GateStats(provider, max_connections=self.max_cap, min_cap=self.max_cap,
                               final_cap=self.max_cap, trajectory=[(0.0, self.max_cap)])

    @contextmanager
    def slot(self) -> Iterator["_Slot"]:
        """Hold one slot for one call; the caller marks the outcome with ``throttled``/``tokens``."""
        began = self._clock()
        ticket = self._acquire()
        outcome = _Slot(waited_s=self._clock() - began)
        try:
            yield outcome
        finally:
            self._release(ticket, outcome)

    def acquire(self) -> _Ticket:
        """Wait for a slot and take it (``release`` gives it back): for a gate held by another
        process on callers' behalf (``rsigym.runner.ray_limits``)."""
        return self._acquire()

    def release(self, ticket: _Ticket, outcome: "_Slot") -> None:
        self._release(ticket, outcome)

    def _acquire(self) -> _Ticket:
        with self._cond:
            if self._started is None:
                self._started = self._clock()
            while True:
                if self.in_flight >= int(self.cap):
                    began = self._clock()
                    self._cond.wait()
                    self.stats.cap_wait_s += self._clock() - began
                    continue
                budget_wait = max(self._rpm.wait_s(1.0) if self._rpm else 0.0,
                                  self._tpm.wait_s(1e-9) if self._tpm else 0.0)
                if budget_wait <= 0:
                    break
                began = self._clock()
                self._cond.wait(timeout=budget_wait)
                self.stats.budget_wait_s += self._clock() - began
            if self._rpm:
                self._rpm.level -= 1.0
            self.in_flight += 1
            self.stats.calls += 1
            return _Ticket(self._epoch)

    def _release(self, ticket: _Ticket, outcome: "_Slot") -> None:
        with self._cond:
            self.in_flight -= 1
            if self._tpm and outcome.tokens:
                self._tpm.refill()
                self._tpm.level -= outcome.tokens
            if outcome.throttled:
                self.stats.throttled += 1
                if ticket.epoch == self._epoch:  # one decrease per window of calls
                    self._epoch += 1
                    self._set_cap(max(1.0, math.floor(self.cap / 2)))
            elif outcome.ok and ticket.epoch == self._epoch and self.cap < self.max_cap:
                self._set_cap(min(float(self.max_cap), self.cap + 1.0))
            self._cond.notify_all()

    def _set_cap(self, cap: float) -> None:
        before, self.cap = int(self.cap), cap
        if int(cap) != before:
            started = self._started if self._started is not None else self._clock()
            points = self.stats.trajectory
            points.append((round(self._clock() - started, 3), int(cap)))
            if len(points) > TRAJECTORY_POINTS:
                del points[1]
            self.stats.min_cap = min(self.stats.min_cap or int(cap), int(cap))
            self.stats.final_cap = int(cap)


@dataclass
class _Slot:
    """The outcome of one call through a gate: set ``ok`` or ``throttled``, and ``tokens``."""

    ok: bool = False
    throttled: bool = False
    tokens: int = 0
    waited_s: float = 0.0  # time spent waiting for the slot (not provider latency)


class Gate(Protocol):
    """What a call passes: a ``ProviderGate`` of this process, or one shared by many (Ray)."""

    def slot(self) -> ContextManager["_Slot"]: ...


_lock = threading.Lock()
_config = LimitsConfig()
_default_cap = 64
_gates: dict[str, ProviderGate] = {}
_shared: Callable[[str], Gate] | None = None  # provider key -> a gate held outside this process
_shared_gates: dict[str, Gate] = {}


def use_shared_gates(factory: Callable[[str], Gate] | None) -> None:
    """Pass every call of this process through ``factory(provider)``'s gate instead of this
    process's own (a cluster's workers share one gate per provider); None: back to our own."""
    global _shared
    with _lock:
        _shared = factory
        _shared_gates.clear()


Slot = _Slot


def configure(config: LimitsConfig, *, default_cap: int = 64) -> None:
    """Set this process's limits (forgetting its gates). ``default_cap``: the cap when none is set."""
    global _config, _default_cap
    with _lock:
        _config, _default_cap = config, max(1, int(default_cap))
        _gates.clear()


def reset() -> None:
    """Back to no limits (tests)."""
    configure(LimitsConfig())


def provider_key(model: str, api_base: str | None) -> str:
    """The provider a call goes to: its ``api_base``, else its model string's prefix."""
    if api_base:
        return api_base.rstrip("/")
    return model.split("/", 1)[0] if "/" in model else model


def gate_for(model: str, api_base: str | None) -> Gate | None:
    """The gate of the call's provider; None for in-process models (``rsigym/...``)."""
    if model.startswith("rsigym/") and not api_base:
        return None
    key = provider_key(model, api_base)
    with _lock:
        if _shared is not None:
            if key not in _shared_gates:
                _shared_gates[key] = _shared(key)
            return _shared_gates[key]
        gate = _gates.get(key)
        if gate is None:
            gate = _gates[key] = ProviderGate(key, _config.for_provider(key), default_cap=_default_cap)
        return gate


def snapshot() -> list[GateStats]:
    """A copy of every gate's statistics in this process."""
    with _lock:
        gates = list(_gates.values())
    return [stats_of(gate) for gate in gates]


def stats_of(gate: ProviderGate) -> GateStats:
    """A copy of one gate's statistics."""
    with gate._cond:
        stats = gate.stats
        return GateStats(stats.provider, stats.calls, stats.throttled, stats.cap_wait_s, stats.budget_wait_s,
                         stats.max_connections, stats.min_cap, stats.final_cap, list(stats.trajectory))


def merge_stats(parts: list[GateStats]) -> list[GateStats]:
    """Per provider, the sum over workers (the trajectory of the worker whose cap fell lowest)."""
    merged: dict[str, GateStats] = {}
    for part in parts:
        into = merged.get(part.provider)
        if into is None:
            merged[part.provider] = GateStats(**{**part.__dict__, "trajectory": list(part.trajectory)})
            continue
        into.calls += part.calls
        into.throttled += part.throttled
        into.cap_wait_s += part.cap_wait_s
        into.budget_wait_s += part.budget_wait_s
        if (part.min_cap or 0) < (into.min_cap or 0):
            into.min_cap, into.final_cap, into.trajectory = part.min_cap, part.final_cap, list(part.trajectory)
    return list(merged.values())


def format_stats(stats: GateStats) -> str:
    """One summary line: calls, 429s, waits, and the cap's trajectory (first, lowest, last)."""
    path = " -> ".join(str(c) for _, c in _trajectory_outline(stats.trajectory))
    return (f"limits {stats.provider}: {stats.calls} calls, {stats.throttled} answered 429; waited "
            f"{stats.cap_wait_s:.1f} s on the cap + {stats.budget_wait_s:.1f} s on rpm/tpm (summed over "
            f"calls); cap {path} (max {stats.max_connections}, min {stats.min_cap})")


def _trajectory_outline(points: list[tuple[float, int]]) -> list[tuple[float, int]]:
    """First point, each local minimum and maximum, last point: the shape without every step."""
    if len(points) <= 2:
        return points
    outline = [points[0]]
    for before, point, after in zip(points, points[1:], points[2:]):
        if (point[1] - before[1]) * (after[1] - point[1]) < 0:  # the direction turns here
            outline.append(point)
    outline.append(points[-1])
    return outline
