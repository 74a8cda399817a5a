"""The Ray backend's parts that need no cluster: which episodes need a node's Docker, the
cluster-wide provider limiter (its slots freed when a runner dies or gives up waiting), the build
hash that tells two installs apart, runners per CPU, and the summary's node lines."""

from __future__ import annotations

import os
import re
import subprocess
import sys
import threading
from pathlib import Path

from rsigym.llm.limits import LimitsConfig, ProviderLimits
from rsigym.runner.ray_actors import needs_docker
from rsigym.runner.ray_backend import RayStats, runners_for_node
from rsigym.runner.ray_limits import ProviderLimiter
from rsigym.scenario import expand, load_scenario

from ..conftest import write_scenario
from .ray_cluster import patched_package


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


def _hash_in(python_path: Path | None) -> tuple[str, str]:
    """(rsigym's file, its build hash) as a fresh interpreter with ``python_path`` first sees them."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    if python_path is not None:
        env["PYTHONPATH"] = str(python_path)
    code = "import rsigym; from rsigym.runner.build import build_hash; print(rsigym.__file__); print(build_hash())"
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300, env=env,
                          cwd="/")
    assert done.returncode == 0, done.stderr
    where, digest = done.stdout.split()
    return where, digest


def test_the_build_hash_follows_the_code_not_its_folder_or_version(tmp_path):
    # the same code through a folder of links hashes the same; one comment line more does not
    import rsigym
    from rsigym.runner.build import build_hash

    here = build_hash()
    assert re.fullmatch(r"[0-9a-f]{16}", here) and build_hash() is here  # computed once, cached
    assert _hash_in(None)[1] == here
    same = tmp_path / "same"
    patched_package(same)
    (same / "rsigym" / "__init__.py").unlink()
    (same / "rsigym" / "__init__.py").symlink_to(Path(rsigym.__file__))
    where, digest = _hash_in(same)
    assert where.startswith(str(same)) and digest == here
    where, digest = _hash_in(patched_package(tmp_path / "patched"))
    assert where.startswith(str(tmp_path / "patched")) and digest != here
    assert rsigym.__version__  # the version string is the same for both builds: it could not tell them apart


def test_runners_are_sized_per_cpu_of_each_node():
    assert [runners_for_node(cpus, 1, False) for cpus in (0, 1, 8)] == [0, 1, 8]
    assert runners_for_node(8, 2, False) == 16  # --workers 2: two runners per CPU
    assert runners_for_node(8.0, 0, False) == 8  # --workers 0 on Ray: one per CPU
    assert runners_for_node(4, 3, True) == 4  # a CPU-heavy env: one per CPU whatever --workers says


def test_the_ray_summary_names_lost_and_refused_nodes_and_counts_both_ends():
    lost, refused = "1f" * 28, "2e" * 28
    stats = RayStats(runners=3, nodes=3, runners_at_end=3, nodes_at_end=3, lost_nodes={lost: "10.0.0.2:4242"},
                     lost_runners=1, replaced=1, refused={refused: f"ray: node {refused[:12]} refused: ..."},
                     build="0123456789abcdef", logs="/runs/x/ray_logs/1")
    lines = stats.lines()
    assert lines[0] == (f"ray: lost node {lost[:12]} (10.0.0.2:4242) mid-run; its episodes in flight ran again "
                        "on other runners")
    assert "ray: started 1 runner to replace lost ones" in lines
    assert f"ray: node {refused[:12]} refused: ..." in lines
    assert lines[-1] == "ray: 3 runners on 3 nodes at the start (0 with Docker), 3 runners on 3 nodes at the end"
    entry = stats.manifest_entry()
    assert entry["lost_nodes"] == [{"node_id": lost, "address": "10.0.0.2:4242"}]
    assert entry["refused_nodes"][0]["node_id"] == refused and entry["replaced_runners"] == 1
    assert entry["start"] == {"nodes": 3, "runners": 3, "docker_nodes": 0} and entry["end"] == {"nodes": 3, "runners": 3, "starting": 0}
    none_replaced = RayStats(runners=2, nodes=2, runners_at_end=1, nodes_at_end=1, lost_runners=1).lines()
    assert none_replaced[0].startswith("ray: 1 runner lost, none replaced")
    assert none_replaced[-1] == "ray: 2 runners on 2 nodes at the start (0 with Docker), 1 runner on 1 node at the end"


def test_every_ray_test_is_under_tests_core_where_make_test_runs_them():
    """`make test` runs the Ray tests (marker ``ray``) alone and collects only ``tests/core`` for
    them (collecting the whole suite again cost 4 s of its 10-minute budget): a Ray test anywhere
    else would never run there."""
    tests = Path(__file__).resolve().parents[1]
    elsewhere = [str(path.relative_to(tests)) for path in tests.rglob("*.py")
                 if path.relative_to(tests).parts[0] != "core" and re.search(r"mark\.ray\b", path.read_text())]
    assert elsewhere == []
