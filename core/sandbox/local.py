"""The local provider: one subprocess per command, in a private temp dir, under rlimits.

Weaker guarantees than the docker provider, on purpose and documented in every record
(``info["isolation"]``):

* **No network isolation**: commands reach whatever the host reaches.
* **No filesystem isolation**: commands run as the calling user and can read and write whatever
  that user can; only the sandbox's own file API (``write_files``, ``read_file``, ``cwd``) is
  confined to the work dir.
* **rlimits, not cgroups**: RLIMIT_AS bounds address space (not resident memory, so a program
  that maps much and touches little may be refused early); RLIMIT_CPU bounds CPU seconds;
  RLIMIT_NPROC counts *every* process of the user and does not bind root at all, so it is set to
  the user's current count plus ``limits.pids`` and is no fork-bomb guard for root.
* Background processes do not outlive their command: when the command exits, what is left of
  its process group is killed. Processes that leave the group (``setsid``) are not tracked.

Use it where Docker is absent and the programs are trusted enough (tests, scripted agents).
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from typing import Any, Mapping, Sequence

from rsigym.errors import SandboxError
from rsigym.sandbox.base import ExecResult, SandboxLimits
from rsigym.sandbox.output import CappedBuffer
from rsigym.sandbox.paths import work_relative
from rsigym.sandbox.process_io import pump_process

__all__ = ["LocalSandbox"]

# Exit statuses a shell would give for a command it cannot run.
_NOT_FOUND, _NOT_EXECUTABLE = 127, 126
_OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "cannot allocate memory")


def _user_task_count() -> int:
    """Tasks (processes and threads) of this real uid: what RLIMIT_NPROC counts."""
    uid, count = os.getuid(), 0
    try:
        pids = [p for p in os.listdir("/proc") if p.isdigit()]
    except OSError:
        return 0
    for pid in pids:
        try:
            if os.stat(f"/proc/{pid}").st_uid == uid:
                count += len(os.listdir(f"/proc/{pid}/task"))
        except OSError:
            continue  # exited while we looked
    return count


def _set_rlimits(limits: SandboxLimits, timeout: float, nproc: int) -> None:
    """Runs in the child between fork and exec; must not raise for a limit the OS refuses."""
    mib = 1024 * 1024
    cpu_s = math.ceil(timeout) + 1
    wanted = [
        (resource.RLIMIT_AS, limits.memory_mb * mib),
        # Soft below hard: CPU exhaustion arrives as SIGXCPU, which is not mistaken for OOM.
        (resource.RLIMIT_CPU, (cpu_s, cpu_s + 1)),
        (resource.RLIMIT_NPROC, nproc),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * mib),
        (resource.RLIMIT_CORE, 0),
    ]
    for which, value in wanted:
        soft, hard = value if isinstance(value, tuple) else (value, value)
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass  # above an existing hard limit: the existing, stricter one stays


class LocalSandbox:
    """Runs commands as subprocesses of this process, in a private temp work dir.

    Args:
        limits: Resource limits; ``cpus`` is ignored (RLIMIT_CPU bounds CPU seconds instead).

    ``python3`` and ``python`` as ``argv[0]`` run this interpreter (``sys.executable``), so the
    packages of the current environment (numpy) are available, as they are in the image.
    Paths given to ``write_files``, ``read_file`` and ``cwd`` are relative to the work dir, or
    absolute under it or under ``limits.work_dir`` (so ``/work/x.py`` means the same file as in a
    container).
    """

    provider = "local"

    def __init__(self, limits: SandboxLimits = SandboxLimits()) -> None:
        self.limits = limits
        self.work_dir = os.path.realpath(tempfile.mkdtemp(prefix="rsigym-sandbox-"))
        self._closed = False
        self._nproc: int | None = None
        self._info_extra: dict[str, Any] = {}
        # PATH starts with this interpreter's bin dir: `sh -c "python3 ..."` finds it too.
        self._base_env = {
            "PATH": os.pathsep.join(
                [os.path.dirname(sys.executable), "/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"]
            ),
            "HOME": self.work_dir,
            "LANG": "C.UTF-8",
            "PYTHONDONTWRITEBYTECODE": "1",
            # BLAS pools reserve address space and a thread per core, which trips RLIMIT_AS and
            # RLIMIT_NPROC; a sandboxed program gets one CPU's worth anyway.
            "OMP_NUM_THREADS": "1",
            "OPENBLAS_NUM_THREADS": "1",
            "MKL_NUM_THREADS": "1",
        }

    # -- paths -------------------------------------------------------------------------------

    def _host_path(self, path: str) -> str:
        rel = work_relative(path, (self.limits.work_dir, self.work_dir))
        host = os.path.realpath(os.path.join(self.work_dir, rel))
        # realpath follows symlinks a program may have planted in the work dir.
        if os.path.commonpath([host, self.work_dir]) != self.work_dir:
            raise SandboxError(f"path {path!r} resolves outside the sandbox work dir")
        return host

    def _check_open(self) -> None:
        if self._closed:
            raise SandboxError("local sandbox is closed")

    # -- Sandbox protocol --------------------------------------------------------------------

    def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult:
        """Run ``argv`` to completion or until ``timeout`` seconds, then kill its process group."""
        self._check_open()
        argv = list(argv)
        if not argv:
            raise SandboxError("exec needs a non-empty argv")
        if argv[0] in ("python3", "python"):
            argv[0] = sys.executable
        workdir = self._host_path(cwd) if cwd is not None else self.work_dir
        if self._nproc is None:
            self._nproc = self.limits.pids + (0 if os.getuid() == 0 else _user_task_count())
        data = stdin.encode() if isinstance(stdin, str) else stdin
        started = time.monotonic()
        try:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if data is not None else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=workdir,
                env={**self._base_env, **(env or {})},
                start_new_session=True,  # its own process group, so a timeout kills the tree
                preexec_fn=lambda: _set_rlimits(self.limits, timeout, self._nproc or 0),
            )
        except (FileNotFoundError, PermissionError) as exc:
            # A missing program is the command's failure (exit 127, as in a shell), not ours.
            code = _NOT_FOUND if isinstance(exc, FileNotFoundError) else _NOT_EXECUTABLE
            return ExecResult("", f"{argv[0]}: {exc.strerror}\n", code, False, time.monotonic() - started)
        out, err = CappedBuffer(self.limits.output_bytes), CappedBuffer(self.limits.output_bytes)
        timed_out = pump_process(proc, data, started + timeout, out, err)
        returncode = None if timed_out else proc.returncode
        stderr = err.text()
        oom = not timed_out and (
            returncode == -signal.SIGKILL or any(marker in stderr for marker in _OOM_MARKERS)
        )
        return ExecResult(
            stdout=out.text(),
            stderr=stderr,
            exit_code=returncode,
            timed_out=timed_out,
            duration_s=time.monotonic() - started,
            output_truncated=out.truncated or err.truncated,
            oom_killed=oom,
        )

    def write_files(self, files: Mapping[str, bytes | str]) -> None:
        """Write each ``{path: content}`` inside the work dir, creating parent directories."""
        self._check_open()
        targets = {self._host_path(path): content for path, content in files.items()}
        for host, content in targets.items():
            if host == self.work_dir:
                raise SandboxError("cannot write a file over the work dir itself")
            os.makedirs(os.path.dirname(host), exist_ok=True)
            with open(host, "wb") as fh:
                fh.write(content.encode() if isinstance(content, str) else content)

    def read_file(self, path: str) -> bytes:
        """Return the bytes of ``path`` in the work dir; SandboxError if it does not exist."""
        self._check_open()
        host = self._host_path(path)
        try:
            with open(host, "rb") as fh:
                return fh.read()
        except (FileNotFoundError, IsADirectoryError, NotADirectoryError) as exc:
            raise SandboxError(f"no such file in sandbox: {path!r} ({exc.strerror})") from exc

    @property
    def info(self) -> dict[str, Any]:
        return {"provider": "local", "image": None, "isolation": "none (rlimits only)", **self._info_extra}

    def close(self) -> None:
        """Remove the work dir. Idempotent."""
        if not self._closed:
            self._closed = True
            shutil.rmtree(self.work_dir, ignore_errors=True)

    def __enter__(self) -> "LocalSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
