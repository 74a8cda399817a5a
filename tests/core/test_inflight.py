"""Many episodes in flight per worker: same records as a sequential run, nothing lost to a 429
storm, a dead worker or a SIGKILL, and CPU-heavy envs never oversubscribed."""

from __future__ import annotations

import multiprocessing
import os
import signal
import subprocess
import sys
import threading
import time
from collections import Counter
from pathlib import Path

import pytest
import yaml

from rsigym.errors import UserError
from rsigym.records.jsonl import read_records
from rsigym.runner import RECORDS_FILE, run_scenario
from rsigym.runner.capacity import HOSTED_CONCURRENCY, plan_capacity
from rsigym.runner.inflight import drain
from rsigym.scenario import expand, load_scenario, parse_scenario

from ..conftest import rsigym_cmd, write_scenario

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from concurrency import battery, signature  # noqa: E402
from fake_provider import FakeProvider  # noqa: E402


@pytest.fixture(scope="module")
def provider():
    with FakeProvider(latency_s=0.1) as server:
        yield server


def small_battery(api_base: str, **changes):
    raw = battery(api_base, 8, tasks=4, seeds=[0, 1])
    raw["agents"][0]["params"]["backoff_base_s"] = 0.05
    raw.update(changes)
    return parse_scenario(raw)


def signatures(out: Path, *, by_task: bool = False) -> dict:
    records = read_records(out / RECORDS_FILE).records
    keys = Counter(r.episode_key for r in records)
    assert set(keys.values()) == {1}, keys  # each key once
    return {(f"{r.env.task_id}/{r.seed}" if by_task else r.episode_key): signature(r) for r in records}


@pytest.fixture(scope="module")
def sequential(provider, tmp_path_factory):
    out = tmp_path_factory.mktemp("sequential")
    summary = run_scenario(small_battery(provider.api_base), out, workers=0, concurrency=1, progress=False,
                           report=False)
    assert summary.ran == 8 and summary.infra_errors == 0 and summary.concurrency == 1
    return signatures(out), signatures(out, by_task=True)


def test_threads_in_one_process_give_the_sequential_records(provider, sequential, tmp_path):
    before = provider.stats()["requests"]
    summary = run_scenario(small_battery(provider.api_base), tmp_path, workers=0, concurrency=8, progress=False,
                           report=False)
    assert summary.ran == 8 and summary.infra_errors == 0 and summary.concurrency == 8
    assert signatures(tmp_path) == sequential[0]  # keys, actions, grades, terminations
    assert provider.max_in_flight > 1  # episodes really were in flight together
    assert provider.stats()["requests"] - before == 24
    [gate] = summary.limits
    assert gate.calls == 24 and gate.throttled == 0 and gate.max_connections == 8


def test_a_worker_killed_with_episodes_in_flight_loses_none_and_repeats_none(tmp_path, caplog):
    path = write_scenario(tmp_path / "s.yaml", tasks={"split": "test", "limit": 2})  # 2*2*2*2 = 16, local sandbox
    out = tmp_path / "out"
    killed: list[int] = []

    def kill_the_worker() -> None:  # as soon as it has sent a record: it holds 4 episodes then
        for _ in range(60000):  # polls, not a clock; pytest-timeout bounds a hang
            workers = [p for p in multiprocessing.active_children() if p.name.startswith("rsigym-worker")]
            written = (out / RECORDS_FILE).read_bytes().count(b"\n") if (out / RECORDS_FILE).exists() else 0
            if workers and 1 <= written:
                os.kill(workers[0].pid, signal.SIGKILL)
                killed.append(written)
                return
            time.sleep(0.005)

    killer = threading.Thread(target=kill_the_worker, daemon=True)
    killer.start()
    with caplog.at_level("WARNING", logger="rsigym.runner.inflight"):
        summary = run_scenario(parse_scenario(yaml.safe_load(path.read_text())), out, workers=1, concurrency=4,
                               progress=False, report=False)
    killer.join(timeout=10)
    assert killed and killed[0] < 16, "the test never killed the worker mid-run"
    assert any("episodes in flight" in r.getMessage() for r in caplog.records), caplog.text
    assert summary.ran == 16 and summary.infra_errors == 0
    counts = Counter(r.episode_key for r in read_records(out / RECORDS_FILE))
    assert set(counts) == {e.key for e in expand(load_scenario(path))} and set(counts.values()) == {1}
    assert summary.peak_rss_mb and summary.peak_rss_mb > 0


def test_a_worker_killed_mid_send_reads_as_eof_and_holds_up_no_other_worker():
    """The hang CI saw: a worker SIGKILLed while sending held the shared result queue's lock."""
    context = multiprocessing.get_context("spawn")
    pipes, senders = [], []
    for size in (10_000_000, 10):  # the first blocks mid-message: a pipe holds 64 KiB
        reader, writer = context.Pipe(duplex=False)
        sender = context.Process(target=writer.send, args=(("record", 0, b"x" * size),))
        sender.start()
        writer.close()
        pipes.append(reader)
        senders.append(sender)
    assert pipes[0].poll(60)  # it has begun writing
    os.kill(senders[0].pid, signal.SIGKILL)
    senders[0].join()
    assert drain(pipes[0]) == ([], True)  # the cut message is dropped, the pipe reads EOF
    senders[1].join()
    assert drain(pipes[1]) == ([("record", 0, b"x" * 10)], True)  # the other worker's record arrives


def test_a_429_storm_loses_no_episode_and_the_cap_adapts(sequential, tmp_path):
    with FakeProvider(latency_s=0.05, storm_s=2.0, storm_every=2) as stormy:
        summary = run_scenario(small_battery(stormy.api_base), tmp_path, workers=0, concurrency=8, progress=False,
                               report=False)
        served = stormy.stats()
    records = read_records(tmp_path / RECORDS_FILE).records
    assert summary.ran == 8 and summary.infra_errors == 0 and len(records) == 8
    assert signatures(tmp_path, by_task=True) == sequential[1]  # the storm changed no action
    retries = sum(r.usage.provider_retries for r in records)
    assert served["throttled"] > 0 and retries == served["throttled"]  # every 429 retried, nothing more
    [gate] = summary.limits
    assert gate.throttled == served["throttled"] and gate.min_cap is not None and gate.min_cap < 8
    from rsigym.llm.limits import format_stats

    assert f"{served['throttled']} answered 429" in format_stats(gate) and "cap 8 -> " in format_stats(gate)


def test_sigkill_with_32_in_flight_then_resume_records_each_key_once(tmp_path):
    with FakeProvider(latency_s=1.0) as slow:
        raw = battery(slow.api_base, 64)  # 16 tasks x 4 seeds: 32 in flight, 31 waiting, after the first
        path = tmp_path / "s.yaml"
        path.write_text(yaml.safe_dump(raw, sort_keys=False))
        out = tmp_path / "out"
        argv = [*rsigym_cmd(), "run", str(path), "--out", str(out), "--no-progress"]
        proc = subprocess.Popen([*argv, "--workers", "1", "--concurrency", "32"], start_new_session=True,
                                stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        records_file = out / RECORDS_FILE
        for _ in range(30000):  # polls, not a clock; pytest-timeout bounds a hang
            written = records_file.read_bytes().count(b"\n") if records_file.exists() else 0
            if written >= 1 and slow.open_episodes >= 32:  # 32 conversations begun, none closed
                break
            assert proc.poll() is None, proc.stderr.read().decode() if proc.stderr else ""
            time.sleep(0.01)
        else:
            os.killpg(proc.pid, signal.SIGKILL)
            pytest.fail(f"never 32 episodes in flight (at most {slow.max_in_flight} calls at once)")
        os.kill(proc.pid, signal.SIGKILL)  # the runner only: its worker must notice and go
        proc.wait(timeout=30)
        try:
            for _ in range(600):  # polls of 0.1 s, not a clock
                try:
                    os.killpg(proc.pid, 0)  # anything left of the run's process group?
                except ProcessLookupError:
                    break
                time.sleep(0.1)
            else:
                pytest.fail("the worker outlived its killed runner")
        finally:
            try:
                os.killpg(proc.pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        partial = read_records(records_file)
        assert 1 <= len(partial) < 64

        rerun = subprocess.run([*argv, "--workers", "0", "--concurrency", "32"], capture_output=True, text=True,
                               timeout=600)
    assert rerun.returncode == 0, rerun.stderr
    assert f"64 episodes: {len(partial)} already recorded, {64 - len(partial)} run now" in rerun.stdout
    assert "in flight: up to 32 episodes per worker" in rerun.stdout and "limits http://127.0.0.1" in rerun.stdout
    result = read_records(records_file)
    counts = Counter(r.episode_key for r in result)
    assert set(counts) == {e.key for e in expand(parse_scenario(raw))} and set(counts.values()) == {1}
    assert not result.bad_lines and all(r.termination != "infra_error" for r in result)


# -- how many at once -----------------------------------------------------------------------
def raw_scenario(env_id: str, **changes) -> dict:
    raw = {"name": "t", "env": {"id": env_id}, "agents": [{"kind": "random"}], "seeds": [0]}
    raw.update(changes)
    return raw


def test_default_concurrency_follows_the_model_and_the_scenario():
    offline = raw_scenario("rsigym/ToolUse-v0", agents=[{"kind": "llm", "model": "rsigym/random"}])
    hosted = raw_scenario("rsigym/ToolUse-v0", agents=[{"kind": "llm", "model": "openai/gpt-4o-mini"}])
    hosted_user = raw_scenario("rsigym/ToolUse-v0", env={"id": "rsigym/ToolUse-v0",
                                                          "kwargs": {"user": {"kind": "llm", "model": "anthropic/x"}}})
    assert plan_capacity("rsigym/ToolUse-v0", offline, workers=2, concurrency=None).concurrency == 1
    assert plan_capacity("rsigym/ToolUse-v0", hosted, workers=2, concurrency=None).concurrency == HOSTED_CONCURRENCY
    assert plan_capacity("rsigym/ToolUse-v0", hosted_user, workers=2, concurrency=None).concurrency == HOSTED_CONCURRENCY
    pinned = dict(hosted, runner={"concurrency": 5})
    assert plan_capacity("rsigym/ToolUse-v0", pinned, workers=2, concurrency=None).concurrency == 5
    assert plan_capacity("rsigym/ToolUse-v0", pinned, workers=2, concurrency=3).concurrency == 3  # the CLI wins
    with pytest.raises(UserError, match="--concurrency must be >= 1, got 0"):
        plan_capacity("rsigym/ToolUse-v0", hosted, workers=2, concurrency=0)


@pytest.mark.parametrize("env_id", ["rsigym/HyperparamSearch-v0", "rsigym/DataSelection-v0"])
def test_cpu_heavy_envs_never_get_more_episodes_than_cores(env_id):
    hosted = raw_scenario(env_id, agents=[{"kind": "llm", "model": "openai/gpt-4o-mini"}])
    plan = plan_capacity(env_id, hosted, workers=8, concurrency=32, cpu_count=2)
    assert (plan.workers, plan.concurrency, plan.cpu_heavy) == (2, 1, True)
    assert any("not 32" in note for note in plan.notes) and any("not 8" in note for note in plan.notes)
    assert plan_capacity(env_id, hosted, workers=8, concurrency=None, cpu_count=2).concurrency == 1
    assert plan_capacity(env_id, hosted, workers=0, concurrency=None, cpu_count=2).workers == 0


@pytest.mark.parametrize("flag", ["--concurrency", "--max-connections"])
def test_cli_rejects_zero_in_one_line(tmp_path, flag, capsys):
    from rsigym.cli import main

    path = tmp_path / "s.yaml"
    path.write_text(yaml.safe_dump(battery("http://127.0.0.1:9/v1", 8, tasks=4, seeds=[0, 1])))
    assert main(["run", str(path), "--out", str(tmp_path / "o"), flag, "0"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"{flag} must be >= 1" in err
    assert not (tmp_path / "o" / RECORDS_FILE).exists()


def test_workers_started_before_a_failing_endpoint_check_are_ended_with_it(tmp_path):
    """The workers start (and import) while the endpoint check runs; a check that fails leaves
    no worker behind and nothing written."""
    import socket

    from rsigym.scenario.preflight import PreflightError

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    scenario = small_battery(f"http://127.0.0.1:{port}/v1")
    with pytest.raises(PreflightError):
        run_scenario(scenario, tmp_path / "run", workers=2, concurrency=4, progress=False, endpoint_check=True)
    assert not [p for p in multiprocessing.active_children() if p.name.startswith("rsigym-worker")]
    assert not (tmp_path / "run" / RECORDS_FILE).exists()


def test_started_workers_prepare_their_episodes_before_the_first_arrives(provider, sequential, tmp_path):
    """Workers handed to ``run_in_workers`` ready-made run the battery exactly as fresh ones."""
    from rsigym.runner.inflight import StartedWorkers, run_in_workers

    episodes = list(expand(small_battery(provider.api_base)))
    started = StartedWorkers(1, 4, None, warm=episodes)
    assert len(started.warm) == 1  # one env, one agent: one preparation
    records, dispatched = [], []
    run_in_workers(episodes, records.append, workers=1, concurrency=4, started=started,
                   on_dispatched=lambda: dispatched.append(len(records)))
    started.close()  # taken by the run: a no-op, no kill
    assert sorted(r.episode_key for r in records) == sorted(e.key for e in episodes)
    # once, when the last episode was handed out: it was still in flight then
    assert len(dispatched) == 1 and dispatched[0] < len(episodes), dispatched
    assert {f"{r.env.task_id}/{r.seed}": signature(r) for r in records} == sequential[1]


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "worker"])
def test_the_first_episode_of_an_env_runs_alone_only_until_its_first_step(provider, tmp_path, monkeypatch, workers):
    """The first episode of an env warms the process (imports, LiteLLM's first call, the env's
    caches) alone; the others start at its first step, not at its end (held back for all of it,
    they waited 2 s of a 16 s run of 64 Probe episodes at 500 ms per call)."""
    from datetime import datetime

    from rsigym.runner import inflight

    monkeypatch.setattr(inflight, "_warm_envs", set())  # a fresh process as far as warmth goes
    monkeypatch.setattr(inflight, "_warming", {})
    summary = run_scenario(small_battery(provider.api_base), tmp_path, workers=workers, concurrency=8,
                           progress=False, report=False)
    assert summary.ran == 8 and summary.infra_errors == 0
    records = sorted(read_records(tmp_path / RECORDS_FILE).records, key=lambda r: r.started_at)
    first, others = records[0], records[1:]
    assert len(first.steps) >= 2  # it plays on after its first step
    start = datetime.fromisoformat(first.started_at).timestamp()
    next_start = min(datetime.fromisoformat(r.started_at).timestamp() for r in others)
    # none started before the first had its first model call answered (0.1 s here) ...
    assert next_start >= start + first.steps[0].usage.latency_s - 0.002  # started_at has ms resolution
    # ... and they did not wait for it to end
    assert next_start < datetime.fromisoformat(first.finished_at).timestamp()


# An agent that notes, at each guess, how many sandbox leases the runner said to expect.
_HINT_PLUGIN = '''
from rsigym.agent import register_agent
from rsigym.records import Usage
from rsigym.sandbox import pool

class HintAgent:
    def __init__(self, spec):
        self.spec, self.last_usage = spec, Usage()
    def reset(self, task_info, seed):
        self.key = f"{task_info.get('task_id')}/{seed}"
    def act(self, observation):
        with open(self.spec.params["notes"], "a") as notes:
            notes.write(f"{self.key} {pool._EXPECTED[0]}\\n")
        return {"guess": 50}

register_agent("test_lease_hint")(HintAgent)
'''


@pytest.mark.parametrize("workers", [0, 1], ids=["in-process", "worker"])
@pytest.mark.parametrize("episodes", [6, 2])
def test_the_warming_episode_tells_the_pools_how_many_episodes_follow(tmp_path, monkeypatch, workers, episodes):
    """While the first episode of an env warms the process, the pools hear how many episodes will
    be in flight (min of the concurrency and the episodes there are) and make their containers
    meanwhile (``sandbox.pool.expect_leases``); from its first step on, no word is left."""
    from rsigym.runner import inflight

    monkeypatch.setattr(inflight, "_warm_envs", set())
    monkeypatch.setattr(inflight, "_warming", {})
    (tmp_path / "lease_hint_plugin.py").write_text(_HINT_PLUGIN)
    monkeypatch.syspath_prepend(str(tmp_path))
    notes = tmp_path / "notes.txt"
    path = write_scenario(tmp_path / "s.yaml", tasks={"split": "test", "limit": episodes}, conditions=["none"],
                          seeds=[0], max_steps=2, graders=["probe_efficiency"],
                          agents=[{"id": "h", "kind": "test_lease_hint", "params": {"notes": str(notes)}}])
    summary = run_scenario(load_scenario(path), tmp_path / "out", workers=workers, concurrency=4, progress=False,
                           report=False, imports=["lease_hint_plugin"])
    assert summary.ran == episodes and summary.infra_errors == 0
    heard = [int(line.split()[1]) for line in notes.read_text().splitlines()]
    assert len(heard) == 2 * episodes  # two guesses each (max_steps 2)
    assert heard[0] == min(4, episodes) and set(heard[1:]) == {0}, (heard, summary)
