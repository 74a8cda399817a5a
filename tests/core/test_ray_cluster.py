"""The Ray backend on a real multi-node cluster on this machine: a head and two worker nodes, each
started with ``ray start`` (own processes, ports, one CPU each), against the fake provider.

One cluster serves the module (its start is most of the wall time: 1-2 min on a loaded 2-core
machine); the node-loss test runs last, since it changes the nodes (one killed, two added).
"""

from __future__ import annotations

import json
import re
import sys
import threading
import time
from collections import Counter
from pathlib import Path
from typing import Callable

import pytest

ray = pytest.importorskip("ray")

from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.llm.limits import format_stats  # noqa: E402
from rsigym.runner import RECORDS_FILE, run_scenario  # noqa: E402
from rsigym.runner import ray_backend  # noqa: E402
from rsigym.scenario import expand, parse_scenario  # noqa: E402

from .ray_cluster import LocalRayCluster, patched_package  # noqa: E402
sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))
from concurrency import battery  # noqa: E402
from fake_provider import FakeProvider  # noqa: E402

pytestmark = [pytest.mark.ray, pytest.mark.slow, pytest.mark.timeout(900)]


@pytest.fixture(scope="module")
def cluster():
    with LocalRayCluster(workers=2, num_cpus=1, head_cpus=1) as started:
        ray.init(address=started.address, log_to_driver=False, logging_level="ERROR")
        try:
            yield started
        finally:
            ray_backend._drop_pool(ray)
            ray.shutdown()


def scenario(api_base: str, episodes: int, *, tasks: int = 16):
    raw = battery(api_base, episodes, tasks=tasks, seeds=list(range(-(-episodes // tasks))))
    raw["agents"][0]["params"]["backoff_base_s"] = 0.05
    return parse_scenario(raw)


def keys_once(out: Path) -> Counter[str]:
    counts = Counter(r.episode_key for r in read_records(out / RECORDS_FILE).records)
    assert set(counts.values()) == {1}, [k for k, n in counts.items() if n > 1]
    return counts


def test_the_429_cap_holds_for_the_whole_cluster(cluster, tmp_path):
    # 3 runners x 8 in flight want 24 calls at once; the cap of 4 is the cluster's, not each runner's
    with FakeProvider(latency_s=0.1, storm_s=3.0, storm_every=2) as server:
        summary = run_scenario(scenario(server.api_base, 32), tmp_path, backend="ray", address=cluster.address,
                               workers=1, concurrency=8, max_connections=4, progress=False, report=False)
        served = server.stats()
    assert summary.workers == 3 and "3 nodes" in summary.notes[-1], summary.notes
    assert summary.ran == 32 and summary.infra_errors == 0  # the storm lost no episode
    assert served["max_in_flight"] <= 4, served  # never above the cap, on any node
    assert served["max_in_flight"] >= 2  # and episodes really were in flight together
    records = read_records(tmp_path / RECORDS_FILE).records
    [gate] = summary.limits
    assert served["throttled"] > 0 and gate.throttled == served["throttled"]
    assert sum(r.usage.provider_retries for r in records) == served["throttled"]  # each 429 retried once
    assert gate.max_connections == 4 and gate.min_cap is not None and gate.min_cap < 4  # the cap halved
    assert "cap 4 -> " in format_stats(gate)


def test_the_runners_start_and_import_the_episodes_needs_while_the_driver_checks_the_endpoints(
        cluster, tmp_path, monkeypatch):
    import rsigym.runner as runner_module

    ray_backend._drop_pool(ray)  # runners made for this run
    real_check, seen = runner_module.check_endpoints, {}

    def check(raw, source=""):
        # no episode has gone to a runner yet: whatever a runner imported, it imported to warm up
        pool = ray_backend._pool
        seen["runners"] = len(pool.runners) if pool else 0
        if pool:
            ray.get([r.probe for r in pool.runners], timeout=300)
            seen["litellm"] = ray.get([r.actor.__ray_call__.remote(lambda _: "litellm" in sys.modules)
                                       for r in pool.runners], timeout=60)
        return real_check(raw, source=source)

    monkeypatch.setattr(runner_module, "check_endpoints", check)
    with FakeProvider(latency_s=0.01) as server:
        summary = run_scenario(scenario(server.api_base, 6), tmp_path, backend="ray", address=cluster.address,
                               workers=1, concurrency=2, endpoint_check=True, progress=False, report=False)
    assert seen["runners"] == 3 and seen["litellm"] == [True, True, True], seen
    assert summary.ran == summary.total and summary.infra_errors == 0 and summary.workers == 3  # the same runners ran them


def test_the_episode_timeout_holds_on_ray_threads(cluster, tmp_path):
    # three calls of 5 s each: without the deadline every episode would finish, after 15 s
    with FakeProvider(latency_s=5.0) as slow:
        summary = run_scenario(scenario(slow.api_base, 6, tasks=6), tmp_path, backend="ray",
                               address=cluster.address, workers=1, concurrency=8, episode_timeout_s=1.0,
                               progress=False, report=False)
    records = read_records(tmp_path / RECORDS_FILE).records
    assert summary.ran == 6 and summary.concurrency == 8
    assert [r.termination for r in records] == ["infra_error"] * 6
    assert all((r.error or "").startswith("timeout: the episode ran past its wall clock of 1 s") for r in records), \
        [r.error for r in records]


def _when_records_reach(out: Path, count: int, then: Callable[[], None]) -> threading.Thread:
    """A thread that runs ``then`` once ``out`` holds ``count`` records (polls, not a clock)."""
    def wait_then() -> None:
        for _ in range(60_000):  # the test's timeout bounds a hang
            if (out / RECORDS_FILE).exists() and (out / RECORDS_FILE).read_bytes().count(b"\n") >= count:
                then()
                return
            time.sleep(0.01)

    thread = threading.Thread(target=wait_then, daemon=True)
    thread.start()
    return thread


@pytest.mark.parametrize("restart", [True, False], ids=["restarted", "dead_for_good"])
def test_the_limiter_killed_mid_run_fails_no_model_call(cluster, tmp_path, restart):
    # the attack: the one actor every model call of the cluster passes dies with calls waiting on it
    out, killed = tmp_path / "out", []

    def kill_the_limiter() -> None:
        assert ray_backend._pool is not None
        ray.kill(ray_backend._pool.limiter, no_restart=not restart)
        killed.append(True)

    with FakeProvider(latency_s=0.2) as server:
        battery_ = scenario(server.api_base, 64)
        killer = _when_records_reach(out, 12, kill_the_limiter)
        summary = run_scenario(battery_, out, backend="ray", address=cluster.address, workers=1, concurrency=8,
                               max_connections=6, progress=False, report=False)
        killer.join(timeout=10)
        served = server.stats()
    assert killed, "the test never killed the limiter mid-run"
    records = read_records(out / RECORDS_FILE).records
    assert summary.ran == 64 and summary.infra_errors == 0 and summary.stopped is None, summary.infra_causes
    assert all(r.termination != "infra_error" and r.error is None and r.grades for r in records)
    assert len(keys_once(out)) == 64
    note = "restarted mid-run" if restart else "lost mid-run"
    assert any(note in n for n in summary.notes), summary.notes
    if restart:  # the new limiter starts with free slots while the old ones' calls finish: at most 2 x 6
        assert served["max_in_flight"] <= 12, served


class GatedProvider(FakeProvider):
    """The fake provider, whose answers wait while ``gate`` is clear (the test holds the run at a
    point of its choosing, by an event, not a clock)."""

    def __init__(self, latency_s: float) -> None:
        self.gate = threading.Event()
        self.gate.set()
        super().__init__(latency_s)

    @property  # type: ignore[override]
    def latency_s(self) -> float:  # read by each request's handler before it answers
        self.gate.wait()
        return self._latency_s

    @latency_s.setter
    def latency_s(self, value: float) -> None:
        self._latency_s = value


def _wait_for(condition: Callable[[], bool], polls: int = 120_000) -> None:
    for _ in range(polls):  # polls, not a clock; the test's timeout bounds a hang
        if condition():
            return
        time.sleep(0.01)
    raise AssertionError("the condition never held")


def test_200_episodes_with_a_node_killed_mid_run_then_resume(cluster, tmp_path, caplog):
    """The Ray contract after a node loss (every key once) and what the run shows of it (issue 45).

    Before the run a fourth node joins whose Ray workers import a different rsigym build: a copy of
    the package made of links to this one, with one comment line added to ``__init__.py``, first on
    that node's ``PYTHONPATH`` (its workers inherit the raylet's environment). Same version string,
    different files: it must be refused. Mid-run a worker node's raylet is SIGKILLed, then a new
    node joins; the provider holds its answers until the driver has started a runner there (a
    replacement: the other nodes have no room), so the run cannot end before it.
    """
    out = tmp_path / "out"
    events: dict[str, object] = {}
    good = {cluster.node_id(i) for i in range(len(cluster.nodes))}  # the head and both workers
    assert len(good) == 3
    different = cluster.add_node(env={"PYTHONPATH": str(patched_package(tmp_path / "patched"))}, tries=6)

    def kill_then_replace(server: GatedProvider) -> None:  # once records flow: its runner holds 8 episodes then
        victim = cluster.node_id(cluster.worker_index(1))

        def flowing() -> bool:  # 40 records, one of them at least from the node about to die (a loaded
            # machine once let the other nodes write 40 before the victim's runner finished its first)
            written = (out / RECORDS_FILE).read_bytes() if (out / RECORDS_FILE).exists() else b""
            return written.count(b"\n") >= 40 and victim.encode() in written

        _wait_for(flowing)
        import os
        import signal

        server.gate.clear()  # no answer until the replacement runner is ready: the run cannot end first
        try:
            events["written"] = (out / RECORDS_FILE).read_bytes().count(b"\n")
            os.kill(cluster.raylet_pid(1), signal.SIGKILL)
            events["victim"] = victim
            _wait_for(lambda: not any(n["Alive"] for n in ray.nodes() if n["NodeID"] == victim))
            joined = cluster.add_node(tries=6)  # `ray start` gives a node 30 s, which a loaded machine can miss
            events["joined"] = joined
            _wait_for(lambda: ray_backend._pool is not None and any(
                r.node_id == joined and r.ready for r in ray_backend._pool.runners))
        except Exception as exc:  # the run must not wait on a held provider for ever: fail, not hang
            events["error"] = repr(exc)[:2000]
        finally:
            server.gate.set()

    with GatedProvider(latency_s=0.2) as server:
        raw = scenario(server.api_base, 208).raw  # 16 tasks x 13 seeds
        raw["agents"][0]["params"]["timeout_s"] = 600.0  # a call held while a node joins does not time out
        battery_ = parse_scenario(raw)
        expected = {e.key for e in expand(battery_)}
        assert len(expected) == 208
        killer = threading.Thread(target=kill_then_replace, args=(server,), daemon=True)
        killer.start()
        with caplog.at_level("WARNING", logger="rsigym.runner.ray_backend"):
            first = run_scenario(battery_, out, backend="ray", address=cluster.address, workers=1,
                                 concurrency=8, progress=False, report=False)
        killer.join(timeout=10)
        assert "joined" in events and int(str(events["written"])) < 208, ("the test never killed a node mid-run",
                                                                          events)
        victim, joined = str(events["victim"]), str(events["joined"])
        lost = [r.getMessage() for r in caplog.records if victim[:12] in r.getMessage()
                and ("died with" in r.getMessage() or "lost with its node" in r.getMessage())]
        assert lost, caplog.text  # the node's runner died with episodes in flight: they ran again elsewhere
        assert first.ran == 208 and first.workers == 3, (first.stopped, first.infra_causes, first.not_run)
        assert set(keys_once(out)) == expected  # nothing lost, nothing twice

        # the summary: the lost node named, the refused one named, the replacement, both ends counted
        notes = first.notes
        assert f"ray: lost node {victim[:12]} (" in "\n".join(notes), notes
        [refused] = [n for n in notes if "refused" in n]
        assert refused.startswith(f"ray: node {different[:12]} (") and "its rsigym build" in refused, refused
        assert "ray: started 1 runner to replace lost ones" in notes, notes
        assert re.fullmatch(r"ray: 3 runners on 3 nodes at the start \(\d with Docker\), 3 runners on 3 nodes at "
                            r"the end", notes[-1]), notes
        # ... and the manifest
        [entry] = json.loads((out / "manifest.json").read_text())["ray"]
        assert [n["node_id"] for n in entry["lost_nodes"]] == [victim]
        assert [n["node_id"] for n in entry["refused_nodes"]] == [different]
        assert entry["start"]["runners"] == entry["end"]["runners"] == 3 and entry["replaced_runners"] == 1
        # every record carries the node that ran it: the killed one's before the kill, the new one's
        # after, never the refused node's
        ran_on = Counter(r.node_id for r in read_records(out / RECORDS_FILE).records)
        assert set(ran_on) <= good | {joined} and None not in ran_on, ran_on
        assert ran_on[victim] > 0 and ran_on[joined] > 0 and different not in ran_on, ran_on
        # each live runner's log is in the run folder, named by its node
        logs = sorted((out / "ray_logs").glob("*/node-*-runner-*.err"))
        assert {p.name.split("-")[1] for p in logs} == {n[:12] for n in (good - {victim}) | {joined}}, logs
        assert all("rsigym: runner" in p.read_text() for p in logs)

        resumed = run_scenario(battery_, out, backend="ray", address=cluster.address, workers=1,
                               concurrency=8, progress=False, report=False)
    assert resumed.skipped == 208 - first.infra_errors and resumed.ran == first.infra_errors
    assert resumed.workers == (3 if first.infra_errors else 0)  # runners on the good nodes alive, if needed
    records = read_records(out / RECORDS_FILE).records
    assert set(keys_once(out)) == expected
    assert all(r.termination != "infra_error" and r.grades for r in records)
