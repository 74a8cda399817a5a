"""Many episodes in flight per worker: a thread per episode around the blocking env and LLM call.

A battery against a hosted model is latency-bound: each step waits on the provider. LiteLLM's
blocking ``completion`` spends that wait in socket reads that release the GIL, so ``concurrency``
threads in one process keep ``concurrency`` episodes in flight at the cost of one interpreter.

``run_in_process`` runs the threads in this process (``--workers 0``); ``run_in_workers`` starts
``workers`` spawned processes, each running up to ``concurrency`` episodes at once. The parent
hands each worker at most ``concurrency`` episodes at a time and knows which are where, so a
worker that dies (OOM, segfault) gives its in-flight episodes back for another try, like the
process pool does; a worker whose parent is killed exits at once. A worker where a timeout
landed inside an import (``deadline``) is retired: it finishes its episodes in flight, gives back
those not started, and a fresh worker takes its place. Either way ``on_record`` is
called in the calling thread only, once per episode: the single writer keeps records whole,
fsynced and resumable, exactly as with one episode per worker.

The first episode of an env in a process runs alone until its first step is recorded: by then
it has paid the imports and one-time caches (LiteLLM and its first call, the env's catalogue,
its first sandbox) once, and the others start while it plays on. Started cold on every thread at
once, those took a worker to 1.1 GiB and 30 s before its first request; warm, 32 episodes in
flight cost about 10% more memory than one. (Held back for the whole first episode, the others
waited about 2 s of a 16 s run of 64 Probe episodes at 500 ms per call; until its first step,
about 1.3 s, most of it the step's own model call.) Their docker sandboxes need not wait for
it: the runner tells the pools how many episodes will start (``sandbox.pool.expect_leases``),
and a pool that lends the first one a container creates the others' meanwhile.
"""

from __future__ import annotations

import contextlib
import gc
import logging
import multiprocessing
import os
import resource
import threading
from collections import Counter, deque
from concurrent.futures import FIRST_COMPLETED, Future, ThreadPoolExecutor, wait
from dataclasses import dataclass, field
from multiprocessing.connection import Connection
from multiprocessing.connection import wait as wait_for
from typing import Any, Callable, Sequence

from rsigym.llm import limits
from rsigym.records.trajectory import Trajectory

from ..records.redact import redacted_excerpt
from ..scenario.spec import EpisodeSpec
from .backends import MAX_ATTEMPTS, Admit, admit_all, infra_error_record, never_stop
from .episode import prepare, run_episode, worker_damaged
from .orphans import RunWatchdog, exit_with_parent

__all__ = ["StartedWorkers", "WorkerStats", "drain", "run_in_process", "run_in_workers"]

log = logging.getLogger(__name__)
OnRecord = Callable[[Trajectory], None]
POLL_S = 0.2  # how often the parent looks for dead workers while it waits for records
_warm_envs: set[str] = set()  # env ids whose first episode in this process made its first step (or ended)
_warming: dict[str, threading.Event] = {}  # env id -> set when its first episode has warmed it
_warming_lock = threading.Lock()


@dataclass
class WorkerStats:
    """What the workers of a run report at the end: provider limits and peak memory."""

    limits: list[limits.GateStats] = field(default_factory=list)
    peak_rss_mb: float = 0.0  # the largest worker's peak resident set size


def _peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024.0  # Linux reports KiB


def _safe_episode(spec: EpisodeSpec, warming: threading.Event | None = None) -> Trajectory:
    """``run_episode``, with anything it lets escape turned into the episode's infra_error record.

    The env counts as warm in this process once the episode's first step is recorded, or the
    episode ended without one (it ran, so it warmed what it could); ``warming`` is set then too,
    and the word on leases ahead (``sandbox.pool.expect_leases``) ends: the others start now.
    """
    from rsigym.sandbox.pool import expect_leases

    def warmed() -> None:
        if spec.env.id not in _warm_envs:
            expect_leases(0)
        _warm_envs.add(spec.env.id)
        if warming is not None:
            warming.set()

    try:
        record = run_episode(spec, on_first_step=warmed)
    except Exception as exc:
        return infra_error_record(spec, f"runner: {type(exc).__name__}: {redacted_excerpt(str(exc), 300)}")
    finally:
        if spec.env.id not in _warm_envs:
            expect_leases(0)  # whatever happened: no containers made ahead for others
        if warming is not None:
            warming.set()  # whatever happened: nobody waits on it for ever
    warmed()
    return record


def wait_or_warm(env_id: str) -> threading.Event | None:
    """For runners whose episodes arrive on several threads at once (Ray's): None once ``env_id``
    is warm (waiting while another thread's episode warms it); else an event for the caller, the
    first of its env, to hand to ``_safe_episode``, which sets it at the first step."""
    with _warming_lock:
        if env_id in _warm_envs:
            return None
        event = _warming.get(env_id)
        if event is None or event.is_set():  # none yet, or its warming episode ended without warming
            _warming[env_id] = threading.Event()
            return _warming[env_id]
    event.wait()
    return None



def run_in_process(episodes: Sequence[EpisodeSpec], on_record: OnRecord, *, concurrency: int,
                   limits_config: limits.LimitsConfig | None = None,
                   stop: Callable[[], bool] = never_stop,
                   admit: Admit = admit_all) -> WorkerStats:
    """Run episodes on ``concurrency`` threads of this process; ``on_record`` in this thread.

    Once ``stop()`` is true no further episode starts; those in flight finish and are recorded.
    An episode starts only once ``admit(spec)`` gives it back (a cost reservation); asked again after
    each record.
    """
    from rsigym.registry import register_gym_envs

    from rsigym.sandbox.pool import expect_leases

    register_gym_envs()  # once, before the threads: Gymnasium's registry is not made for races
    limits.configure(limits_config or limits.LimitsConfig(), default_cap=concurrency)
    pending = deque(episodes)
    # Not a `with` block: its exit waits for the episodes in flight, which must not hold up a Ctrl-C.
    pool = ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="rsigym-episode")
    running: dict[Future[Trajectory], EpisodeSpec] = {}

    def fill() -> None:  # bounded: a Ctrl-C drops no queue
        if stop():
            pending.clear()
        while (pending and len(running) < _room(pending[0], concurrency)
               and (spec := admit(pending[0])) is not None):  # with its share of a cost limit
            pending.popleft()
            if spec.env.id not in _warm_envs:  # while it warms, the others' sandboxes may be made
                expect_leases(min(concurrency, len(running) + 1 + len(pending)))  # (a cost limit may admit fewer)
            running[pool.submit(_safe_episode, spec)] = spec

    try:
        fill()
        while running:
            warming = any(spec.env.id not in _warm_envs for spec in running.values())
            # while a first episode warms its env, look every 50 ms: the others start at its first step
            done, _ = wait(running, timeout=0.05 if warming else None, return_when=FIRST_COMPLETED)
            for future in done:
                running.pop(future)
            fill()  # refill first: no slot idles during the fsyncs
            for future in done:
                on_record(future.result())
            fill()  # what the records just freed (a cost reservation, the first episode of an env)
    except BaseException:
        pool.shutdown(wait=False, cancel_futures=True)
        raise
    finally:
        expect_leases(0)
    pool.shutdown(wait=True)
    return WorkerStats(limits.snapshot(), _peak_rss_mb())


def _room(spec: EpisodeSpec, concurrency: int) -> int:
    """Episodes allowed in flight: one until an episode of this env has finished in this process."""
    return concurrency if spec.env.id in _warm_envs else 1


def _worker_main(worker_id: int, inbox: Any, results: Connection, concurrency: int,
                 limits_config: limits.LimitsConfig, warm: Sequence[EpisodeSpec] = ()) -> None:
    """A worker process: run what arrives in ``inbox`` (None ends) on ``concurrency`` threads.
    ``("expect", n)``, before the parent's first batch: it holds ``n`` episodes, whose sandboxes
    a pool may make while the first of them warms the env (``sandbox.pool.expect_leases``).

    ``warm``: episodes whose imports (``prepare``: the env's and agent's modules, LiteLLM) it does
    before reading its inbox, while the parent is still busy (the endpoint check). An import that
    fails here fails again in its episode, where it is recorded. Messages go back over this
    worker's own pipe, one writer thread at a time.
    """
    exit_with_parent()
    from rsigym.registry import register_gym_envs

    register_gym_envs()
    limits.configure(limits_config, default_cap=concurrency)
    for spec in warm:
        try:
            prepare(spec)
        except Exception:  # noqa: BLE001 - recorded by the episode that needs it
            pass
    # The imports' objects (about 400k with LiteLLM) live as long as the worker: kept out of the
    # collector's full passes, which otherwise walk them all, holding the GIL from every thread.
    gc.freeze()
    sending = threading.Lock()

    def send(message: tuple[str, int, Any]) -> None:
        with sending:
            results.send(message)

    retiring = threading.Event()

    def run(spec: EpisodeSpec, warming: threading.Event | None = None) -> None:
        send(("record", worker_id, _safe_episode(spec, warming)))
        if worker_damaged() and not retiring.is_set():  # a half-made module: no further episode here
            retiring.set()
            send(("retire", worker_id, None))

    from rsigym.sandbox.pool import expect_leases

    expected = 1  # episodes the parent's first batch put in flight here (its ("expect", n) message)
    with ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="rsigym-episode") as pool:
        for spec in iter(inbox.get, None):
            if isinstance(spec, tuple):
                expected = int(spec[1])
            elif retiring.is_set():
                send(("give_back", worker_id, spec.key))  # not started: another worker runs it
            elif spec.env.id in _warm_envs:
                pool.submit(run, spec)
            else:  # the first of its env: the next ones wait for its first step (the module's docstring)
                warming = threading.Event()
                expect_leases(expected)  # their sandboxes may be made meanwhile (until it warms: _safe_episode)
                pool.submit(run, spec, warming)
                warming.wait()
    send(("stats", worker_id, WorkerStats(limits.snapshot(), _peak_rss_mb())))
    results.close()
    gc.freeze()  # the process ends next (its pools' finalizers still run): no last walk of every object


class _Worker:
    """One worker process, its inbox and its own result pipe.

    A pipe per worker, not one queue shared by all: a ``multiprocessing.Queue`` has one write lock
    across its writers, and a worker SIGKILLed while sending holds it for ever, so every later
    worker blocks on its first record (a run that hangs). A dead worker's pipe just reads EOF.
    """

    def __init__(self, context: Any, worker_id: int, concurrency: int, limits_config: limits.LimitsConfig,
                 warm: Sequence[EpisodeSpec] = ()) -> None:
        self.id, self.inbox = worker_id, context.Queue()
        self.results, writer = context.Pipe(duplex=False)
        # not a daemon: an episode may start processes of its own (multiprocessing forbids that to
        # daemons); a worker ends with its inbox's None, a kill, or its parent (``orphans.exit_with_parent``)
        self.process = context.Process(target=_worker_main, name=f"rsigym-worker-{worker_id}",
                                       args=(worker_id, self.inbox, writer, concurrency, limits_config, tuple(warm)))
        self.process.start()
        writer.close()  # the worker holds the only write end: its death reads as EOF here
        self.in_flight: dict[str, EpisodeSpec] = {}
        self.closed = False
        self.eof = False
        self.told = False  # sent how many episodes its first batch holds

    def receive(self) -> list[tuple[str, int, Any]]:
        """Every message already in this worker's pipe (see ``drain``)."""
        if self.eof:
            return []
        messages, self.eof = drain(self.results)
        return messages


class StartedWorkers:
    """Worker processes started before their episodes are known (``run_scenario`` starts them
    ahead of the endpoint check): each imports and prepares ``warm`` meanwhile, so a run's first
    episode does not wait for a worker's start-up after the check. Hand it to ``run_in_workers``,
    which then owns it; ``close`` (idempotent) kills workers that never got that far.
    """

    def __init__(self, count: int, concurrency: int, limits_config: limits.LimitsConfig | None,
                 warm: Sequence[EpisodeSpec] = ()) -> None:
        self.concurrency, self.config = concurrency, limits_config or limits.LimitsConfig()
        self.context = multiprocessing.get_context("spawn")  # see run_in_workers
        self.watchdog = RunWatchdog()
        self.warm = _distinct_preparations(warm)
        self.workers: list[_Worker] = []
        try:
            for worker_id in range(max(1, count)):
                self.workers.append(_Worker(self.context, worker_id, concurrency, self.config, self.warm))
                self.watchdog.add([self.workers[-1].process.pid])
        except BaseException:
            self.close()
            raise
        self.taken = False

    def close(self) -> None:
        """Kill the workers (unless ``run_in_workers`` took them) and end the watchdog."""
        if not getattr(self, "taken", False):
            for worker in self.workers:
                worker.process.kill()
            for worker in self.workers:
                worker.process.join(timeout=5)
            self.watchdog.close()
        self.taken = True


def _distinct_preparations(specs: Sequence[EpisodeSpec]) -> tuple[EpisodeSpec, ...]:
    """One spec per distinct preparation (env id, agent kind, whether it calls a model, imports)."""
    from .episode import _calls_a_model

    seen: dict[tuple[Any, ...], EpisodeSpec] = {}
    for spec in specs:
        seen.setdefault((spec.env.id, spec.agent.kind, _calls_a_model(spec), tuple(spec.imports)), spec)
    return tuple(seen.values())


def drain(pipe: Connection) -> tuple[list[Any], bool]:
    """The messages waiting in ``pipe`` and whether its writer is gone (EOF; the pipe is then closed).

    A message cut short by its writer's death reads as EOF and is dropped: its episode is still in
    flight, so it is given back, never half-recorded.
    """
    messages = []
    try:
        while pipe.poll():
            messages.append(pipe.recv())
    except (EOFError, OSError):
        pipe.close()
        return messages, True
    return messages, False


def run_in_workers(episodes: Sequence[EpisodeSpec], on_record: OnRecord, *, workers: int, concurrency: int,
                   limits_config: limits.LimitsConfig | None = None,
                   stop: Callable[[], bool] = never_stop,
                   admit: Admit = admit_all,
                   started: StartedWorkers | None = None,
                   on_dispatched: Callable[[], None] | None = None) -> WorkerStats:
    """Run episodes in ``workers`` spawned processes with up to ``concurrency`` in flight in each.

    Once ``stop()`` is true no further episode starts; those in flight finish and are recorded.
    An episode is sent to a worker only once ``admit(spec)`` gives it back. ``started``: workers
    started ahead (``StartedWorkers``, of the same concurrency and limits), used instead of new
    ones; replacements are started as usual. ``on_dispatched``: called once, in this thread, when
    the last episode has been handed to a worker (or the run stops handing them out).
    """
    config = limits_config or limits.LimitsConfig()
    # spawn, not fork: the parent may hold threads (progress bar, docker client sockets).
    context = started.context if started is not None else multiprocessing.get_context("spawn")
    pending, attempts = deque(episodes), Counter[str]()
    # ends the workers if this process is killed (``orphans``)
    watchdog = started.watchdog if started is not None else RunWatchdog()
    next_id = len(started.workers) if started is not None else 0

    def start() -> _Worker:
        nonlocal next_id
        next_id += 1
        worker = _Worker(context, next_id - 1, concurrency, config)
        watchdog.add([worker.process.pid])
        return worker

    if started is not None:
        started.taken = True
        pool = list(started.workers)
    else:
        pool = [start() for _ in range(max(1, min(workers, len(pending))))]
    by_id = {w.id: w for w in pool}
    stats: list[WorkerStats] = []

    dispatched = on_dispatched

    def feed() -> None:
        nonlocal dispatched
        if stop():
            pending.clear()
        for worker in pool:
            batch = []
            while (pending and not worker.closed and len(worker.in_flight) < concurrency
                   and (spec := admit(pending[0])) is not None):  # with its share of a cost limit
                pending.popleft()
                worker.in_flight[spec.key] = spec
                batch.append(spec)
            if batch and not worker.told:  # how many its first batch puts in flight there (``expect_leases``)
                worker.inbox.put(("expect", len(worker.in_flight)))
                worker.told = True
            for spec in batch:
                worker.inbox.put(spec)
            if not pending and not worker.in_flight and not worker.closed:
                worker.inbox.put(None)  # nothing left for it: let it report and exit
                worker.closed = True
        if not pending and dispatched is not None:
            call, dispatched = dispatched, None  # once
            call()

    arrived: list[Trajectory] = []

    def handle(message: tuple[str, int, Any]) -> None:
        kind, worker_id, payload = message
        worker = by_id[worker_id]
        if kind == "record":
            worker.in_flight.pop(payload.episode_key, None)
            arrived.append(payload)  # written after the next feed: no slot idles during the fsyncs
        elif kind == "give_back":  # a retiring worker had not started it: no attempt is counted
            spec = worker.in_flight.pop(payload, None)
            if spec is not None:
                pending.appendleft(spec)
        elif kind == "retire":  # its episodes in flight finish; a fresh worker takes its place
            log.warning("worker %s is retired: a timeout interrupted an import there", worker_id)
            if not worker.closed:
                worker.closed = True
                worker.inbox.put(None)
            replacement = start()
            pool.append(replacement)
            by_id[replacement.id] = replacement
        else:
            stats.append(payload)

    def write_arrived() -> None:
        while arrived:
            on_record(arrived.pop(0))

    try:
        feed()
        while any(w.process.exitcode is None or w.in_flight for w in pool):
            for ready in wait_for([w.results for w in pool if not w.eof], timeout=POLL_S):
                for message in next(w for w in pool if w.results is ready).receive():
                    handle(message)
            for worker in list(pool):
                if worker.process.exitcode is None:
                    continue
                for message in worker.receive():  # what it sent before dying is still in the pipe
                    handle(message)
                write_arrived()
                if worker.in_flight:
                    log.warning("worker %s died (exit %s) with %d episodes in flight", worker.id,
                                worker.process.exitcode, len(worker.in_flight))
                    for spec in worker.in_flight.values():
                        attempts[spec.key] += 1
                        if attempts[spec.key] < MAX_ATTEMPTS:
                            pending.appendleft(spec)
                        else:
                            on_record(infra_error_record(spec, f"worker process died {MAX_ATTEMPTS} times"))
                    worker.in_flight.clear()
                    if not worker.closed and pending:
                        replacement = start()
                        pool.append(replacement)
                        by_id[replacement.id] = replacement
                pool.remove(worker)
                if not pool and pending:
                    replacement = start()
                    pool.append(replacement)
                    by_id[replacement.id] = replacement
            feed()
            write_arrived()
    except BaseException:
        for worker in pool:
            worker.process.kill()
        with contextlib.suppress(Exception):  # finished episodes stay finished (a Ctrl-C, not a bad disk)
            write_arrived()
        raise
    finally:
        for worker in by_id.values():
            worker.process.join(timeout=5)
        watchdog.close()
    return WorkerStats(limits.merge_stats([gate for s in stats for gate in s.limits]),
                       max((s.peak_rss_mb for s in stats), default=0.0))
