"""The sandbox protocol every provider implements, its value types, and the argument checks
both providers share (so a bad ``argv``, ``env`` or ``timeout`` fails the same way everywhere,
before anything starts).

Identities
----------
A sandbox runs commands as one of two identities:

* ``"user"``: the untrusted program (a candidate, an agent's code). Its files live in the work
  dir (``limits.work_dir``, ``/work``).
* ``"harness"``: trusted code that must survive the user's program: it runs as a second identity
  that the user cannot ptrace, signal, or write the files of, and its files live in
  ``harness_dir`` (outside the work dir), which the user may read (when the file mode allows:
  0o600 files are unreadable to it) but never write or delete. On the docker provider this is a
  separate uid; on the local provider both identities are the calling user (not separated; see
  the sandbox table of docs/guides/sandbox.md).

Process lifetime
----------------
When an exec ends, every process of its identity is killed (``nohup``, ``setsid`` and double
forks included), unless the caller passes ``persist=True``: then what it leaves behind lives on
until an exec of the same identity without ``persist`` ends, a timeout, a reset or ``close()``.
Because that end-of-exec kill covers the whole identity, two execs of the *same* identity may run
at the same time only when both pass ``persist=True``; otherwise the second raises SandboxError.
A ``"harness"`` exec and a ``"user"`` exec may run at the same time (from two host threads):
the end or timeout of one never kills the processes of the other.
"""

from __future__ import annotations

import math
import threading
from contextlib import contextmanager
from dataclasses import dataclass
from typing import Any, Iterator, Literal, Mapping, Protocol, Sequence, runtime_checkable

from rsigym.errors import SandboxError

__all__ = [
    "ExecResult",
    "SandboxLimits",
    "Sandbox",
    "Identity",
    "IDENTITIES",
    "ExecArgs",
    "ExecTracker",
    "validate_exec_args",
    "validate_file_mode",
]

Identity = Literal["user", "harness"]
IDENTITIES: tuple[str, ...] = ("user", "harness")


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


@dataclass(frozen=True)
class ExecArgs:
    """The checked arguments of one exec (see :func:`validate_exec_args`)."""

    argv: list[str]
    stdin: bytes | None
    timeout: float
    env: dict[str, str]
    as_user: str
    persist: bool


def _check_text(value: object, what: str) -> str:
    if not isinstance(value, str):
        raise TypeError(f"{what} must be a str, got {type(value).__name__}: {value!r:.80}")
    if "\x00" in value:
        raise ValueError(f"{what} contains a NUL byte: {value!r:.80}")
    return value


def validate_exec_args(
    argv: object,
    *,
    stdin: object = None,
    timeout: object = 30.0,
    env: object = None,
    as_user: object = "user",
    persist: object = False,
) -> ExecArgs:
    """Check an exec's arguments; the same rules for every provider, before anything starts.

    Raises:
        TypeError: ``argv`` is not a list or tuple of str (a bare str is refused: it would
            otherwise run its first character), ``env`` is not a str-to-str mapping, ``stdin``
            is not bytes/str/None, ``timeout`` is not a real number (None included).
        ValueError: ``argv`` is empty, a string holds a NUL byte, ``timeout`` is not finite and
            greater than 0 (0, -1, NaN and inf are refused), or ``as_user`` is unknown.
    """
    if not isinstance(argv, (list, tuple)):
        raise TypeError(f"argv must be a list or tuple of str, got {type(argv).__name__}: {argv!r:.80}")
    if not argv:
        raise ValueError("argv must not be empty")
    checked_argv = [_check_text(arg, f"argv[{i}]") for i, arg in enumerate(argv)]
    if stdin is not None and not isinstance(stdin, (bytes, str)):
        raise TypeError(f"stdin must be bytes, str or None, got {type(stdin).__name__}")
    data = stdin.encode() if isinstance(stdin, str) else stdin
    if isinstance(timeout, bool) or not isinstance(timeout, (int, float)):
        raise TypeError(f"timeout must be a number of seconds, got {type(timeout).__name__}: {timeout!r:.80}")
    if not math.isfinite(timeout) or timeout <= 0:
        raise ValueError(f"timeout must be finite and greater than 0 seconds, got {timeout!r}")
    checked_env: dict[str, str] = {}
    if env is not None:
        if not isinstance(env, Mapping):
            raise TypeError(f"env must be a mapping of str to str, got {type(env).__name__}")
        for key, value in env.items():
            _check_text(key, "env key")
            if not key or "=" in key:
                raise ValueError(f"env key must be non-empty and without '=': {key!r:.80}")
            checked_env[key] = _check_text(value, f"env[{key!r}]")
    if as_user not in IDENTITIES:
        raise ValueError(f"as_user must be one of {IDENTITIES}, got {as_user!r:.80}")
    if not isinstance(persist, bool):
        raise TypeError(f"persist must be a bool, got {type(persist).__name__}")
    return ExecArgs(checked_argv, data, float(timeout), checked_env, str(as_user), persist)


def validate_file_mode(mode: object) -> int | None:
    """``None`` or an int permission mode in 0..0o777 (no setuid, setgid or sticky bits)."""
    if mode is None:
        return None
    if isinstance(mode, bool) or not isinstance(mode, int) or not 0 <= mode <= 0o777:
        raise ValueError(f"mode must be None or an int in 0..0o777, got {mode!r:.80}")
    return mode


class ExecTracker:
    """Which identities have execs in flight on one sandbox, to refuse unsafe overlaps.

    A non-persistent exec kills every process of its identity when it ends, so it may not
    overlap another exec of the same identity (it would kill that one's processes mid-run).
    """

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._running: dict[str, list[bool]] = {name: [] for name in IDENTITIES}

    @contextmanager
    def running(self, as_user: str, persist: bool) -> Iterator[None]:
        with self._lock:
            others = self._running[as_user]
            if others and not (persist and all(others)):
                raise SandboxError(
                    f"another exec as {as_user!r} is running on this sandbox; the end of one would kill the "
                    "other's processes (run them one after the other, or pass persist=True to both)"
                )
            others.append(persist)
        try:
            yield
        finally:
            with self._lock:
                self._running[as_user].remove(persist)


@runtime_checkable
class Sandbox(Protocol):
    """Runs untrusted commands. Use as a context manager; ``close()`` releases it.

    See the module docstring for the two identities (``as_user``/``owner``) and for which
    processes an exec leaves behind (``persist``).
    """

    provider: str

    def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
        cwd: str | None = None,
        as_user: Identity = "user",
        persist: bool = False,
    ) -> ExecResult:
        """Run ``argv`` as ``as_user``; arguments are checked by :func:`validate_exec_args`.

        ``cwd`` is relative to the identity's home (the work dir for ``"user"``, ``harness_dir``
        for ``"harness"``), or absolute under the work dir (either identity) or under
        ``harness_dir`` (``"harness"`` only).
        """
        ...

    def write_files(
        self, files: Mapping[str, bytes | str], *, owner: Identity = "user", mode: int | None = None
    ) -> None:
        """Write ``{path: content}``: ``owner="user"`` into the work dir (the user's files),
        ``owner="harness"`` into ``harness_dir`` (the user can read them when ``mode`` allows,
        never write or delete them). ``mode`` defaults to 0o644."""
        ...

    def read_file(self, path: str, *, timeout: float = 30.0) -> bytes:
        """The bytes of a regular file in the work dir; SandboxError for a missing file, a
        non-regular one (FIFO, device, directory), a symlink leading out of the work dir, a file
        over the size limit, or one not read within ``timeout`` seconds."""
        ...

    @property
    def harness_dir(self) -> str:
        """Where ``write_files(..., owner="harness")`` puts files, as the sandbox's programs see it."""
        ...

    @property
    def info(self) -> dict[str, Any]: ...

    def close(self) -> None: ...

    def __enter__(self) -> "Sandbox": ...

    def __exit__(self, *exc: object) -> None: ...
