"""The sandbox protocol every provider implements, and its value types."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Mapping, Protocol, Sequence, runtime_checkable

__all__ = ["ExecResult", "SandboxLimits", "Sandbox"]


@dataclass(frozen=True)
class SandboxLimits:
    """Resource limits of one sandbox. Defaults suit short evaluation programs.

    Attributes:
        memory_mb: Memory limit (docker: cgroup limit, no swap; local: RLIMIT_AS).
        cpus: CPU share (docker: nano_cpus; local: ignored, RLIMIT_CPU bounds CPU seconds instead).
        pids: Maximum number of processes (docker: pids cgroup; local: RLIMIT_NPROC, which does
            not bind root).
        file_size_mb: Largest file a program may write (RLIMIT_FSIZE; docker: tmpfs size too).
        output_bytes: Stdout and stderr are each cut to this many bytes; the rest is discarded.
        work_dir: The writable working directory inside the sandbox.
    """

    memory_mb: int = 512
    cpus: float = 1.0
    pids: int = 128
    file_size_mb: int = 64
    output_bytes: int = 1_000_000
    work_dir: str = "/work"


@dataclass(frozen=True)
class ExecResult:
    """Outcome of one command.

    ``exit_code`` is None when the command was killed for its timeout. A negative exit code
    (local) or 128+N (docker) means death by signal N. ``oom_killed`` is True when the memory
    limit killed it (docker reads the cgroup's oom_kill counter; local infers it from an
    allocation-failure message such as MemoryError, or a SIGKILL, under RLIMIT_AS).
    """

    stdout: str
    stderr: str
    exit_code: int | None
    timed_out: bool
    duration_s: float
    output_truncated: bool = False
    oom_killed: bool = False

    @property
    def ok(self) -> bool:
        return self.exit_code == 0 and not self.timed_out


@runtime_checkable
class Sandbox(Protocol):
    """Runs untrusted commands. Use as a context manager; ``close()`` releases it."""

    provider: str

    def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
    ) -> ExecResult: ...

    def write_files(self, files: Mapping[str, bytes | str]) -> None: ...

    def read_file(self, path: str) -> bytes: ...

    @property
    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> "Sandbox": ...

    def __exit__(self, *exc: object) -> None: ...
