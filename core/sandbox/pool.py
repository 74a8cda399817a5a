"""Warm docker containers reused across episodes, and clean-up of the ones a run leaves behind.

Creating a container costs about half a second; handing over a warm one costs one inspect. A
released container is reset before the next user gets it (``DockerSandbox.reset``: every
process of both identities killed; work dir, harness dir, /tmp, /dev/shm, /dev/mqueue and System
V IPC emptied, one engine exec per identity, both at once; then verified from a third uid, by the
container's INIT server), through a new handle: the previous user's handle stops working at
release. A container whose reset fails its verification is removed, never
handed on.

While a runner warms an env with its first episode, the others wait (``rsigym.runner.inflight``);
it says how many will start at its first step (``expect_leases``), and a pool that first lends
a container then creates the rest meanwhile, a few at a time, instead of all of them in the storm
of leases that follows (64 Probe episodes at 32 in flight: the machine sat about idle for that
half second, then saturated for seconds with the 31 creations).

Containers are labelled with the owning process id and host; a pool removes its containers at
interpreter exit (``atexit``, and ``multiprocessing.util.Finalize`` because multiprocessing
workers leave through ``os._exit`` and skip atexit) and, when it starts, removes those of dead
owners on this host (a SIGKILLed run cannot clean up after itself).
"""

from __future__ import annotations

import atexit
import contextlib
import multiprocessing.util
import os
import socket
import threading
import weakref
from concurrent.futures import ThreadPoolExecutor
from typing import TYPE_CHECKING, Iterator

from rsigym.errors import SandboxError
from rsigym.sandbox.base import SandboxLimits
from rsigym.sandbox.docker import DockerSandbox
from rsigym.sandbox.engine import LABEL, connect

if TYPE_CHECKING:
    import docker

__all__ = ["DockerPool", "shared_pool", "clean_containers", "close_live_pools", "drop_idle_containers",
           "expect_leases", "leases_expected"]

_LIVE_POOLS: "weakref.WeakSet[DockerPool]" = weakref.WeakSet()
_SHARED: dict[tuple[int, str, SandboxLimits], "DockerPool"] = {}
_SHARED_LOCK = threading.Lock()
_HOOKS_PID: int | None = None
# Early among multiprocessing's finalizers (higher runs first): the engine client must still work.
_EXIT_PRIORITY = 50
_EXPECTED = [0]  # leases this process expects at once soon (``leases_expected``); 0: no word
_PREFILL_THREADS = 4  # creations at once while prefilling: the engine's work, not this process's


def expect_leases(count: int) -> None:
    """From now on ``count`` leases at once are expected soon in this process (0: no word): a
    pool that lends its first container meanwhile creates containers up to ``count`` in the
    background, while the word holds (a runner's warming episode, ``rsigym.runner.inflight``). A
    hint: it changes how many containers exist when, never what a lease gets."""
    _EXPECTED[0] = max(0, int(count))


@contextlib.contextmanager
def leases_expected(count: int) -> Iterator[None]:
    """``expect_leases(count)`` for the block."""
    expect_leases(count)
    try:
        yield
    finally:
        expect_leases(0)


def close_live_pools() -> None:
    """Remove every container the pools of this process created (at exit, or when a worker's
    parent died: ``rsigym.runner.orphans``)."""
    # A forked child inherits its parent's pool objects; only the owner may remove containers.
    for pool in list(_LIVE_POOLS):
        if pool.owner_pid == os.getpid():
            pool.close()


def drop_idle_containers() -> int:
    """Remove the idle containers of this process's pools (the pools stay usable: the next lease
    makes a container again); returns how many were removed. A server calls it once no env has
    held a container for a while, so a served env leaves no container behind its last client."""
    return sum(pool.drop_idle() for pool in list(_LIVE_POOLS) if pool.owner_pid == os.getpid())


def _install_exit_hooks() -> None:
    global _HOOKS_PID
    if _HOOKS_PID == os.getpid():
        return
    _HOOKS_PID = os.getpid()  # per process: a forked worker starts with an emptied finalizer registry
    atexit.register(close_live_pools)
    multiprocessing.util.Finalize(None, close_live_pools, exitpriority=_EXIT_PRIORITY)


def _pid_alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # someone else's live process
    return True


def clean_containers(
    orphans_only: bool = False, client: "docker.DockerClient | None" = None, *, owner_pid: int | None = None
) -> int:
    """Remove rsigym sandbox containers; returns how many were removed.

    Args:
        orphans_only: Only those of this host whose owning process is gone.
        client: A docker client; one from the environment when None.
        owner_pid: Only those this host's process ``owner_pid`` created.

    With neither filter, every container labelled ``rsigym.sandbox`` on the engine goes, running
    or not, whoever owns it (``rsigym sandbox clean``).
    """
    client = client or connect()
    labels = [f"{LABEL}=1"]
    if orphans_only or owner_pid is not None:
        labels.append(f"rsigym.host={socket.gethostname()}")
    if owner_pid is not None:
        labels.append(f"rsigym.owner_pid={owner_pid}")
    removed = 0
    for container in client.api.containers(all=True, filters={"label": labels}):
        owner = container.get("Labels", {}).get("rsigym.owner_pid", "")
        if orphans_only and _pid_alive(int(owner) if owner.isdigit() else 0):
            continue
        try:
            client.api.remove_container(container["Id"], force=True)
            removed += 1
        except Exception:  # noqa: BLE001 - removed concurrently by someone else
            pass
    return removed


class DockerPool:
    """A thread-safe pool of warm, reset containers of one image under one set of limits.

    Args:
        image: Image tag.
        limits: Limits of every container in the pool.
        size: Containers created up front (unless ``warm`` is False), and kept idle at least.
        max_idle: Containers kept idle at most. Between ``size`` and ``max_idle`` the pool keeps as
            many idle as were leased at once so far: with 32 episodes in flight, a round of 32
            leases reuses the 32 containers of the round before instead of removing 30 and
            creating 30 (the engine's create and remove, not the episodes, then set the pace).
        client: A docker client; one from the environment when None.
        warm: Create the ``size`` containers in the constructor (False: each on its first acquire).
    """

    def __init__(
        self, image: str, limits: SandboxLimits = SandboxLimits(), size: int = 2, client: "docker.DockerClient | None" = None,
        max_idle: int = 64, warm: bool = True,
    ) -> None:
        self.image, self.limits, self.size, self.max_idle = image, limits, size, max(size, max_idle)
        self._peak_leased = 0
        self.owner_pid = os.getpid()
        self._client = client or connect()
        self._lock = threading.Lock()
        self._idle: list[DockerSandbox] = []
        self._leased: dict[str, DockerSandbox] = {}
        self.closed = False
        self._ready = threading.Condition(self._lock)  # a prefilled container joined the idle ones
        self._prefilled = False  # prefilled once at most (``leases_expected``)
        self._making = 0  # prefill creations in flight ...
        self._awaited = 0  # ... and how many of them an acquire waits for instead of creating its own
        self._on_the_way = 0  # acquires between taking (or starting to create) a container and leasing it
        self._prefill_threads: list[threading.Thread] = []
        clean_containers(orphans_only=True, client=self._client)
        _LIVE_POOLS.add(self)
        _install_exit_hooks()
        if size > 0 and warm:
            with ThreadPoolExecutor(max_workers=size) as workers:
                futures = [workers.submit(self._new) for _ in range(size)]
            failures = [exc for f in futures if (exc := f.exception()) is not None]
            self._idle.extend(f.result() for f in futures if f.exception() is None)
            if failures:
                self.close()  # no half-warm pool: remove what did start
                raise failures[0]

    def _new(self) -> DockerSandbox:
        return DockerSandbox(self.image, self.limits, client=self._client)

    @property
    def idle_count(self) -> int:
        with self._lock:
            return len(self._idle)

    @property
    def keep_idle(self) -> int:
        """How many released containers are kept idle: the most leased at once so far, between
        ``size`` and ``max_idle``."""
        with self._lock:
            return self._keep_idle()

    def _keep_idle(self) -> int:
        return min(self.max_idle, max(self.size, self._peak_leased))

    @property
    def leased_count(self) -> int:
        with self._lock:
            return len(self._leased)

    def acquire(self) -> DockerSandbox:
        """A running, clean container; a new one when none is idle. Close it to give it back.

        Raises:
            SandboxUnavailable: The engine is gone.
            SandboxError: The pool is closed, or a new container failed to start.
        """
        while True:  # from _take_idle until it is leased, the container counts in ``_on_the_way``
            with self._ready:
                candidate = self._take_idle()
            if candidate is None:
                try:
                    candidate = self._new()
                except BaseException:
                    with self._lock:
                        self._on_the_way -= 1
                    raise
                break
            if candidate.is_running():  # killed from outside while it sat idle?
                break
            candidate.remove()
            with self._lock:
                self._on_the_way -= 1
        handle = candidate._handoff(self.release)
        with self._lock:
            self._on_the_way -= 1
            lent = not self.closed
            if lent:
                self._leased[handle.container_id] = handle
                self._peak_leased = max(self._peak_leased, len(self._leased))
                prefill, self._prefilled = not self._prefilled and _EXPECTED[0] > 1, True
        if lent:
            if prefill:
                self._prefill()
            return handle
        handle.remove()
        raise SandboxError("sandbox pool is closed")

    def _take_idle(self) -> DockerSandbox | None:
        """An idle container, waiting for a prefill creation in flight that no other acquire
        waits for; None when the caller is to create one. Either way the lease counts in
        ``_on_the_way`` from here until the caller has it leased (a prefill counts it). Called
        with the lock held."""
        while True:
            if self.closed:
                raise SandboxError("sandbox pool is closed")
            if self._idle or self._making <= self._awaited:
                self._on_the_way += 1
                return self._idle.pop() if self._idle else None
            self._awaited += 1
            try:
                self._ready.wait()
            finally:
                self._awaited -= 1

    def _prefill(self) -> None:
        """Create containers in the background up to the leases expected (``leases_expected``),
        while that word holds; each joins the idle ones (an acquire may be waiting for it)."""
        def creator() -> None:
            while True:
                with self._lock:
                    target = min(_EXPECTED[0], self.max_idle)
                    if self.closed or len(self._idle) + len(self._leased) + self._making + self._on_the_way >= target:
                        return
                    self._making += 1
                made: DockerSandbox | None
                try:
                    made = self._new()
                except BaseException:  # noqa: BLE001 - an acquire that needs one creates it and sees the error
                    made = None
                with self._ready:
                    self._making -= 1
                    kept = made is not None and not self.closed
                    if made is not None and kept:
                        self._idle.append(made)
                    self._ready.notify_all()  # a waiting acquire takes it, or creates its own
                if not kept:
                    if made is not None:
                        made.remove()  # the pool closed meanwhile
                    return

        for _ in range(_PREFILL_THREADS):
            thread = threading.Thread(target=creator, name="rsigym-pool-prefill", daemon=True)
            thread.start()
            self._prefill_threads.append(thread)

    def release(self, sandbox: DockerSandbox) -> None:
        """Reset ``sandbox`` and keep it idle; remove it if it is dead, unneeded, the pool closed,
        or its reset left anything behind (a failed verification fails the lease).

        Called by the sandbox's ``close()``; the caller's handle is already unusable.
        """
        with self._lock:
            self._leased.pop(sandbox.container_id, None)
            keep = not self.closed and len(self._idle) < self._keep_idle()
        if keep:
            try:
                sandbox._reset()
            except SandboxError:
                keep = False  # dead or unresettable: never hand it to the next user
        with self._lock:
            if keep and not self.closed and len(self._idle) < self._keep_idle():
                sandbox._closed = True
                self._idle.append(sandbox)
                return
        sandbox.remove()

    def drop_idle(self) -> int:
        """Remove the idle containers (leased ones stay leased); returns how many."""
        with self._lock:
            victims, self._idle = self._idle, []
            self._peak_leased = len(self._leased)  # what is kept idle follows the leases from now on
        _remove_all(victims)
        return len(victims)

    def close(self) -> None:
        """Remove every container of the pool, idle or leased. Idempotent."""
        with self._lock:
            if self.closed:
                return
            self.closed = True
            victims = self._idle + list(self._leased.values())
            self._idle, self._leased = [], {}
            self._ready.notify_all()
        _remove_all(victims)
        for thread in self._prefill_threads:  # a creation in flight removes what it made
            if thread is not threading.current_thread():
                thread.join(timeout=60)

    def __enter__(self) -> "DockerPool":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()


def _remove_all(sandboxes: list[DockerSandbox]) -> None:
    """Remove containers in parallel; one by one where threads cannot start (interpreter exit)."""
    threads = []
    for sandbox in sandboxes:
        thread = threading.Thread(target=sandbox.remove, daemon=True)
        try:
            thread.start()
        except RuntimeError:
            sandbox.remove()
            continue
        threads.append(thread)
    for thread in threads:
        thread.join()


def shared_pool(image: str, limits: SandboxLimits, size: int = 2) -> DockerPool:
    """The process-wide pool for ``(image, limits)``, created on first use.

    Keyed by process id as well: a forked child must not share its parent's containers. Its
    containers are made on demand (``warm=False``): the first of 32 episodes that ask at once made
    two under this function's lock while the other 31 waited, and a lone episode had one it never used.
    """
    key = (os.getpid(), image, limits)
    with _SHARED_LOCK:
        pool = _SHARED.get(key)
        if pool is None or pool.closed:
            pool = _SHARED[key] = DockerPool(image, limits, size=size, warm=False)
        return pool
