"""A worker never outlives the run: a watchdog process and a watch in each worker (issue 27).

SIGKILL of the run's main process leaves no one to tell the workers, and a worker blocked on its
inbox or inside an episode would run on with PPID 1, holding memory and containers. Two lines:

* ``RunWatchdog``: a small process the run starts next to its workers (pool and in-flight
  backends) and tells each worker's pid over a pipe. The pipe's end is its only wait: when it
  ends without the run saying ``done``, the run died, and the watchdog SIGKILLs every worker
  still alive (checked by pid and start time), removes the containers labelled with their pids
  (twice, a second apart: one being created at that moment appears late) and exits. It needs no
  CPU while the run lives and nothing of the workers' (a worker still importing torch on a loaded
  machine holds its GIL for seconds; the watchdog does not care).
* ``exit_with_parent`` / ``watch_pid``: a thread in each worker (and in each Ray worker, whose
  parent is Ray's, watching the driver) that removes the worker's own containers and exits when
  the parent goes, for a worker the watchdog does not know of yet.

Not ``PR_SET_PDEATHSIG``: the kernel sends it when the *thread* that forked the worker ends, and
a signal leaves no one to remove the containers. A container still being created after the
watchdog's second sweep is removed by the next pool that starts on this host
(``clean_containers(orphans_only=True)``: its owner is dead).
"""

from __future__ import annotations

import multiprocessing
import os
import subprocess
import sys
import threading
import time
from typing import Callable, Iterable

__all__ = ["RunWatchdog", "exit_with_parent", "watch_pid", "WATCHDOG", "RELEASE_S", "POLL_S"]

RELEASE_S = 4.5  # a worker's own watch: at most this long to remove its containers, then it exits
POLL_S = 0.2  # how often a Ray worker looks for its driver

WATCHDOG = r"""
import os, signal, sys, time
signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the run's to handle; it then says done


def started(pid):
    try:
        with open("/proc/%d/stat" % pid) as fh:
            return fh.read().rsplit(")", 1)[1].split()[19]
    except (OSError, IndexError):
        return None


workers = {}
for line in sys.stdin:
    line = line.strip()
    if line == "done":
        sys.exit(0)
    if line.isdigit():
        workers[int(line)] = started(int(line))
for pid, start in workers.items():  # the run died: end what is left of it
    if start is not None and started(pid) == start:
        try:
            os.kill(pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
if workers:
    try:
        from rsigym.sandbox.pool import clean_containers
        for sweep in range(2):
            if sweep:
                time.sleep(1.0)
            for pid in workers:
                clean_containers(owner_pid=pid)
    except Exception:
        pass  # no engine (a local run), or it is gone: nothing to release
"""


class RunWatchdog:
    """The run's watchdog process (see the module docstring). ``add`` each worker's pid; ``close``
    (or leaving the ``with`` block) says the run ended on its own."""

    def __init__(self) -> None:
        # In the run's process group (no new session): whoever waits for the group to empty waits
        # for its clean-up too.
        self._proc = subprocess.Popen([sys.executable, "-c", WATCHDOG], stdin=subprocess.PIPE, close_fds=True)
        self._known: set[int] = set()

    def add(self, pids: Iterable[int | None]) -> None:
        new = [pid for pid in pids if pid is not None and pid not in self._known]
        if not new or self._proc.stdin is None:
            return
        self._known.update(new)
        try:
            self._proc.stdin.write("".join(f"{pid}\n" for pid in new).encode())
            self._proc.stdin.flush()
        except OSError:
            pass  # the watchdog is gone (killed with the group): the workers' own watch remains

    def close(self) -> None:
        if self._proc.stdin is not None and not self._proc.stdin.closed:
            try:
                self._proc.stdin.write(b"done\n")
                self._proc.stdin.close()
            except OSError:
                pass
        try:
            self._proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self._proc.kill()

    def __enter__(self) -> "RunWatchdog":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


_STARTED: set[int] = set()  # pids (of this process) whose watch runs: one per process


def _release_and_exit() -> None:
    """Remove this process's containers (at most ``RELEASE_S``), then end the process."""
    timer = threading.Timer(RELEASE_S, os._exit, args=(1,))
    timer.daemon = True
    timer.start()
    try:
        from rsigym.sandbox.pool import clean_containers, close_live_pools

        close_live_pools()
        clean_containers(owner_pid=os.getpid())
    except Exception:  # noqa: BLE001 - an engine error must not keep the orphan alive
        pass
    os._exit(1)


def _start(wait: Callable[[], None], name: str) -> None:
    if os.getpid() in _STARTED:
        return
    _STARTED.add(os.getpid())

    def watch() -> None:
        wait()
        _release_and_exit()

    threading.Thread(target=watch, name=name, daemon=True).start()


def exit_with_parent() -> None:
    """In a ``multiprocessing`` child: release its containers and exit when the parent dies."""
    parent = multiprocessing.parent_process()
    if parent is not None:
        _start(parent.join, "rsigym-parent-watch")


def watch_pid(pid: int) -> None:
    """Release this process's containers and exit when process ``pid`` (of this host) is gone."""

    def wait() -> None:
        while True:
            try:
                os.kill(pid, 0)
            except ProcessLookupError:
                return
            except PermissionError:
                pass  # alive, another user's
            time.sleep(POLL_S)

    if pid > 1 and pid != os.getpid():
        _start(wait, "rsigym-driver-watch")
