"""The docker provider: one long-lived, locked-down container; commands run by ``docker exec``.

The container runs a tiny reaper as PID 1 (orphans of killed commands are reparented to it and
must be reaped; see ``container_scripts``), as ``nobody``, with no network, a read-only root, tmpfs work dir and /tmp,
memory (no swap), CPU and pids limits, every capability dropped and ``no-new-privileges``.

A timeout kills every process of ``nobody`` in the container (``kill -9 -1`` from a second exec:
the kernel spares only PID 1 and the caller), so double-forked or ``setsid`` escapees die too.
If that exec cannot even start (a fork bomb filled the pids limit) the container is restarted,
which also empties its tmpfs; the command's stderr says so.

A dead container (killed, removed, engine gone) raises ``SandboxUnavailable`` from the next call:
its commands are never reported as having run.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from rsigym.errors import SandboxError, SandboxUnavailable
from rsigym.sandbox import engine
from rsigym.sandbox.base import ExecResult, SandboxLimits
from rsigym.sandbox.container_scripts import EXTRACT, KILL_ALL, OOM_READ, RESET
from rsigym.sandbox.engine import NOBODY, connect, engine_errors
from rsigym.sandbox.exec_stream import pump_exec_socket, raw_socket
from rsigym.sandbox.output import CappedBuffer
from rsigym.sandbox.paths import work_relative

if TYPE_CHECKING:
    import docker

__all__ = ["DockerSandbox"]

_MIB = 1024 * 1024
_SIGKILL_EXIT = 128 + 9
_RESTART_NOTE = "\n[rsigym] runaway processes could not be killed; the sandbox was restarted and its files cleared\n"


@dataclass
class _Raw:
    stdout: bytes
    stderr: bytes
    exit_code: int | None
    timed_out: bool
    truncated: bool
    restarted: bool = False


def _oom_kill_count(text: str) -> int:
    for line in text.splitlines():
        key, _, value = line.partition(" ")
        if key == "oom_kill" and value.strip().isdigit():
            return int(value)
    return 0


class DockerSandbox:
    """One container running commands for one user at a time.

    Args:
        image: Image tag (see ``rsigym.sandbox.image_tag``).
        limits: Resource limits applied to the container.
        client: A ``docker.DockerClient``; one from the environment when None.

    Raises:
        SandboxUnavailable: No engine answers.
        SandboxError: The image is missing or the container did not start.
    """

    provider = "docker"

    def __init__(
        self, image: str, limits: SandboxLimits = SandboxLimits(), *, client: "docker.DockerClient | None" = None
    ) -> None:
        self.limits = limits
        self.image_tag = image
        self._client = client or connect()
        self._api = self._client.api
        self._closed = False
        self._on_close: Any = None  # set by DockerPool: close() hands the container back
        self._info_extra: dict[str, Any] = {}
        self._oom_kills = 0  # a fresh container's cgroup has seen none
        self.container_id, self._image_id = engine.create_container(self._api, image, limits)

    # -- container lifecycle -----------------------------------------------------------------

    def is_running(self) -> bool:
        """One inspect: True when the container exists and runs."""
        with engine_errors(self.container_id):
            return engine.is_running(self._api, self.container_id)

    def _restart(self) -> None:
        engine.restart(self._api, self.container_id)
        self._oom_kills = _oom_kill_count(self._raw_exec(OOM_READ, None, 10.0, 4096).stdout.decode())

    def _kill_all(self) -> bool:
        """Kill every process of the user; returns True when a restart was needed for it."""
        try:
            result = self._raw_exec(KILL_ALL, None, 5.0, 4096, kill_on_timeout=False)
            if result.exit_code == 0:
                return False
        except SandboxUnavailable:
            raise
        except SandboxError:
            pass  # the exec could not start (pids limit full): fall through to a restart
        self._restart()
        return True

    # -- exec --------------------------------------------------------------------------------

    def _raw_exec(
        self,
        argv: Sequence[str],
        stdin: bytes | None,
        timeout: float,
        cap: int,
        *,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        kill_on_timeout: bool = True,
    ) -> _Raw:
        deadline = time.monotonic() + timeout
        out, err = CappedBuffer(cap), CappedBuffer(cap)
        with engine_errors(self.container_id):
            exec_id = self._api.exec_create(
                self.container_id, list(argv), stdin=stdin is not None, user=NOBODY,
                environment=dict(env) if env else None, workdir=workdir or self.limits.work_dir,
            )["Id"]  # fmt: skip
            response = self._api.exec_start(exec_id, socket=True)
            sock = raw_socket(response)
            try:
                finished = pump_exec_socket(sock, stdin, deadline, out, err)
            finally:
                sock.close()  # the real close happens once the SDK's wrapper lets go too
                response.close()
            if not finished:
                restarted = self._kill_all() if kill_on_timeout else False
                return _Raw(out.getvalue(), err.getvalue(), None, True, out.truncated or err.truncated, restarted)
            exit_code = self._exit_code(exec_id)
        return _Raw(out.getvalue(), err.getvalue(), exit_code, False, out.truncated or err.truncated)

    def _exit_code(self, exec_id: str) -> int:
        # The stream can close a moment before the engine records the exit: poll briefly.
        for _ in range(200):
            state = self._api.exec_inspect(exec_id)
            if not state["Running"] and state["ExitCode"] is not None:
                return int(state["ExitCode"])
            if not engine.is_running(self._api, self.container_id):
                raise SandboxUnavailable("container stopped during exec", container_id=self.container_id)
            time.sleep(0.01)
        raise SandboxError(f"exec {exec_id[:12]} did not report an exit code")

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError(f"sandbox was closed (container {self.container_id[:12]})")

    def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``argv`` in the container as nobody.

        On timeout every process of nobody in the container is killed, including those of other
        execs running at the same time: a sandbox serves one user. ``python`` means ``python3``.
        """
        self._check_open()
        argv = list(argv)
        if not argv:
            raise SandboxError("exec needs a non-empty argv")
        if argv[0] == "python":
            argv[0] = "python3"  # Debian ships only python3; keep parity with the local provider
        workdir = None
        if cwd is not None:
            workdir = posixpath.normpath(posixpath.join(self.limits.work_dir, self._relative(cwd)))
        data = stdin.encode() if isinstance(stdin, str) else stdin
        started = time.monotonic()
        raw = self._raw_exec(argv, data, timeout, self.limits.output_bytes, env=env, workdir=workdir)
        stdout, stderr = raw.stdout, raw.stderr
        if raw.exit_code == 126 and stdout.startswith(b"OCI runtime exec failed"):
            # The engine reports a program it could not start on stdout; move it to stderr and
            # use a shell's status for "not found", as the local provider does.
            stdout, stderr = b"", stdout
            if b"not found" in stderr or b"no such file" in stderr:
                raw.exit_code = 127
        oom = False
        if raw.exit_code == _SIGKILL_EXIT:
            # Read lazily, only for SIGKILLed commands; the count is the container's, so compare
            # with the last value seen.
            counts = self._raw_exec(OOM_READ, None, 10.0, 4096)
            count = _oom_kill_count(counts.stdout.decode())
            oom, self._oom_kills = count > self._oom_kills, count
        return ExecResult(
            stdout=stdout.decode("utf-8", errors="replace"),
            stderr=stderr.decode("utf-8", errors="replace") + (_RESTART_NOTE if raw.restarted else ""),
            exit_code=raw.exit_code,
            timed_out=raw.timed_out,
            duration_s=time.monotonic() - started,
            output_truncated=raw.truncated,
            oom_killed=oom,
        )

    # -- files -------------------------------------------------------------------------------

    def _relative(self, path: str) -> str:
        return work_relative(path, (self.limits.work_dir,))

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        """Write each ``{path: content}`` under the work dir (relative, or absolute inside it)."""
        self._check_open()
        payload = io.BytesIO()
        with tarfile.open(fileobj=payload, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, content in files.items():
                rel = self._relative(path)
                if rel == ".":
                    raise SandboxError("cannot write a file over the work dir itself")
                data = content.encode() if isinstance(content, str) else content
                member = tarfile.TarInfo(rel)
                member.size, member.mode, member.mtime = len(data), 0o644, int(time.time())
                tar.addfile(member, io.BytesIO(data))
        raw = self._raw_exec(["python3", "-c", EXTRACT], payload.getvalue(), 120.0, 65536)
        if raw.timed_out or raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip()
            raise SandboxError(f"write_files failed (exit {raw.exit_code}): {detail}")

    def read_file(self, path: str) -> bytes:
        """The bytes of ``path`` in the work dir; SandboxError if it is missing or too large."""
        self._check_open()
        cap = self.limits.file_size_mb * _MIB
        raw = self._raw_exec(["cat", "--", self._relative(path)], None, 120.0, cap)
        if raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip()
            if "No such file" in detail or "Is a directory" in detail:
                raise SandboxError(f"no such file in sandbox: {path!r}")
            raise SandboxError(f"read_file({path!r}) failed (exit {raw.exit_code}): {detail}")
        if raw.truncated:
            raise SandboxError(f"read_file({path!r}): file is larger than {self.limits.file_size_mb} MB")
        return raw.stdout

    # -- reuse and release -------------------------------------------------------------------

    def reset(self) -> None:
        """Kill every process of the user and empty the work dir and /tmp, for the next user."""
        self._check_open()
        self._reset()

    def _reset(self) -> None:
        # One python process and no forks: right after a fork bomb the pids limit may leave room
        # for a single process. Anything left behind makes it fail, and then we restart.
        try:
            argv = ["python3", "-c", RESET, self.limits.work_dir]
            raw = self._raw_exec(argv, None, 30.0, 65536, kill_on_timeout=False)
            if raw.exit_code == 0:
                self._oom_kills = _oom_kill_count(raw.stdout.decode())
                return
        except SandboxUnavailable:
            raise
        except SandboxError:
            pass
        self._restart()

    def _handoff(self, on_close: Any) -> "DockerSandbox":
        """A fresh handle on this container; this one stops working (pool leases)."""
        handle = object.__new__(DockerSandbox)
        handle.__dict__.update(self.__dict__)
        handle._closed, handle._on_close, handle._info_extra = False, on_close, {}
        self._closed = True
        return handle

    def remove(self) -> None:
        """Force-remove the container. Idempotent; never raises for a container already gone."""
        self._closed = True
        try:
            self._api.remove_container(self.container_id, force=True)
        except Exception:  # noqa: BLE001 - gone already, or the engine is: nothing left to free
            pass

    @property
    def info(self) -> dict[str, Any]:
        return {
            "provider": "docker",
            "image": self._image_id,
            "image_tag": self.image_tag,
            "container": self.container_id,
            **self._info_extra,
        }

    def close(self) -> None:
        """Return the container to its pool, or remove it when it has none. Idempotent."""
        if self._closed:
            return
        if self._on_close is not None:
            self._closed = True
            self._on_close(self)
        else:
            self.remove()

    def __enter__(self) -> "DockerSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
