"""What runs on a Ray node: the episode runner actor, and which episodes need that node's Docker.

A runner is a threaded Ray actor pinned to one node: up to ``concurrency`` episodes at once on its
threads, as a local in-flight worker runs them, with the episode deadline on each thread
(``deadline``'s watchdog) and every model call through the cluster's one limiter
(``ray_limits``). Its sandboxes open on its own node's Docker engine and pool: a sandbox is opened
by the process that runs the episode. ``probe`` says at start whether that engine answers and has
the sandbox image, and the rsigym build this runner imported (``build``), which the driver
compares with its own; the driver sends an episode that asks for a Docker sandbox only to runners
whose node has one. Each record a runner returns carries its node id. ``logs`` returns the tail of
the runner's own Ray log files (its stdout and stderr), which the driver copies into the run folder.
"""

from __future__ import annotations

import functools
import gc
import inspect
import os
import socket
import sys
from typing import Any

from rsigym.llm import limits
from rsigym.records.trajectory import Trajectory

from ..scenario.spec import EpisodeSpec
from . import inflight
from .build import build_hash
from .orphans import watch_pid
from .ray_limits import SharedGate

__all__ = ["EpisodeRunner", "needs_docker"]

DOCKER_PROVIDERS = ("docker", "auto")  # "auto" falls back to no isolation without Docker: keep it on Docker


@functools.lru_cache(maxsize=None)
def _default_sandbox(kind: str, name: str) -> str | None:
    """The default of the ``sandbox`` argument of env ``name`` or grader ``name`` (None: it has none)."""
    from rsigym.registry import ENVS, GRADERS

    try:
        target = (ENVS if kind == "env" else GRADERS).lookup(name)
        parameter = inspect.signature(target).parameters.get("sandbox")
    except Exception:  # noqa: BLE001 - unknown or not introspectable: it fails in the episode itself
        return None
    if parameter is None or not isinstance(parameter.default, str):
        return None
    return parameter.default


def needs_docker(spec: EpisodeSpec) -> bool:
    """Whether the episode's env or one of its graders opens a Docker sandbox (asked or by default)."""
    choices = [spec.env.kwargs.get("sandbox", _default_sandbox("env", spec.env.id))]
    choices += [grader.params.get("sandbox", _default_sandbox("grader", grader.name)) for grader in spec.graders]
    return any(isinstance(choice, str) and choice in DOCKER_PROVIDERS for choice in choices)


class EpisodeRunner:
    """The body of a runner actor (made remote by ``ray_backend`` with ``max_concurrency``).

    Args:
        holder: This runner's number (the limiter frees its slots if it dies).
        limiter: The ``ProviderLimiter`` actor of the run.
        config: The run's limits, which this runner applies itself if the limiter dies for good.
        concurrency: This runner's episodes in flight (the cap of its own gates then, when none is set).
        driver_pid: The driver's pid when the driver started this Ray on its own host: the runner
            ends with it (``orphans``); None on a cluster.
    """

    def __init__(self, holder: int, limiter: Any, config: limits.LimitsConfig, concurrency: int,
                 driver_pid: int | None) -> None:
        import ray

        from rsigym.registry import register_gym_envs

        self._node_id = ray.get_runtime_context().get_node_id()
        if driver_pid is not None:
            watch_pid(driver_pid)
        register_gym_envs()  # once, before the threads: Gymnasium's registry is not made for races
        self.use_limiter(holder, limiter, config, concurrency)
        print(f"rsigym: runner {holder} on node {self._node_id} (pid {os.getpid()}, rsigym build {build_hash()})",
              file=sys.stderr, flush=True)  # the first line of its log, which the driver copies into the run folder

    def use_limiter(self, holder: int, limiter: Any, config: limits.LimitsConfig, concurrency: int) -> None:
        """Pass every model call through ``limiter`` (a new run on a reused runner gets its own);
        should it die for good, through this runner's own gates with ``config``."""
        def own_gate(provider: str) -> limits.Gate:
            return limits.ProviderGate(provider, config.for_provider(provider), default_cap=concurrency)

        limits.use_shared_gates(lambda provider: SharedGate(limiter, provider, holder, own_gate))

    def probe(self, image: str | None = None, warm: tuple[EpisodeSpec, ...] = ()) -> dict[str, Any]:
        """Where this runner is, its rsigym build, and whether its node's Docker engine answers and
        has the image; answered once ``warm``'s imports are done (``episode.prepare``: an import that
        fails here fails again in its episode, where it is recorded)."""
        from rsigym.sandbox.factory import resolve_provider

        from .episode import prepare

        provider, reason = resolve_provider("auto", image)
        for spec in warm:
            try:
                prepare(spec)
            except Exception:  # noqa: BLE001 - recorded by the episode that needs it
                pass
        if warm:
            gc.freeze()  # the imports' objects live as long as the runner (as in a local worker)
        return {"node_id": self._node_id, "host": socket.gethostname(), "pid": os.getpid(),
                "build": build_hash(), "docker": provider == "docker", "reason": reason}

    def run(self, spec: EpisodeSpec) -> Trajectory:
        """One episode, its record returned to the driver (which alone writes it), with this node's id."""
        # the first of an env runs alone until its first step (see ``inflight``); the others wait here
        record = inflight._safe_episode(spec, inflight.wait_or_warm(spec.env.id))
        record.node_id = self._node_id
        return record

    def logs(self, max_bytes: int) -> dict[str, str]:
        """The last ``max_bytes`` of this runner's Ray log files: ``{"out": ..., "err": ...}`` (Ray
        points the worker's stdout and stderr at them; empty where they are not files)."""
        found = {}
        for suffix, stream in (("out", sys.stdout), ("err", sys.stderr)):
            try:
                stream.flush()
                path = os.readlink(f"/proc/self/fd/{stream.fileno()}")
                with open(path, "rb") as handle:
                    handle.seek(max(0, os.fstat(handle.fileno()).st_size - max_bytes))
                    found[suffix] = handle.read().decode("utf-8", "replace")
            except (OSError, ValueError, AttributeError):  # not Linux, or not a file: nothing to copy
                continue
        return found

    def peak_rss_mb(self) -> float:
        return inflight._peak_rss_mb()
