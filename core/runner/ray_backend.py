"""The Ray backend: the local in-flight runner's contract, on every node of a cluster.

The driver (the ``rsigym run`` process) starts runner actors on the live nodes (``workers`` per
CPU of each node, each with ``concurrency`` episodes in flight: ``ray_actors``) and one limiter
actor that every model call of the cluster passes (``ray_limits``). It hands each runner at most
``concurrency`` episodes at a time, asks the run's guard before each (so a cost limit holds for
the cluster), and writes every record itself through ``on_record``: records reach the disk from
the driver only, once each, each with the id of the node that ran it. A runner or node that dies
gives its episodes in flight back for another try (at most ``MAX_ATTEMPTS`` in all, then an
``infra_error`` record that a resume runs again), as the local backend does with a dead worker
process; a new runner replaces it on a node with room for one (a node that joined, or the same
node when only the runner died). Episodes that ask for a Docker sandbox go only to runners whose
node has Docker and the image (each runner probes its node at start); where no node has it, they
run where they can, as on one machine without Docker.

Runners start in parallel and each takes episodes as soon as it has answered its probe: the first
episode does not wait for the slowest node. The probe also returns the node's rsigym build (a
content hash of the package files it imports, ``build``): a node whose build differs from the
driver's is refused, with one line naming it, and gets no episode (the same version string can
hide different code). At the end the driver gathers each live runner's Ray log (its stdout and
stderr) into the run folder, and counts nodes and runners at the start and at the end
(``RayStats``), naming every node lost mid-run.

Runners outlive a run in this driver process and serve the next run with the same shape and limits
(a sweep, a benchmark): their imports and one-time caches are paid once. They end with the driver.

``start_early`` connects and starts the runners before the driver checks the endpoints (as the
local backend starts its workers): each runner imports what the run's episodes need (the env's and
the agent's modules, LiteLLM: ``episode.prepare``) before it answers its probe, while the driver is
still busy, so no first episode pays a runner's imports.
"""

from __future__ import annotations

import logging
import time
from collections import Counter, deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable, Sequence

from rsigym.llm import limits
from rsigym.errors import UserError, install_hint
from rsigym.records.trajectory import Trajectory, utc_now
from rsigym.records.redact import redacted_excerpt

from ..scenario.spec import EpisodeSpec
from .backends import MAX_ATTEMPTS, Admit, admit_all, infra_error_record, never_stop
from .build import build_hash

__all__ = ["RayStats", "run_ray", "runners_for_node", "start_early"]

log = logging.getLogger(__name__)
OnRecord = Callable[[Trajectory], None]
START_TIMEOUT_S = 300.0  # a runner not answering its probe by then is left out (a node stuck starting workers)
NODE_POLL_S = 2.0  # how often the driver asks which nodes live (a lost runner's node, one that joined)
LOG_TAIL_BYTES = 1 << 20  # the most of each runner log file copied into the run folder


def short(node_id: str) -> str:
    """A node id as the run's lines show it (its first 12 hex digits, as ``ray status`` does)."""
    return node_id[:12]


@dataclass
class RayStats:
    """What a Ray run used: runners and nodes at the start and at the end, nodes lost, runners
    started to replace lost ones, nodes refused, provider limits (for the whole cluster), peak memory.

    "At the start": the runners started for the run (a refused node's runner, or one that did not
    start, is not counted); "at the end": those alive when the last episode was recorded (``starting``
    of them had not answered their probe yet: a run shorter than a slow node's start).
    """

    runners: int = 0  # at the start
    nodes: int = 0    # at the start
    docker_nodes: int = 0
    runners_at_end: int = 0
    nodes_at_end: int = 0
    lost_nodes: dict[str, str] = field(default_factory=dict)  # node id -> its address: died mid-run
    lost_runners: int = 0
    replaced: int = 0  # runners started mid-run in place of lost ones (that answered their probe)
    starting: int = 0  # counted at the end but still starting (a run shorter than a node's start)
    refused: dict[str, str] = field(default_factory=dict)  # node id -> the line that refused it
    build: str = ""   # the driver's rsigym build
    logs: str | None = None  # the folder the runners' logs were copied to
    limits: list[limits.GateStats] = field(default_factory=list)
    peak_rss_mb: float = 0.0
    notes: list[str] = field(default_factory=list)

    def lines(self) -> list[str]:
        """The run summary's Ray lines: lost and refused nodes first, the counts last."""
        def plural(n: int, word: str) -> str:
            return f"{n} {word}{'s' if n != 1 else ''}"

        out = [f"ray: lost node {short(node)} ({address or 'address unknown'}) mid-run; its episodes in flight "
               "ran again on other runners" for node, address in self.lost_nodes.items()]
        if self.replaced:
            out.append(f"ray: started {plural(self.replaced, 'runner')} to replace lost ones")
        elif self.lost_runners:
            out.append(f"ray: {plural(self.lost_runners, 'runner')} lost, none replaced (no live node had room "
                       "for another)")
        out += list(self.refused.values())
        if self.logs:
            out.append(f"ray: runner logs in {self.logs}")
        out.append(f"ray: {plural(self.runners, 'runner')} on {plural(self.nodes, 'node')} at the start "
                   f"({self.docker_nodes} with Docker), {plural(self.runners_at_end, 'runner')} on "
                   f"{plural(self.nodes_at_end, 'node')} at the end"
                   + (f" ({self.starting} still starting)" if self.starting else ""))
        return out

    def manifest_entry(self) -> dict[str, Any]:
        """This run's entry in the manifest's ``ray`` list."""
        return {"at": utc_now(), "build": self.build,
                "start": {"nodes": self.nodes, "runners": self.runners, "docker_nodes": self.docker_nodes},
                "end": {"nodes": self.nodes_at_end, "runners": self.runners_at_end, "starting": self.starting},
                "lost_nodes": [{"node_id": node, "address": address} for node, address in self.lost_nodes.items()],
                "lost_runners": self.lost_runners, "replaced_runners": self.replaced,
                "refused_nodes": [{"node_id": node, "line": line} for node, line in self.refused.items()],
                "logs": self.logs}


@dataclass
class _Runner:
    actor: Any
    holder: int
    node_id: str
    probe: Any = None  # its probe's object ref until it answers
    started_at: float = 0.0
    replacement: bool = False  # started mid-run in place of a lost runner
    ready: bool = False  # answered its probe with the driver's build: it takes episodes
    never: bool = False  # refused (another build) or did not start: never counted as a runner
    docker: bool = False
    alive: bool = True
    in_flight: dict[Any, EpisodeSpec] = field(default_factory=dict)  # object ref -> episode


@dataclass
class _Pool:
    key: tuple[Any, ...]
    limiter: Any
    runners: list[_Runner]
    make: Callable[[int, str], Any]  # (holder, node id) -> a new runner actor
    per_cpu: int  # runners per CPU of a node
    cpu_heavy: bool
    target: int  # runners the pool keeps (replacing lost ones while a node has room)
    docker_reason: str | None = None
    refused: dict[str, str] = field(default_factory=dict)  # node id -> the line that refused it
    failed: set[str] = field(default_factory=set)  # nodes whose runner did not start: no new one there
    addresses: dict[str, str] = field(default_factory=dict)  # node id -> its address
    warm: tuple[EpisodeSpec, ...] = ()  # one episode per distinct preparation: each new runner prepares them


_pool: _Pool | None = None  # the runners kept for the next run of this driver
_here_pid: int | None = None  # this driver's pid while it is connected to a Ray it started itself


def runners_for_node(cpus: float, workers: int, cpu_heavy: bool) -> int:
    """How many runners a node with ``cpus`` CPUs gets: ``workers`` per CPU (a CPU-heavy env: one
    per CPU, each holding it); a node with no CPU gets none."""
    return int(cpus) * (1 if cpu_heavy else max(1, workers))


def _live_nodes(ray: Any) -> dict[str, dict[str, Any]]:
    return {n["NodeID"]: n for n in ray.nodes() if n.get("Alive")}


def _address(node: dict[str, Any]) -> str:
    host, ip = node.get("NodeManagerHostname") or "", node.get("NodeManagerAddress") or ""
    port = node.get("NodeManagerPort")
    return f"{host} {ip}:{port}" if host and host != ip else f"{ip}:{port}"


def _connect(ray: Any, address: str | None) -> int | None:
    """Join the cluster at ``address`` (None: start a Ray on this host, with its CPUs); returns the
    pid runners must end with (a Ray started here), else None."""
    import os

    global _here_pid
    if ray.is_initialized():
        return _here_pid
    try:
        ray.init(address=address, include_dashboard=False, log_to_driver=False, ignore_reinit_error=True)
    except (ConnectionError, ValueError, RuntimeError) as exc:
        hint = ("; a cluster started by `ray start` may use token authentication: set RAY_AUTH_MODE=token "
                "here too" if "auth" in str(exc).lower() else "")
        raise UserError(f"cannot connect to Ray at {address!r}: {str(exc)[:300]}{hint}") from exc
    _here_pid = os.getpid() if address is None else None
    return _here_pid


def _start_pool(ray: Any, key: tuple[Any, ...], workers: int, concurrency: int, cpu_heavy: bool,
                limits_config: limits.LimitsConfig, driver_pid: int | None,
                warm: tuple[EpisodeSpec, ...] = ()) -> _Pool:
    """Start the limiter and every runner; returns at once (each runner answers its probe later)."""
    from ray.util.scheduling_strategies import NodeAffinitySchedulingStrategy

    from .ray_actors import EpisodeRunner
    from .ray_limits import ProviderLimiter

    nodes = _live_nodes(ray)
    plan: list[str] = []  # a node id per runner
    for node_id, node in nodes.items():
        plan += [node_id] * runners_for_node((node.get("Resources") or {}).get("CPU", 0), workers, cpu_heavy)
    if not plan:
        raise UserError("the Ray cluster has no live node with a CPU to run an episode on (runners are "
                        "started per CPU of each node)")
    # the limiter lives on the head node, whose loss ends the cluster anyway (the driver's own node
    # may be any node: several nodes on one host share its address)
    here = next((i for i, n in nodes.items() if "node:__internal_head__" in (n.get("Resources") or {})),
                ray.get_runtime_context().get_node_id())
    limiter = ray.remote(ProviderLimiter).options(
        num_cpus=0, max_concurrency=len(plan) * concurrency + 16,  # every call waiting, plus releases
        max_restarts=-1, max_task_retries=-1,  # should its process die, a new one (free slots) serves
        scheduling_strategy=NodeAffinitySchedulingStrategy(here, soft=True),
    ).remote(limits_config, len(plan) * concurrency)
    runner_class = ray.remote(EpisodeRunner)

    def make(holder: int, node_id: str) -> Any:
        return runner_class.options(
            num_cpus=1 if cpu_heavy else 0, max_concurrency=concurrency + 2, max_restarts=0,  # +2: probes
            scheduling_strategy=NodeAffinitySchedulingStrategy(node_id, soft=False),
        ).remote(holder, limiter, limits_config, concurrency, driver_pid)

    pool = _Pool(key, limiter, [], make, max(1, workers), cpu_heavy, len(plan),
                 addresses={i: _address(n) for i, n in nodes.items()}, warm=warm)
    for holder, node_id in enumerate(plan):
        _launch(pool, holder, node_id)
    return pool


def _launch(pool: _Pool, holder: int, node_id: str, *, replacement: bool = False) -> _Runner:
    from rsigym.sandbox.image import image_tag

    runner = _Runner(pool.make(holder, node_id), holder, node_id, started_at=time.monotonic(),
                     replacement=replacement)
    runner.probe = runner.actor.probe.remote(image_tag(), pool.warm)
    pool.runners.append(runner)
    return runner


def _pool_for(ray: Any, workers: int, concurrency: int, cpu_heavy: bool, limits_config: limits.LimitsConfig,
              driver_pid: int | None, episodes: Sequence[EpisodeSpec] = ()) -> _Pool:
    """This driver's runners when they fit the run and all answer, else new ones (which prepare
    ``episodes``' imports before they answer their probe)."""
    global _pool
    nodes = tuple(sorted(_live_nodes(ray)))
    # the limits too: Ray restarts a lost limiter with the arguments it was made with, so a limiter
    # made for another run's limits would come back with those
    key = (ray.get_runtime_context().get_job_id(), nodes, workers, concurrency, cpu_heavy, repr(limits_config))
    if _pool is not None and _pool.key == key:
        pool = _pool
        ready = [r for r in pool.runners if r.alive and r.ready]
        try:
            ray.get([r.actor.peak_rss_mb.remote() for r in ready] +
                    [pool.limiter.configure.remote(limits_config, pool.target * concurrency)], timeout=60)
            ray.get([r.actor.use_limiter.remote(r.holder, pool.limiter, limits_config, concurrency)
                     for r in ready], timeout=60)
            return pool
        except ray.exceptions.RayError:
            _drop_pool(ray)
    elif _pool is not None:
        _drop_pool(ray)
    from .inflight import _distinct_preparations

    _pool = _start_pool(ray, key, workers, concurrency, cpu_heavy, limits_config, driver_pid,
                        _distinct_preparations(episodes))
    return _pool


def _drop_pool(ray: Any) -> None:
    global _pool
    if _pool is not None:
        for actor in [r.actor for r in _pool.runners if r.alive] + [_pool.limiter]:
            try:
                ray.kill(actor)
            except Exception:  # noqa: BLE001 - already gone with its node
                pass
    _pool = None


def _gather_logs(ray: Any, runners: Sequence[_Runner], folder: Path) -> str | None:
    """Copy each runner's Ray log files (stdout, stderr; their last ``LOG_TAIL_BYTES``) into
    ``folder``, as ``node-<id>-runner-<n>.out|.err``; returns the folder, or None when none came."""
    try:
        answers = ray.get([r.actor.logs.remote(LOG_TAIL_BYTES) for r in runners], timeout=60)
    except ray.exceptions.RayError as exc:
        log.warning("the Ray runners' logs could not be gathered: %s", str(exc)[:200])
        return None
    written = 0
    for runner, files in zip(runners, answers):
        for suffix, text in files.items():
            folder.mkdir(parents=True, exist_ok=True)
            (folder / f"node-{short(runner.node_id)}-runner-{runner.holder}.{suffix}").write_text(text)
            written += 1
    return str(folder) if written else None


def _import_ray() -> Any:
    try:
        import ray
    except ImportError as exc:
        raise UserError("the ray backend needs ray: " + install_hint("ray", "'ray[default]'")) from exc
    return ray


def start_early(episodes: Sequence[EpisodeSpec], *, address: str | None = None, workers: int = 1,
                concurrency: int = 1, limits_config: limits.LimitsConfig | None = None,
                cpu_heavy: bool = False) -> None:
    """Connect to Ray and start the runners ``run_ray`` will take (same arguments), each preparing
    ``episodes``' imports before it answers its probe; returns without waiting for them."""
    if not episodes:
        return
    ray = _import_ray()
    driver_pid = _connect(ray, address)
    _pool_for(ray, max(1, workers), concurrency, cpu_heavy, limits_config or limits.LimitsConfig(), driver_pid,
              episodes)


def run_ray(episodes: Sequence[EpisodeSpec], on_record: OnRecord, *, address: str | None = None,
            workers: int = 1, concurrency: int = 1, limits_config: limits.LimitsConfig | None = None,
            cpu_heavy: bool = False, stop: Callable[[], bool] = never_stop,
            admit: Admit = admit_all, log_dir: Path | None = None) -> RayStats:
    """Run episodes on the Ray cluster at ``address`` (None: a Ray started on this host with its CPUs).

    ``workers`` runner actors per CPU of each node (at least 1; a CPU-heavy env: one per CPU),
    each with up to ``concurrency`` episodes in flight. Once ``stop()`` is true no further episode
    starts; those in flight finish and are recorded. An episode is sent only once ``admit(spec)``
    gives it back. The runners' logs are copied into ``log_dir`` at the end (None: not copied).
    """
    ray = _import_ray()
    from .ray_actors import needs_docker

    if not episodes:  # a resume with nothing left to run starts no runner
        return RayStats()
    driver_pid = _connect(ray, address)
    config = limits_config or limits.LimitsConfig()
    mine = build_hash()
    pool = _pool_for(ray, max(1, workers), concurrency, cpu_heavy, config, driver_pid, episodes)
    first = list(pool.runners)  # the runners this run began with
    stats = RayStats(build=mine)
    pending, attempts = deque(episodes), Counter[str]()
    refs: dict[Any, _Runner] = {}
    arrived: list[Trajectory] = []
    lost_runners: list[_Runner] = []
    failures: list[str] = []  # why runners did not start
    polled = time.monotonic()

    def starting() -> list[_Runner]:
        return [r for r in pool.runners if r.alive and not r.ready]

    def place(spec: EpisodeSpec) -> _Runner | None:
        ready = [r for r in pool.runners if r.alive and r.ready]
        # Docker episodes wait for a runner with Docker while one may still come (a runner starting)
        docker_only = needs_docker(spec) and (any(r.docker for r in ready) or bool(starting()))
        room = [r for r in ready if len(r.in_flight) < concurrency and (r.docker or not docker_only)]
        return min(room, key=lambda r: len(r.in_flight)) if room else None

    def feed() -> None:
        if stop():
            pending.clear()
        while pending:
            runner = place(pending[0])
            spec = admit(pending[0]) if runner is not None else None  # with its share of a cost limit
            if runner is None or spec is None:
                return
            pending.popleft()
            ref = runner.actor.run.remote(spec)
            runner.in_flight[ref], refs[ref] = spec, runner

    def retire(runner: _Runner, why: str) -> None:
        """A runner that will take no more episodes (dead, refused, not started)."""
        if runner.alive:
            runner.alive = False
            if runner.ready:
                lost_runners.append(runner)
            pool.limiter.forget.remote(runner.holder)
            log.warning("Ray runner %d (node %s) %s", runner.holder, short(runner.node_id), why)

    def lost(runner: _Runner, spec: EpisodeSpec, exc: Exception) -> None:
        retire(runner, f"died with {len(runner.in_flight) + 1} episodes in flight: {type(exc).__name__}")
        attempts[spec.key] += 1
        if attempts[spec.key] < MAX_ATTEMPTS and any(r.alive for r in pool.runners):
            pending.appendleft(spec)
        else:
            record = infra_error_record(spec, f"ray: runner lost {attempts[spec.key]} times ({type(exc).__name__})")
            record.node_id = runner.node_id
            arrived.append(record)

    def answered(runner: _Runner, ref: Any) -> None:
        """A runner's probe came back: it takes episodes, or its node is refused or left out."""
        runner.probe = None
        try:
            probe = ray.get(ref)
        except ray.exceptions.RayError as exc:
            if runner.alive and runner.node_id in _live_nodes(ray):
                failures.append(f"a runner on node {short(runner.node_id)} did not start: {str(exc)[:300]}")
                retire(runner, f"did not start: {str(exc)[:300]}")
                runner.never = True
                pool.failed.add(runner.node_id)
                pool.target -= 1  # never a runner: nothing to replace
            elif runner.alive:
                retire(runner, "lost with its node before it started")
            return
        if not runner.alive:
            return
        if probe.get("build") != mine:
            refuse(runner.node_id, str(probe.get("build")), str(probe.get("host", "")))
            return
        runner.ready, runner.docker = True, bool(probe["docker"])
        pool.docker_reason = pool.docker_reason or probe["reason"]

    def refuse(node_id: str, theirs: str, host: str) -> None:
        line = (f"ray: node {short(node_id)} ({pool.addresses.get(node_id) or host}) refused: its rsigym build "
                f"{theirs} differs from this driver's {mine}; install the same rsigym code on every node")
        if node_id not in pool.refused:
            pool.refused[node_id] = line
            log.warning("%s", line)
        for other in pool.runners:
            if other.node_id == node_id and other.alive:
                other.alive, other.never = False, True
                pool.target -= 1  # never a runner: nothing to replace
                pool.limiter.forget.remote(other.holder)
                try:
                    ray.kill(other.actor)
                except Exception:  # noqa: BLE001 - gone already
                    pass

    def poll() -> None:
        """Which nodes live: retire the runners of lost nodes and of runners that never answered,
        then start runners in place of lost ones on nodes with room."""
        nodes = _live_nodes(ray)
        pool.addresses.update({i: _address(n) for i, n in nodes.items()})
        for runner in pool.runners:
            if runner.alive and runner.node_id not in nodes:
                retire(runner, "lost with its node")
            elif runner.alive and not runner.ready and time.monotonic() - runner.started_at > START_TIMEOUT_S:
                failures.append(f"a runner on node {short(runner.node_id)} did not start in {START_TIMEOUT_S:.0f} s")
                retire(runner, f"did not start in {START_TIMEOUT_S:.0f} s")
                runner.never = True
                pool.failed.add(runner.node_id)
                pool.target -= 1
                try:
                    ray.kill(runner.actor)
                except Exception:  # noqa: BLE001 - gone already
                    pass
        missing = pool.target - sum(r.alive for r in pool.runners)
        if missing <= 0 or not (pending or refs):
            return
        for node_id, node in nodes.items():
            if node_id in pool.refused or node_id in pool.failed:
                continue
            room = (runners_for_node((node.get("Resources") or {}).get("CPU", 0), pool.per_cpu, pool.cpu_heavy)
                    - sum(r.alive and r.node_id == node_id for r in pool.runners))
            for _ in range(min(room, missing)):
                holder = max(r.holder for r in pool.runners) + 1
                _launch(pool, holder, node_id, replacement=True)
                missing -= 1
                log.warning("Ray runner %d started on node %s in place of a lost one", holder, short(node_id))

    try:
        while True:
            feed()
            while arrived:
                on_record(arrived.pop(0))
            feed()  # what the records just freed (a cost reservation)
            if not refs and not pending:
                break
            probes = {r.probe: r for r in starting() if r.probe is not None}
            if not refs and not probes:  # nothing in flight, no runner coming
                if any(r.alive and r.ready for r in pool.runners):
                    break  # the guard holds the rest back (a cost limit): they stay for a later run
                poll()  # a node with room may take a runner in place of the lost ones
                polled = time.monotonic()
                if starting():
                    continue
                if not any(r.ready for r in pool.runners):
                    raise UserError("no Ray runner started: " + ("; ".join(failures + list(pool.refused.values()))
                                                                  or "see the Ray logs of the cluster's nodes"))
                for spec in pending:
                    arrived.append(infra_error_record(spec, "ray: no live runner left in the cluster"))
                pending.clear()
                continue
            waiting = list(refs) + list(probes)
            timeout = max(0.0, NODE_POLL_S - (time.monotonic() - polled))
            ready, rest = ray.wait(waiting, num_returns=1, timeout=timeout)
            ready += ray.wait(rest, num_returns=len(rest), timeout=0)[0] if ready and rest else []
            for ref in ready:
                if ref in probes:
                    answered(probes[ref], ref)
                    continue
                runner = refs.pop(ref)
                spec = runner.in_flight.pop(ref)
                try:
                    arrived.append(ray.get(ref))
                except (ray.exceptions.RayActorError, ray.exceptions.ActorUnavailableError,
                        ray.exceptions.WorkerCrashedError, ray.exceptions.NodeDiedError) as exc:
                    lost(runner, spec, exc)
                except ray.exceptions.RayError as exc:  # e.g. a record that cannot be unpickled here
                    failed = infra_error_record(spec, f"ray: {type(exc).__name__}: {redacted_excerpt(str(exc), 300)}")
                    failed.node_id = runner.node_id
                    arrived.append(failed)
            if time.monotonic() - polled >= NODE_POLL_S:
                poll()
                polled = time.monotonic()
    except BaseException:
        for ref in refs:
            try:
                ray.cancel(ref)
            except Exception:  # noqa: BLE001 - the actor may be gone already
                pass
        _drop_pool(ray)  # runners with episodes cancelled mid-way are not reused
        raise

    probes = {r.probe: r for r in starting() if r.probe is not None}
    if probes:  # the probes already in: a refused node is named even after a short run
        for ref in ray.wait(list(probes), num_returns=len(probes), timeout=0)[0]:
            answered(probes[ref], ref)
    nodes = _live_nodes(ray)
    alive = [r for r in pool.runners if r.alive and r.ready]
    began = [r for r in first if not r.never]  # started for this run (a slow one may still be starting)
    ended = [r for r in pool.runners if r.alive]
    stats.runners, stats.nodes = len(began), len({r.node_id for r in began})
    stats.docker_nodes = len({r.node_id for r in began if r.docker})
    stats.runners_at_end, stats.nodes_at_end = len(ended), len({r.node_id for r in ended})
    stats.starting = len(ended) - len(alive)
    stats.lost_nodes = {r.node_id: pool.addresses.get(r.node_id, "") for r in pool.runners
                        if r.node_id not in nodes and r.node_id not in pool.refused}
    stats.lost_runners = len(lost_runners)
    # a replacement counts once it answered (one started on a node about to be declared dead did not)
    stats.replaced = sum(r.replacement and r.ready for r in pool.runners)
    stats.refused = dict(pool.refused)
    if not stats.docker_nodes and any(needs_docker(spec) for spec in episodes):
        stats.notes.append(f"no Ray node has Docker and the sandbox image ({pool.docker_reason}): episodes "
                           "that ask for a Docker sandbox run where they can")
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
    if log_dir is not None and alive:
        stats.logs = _gather_logs(ray, alive, log_dir)
    if limiter_lost or any(not r.alive and r.node_id not in pool.refused for r in pool.runners):
        _drop_pool(ray)  # the next run starts a new limiter, and runners on the nodes alive then
    return stats
