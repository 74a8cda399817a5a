"""The Docker engine calls of the docker provider: connect, create a locked-down container,
restart one, and translate engine errors into sandbox errors.

The docker SDK is imported inside functions, so importing rsigym.sandbox never needs it.
"""

from __future__ import annotations

import os
import socket
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any, Iterator
from urllib.parse import urlsplit

from rsigym.errors import SandboxError, SandboxUnavailable
from rsigym.sandbox.base import SandboxLimits
from rsigym.sandbox.container_scripts import (
    HARNESS_DIR,
    HARNESS_UID,
    INIT_SERVER,
    INIT_UID,
    USER_UID,
)

if TYPE_CHECKING:
    import docker

__all__ = [
    "LABEL",
    "NOBODY",
    "HARNESS",
    "INIT",
    "IDENTITY_USERS",
    "connect",
    "engine_errors",
    "create_container",
    "is_running",
    "restart",
    "tmpfs_inodes",
    "SHM_SIZE_MB",
]

LABEL = "rsigym.sandbox"
NOBODY = f"{USER_UID}:{USER_UID}"
HARNESS = f"{HARNESS_UID}:{HARNESS_UID}"
INIT = f"{INIT_UID}:{INIT_UID}"
# The container's default user is INIT (PID 1): every exec names its user explicitly.
IDENTITY_USERS = {"user": NOBODY, "harness": HARNESS}
_MIB = 1024 * 1024
SHM_SIZE_MB = 64  # the engine's default /dev/shm size, kept
_INODES_PER_MB, _MIN_INODES = 16, 1024


def connect() -> "docker.DockerClient":
    """A docker client from the environment; SandboxUnavailable when no engine answers."""
    try:
        import docker
    except ImportError as exc:  # pragma: no cover - docker is a hard dependency
        raise SandboxUnavailable("the docker Python package is not installed") from exc
    try:
        client = docker.from_env(max_pool_size=_CONNECTIONS)
    except docker.errors.DockerException as exc:
        raise SandboxUnavailable(f"Docker engine not reachable: {exc}") from exc
    _one_pool_per_engine(client)
    return client


_CONNECTIONS = 64  # kept open to the engine: 32 episodes in flight each hold one or two at once


def _one_pool_per_engine(client: "docker.DockerClient") -> None:
    """Key the SDK's connection pools by the engine's address, not by the whole request URL.

    docker-py 7 keys them by URL, and every exec has URLs of its own (``/exec/<id>/json``): at
    most 25 pools, the least recently used closed to make room, so with 32 threads a request
    could take a pool that another thread's request was closing ("Pool is closed", an infra
    error; 1 answer check of 400 under load).
    """
    for adapter in client.api.adapters.values():
        get = getattr(adapter, "get_connection", None)
        if get is None or not hasattr(adapter, "pools"):
            continue

        def by_engine(url: str, proxies: object = None, _get: Any = get) -> Any:
            parts = urlsplit(url)
            return _get(f"{parts.scheme}://{parts.netloc}", proxies)

        adapter.get_connection = by_engine


@contextmanager
def engine_errors(container_id: str | None) -> Iterator[None]:
    """Translate engine errors: a dead container or a gone engine is SandboxUnavailable."""
    import docker.errors
    import requests.exceptions

    try:
        yield
    except docker.errors.NotFound as exc:
        raise SandboxUnavailable(f"container is gone: {exc.explanation}", container_id=container_id) from exc
    except docker.errors.APIError as exc:
        if exc.status_code == 409 or "is not running" in str(exc):
            message = f"container is not running: {exc.explanation}"
            raise SandboxUnavailable(message, container_id=container_id) from exc
        raise SandboxError(f"Docker engine error: {exc}") from exc
    except (requests.exceptions.RequestException, docker.errors.DockerException, OSError) as exc:
        raise SandboxUnavailable(f"Docker engine unreachable: {exc}", container_id=container_id) from exc


def tmpfs_inodes(limits: SandboxLimits) -> int:
    """Files and directories each tmpfs of the container may hold (its ``nr_inodes``).

    A tmpfs ``size=`` bounds the bytes of its files, not their number, and every file costs the
    kernel about 1 KB (inode and dentry, measured: 20,000 empty files, 19 MB) charged to the
    container's memory: 200,000 empty files took more memory than the limit, and the OOM killer
    then chose PID 1 in 2 of 8 runs. 16 per MB of ``memory_mb`` keeps all four tmpfs
    together under about 7% of it (8,192 each at 512 MB: the families write tens of files, the
    evolution clearing test 3,000 nested directories); past it a program gets ENOSPC.
    """
    return max(_MIN_INODES, limits.memory_mb * _INODES_PER_MB)


def create_container(api: "docker.APIClient", image: str, limits: SandboxLimits) -> tuple[str, str, Any]:
    """Create and start a sandbox container; returns ``(container id, image id, PID 1's stream)``.

    PID 1 is the container's INIT server (``container_scripts.INIT_SERVER``); its stream is the
    container's attach socket, opened before the start so that the server's ready frame is on it
    (``exec_server.InitServer`` reads it). The container logs nothing (log driver ``none``):
    PID 1's replies go to the host only.

    The hardening, each setting guarded by a test in ``tests/security`` that fails without it
    (``benchmarks/sandbox_mutation_check.py`` removes them one at a time): no network, read-only
    root with tmpfs work, harness and /tmp dirs and /dev/shm, each with a bounded number of files
    (``tmpfs_inodes``), memory limit without swap, pids limit, every capability dropped,
    ``no-new-privileges``, and PID 1 running as INIT, a uid no exec uses.

    Raises:
        SandboxError: The image is missing, or the container did not start.
        SandboxUnavailable: The engine is gone.
    """
    import docker.errors
    from docker.types import Ulimit

    file_bytes = limits.file_size_mb * _MIB

    # uid/gid as well as mode: runc chmods a tmpfs to the mode of a directory the image has there,
    # ignoring mode= (/usr/local, 0755 in the image, comes up 0755 with mode=1777), and gives one
    # it creates mode=, so ownership decides who writes there. The image has the work and harness
    # dirs as 0755 (``image.RECIPE``) and mode= says 0755 too: either way they come up closed to
    # others, with no setup exec. /tmp (1777 in
    # the image) is owned by INIT so neither identity can lock the other out of it. The exec
    # wrapper is in the image (``WRAPPER``, read-only root).
    inodes = tmpfs_inodes(limits)

    def tmpfs(uid: int, size_mb: int, mode: str) -> str:
        return f"rw,exec,nosuid,nodev,size={size_mb}m,nr_inodes={inodes},mode={mode},uid={uid},gid={uid}"

    mounts = {
        limits.work_dir: tmpfs(USER_UID, limits.file_size_mb, "0755"),
        "/tmp": tmpfs(INIT_UID, limits.file_size_mb, "1777"),
        HARNESS_DIR: tmpfs(HARNESS_UID, limits.file_size_mb, "0755"),
        # The engine's own /dev/shm (64 MB, root's, 1777, noexec) with the same file bound: a
        # mount of ours at that path replaces the engine's.
        "/dev/shm": f"rw,noexec,nosuid,nodev,size={SHM_SIZE_MB}m,nr_inodes={inodes},mode=1777",
    }
    host_config = api.create_host_config(
        network_mode="none",
        mem_limit=f"{limits.memory_mb}m",
        memswap_limit=f"{limits.memory_mb}m",  # equal to mem_limit: no swap
        nano_cpus=int(limits.cpus * 1e9),
        pids_limit=limits.pids,
        read_only=True,
        tmpfs=mounts,
        cap_drop=["ALL"],
        security_opt=["no-new-privileges"],
        log_config={"type": "none", "config": {}},
        ulimits=[Ulimit(name="fsize", soft=file_bytes, hard=file_bytes), Ulimit(name="core", soft=0, hard=0)],
    )
    labels = {LABEL: "1", "rsigym.owner_pid": str(os.getpid()), "rsigym.host": socket.gethostname()}
    env = {
        "HOME": limits.work_dir,
        "LANG": "C.UTF-8",
        "PYTHONDONTWRITEBYTECODE": "1",
        # BLAS would start a thread per host core against a small pids limit.
        "OMP_NUM_THREADS": "1",
        "OPENBLAS_NUM_THREADS": "1",
        "MKL_NUM_THREADS": "1",
    }
    with engine_errors(None):
        try:
            created = api.create_container(
                image, command=["python3", "-I", "-S", "-c", INIT_SERVER], user=INIT, working_dir=limits.work_dir,
                labels=labels, environment=env, host_config=host_config, detach=True, stdin_open=True,
            )  # fmt: skip
        except docker.errors.ImageNotFound as exc:
            raise SandboxError(f"image {image} not found: run `rsigym sandbox build`") from exc
        container_id = created["Id"]
        stream = None
        try:
            stream = attach(api, container_id)
            api.start(container_id)
            return container_id, api.inspect_container(container_id)["Image"], stream
        except Exception:
            if stream is not None:
                stream.close()
            api.remove_container(container_id, force=True)
            raise


def attach(api: "docker.APIClient", container_id: str) -> Any:
    """The container's attach socket (stdin, stdout and stderr: PID 1's), as ``exec_start(socket=True)``
    returns an exec's."""
    return api.attach_socket(container_id, params={"stdin": 1, "stdout": 1, "stderr": 1, "stream": 1})


def is_running(api: "docker.APIClient", container_id: str) -> bool:
    """One inspect: True when the container exists and runs (engine errors propagate)."""
    import docker.errors

    try:
        return bool(api.inspect_container(container_id)["State"]["Running"])
    except docker.errors.NotFound:
        return False


def restart(api: "docker.APIClient", container_id: str) -> Any:
    """Kill the container's whole pid namespace and start it again, with fresh tmpfs mounts;
    returns the new PID 1's stream (see ``create_container``)."""
    with engine_errors(container_id):
        api.kill(container_id)
        api.wait(container_id, timeout=30)
        stream = attach(api, container_id)
        try:
            api.start(container_id)
        except BaseException:
            stream.close()
            raise
        return stream
