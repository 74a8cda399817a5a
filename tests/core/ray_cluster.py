"""A real multi-node Ray cluster on this machine for tests: a head and worker nodes, each started
with ``ray start`` as its own process group with its own ports, CPUs and temp dir.

Ray maps a loopback ``--node-ip-address`` to the host's address, so every node binds this
machine's own address (nothing leaves the machine). ``ray stop`` would stop every Ray on the
machine (another session's too); ``close`` kills only the process groups this cluster started,
then any process left whose command line names this cluster's temp dir.
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from pathlib import Path

__all__ = ["LocalRayCluster", "patched_package"]

# A node the head has not heard from for 10 s is dead (the default waits about 30 s; 3 s marked a
# node just starting on a loaded machine dead, and its raylet then exits).
HEALTH_CHECK = {"health_check_period_ms": 1000, "health_check_failure_threshold": 10}


def _free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("", 0))
        return int(probe.getsockname()[1])


def _kill_group(node: dict[str, object]) -> None:
    """Kill a node's ``ray start`` and everything it started (its own process group)."""
    process = node["process"]
    assert isinstance(process, subprocess.Popen)
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except ProcessLookupError:
        pass
    process.wait(timeout=30)


def patched_package(dest: Path) -> Path:
    """A copy of the installed rsigym under ``dest/rsigym`` that imports as the same code but is a
    different build: every file and folder a symbolic link to the installed one, except
    ``__init__.py``, copied with one comment line added. Returns ``dest``: put it first on
    ``PYTHONPATH`` and ``import rsigym`` finds the copy (``build.build_hash`` then differs)."""
    from rsigym.runner.build import _roots

    package = dest / "rsigym"
    package.mkdir(parents=True)
    for prefix, root in _roots():
        if prefix:  # a part mapped to a folder of its own (an editable install)
            (package / prefix.rstrip("/")).symlink_to(root)
            continue
        for item in root.iterdir():
            if item.name == "__pycache__":
                continue
            if item.name == "__init__.py":
                (package / item.name).write_text(item.read_text() + "\n# a different build (tests: ray_cluster)\n")
            else:
                (package / item.name).symlink_to(item)
    return dest


class _StartFailed(RuntimeError):
    pass


class LocalRayCluster:
    """``ray start --head`` plus ``ray start --address`` worker nodes, each with ``num_cpus``.

    Token authentication off (``RAY_AUTH_MODE=disabled`` in the nodes' environment): a test's
    driver runs in the pytest process, where Ray reads its authentication mode once; the cluster
    listens on this machine only and lives for one test module.
    """

    def __init__(self, workers: int = 2, num_cpus: int = 1, head_cpus: int = 1) -> None:
        from ray._private.services import get_node_ip_address

        self.temp_dir = Path(tempfile.mkdtemp(prefix="rr", dir="/tmp"))  # short: Unix socket paths
        self.env = {"RAY_AUTH_MODE": "disabled"}
        self.port = _free_port()
        self.address = f"{get_node_ip_address()}:{self.port}"
        self.nodes: list[dict[str, object]] = []  # {"process", "node_manager_port", "head"}
        try:
            self._start_node(head=True, num_cpus=head_cpus)
            for _ in range(workers):  # one at a time: a loaded machine times out a burst of raylets
                self._start_node(head=False, num_cpus=num_cpus)
        except BaseException:
            self.close()
            raise

    def add_node(self, num_cpus: int = 1, env: dict[str, str] | None = None, tries: int = 3) -> str:
        """Start one more worker node (with ``env`` added to its environment, which its Ray workers
        inherit) and wait until the head counts it alive; returns its node id. Asks ``ray.nodes()``
        of this process, which must be connected to the cluster; again when ``ray start`` gave up."""
        import ray

        for attempt in range(tries):
            self._start(head=False, num_cpus=num_cpus, env=env)
            node = self.nodes[-1]
            process = node["process"]
            assert isinstance(process, subprocess.Popen)
            for _ in range(480):  # polls of half a second, not a clock read
                if process.poll() is not None:
                    break
                found = [n["NodeID"] for n in ray.nodes()
                         if n.get("NodeManagerPort") == node["node_manager_port"] and n["Alive"]]
                if found:
                    return str(found[0])
                time.sleep(0.5)
            if attempt == tries - 1:
                raise RuntimeError(f"a node did not join: {Path(str(node['log'])).read_text()[-2000:]}")
            _kill_group(self.nodes.pop())
        raise AssertionError("unreachable")

    def node_id(self, index: int) -> str:
        """The Ray node id of node ``index`` (0: the head, then in the order started), from this
        process's ``ray.nodes()`` (connected to the cluster)."""
        import ray

        port = self.nodes[index]["node_manager_port"]
        for _ in range(240):  # polls: a node just started may not be listed yet
            found = [n["NodeID"] for n in ray.nodes() if n.get("NodeManagerPort") == port and n["Alive"]]
            if found:
                return str(found[0])
            time.sleep(0.5)
        raise RuntimeError(f"no live node with node manager port {port}")

    def _start_node(self, *, head: bool, num_cpus: int, tries: int = 3) -> None:
        """Start a node and wait until the head counts it; again when ``ray start`` gave up (it
        allows a raylet 30 s to register, which a loaded 2-core machine can miss)."""
        for attempt in range(tries):
            self._start(head=head, num_cpus=num_cpus)
            try:
                self.wait_for_nodes(len(self.nodes))
                return
            except _StartFailed:
                if attempt == tries - 1:
                    raise
                _kill_group(self.nodes.pop())

    def _start(self, *, head: bool, num_cpus: int, env: dict[str, str] | None = None) -> None:
        node_manager_port = _free_port()
        argv = [sys.executable, "-m", "ray.scripts.scripts", "start", "--block", "--disable-usage-stats",
                f"--num-cpus={num_cpus}", f"--temp-dir={self.temp_dir}", f"--node-manager-port={node_manager_port}",
                f"--object-manager-port={_free_port()}", f"--min-worker-port={_free_port()}", "--max-worker-port=0",
                f"--dashboard-agent-listen-port={_free_port()}", f"--dashboard-agent-grpc-port={_free_port()}",
                f"--metrics-export-port={_free_port()}", f"--runtime-env-agent-port={_free_port()}"]
        if head:
            argv += ["--head", f"--port={self.port}", "--include-dashboard=false",
                     f"--ray-client-server-port={_free_port()}", f"--dashboard-port={_free_port()}",
                     f"--system-config={json.dumps(HEALTH_CHECK)}"]
        else:
            argv += [f"--address={self.address}"]
        log_path = self.temp_dir / f"node-{len(self.nodes)}-{node_manager_port}.log"
        log = open(log_path, "w")
        process = subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                                   env={**os.environ, **self.env, **(env or {})})
        log.close()
        self.nodes.append({"process": process, "node_manager_port": node_manager_port, "head": head,
                           "log": str(log_path)})

    def alive_nodes(self) -> int:
        """Nodes the head counts alive (asked from a fresh interpreter: this one stays unconnected)."""
        code = ("import ray, sys; ray.init(address=sys.argv[1], log_to_driver=False, logging_level='ERROR'); "
                "print('alive', sum(n['Alive'] for n in ray.nodes()))")  # Ray may print lines of its own
        try:
            done = subprocess.run([sys.executable, "-c", code, self.address], capture_output=True, text=True,
                                  timeout=60, env={**os.environ, **self.env})
        except subprocess.TimeoutExpired:
            return 0
        counts = [line.split()[1] for line in done.stdout.splitlines() if line.startswith("alive ")]
        return int(counts[-1]) if done.returncode == 0 and counts else 0

    def wait_for_nodes(self, count: int, polls: int = 240) -> None:
        for _ in range(polls):  # polls of about a second, not a clock read
            for node in self.nodes:
                process = node["process"]
                assert isinstance(process, subprocess.Popen)
                if process.poll() is not None:
                    log = Path(str(node["log"])).read_text()[-2000:]
                    raise _StartFailed(f"ray start exited {process.returncode}:\n{log}")
            if self.alive_nodes() >= count:
                return
            time.sleep(1.0)
        raise RuntimeError(f"the Ray cluster did not reach {count} nodes in {polls} polls: see {self.temp_dir}")

    def worker_index(self, worker: int) -> int:
        """The index in ``nodes`` of worker node ``worker`` (0-based, the head not counted)."""
        return [i for i, n in enumerate(self.nodes) if not n["head"]][worker]

    def raylet_pid(self, worker: int) -> int:
        """The pid of worker node ``worker``'s raylet (0-based, the head not counted)."""
        import psutil

        node = [n for n in self.nodes if not n["head"]][worker]
        flag = f"--node_manager_port={node['node_manager_port']}"
        for process in psutil.process_iter(["name", "cmdline"]):
            cmdline = process.info["cmdline"] or []
            if process.info["name"] == "raylet" and flag in cmdline:
                return int(process.pid)
        raise RuntimeError(f"no raylet with {flag}")

    def close(self) -> None:
        """Kill every process this cluster started (its process groups, then stragglers by temp dir)."""
        import psutil

        for node in self.nodes:
            _kill_group(node)
        marker = str(self.temp_dir)
        for _ in range(3):
            left = [p for p in psutil.process_iter(["cmdline"]) if marker in " ".join(p.info["cmdline"] or [])]
            if not left:
                break
            for process in left:
                try:
                    process.kill()
                except psutil.Error:
                    pass
            time.sleep(0.5)
        shutil.rmtree(self.temp_dir, ignore_errors=True)

    def __enter__(self) -> "LocalRayCluster":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
