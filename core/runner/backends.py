"""The local process pool (Ray: ``ray_backend``). Both call ``on_record`` once per episode.

Neither backend writes records itself: the caller's single writer does, so records never
interleave and a record is on disk (fsynced) before the progress bar advances.
"""

from __future__ import annotations

import multiprocessing
import signal
import time
from collections import Counter
from concurrent.futures import FIRST_COMPLETED, ProcessPoolExecutor, wait
from concurrent.futures.process import BrokenProcessPool
from typing import Callable, Sequence

from rsigym.errors import UserError
from rsigym.records.trajectory import Trajectory, utc_now
from rsigym.records.redact import redacted_excerpt

from ..scenario.spec import EpisodeSpec
from .episode import run_episode
from .orphans import RunWatchdog, exit_with_parent

__all__ = ["Admit", "admit_all", "infra_error_record", "never_stop", "run_local"]

OnRecord = Callable[[Trajectory], None]
Stop = Callable[[], bool]  # asked after each record: True ends the run cleanly (a cost limit)
MAX_ATTEMPTS = 3  # a worker that dies takes every in-flight episode with it; retry those


def infra_error_record(spec: EpisodeSpec, error: str) -> Trajectory:
    """The record of an episode the infrastructure could not run: kept, never lost."""
    import rsigym

    return Trajectory(episode_key=spec.key, env=spec.env, agent=spec.agent, seed=spec.seed,
                      rep=spec.rep, termination="infra_error", error=error,
                      finished_at=utc_now(), rsigym_version=rsigym.__version__)


def _worker_init() -> None:
    """Workers leave Ctrl-C to the parent, which stops them: one quiet exit, no trace per worker;
    a parent killed outright ends them too (``orphans``)."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)
    exit_with_parent()


def _stop_workers(pool: ProcessPoolExecutor, grace_s: float = 3.0) -> None:
    """Terminate the pool's worker processes (on Ctrl-C); kill those still alive after ``grace_s``."""
    processes = list((getattr(pool, "_processes", None) or {}).values())  # private, but the only handle
    for process in processes:
        try:
            process.terminate()
        except Exception:  # noqa: BLE001 - already gone
            pass
    deadline = time.monotonic() + grace_s
    for process in processes:
        try:
            process.join(max(0.0, deadline - time.monotonic()))
            if process.is_alive():
                process.kill()
        except Exception:  # noqa: BLE001 - already gone
            pass


def never_stop() -> bool:
    """The default ``stop`` of every backend: the run is never asked to stop early."""
    return False


Admit = Callable[[EpisodeSpec], "EpisodeSpec | None"]  # the spec to start now (its cost cap set), or None


def admit_all(spec: EpisodeSpec) -> EpisodeSpec | None:
    """The default ``admit`` of every backend: no cost reservation holds an episode back."""
    return spec


def run_local(episodes: Sequence[EpisodeSpec], on_record: OnRecord, *, workers: int = 1,
              stop: Stop = never_stop) -> None:
    """Run episodes in ``workers`` spawned processes (0: in this process, for debugging).

    Once ``stop()`` is true, episodes not yet started are cancelled; those already running finish
    and are recorded.
    """
    if workers == 0:
        for spec in episodes:
            if stop():
                return
            on_record(run_episode(spec))
        return
    # spawn, not fork: the parent may hold threads (progress bar, docker client sockets).
    context = multiprocessing.get_context("spawn")
    with RunWatchdog() as watchdog:
        _run_pools(context, episodes, on_record, workers, stop, watchdog)


def _run_pools(context: multiprocessing.context.BaseContext, episodes: Sequence[EpisodeSpec], on_record: OnRecord,
               workers: int, stop: Stop, watchdog: RunWatchdog) -> None:
    pending, attempts = list(episodes), Counter[str]()
    while pending and not stop():
        retry: list[EpisodeSpec] = []
        # Not a `with` block: its exit waits for the workers, which must not hold up a Ctrl-C.
        pool = ProcessPoolExecutor(max_workers=workers, mp_context=context, initializer=_worker_init)
        futures = {pool.submit(run_episode, spec): spec for spec in pending}
        watchdog.add(p.pid for p in (getattr(pool, "_processes", None) or {}).values())  # private: see _stop_workers
        try:
            not_done = set(futures)
            while not_done:
                done, not_done = wait(not_done, return_when=FIRST_COMPLETED)
                for future in done:
                    spec = futures[future]
                    try:
                        record = future.result()
                    except BrokenProcessPool:
                        attempts[spec.key] += 1
                        if attempts[spec.key] < MAX_ATTEMPTS:
                            retry.append(spec)
                        else:
                            on_record(infra_error_record(spec, f"worker process died {MAX_ATTEMPTS} times"))
                        continue
                    except Exception as exc:  # e.g. a result that cannot be pickled: keep the episode
                        record = infra_error_record(spec, redacted_excerpt(f"worker: {type(exc).__name__}: {exc}", 500))
                    on_record(record)
                if stop():
                    for waiting in not_done:
                        waiting.cancel()  # not started: never run; running ones finish
                    not_done = {f for f in not_done if not f.cancelled()}
        except BaseException as exc:
            if isinstance(exc, KeyboardInterrupt):  # the user wants out now, not after the episodes
                _stop_workers(pool)
            pool.shutdown(wait=False, cancel_futures=True)
            raise
        pool.shutdown(wait=True)
        pending = retry
