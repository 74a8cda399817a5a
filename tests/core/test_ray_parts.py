"""The Ray backend's parts that need no cluster: which episodes need a node's Docker, and the
cluster-wide provider limiter (its slots freed when a runner dies or gives up waiting)."""

from __future__ import annotations

import threading

from rsigym.llm.limits import LimitsConfig, ProviderLimits
from rsigym.runner.ray_actors import needs_docker
from rsigym.runner.ray_limits import ProviderLimiter
from rsigym.scenario import expand, load_scenario

from ..conftest import write_scenario


def test_an_episode_needs_docker_when_its_env_or_a_grader_asks_for_it(tmp_path):
    # Probe-v0 on the local sandbox, but probe_answer's own sandbox defaults to auto
    default = expand(load_scenario(write_scenario(tmp_path / "a.yaml")))[0]
    assert needs_docker(default)
    local = [{"name": "probe_answer", "params": {"sandbox": "local"}}, "probe_efficiency"]
    assert not needs_docker(expand(load_scenario(write_scenario(tmp_path / "b.yaml", graders=local)))[0])
    env_docker = {"id": "rsigym/Probe-v0", "kwargs": {"sandbox": "docker", "low": 0, "high": 100}}
    assert needs_docker(expand(load_scenario(write_scenario(tmp_path / "c.yaml", env=env_docker,
                                                            graders=local)))[0])
    env_default = {"id": "rsigym/Probe-v0", "kwargs": {"low": 0, "high": 100}}  # the env's default: auto
    assert needs_docker(expand(load_scenario(write_scenario(tmp_path / "d.yaml", env=env_default,
                                                            graders=local)))[0])


def test_the_limiter_holds_the_cap_and_frees_a_dead_runners_slots():
    limiter = ProviderLimiter(LimitsConfig(ProviderLimits(max_connections=2)), default_cap=64)
    limiter.acquire("p", 0, "a")
    limiter.acquire("p", 0, "b")  # runner 0 holds both slots
    third = threading.Thread(target=limiter.acquire, args=("p", 1, "c"), daemon=True)
    third.start()
    third.join(timeout=0.5)
    assert third.is_alive()  # the cap of 2 holds
    assert limiter.forget(0) == 2  # runner 0 died: its slots come back
    third.join(timeout=5)
    assert not third.is_alive()
    limiter.release("c", True, False, 10)
    [stats] = limiter.snapshot()
    assert stats.calls == 3 and stats.max_connections == 2


def test_a_429_halves_the_cluster_cap_and_a_slot_given_up_is_not_kept():
    limiter = ProviderLimiter(LimitsConfig(), default_cap=8)
    limiter.acquire("p", 0, "a")
    limiter.release("a", False, True, 0)  # answered 429
    [stats] = limiter.snapshot()
    assert stats.throttled == 1 and stats.final_cap == 4
    limiter.release("late", False, False, 0)  # its caller gave up (a deadline) before the grant ...
    limiter.acquire("p", 0, "late")  # ... so the grant goes straight back
    for n in range(4):  # all 4 slots still free
        limiter.acquire("p", 0, f"x{n}")
    assert limiter.forget(0) == 4
