"""Provider limits (``rsigym.llm.limits``): the AIMD cap, RPM/TPM budgets, their config, and the client's use."""

from __future__ import annotations

import threading
import time

import pytest

from rsigym.llm import limits
from rsigym.errors import UserError
from rsigym.llm.limits import LimitsConfig, ProviderGate, ProviderLimits
from rsigym.llm import LLMError, RetryPolicy, complete
from rsigym.scenario import parse_scenario

from ..agents.fake_openai import Behaviour, FakeOpenAI

HELLO = [{"role": "user", "content": "hello"}]


@pytest.fixture(autouse=True)
def fresh_gates(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-secret")
    limits.reset()
    yield
    limits.reset()


class Clock:
    def __init__(self) -> None:
        self.now = 0.0

    def __call__(self) -> float:
        return self.now


def hold(gate: ProviderGate) -> tuple[object, object]:
    ticket = gate._acquire()
    return ticket, limits._Slot()


def test_a_429_window_halves_the_cap_once_and_good_calls_win_it_back():
    gate = ProviderGate("p", ProviderLimits(max_connections=8))
    window = [hold(gate) for _ in range(4)]  # four calls sent before any answer
    for ticket, slot in window:
        slot.throttled = True
        gate._release(ticket, slot)
    assert gate.cap == 4  # four 429s of one window: one halving, not 8 -> 0.5
    ticket, slot = hold(gate)
    slot.throttled = True
    gate._release(ticket, slot)
    assert gate.cap == 2  # a call sent after the decrease is a new signal
    stale = hold(gate)  # sent at cap 2 ...
    ticket, slot = hold(gate)
    slot.throttled = True
    gate._release(ticket, slot)  # ... a 429 makes it 1 ...
    stale[1].ok = True
    gate._release(*stale)  # ... and a success sent before that does not count
    assert gate.cap == 1
    for _ in range(20):
        ticket, slot = hold(gate)
        slot.ok = True
        gate._release(ticket, slot)
    assert gate.cap == 8  # one slot back per good call, never above the maximum
    caps = [cap for _, cap in gate.stats.trajectory]
    assert caps[:4] == [8, 4, 2, 1] and caps[-1] == 8 and gate.stats.min_cap == 1
    assert gate.stats.throttled == 6 and gate.stats.calls == 27
    assert "cap 8 -> 1 -> 8 (max 8, min 1)" in limits.format_stats(gate.stats)


def test_the_cap_bounds_calls_in_flight_across_threads():
    gate = ProviderGate("p", ProviderLimits(max_connections=3))
    in_flight, peak, lock = 0, 0, threading.Lock()

    def call() -> None:
        nonlocal in_flight, peak
        with gate.slot() as slot:
            with lock:
                in_flight += 1
                peak = max(peak, in_flight)
            time.sleep(0.02)
            with lock:
                in_flight -= 1
            slot.ok = True

    threads = [threading.Thread(target=call) for _ in range(12)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=60)
    assert peak <= 3 and gate.in_flight == 0 and gate.stats.calls == 12
    assert gate.stats.cap_wait_s > 0  # nine calls had to wait for a slot, and the summary says so


def test_rpm_bucket_spreads_requests_and_tpm_charges_reported_tokens():
    clock = Clock()
    bucket = limits._Bucket(60.0, 1.0, clock)  # one request per second, no burst
    assert bucket.wait_s(1.0) == 0.0
    bucket.level -= 1.0
    assert bucket.wait_s(1.0) == pytest.approx(1.0)
    clock.now = 0.5
    assert bucket.wait_s(1.0) == pytest.approx(0.5)
    clock.now = 5.0
    assert bucket.wait_s(1.0) == 0.0 and bucket.level == 1.0  # never more than its capacity

    gate = ProviderGate("p", ProviderLimits(tpm=600.0), clock=clock)  # 10 tokens per second
    ticket, slot = hold(gate)
    slot.ok, slot.tokens = True, 1000
    gate._release(ticket, slot)
    assert gate._tpm is not None and gate._tpm.wait_s(1e-9) == pytest.approx(99.0, abs=0.01)  # 990 in debt


def test_rpm_budget_makes_calls_wait_and_counts_the_wait():
    gate = ProviderGate("p", ProviderLimits(rpm=1200.0))  # 20 per second, a bucket of 20
    for _ in range(24):
        with gate.slot() as slot:
            slot.ok = True
    assert gate.stats.calls == 24 and gate.stats.budget_wait_s > 0


def test_limits_from_a_scenario_and_the_cli():
    config = LimitsConfig.parse({"max_connections": 8, "rpm": 600,
                                 "providers": {"anthropic": {"max_connections": 2},
                                               "http://127.0.0.1:8000/v1": {"tpm": 1000}}}, max_connections=4)
    assert config.for_provider("openai") == ProviderLimits(4, 600, None)  # the CLI's cap wins
    assert config.for_provider("anthropic") == ProviderLimits(2)
    assert config.for_provider("http://127.0.0.1:8000/v1/") == ProviderLimits(tpm=1000)
    assert limits.provider_key("openai/gpt-4o-mini", None) == "openai"
    assert limits.provider_key("openai/m", "http://h:1/v1/") == "http://h:1/v1"
    assert limits.gate_for("rsigym/random", None) is None  # in-process models pass no gate
    with pytest.raises(ValueError, match="rpm must be > 0"):
        ProviderLimits(rpm=0)
    base = {"name": "t", "env": {"id": "rsigym/Probe-v0"}, "agents": [{"kind": "random"}], "seeds": [0]}
    assert parse_scenario({**base, "limits": {"max_connections": 4, "providers": {"openai": {"rpm": 60}}},
                           "runner": {"concurrency": 8}}).raw["limits"]["max_connections"] == 4
    for bad, message in (({"limits": {"rpm": 0}}, "limits.rpm"), ({"limits": {"max_conections": 2}}, "max_conections"),
                         ({"runner": {"concurrency": 0}}, "runner.concurrency")):
        with pytest.raises(UserError, match=message):
            parse_scenario({**base, **bad})


def test_the_client_waits_out_a_run_of_429s_beyond_max_retries_and_shrinks_the_cap():
    limits.configure(LimitsConfig(), default_cap=8)
    with FakeOpenAI() as server:
        server.script(*[Behaviour(status=429, headers={"Retry-After": "0"})] * 3, Behaviour(content="hi"))
        reply = complete(HELLO, model="openai/fake-model", role="agent", api_base=server.api_base, timeout_s=5.0,
                         retry=RetryPolicy(1, 0.0), sleep=lambda s: None)
        assert reply.text == "hi" and (reply.usage.model_calls, reply.usage.provider_retries) == (4, 3)
        [stats] = limits.snapshot()
        # each retry is sent after the last decrease: three halvings, then one slot back
        assert stats.throttled == 3 and [cap for _, cap in stats.trajectory] == [8, 4, 2, 1, 2]
        # other failures keep their own, smaller budget
        server.script(Behaviour(status=503), Behaviour(status=503))
        with pytest.raises(LLMError, match="after 2 attempts"):
            complete(HELLO, model="openai/fake-model", role="agent", api_base=server.api_base, timeout_s=5.0,
                     retry=RetryPolicy(1, 0.0), sleep=lambda s: None)


def test_429_retries_are_bounded():
    with FakeOpenAI(default=lambda request: Behaviour(status=429)) as server:
        with pytest.raises(LLMError, match="after 4 attempts: RateLimitError") as caught:
            complete(HELLO, model="openai/fake-model", role="agent", api_base=server.api_base, timeout_s=5.0,
                     retry=RetryPolicy(1, 0.0, max_rate_limit_retries=3), sleep=lambda s: None)
        assert len(server.requests) == 4 and caught.value.usage.provider_retries == 3
