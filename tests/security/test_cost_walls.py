"""A provider whose usage cannot be trusted, and an endpoint check held past its deadline (issue 58, hole 8).

* it reports -10^9 tokens, NaN, or no usage at all over an episode of many calls: the run must
  stop within one call's (locally counted) price of ``--cost-limit``, not at the end of the first
  episode (which spent 2.15x the limit before);
* the endpoint check must end within its deadline (+5 s) when LiteLLM's import takes most of it
  beside a trickling server, and when a call is stuck outside any socket operation (a name lookup
  that never answers).
"""

from __future__ import annotations

import socket
import threading
import time
from typing import Any

import pytest

from rsigym.cli import main
from rsigym.llm import client, endpoint_check
from rsigym.llm.endpoint_check import check_endpoints
from rsigym.records.jsonl import read_records
from tests.conftest import write_scenario
from tests.security.test_provider_walls import HOSTILE_USAGE, Provider, guessing_provider, llm_agent, trickle

LIMIT_USD = 0.006  # about 7 calls of gpt-4o at the probe's prompt sizes; an episode has up to 20


@pytest.fixture(autouse=True)
def key(monkeypatch):
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test-not-a-real-key")
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")


@pytest.mark.parametrize("usage", list(HOSTILE_USAGE))
def test_lying_usage_stops_the_run_within_one_locally_priced_call_of_the_cost_limit(capsys, tmp_path, usage):
    out = tmp_path / "out"
    with Provider(guessing_provider(usage)) as provider:
        path = write_scenario(tmp_path / "s.yaml", agents=[llm_agent(provider.api_base, "openai/gpt-4o")],
                              conditions=["none"], tasks={"split": "test", "limit": 3}, seeds=list(range(10)),
                              max_steps=20)
        status = main(["run", str(path), "--out", str(out), "--workers", "0", "--concurrency", "1",
                       "--no-progress", "--cost-limit", str(LIMIT_USD)])
    printed, err = capsys.readouterr()
    records = read_records(out / "records.jsonl").records
    calls = [step.usage for record in records for step in record.steps]
    assert status == 3 and calls and all(u.usage_estimated == u.model_calls for u in calls), err
    one_call_usd = max(u.cost_usd / u.model_calls for u in calls)  # the local count's price of one call
    assert one_call_usd > 0
    spent_usd = sum(r.usage.cost_usd for r in records)
    assert LIMIT_USD <= spent_usd <= LIMIT_USD + one_call_usd, (spent_usd, one_call_usd, err)
    # the episode that reached the limit says so; it runs again on resume, not counted as a fault
    [cut] = [r for r in records if r.termination == "infra_error"]
    assert cut.error.startswith("cost limit: agent model openai/gpt-4o: this episode's share"), cut.error
    assert "0 infra errors, 1 cut off at their share of the cost limit" in printed, printed
    assert "cost limit reached" in err
    # every call counted locally is counted in the warning (the endpoint check's ping too)
    assert f"{sum(u.model_calls for u in calls) + 1} model calls came back with a usage report" in err, err


def test_the_endpoint_check_holds_its_deadline_when_litellms_import_takes_most_of_it(monkeypatch):
    """With workers importing beside it LiteLLM's import took 16-23 s: the check ran that much past
    its deadline against a trickling server (80 s against 60 s). Simulated here: a 6 s import."""
    real_load, loads = client.load_litellm, []
    real_load()  # imported now, outside the clock: the sleep below stands for the import

    def slow_load() -> Any:
        if not loads:  # the first load imports; later ones find the module loaded
            time.sleep(6.0)
        loads.append(1)
        return real_load()

    monkeypatch.setattr(client, "load_litellm", slow_load)
    deadline_s = 10.0
    with Provider(trickle(0.25)) as provider:
        began = time.monotonic()
        checked = check_endpoints({"agents": [llm_agent(provider.api_base)]}, deadline_s=deadline_s)
        took_s = time.monotonic() - began
        assert provider.answered.wait(60)
    assert took_s <= deadline_s + 5.0, took_s
    [problem] = checked.problems
    assert "(deadline): no complete answer within the check's deadline of 10 s per endpoint" in problem


def test_the_endpoint_check_holds_its_deadline_when_a_call_is_stuck_outside_its_sockets(monkeypatch):
    """A name lookup that never answers: no socket timeout reaches it (getaddrinfo blocks)."""
    release = threading.Event()
    real_getaddrinfo = socket.getaddrinfo

    def stalled(host: Any, *args: Any, **kwargs: Any) -> Any:
        if host == "stalled.invalid":
            release.wait(30)
            raise socket.gaierror(socket.EAI_NONAME, "stalled")
        return real_getaddrinfo(host, *args, **kwargs)

    monkeypatch.setattr(socket, "getaddrinfo", stalled)
    monkeypatch.setattr(endpoint_check, "DEADLINE_S", 3.0)
    try:
        began = time.monotonic()
        checked = check_endpoints({"agents": [llm_agent("http://stalled.invalid:9/v1")]})
        took_s = time.monotonic() - began
    finally:
        release.set()
    assert took_s <= 3.0 + 5.0, took_s
    [problem] = checked.problems
    assert "(deadline): no complete answer within the check's deadline of 3 s per endpoint" in problem
