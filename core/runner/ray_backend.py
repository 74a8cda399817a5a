"""The Ray backend: the local in-flight runner's contract, on every node of a cluster.

The driver (the ``rsigym run`` process) starts runner actors on the live nodes (``workers`` per
node, each with ``concurrency`` episodes in flight: ``ray_actors``) and one limiter actor that
every model call of the cluster passes (``ray_limits``). It hands each runner at most
``concurrency`` episodes at a time, asks the run's guard before each (so a cost limit holds for
the cluster), and writes every record itself through ``on_record``: records reach the disk from
the driver only, once each. A runner or node that dies gives its episodes in flight back for
another try (at most ``MAX_ATTEMPTS`` in all, then an ``infra_error`` record that a resume runs
again), as the local backend does with a dead worker process. Episodes that ask for a Docker
sandbox go only to runners whose node has Docker and the image (each runner probes its node at
start); where no node has it, they run where they can, as on one machine without Docker.

Runners outlive a run in this driver process and serve the next run with the same shape (a sweep,
a benchmark): their imports and one-time caches are paid once. They end with the driver.
"""

from __future__ import annotations

import logging
from collections import Counter, deque
from dataclasses import dataclass, field
from typing import Any, Callable, Sequence

from rsigym.llm import limits
from rsigym.errors import UserError, install_hint
from rsigym.records.trajectory import Trajectory
from rsigym.records.redact import redacted_excerpt

from ..scenario.spec import EpisodeSpec
from .backends import MAX_ATTEMPTS, admit_all, infra_error_record, never_stop

__all__ = ["RayStats", "run_ray"]

log = logging.getLogger(__name__)
OnRecord = Callable[[Trajectory], None]
START_TIMEOUT_S = 300.0  # a runner not answering its probe by then is left out (a node stuck starting workers)


@dataclass
class RayStats:
    """What a Ray run used: runners, nodes, provider limits (for the whole cluster), peak memory."""

    runners: int = 0
    nodes: int = 0
    docker_nodes: int = 0
    limits: list[limits.GateStats] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)


@dataclass
class _Runner:
    actor: Any
    holder: int
    node_id: str
    docker: bool = False
    alive: bool = True
    in_flight: dict[Any, EpisodeSpec] = field(default_factory=dict)  # object ref -> episode


@dataclass
class _Pool:
    key: tuple[Any, ...]
    limiter: Any
    runners: list[_Runner]
    docker_reason: str | None = None


_pool: _Pool | None = None  # the runners kept for the next run of this driver



def _connect(ray: Any, address: str | None, workers: int) -> int | None:
    """Join the cluster at ``address`` (None: start a Ray on this host); returns the pid runners
    must end with (a Ray started here), else None."""
    import os

    if ray.is_initialized():
        return None
    try:
        ray.init(address=address, num_cpus=max(1, workers) if address is None else None,
                 include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        hint = ("; a cluster started by `ray start` may use token authentication: set RAY_AUTH_MODE=token "
                "here too" if "auth" in str(exc).lower() else "")
        raise UserError(f"cannot connect to Ray at {address!r}: {str(exc)[:300]}{hint}") from exc
    return os.getpid() if address is None else None


def _start_pool(ray: Any, key: tuple[Any, ...], workers: int, concurrency: int, cpu_heavy: bool,
                limits_config: limits.LimitsConfig, driver_pid: int | None) -> _Pool:
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from rsigym.sandbox.image import image_tag

    from .ray_actors import EpisodeRunner
    from .ray_limits import ProviderLimiter

    nodes = [n for n in ray.nodes() if n.get("Alive")]
    plan: list[str] = []  # a node id per runner
    for node in nodes:
        cpus = int((node.get("Resources") or {}).get("CPU", 0))
        plan += [node["NodeID"]] * (min(workers, cpus) if cpu_heavy else workers)
    if not plan:
        raise UserError("the Ray cluster has no live node that can run an episode"
                        + (" (a CPU-heavy env needs a node with CPUs)" if cpu_heavy else ""))
    # the limiter lives on the head node, whose loss ends the cluster anyway (the driver's own node
    # may be any node: several nodes on one host share its address)
    here = next((n["NodeID"] for n in nodes if "node:__internal_head__" in (n.get("Resources") or {})),
                ray.get_runtime_context().get_node_id())
    limiter = ray.remote(ProviderLimiter).options(
        num_cpus=0, max_concurrency=len(plan) * concurrency + 16,  # every call waiting, plus releases
        max_restarts=-1, max_task_retries=-1,  # should its process die, a new one (free slots) serves
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
    ).remote(limits_config, len(plan) * concurrency)
    runner_class = ray.remote(EpisodeRunner)
    runners = [_Runner(runner_class.options(
        num_cpus=1 if cpu_heavy else 0, max_concurrency=concurrency + 2, max_restarts=0,  # +2: probes
        scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
    ).remote(holder, limiter, limits_config, concurrency, driver_pid), holder, node_id)
        for holder, node_id in enumerate(plan)]
    probes = {r.actor.probe.remote(image_tag()): r for r in runners}
    ready, late = ray.wait(list(probes), num_returns=len(probes), timeout=START_TIMEOUT_S)
    reason = None
    for ref in ready:
        runner = probes[ref]
        try:
            probe = ray.get(ref)
        except ray.exceptions.RayError as exc:
            log.warning("a Ray runner on node %s did not start: %s", runner.node_id[:12], str(exc)[:300])
            runner.alive = False
            continue
        runner.docker, reason = bool(probe["docker"]), reason or probe["reason"]
    for ref in late:
        log.warning("a Ray runner on node %s did not start in %.0f s", probes[ref].node_id[:12], START_TIMEOUT_S)
        probes[ref].alive = False
        ray.kill(probes[ref].actor)
    live = [r for r in runners if r.alive]
    if not live:
        raise UserError("no Ray runner started (see the Ray logs of the cluster's nodes)")
    return _Pool(key, limiter, live, reason)


def _pool_for(ray: Any, workers: int, concurrency: int, cpu_heavy: bool, limits_config: limits.LimitsConfig,
              driver_pid: int | None) -> _Pool:
    """This driver's runners when they fit the run and all answer, else new ones."""
    global _pool
    nodes = tuple(sorted(n["NodeID"] for n in ray.nodes() if n.get("Alive")))
    key = (ray.get_runtime_context().get_job_id(), nodes, workers, concurrency, cpu_heavy)
    if _pool is not None and _pool.key == key:
        pool = _pool
        try:
            ray.get([r.actor.peak_rss_mb.remote() for r in pool.runners] +
                    [pool.limiter.configure.remote(limits_config, len(pool.runners) * concurrency)], timeout=60)
            ray.get([r.actor.use_limiter.remote(r.holder, pool.limiter, limits_config, concurrency)
                     for r in pool.runners], timeout=60)
            return pool
        except ray.exceptions.RayError:
            _drop_pool(ray)
    elif _pool is not None:
        _drop_pool(ray)
    _pool = _start_pool(ray, key, workers, concurrency, cpu_heavy, limits_config, driver_pid)
    return _pool


def _drop_pool(ray: Any) -> None:
    global _pool
    if _pool is not None:
        for actor in [r.actor for r in _pool.runners] + [_pool.limiter]:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone with its node
                pass
    _pool = None


def run_ray(episodes: Sequence[EpisodeSpec], on_record: OnRecord, *, address: str | None = None,
            workers: int = 1, concurrency: int = 1, limits_config: limits.LimitsConfig | None = None,
            cpu_heavy: bool = False, stop: Callable[[], bool] = never_stop,
            admit: Callable[[EpisodeSpec], bool] = admit_all) -> RayStats:
    """Run episodes on the Ray cluster at ``address`` (None: a Ray started on this host).

    ``workers`` runner actors per node (one per CPU at most for a CPU-heavy env), each with up to
    ``concurrency`` episodes in flight. Once ``stop()`` is true no further episode starts; those in
    flight finish and are recorded. An episode is sent only once ``admit(spec)`` says yes.
    """
    try:
        import ray
    except ImportError as exc:
        raise UserError("the ray backend needs ray: " + install_hint("ray", "'ray[default]'")) from exc
    from .ray_actors import needs_docker

    if not episodes:  # a resume with nothing left to run starts no runner
        return RayStats()
    driver_pid = _connect(ray, address, workers)
    config = limits_config or limits.LimitsConfig()
    pool = _pool_for(ray, max(1, workers), concurrency, cpu_heavy, config, driver_pid)
    stats = RayStats(runners=len(pool.runners), nodes=len({r.node_id for r in pool.runners}),
                     docker_nodes=len({r.node_id for r in pool.runners if r.docker}))
    if not stats.docker_nodes and any(needs_docker(spec) for spec in episodes):
        stats.notes.append(f"no Ray node has Docker and the sandbox image ({pool.docker_reason}): episodes "
                           "that ask for a Docker sandbox run where they can")
    pending, attempts = deque(episodes), Counter[str]()
    refs: dict[Any, _Runner] = {}
    arrived: list[Trajectory] = []

    def place(spec: EpisodeSpec) -> _Runner | None:
        docker_only = needs_docker(spec) and any(r.alive and r.docker for r in pool.runners)
        room = [r for r in pool.runners if r.alive and len(r.in_flight) < concurrency
                and (r.docker or not docker_only)]
        return min(room, key=lambda r: len(r.in_flight)) if room else None

    def feed() -> None:
        if stop():
            pending.clear()
        while pending:
            runner = place(pending[0])
            if runner is None or not admit(pending[0]):
                return
            spec = pending.popleft()
            ref = runner.actor.run.remote(spec)
            runner.in_flight[ref], refs[ref] = spec, runner

    def lost(runner: _Runner, spec: EpisodeSpec, exc: Exception) -> None:
        if runner.alive:
            runner.alive = False
            log.warning("Ray runner %d (node %s) died with %d episodes in flight: %s", runner.holder,
                        runner.node_id[:12], len(runner.in_flight) + 1, type(exc).__name__)
            pool.limiter.forget.remote(runner.holder)
        attempts[spec.key] += 1
        if attempts[spec.key] < MAX_ATTEMPTS and any(r.alive for r in pool.runners):
            pending.appendleft(spec)
        else:
            arrived.append(infra_error_record(spec, f"ray: runner lost {attempts[spec.key]} times "
                                                    f"({type(exc).__name__})"))

    try:
        feed()
        while refs or arrived:
            if refs:
                ready, rest = ray.wait(list(refs), num_returns=1)
                ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0] if rest else []
            else:
                ready = []
            for ref in ready:
                runner = refs.pop(ref)
                spec = runner.in_flight.pop(ref)
                try:
                    arrived.append(ray.get(ref))
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                        ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                    lost(runner, spec, exc)
                except ray.exceptions.RayError as exc:  # e.g. a record that cannot be unpickled here
                    arrived.append(infra_error_record(spec, f"ray: {type(exc).__name__}: {redacted_excerpt(str(exc), 300)}"))
            feed()  # refill first: no slot idles during the fsyncs
            while arrived:
                on_record(arrived.pop(0))
            feed()  # what the records just freed (a cost reservation)
            if not refs and pending and not any(r.alive for r in pool.runners):
                for spec in pending:
                    arrived.append(infra_error_record(spec, "ray: no live runner left in the cluster"))
                pending.clear()
    except BaseException:
        for ref in refs:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass
        _drop_pool(ray)  # runners with episodes cancelled mid-way are not reused
        raise
    alive = [r for r in pool.runners if r.alive]
    limiter_lost = False
    try:
        stats.limits = ray.get(pool.limiter.snapshot.remote(), timeout=60)
        if ray.get(pool.limiter.restarted.remote(), timeout=60):
            stats.notes.append("ray: the provider limiter was restarted mid-run; its statistics cover the calls since")
    except ray.exceptions.RayError as exc:
        stats.notes.append(f"ray: the provider limiter was lost mid-run ({type(exc).__name__}): each runner "
                           "applied the run's limits on its own from then on")
        limiter_lost = True
    try:
        stats.peak_rss_mb = max(ray.get([r.actor.peak_rss_mb.remote() for r in alive], timeout=60), default=0.0)
    except ray.exceptions.RayError as exc:
        log.warning("Ray run statistics unavailable: %s", str(exc)[:200])
    if limiter_lost or len(alive) < len(pool.runners):
        _drop_pool(ray)  # the next run starts a new limiter, and runners on the nodes alive then
    return stats
