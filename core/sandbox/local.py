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
* **No second identity**: ``as_user="harness"`` runs as the calling user too, and files written
  with ``owner="harness"`` go to a separate temp dir (``harness_dir``) the user's programs can
  still write; nothing separates the two but convention.
* Background processes do not outlive their command: when it exits (unless ``persist=True``),
  what is left of its process group is killed, and so is every process of the calling user
  whose environment carries this sandbox's marker for that identity (``RSIGYM_SANDBOX``, set on
  every exec); ``close()`` also kills any process whose cwd lies in the work or harness dir. So
  ``nohup``, ``setsid`` and double forks die. A process that both clears its environment (a
  re-exec with ``env -i``) and leaves the sandbox's dirs and its process group is not found: the
  local provider cannot stop it (no cgroup, no pid namespace unprivileged).

Use it where Docker is absent and the programs are trusted enough (tests, scripted agents).
"""

from __future__ import annotations

import math
import os
import resource
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
import uuid
from typing import Any, Mapping, Sequence

from rsigym.errors import SandboxError
from rsigym.sandbox.base import (
    IDENTITIES,
    ExecResult,
    ExecTracker,
    Identity,
    SandboxLimits,
    validate_exec_args,
    validate_file_mode,
)
from rsigym.sandbox.output import CappedBuffer
from rsigym.sandbox.paths import work_relative
from rsigym.sandbox.process_io import pump_process

__all__ = ["LocalSandbox"]

# Exit statuses a shell would give for a command it cannot run.
_NOT_FOUND, _NOT_EXECUTABLE = 127, 126
_OOM_MARKERS = ("MemoryError", "std::bad_alloc", "Cannot allocate memory", "cannot allocate memory")
MARKER_VAR = "RSIGYM_SANDBOX"
# Sweeps of /proc until one finds nothing to kill: a forking process may add children between
# the sweep that finds it and the kill; RLIMIT_NPROC bounds how many.
_MAX_SWEEPS = 50


def _other_pids() -> list[int]:
    """Pids of live processes, except this one."""
    me = os.getpid()
    return [int(name) for name in os.listdir("/proc") if name.isdigit() and int(name) != me]


def _owned(pid: int, uid: int) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == uid
    except OSError:
        return False  # exited while we looked


def kill_marked(markers: Sequence[str], dirs: Sequence[str] = ()) -> int:
    """SIGKILL every own process whose environment holds ``RSIGYM_SANDBOX=<marker>`` for one of
    ``markers``, or whose cwd lies in one of ``dirs``; sweep until none is left. Returns how many.

    Reading another process's environ needs ptrace read access, which a process of the same uid
    has unless the target made itself non-dumpable (then it is not found). This runs after every
    command, over every process of the host: the environ is searched as bytes (an entry is the
    text between two NULs) and the owner is looked up only for a process that matches.
    """
    wanted = [f"\0{MARKER_VAR}={marker}\0".encode() for marker in markers]
    uid, killed = os.getuid(), 0
    for _ in range(_MAX_SWEEPS):
        found = 0
        for pid in _other_pids():
            try:
                with open(f"/proc/{pid}/environ", "rb") as fh:
                    environ = b"\0" + fh.read() + b"\0"
                cwd = os.readlink(f"/proc/{pid}/cwd") if dirs else ""
            except OSError:
                continue  # gone, or not ours to read
            hit = any(entry in environ for entry in wanted) or any(
                cwd == d or cwd.startswith(d + os.sep) for d in dirs
            )
            if hit and _owned(pid, uid):
                try:
                    os.kill(pid, signal.SIGKILL)
                    found += 1
                except OSError:
                    pass
        killed += found
        if not found:
            break
    return killed


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


def _wanted_rlimits(limits: SandboxLimits, timeout: float, nproc: int) -> list[tuple[int, int, int]]:
    """(resource, soft, hard) for one exec's command."""
    mib = 1024 * 1024
    cpu_s = math.ceil(timeout) + 1
    return [
        (resource.RLIMIT_AS, limits.memory_mb * mib, limits.memory_mb * mib),
        # Soft below hard: CPU exhaustion arrives as SIGXCPU, which is not mistaken for OOM.
        (resource.RLIMIT_CPU, cpu_s, cpu_s + 1),
        (resource.RLIMIT_NPROC, nproc, nproc),
        (resource.RLIMIT_FSIZE, limits.file_size_mb * mib, limits.file_size_mb * mib),
        (resource.RLIMIT_CORE, 0, 0),
    ]


def _set_rlimits(limits: SandboxLimits, timeout: float, nproc: int) -> None:
    """Runs in the child between fork and exec (no ``prlimit`` on this host); must not raise for a
    limit the OS refuses."""
    for which, soft, hard in _wanted_rlimits(limits, timeout, nproc):
        try:
            resource.setrlimit(which, (soft, hard))
        except (ValueError, OSError):
            pass  # above an existing hard limit: the existing, stricter one stays


_PRLIMIT_FLAGS = {resource.RLIMIT_AS: "--as", resource.RLIMIT_CPU: "--cpu", resource.RLIMIT_NPROC: "--nproc",
                  resource.RLIMIT_FSIZE: "--fsize", resource.RLIMIT_CORE: "--core"}


def _prlimit_prefix(prlimit: str, limits: SandboxLimits, timeout: float, nproc: int) -> list[str]:
    """``prlimit`` (util-linux) with this exec's limits, each capped at this process's hard limit:
    what ``_set_rlimits`` gets when the OS refuses a raise, decided here so that prlimit never fails.

    The limits are set by a program the command then replaces (``prlimit ... -- argv`` execs argv),
    not by Python code between fork and exec: without a ``preexec_fn`` the subprocess module
    starts the child with vfork, which costs a fork of this whole interpreter less (39 ms against
    4 ms per exec measured in a test process holding torch and 300 MB), and is safe in a process
    with threads, which a ``preexec_fn`` is not.
    """
    args = [prlimit]
    for which, soft, hard in _wanted_rlimits(limits, timeout, nproc):
        _, cap = resource.getrlimit(which)
        if cap != resource.RLIM_INFINITY:
            hard = min(hard, cap)
        args.append(f"{_PRLIMIT_FLAGS[which]}={min(soft, hard)}:{hard}")
    return [*args, "--"]


def _launch_error(command: Sequence[str], env: Mapping[str, str], cwd: str) -> OSError | None:
    """The error ``Popen`` would raise for ``command[0]`` (not found, not executable), found before
    starting it through ``prlimit``, so that a missing program still reads as the command's own."""
    program = command[0]
    if os.sep in program:
        path = os.path.join(cwd, program)
        if not os.path.exists(path):
            return FileNotFoundError(2, os.strerror(2), program)
        if os.path.isdir(path) or not os.access(path, os.X_OK):
            return PermissionError(13, os.strerror(13), program)
        return None
    search = env.get("PATH", os.defpath)
    if shutil.which(program, path=search) is not None:  # an executable file on PATH, as execvp finds it
        return None
    if shutil.which(program, mode=os.F_OK, path=search) is not None:  # only a directory or a non-executable
        return PermissionError(13, os.strerror(13), program)
    return FileNotFoundError(2, os.strerror(2), program)


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
        self._harness_dir = os.path.realpath(tempfile.mkdtemp(prefix="rsigym-harness-"))
        self._closed = False
        self._nproc: int | None = None
        # util-linux's prlimit sets the limits when the host has it (see _prlimit_prefix)
        self._prlimit = shutil.which("prlimit")
        self._info_extra: dict[str, Any] = {}
        self._tracker = ExecTracker()
        token = uuid.uuid4().hex
        self._markers = {identity: f"{token}:{identity}" for identity in IDENTITIES}
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

    @property
    def harness_dir(self) -> str:
        """A temp dir apart from the work dir for ``owner="harness"`` files (not protected here)."""
        return self._harness_dir

    # -- paths -------------------------------------------------------------------------------

    def _host_path(self, path: str, owner: str = "user") -> str:
        base = self._harness_dir if owner == "harness" else self.work_dir
        roots = (base,) if owner == "harness" else (self.limits.work_dir, self.work_dir)
        rel = work_relative(path, roots)
        host = os.path.realpath(os.path.join(base, rel))
        # realpath follows symlinks a program may have planted in the work dir.
        if os.path.commonpath([host, base]) != base:
            raise SandboxError(f"path {path!r} resolves outside the sandbox {'harness' if owner == 'harness' else 'work'} dir")
        return host

    def _cwd(self, cwd: str | None, identity: str) -> str:
        if identity == "harness":
            if cwd is None:
                return self._harness_dir
            if not os.path.isabs(cwd) or os.path.normpath(cwd).startswith(self._harness_dir + os.sep):
                return self._host_path(cwd, "harness")
        return self.work_dir if cwd is None else self._host_path(cwd)

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
        as_user: Identity = "user",
        persist: bool = False,
    ) -> ExecResult:
        """Run ``argv`` to completion or until ``timeout`` seconds, then kill what it left.

        See ``rsigym.sandbox.base`` for ``as_user``, ``cwd``, ``persist`` and overlapping execs;
        here ``"harness"`` is the calling user as well. On timeout the process group and every
        process marked with the exec's identity are killed, ``persist`` or not.

        Raises:
            TypeError, ValueError: bad arguments (``validate_exec_args``), before anything runs.
            SandboxError: closed sandbox, ``cwd`` outside, or an overlapping exec of the identity.
        """
        args = validate_exec_args(argv, stdin=stdin, timeout=timeout, env=env, as_user=as_user, persist=persist)
        self._check_open()
        command = args.argv
        if command[0] in ("python3", "python"):
            command[0] = sys.executable
        workdir = self._cwd(cwd, args.as_user)
        if self._nproc is None:
            self._nproc = self.limits.pids + (0 if os.getuid() == 0 else _user_task_count())
        nproc = self._nproc
        marker = self._markers[args.as_user]
        home = self._harness_dir if args.as_user == "harness" else self.work_dir
        started = time.monotonic()
        with self._tracker.running(args.as_user, args.persist):
            try:
                env = {**self._base_env, "HOME": home, **args.env, MARKER_VAR: marker}
                if self._prlimit:
                    refused = _launch_error(command, env, workdir)
                    if refused is not None:
                        raise refused
                    launch = [*_prlimit_prefix(self._prlimit, self.limits, args.timeout, nproc), *command]
                    preexec = None
                else:
                    launch = command
                    preexec = lambda: _set_rlimits(self.limits, args.timeout, nproc)  # noqa: E731
                proc = subprocess.Popen(
                    launch,
                    stdin=subprocess.PIPE if args.stdin is not None else subprocess.DEVNULL,
                    stdout=subprocess.PIPE,
                    stderr=subprocess.PIPE,
                    cwd=workdir,
                    env=env,
                    start_new_session=True,  # its own process group, so a timeout kills the tree
                    preexec_fn=preexec,
                )
            except (FileNotFoundError, PermissionError) as exc:
                # A missing program is the command's failure (exit 127, as in a shell), not ours.
                code = _NOT_FOUND if isinstance(exc, FileNotFoundError) else _NOT_EXECUTABLE
                return ExecResult("", f"{command[0]}: {exc.strerror}\n", code, False, time.monotonic() - started)
            out, err = CappedBuffer(self.limits.output_bytes), CappedBuffer(self.limits.output_bytes)
            try:
                timed_out = pump_process(proc, args.stdin, started + args.timeout, out, err, keep_group=args.persist)
            finally:
                if not args.persist or proc.returncode is None:
                    kill_marked([marker])
        returncode = None if timed_out else proc.returncode
        if timed_out and args.persist:
            kill_marked([marker])
        stderr = err.text()
        oom = not timed_out and (
            returncode == -signal.SIGKILL or any(marker_text in stderr for marker_text in _OOM_MARKERS)
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

    def write_files(
        self, files: Mapping[str, bytes | str], *, owner: Identity = "user", mode: int | None = None
    ) -> None:
        """Write each ``{path: content}`` inside the work dir (``owner="user"``) or the harness
        dir (``owner="harness"``), creating parent directories; ``mode`` defaults to 0o644."""
        file_mode = validate_file_mode(mode)
        if owner not in IDENTITIES:
            raise ValueError(f"owner must be 'user' or 'harness', got {owner!r:.80}")
        self._check_open()
        base = self._harness_dir if owner == "harness" else self.work_dir
        targets = {self._host_path(path, owner): content for path, content in files.items()}
        for host, content in targets.items():
            if host == base:
                raise SandboxError(f"cannot write a file over {base} itself")
            if not isinstance(content, (bytes, str)):
                raise TypeError(f"content for {host!r} must be bytes or str, got {type(content).__name__}")
            os.makedirs(os.path.dirname(host), exist_ok=True)
            fd = os.open(host, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
            with os.fdopen(fd, "wb") as fh:
                os.fchmod(fh.fileno(), 0o644 if file_mode is None else file_mode)
                fh.write(content.encode() if isinstance(content, str) else content)

    def read_file(self, path: str, *, timeout: float = 30.0) -> bytes:
        """The bytes of the regular file ``path`` in the work dir.

        Opened without following a last-component symlink and without blocking, so a FIFO or a
        device is refused at once rather than read.

        Raises:
            SandboxError: missing; not a regular file; resolving outside the work dir; larger
                than ``file_size_mb``; not read within ``timeout`` seconds.
        """
        validate_exec_args(["cat"], timeout=timeout)
        self._check_open()
        deadline = time.monotonic() + timeout
        host = self._host_path(path)
        try:
            fd = os.open(host, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_NOCTTY)
        except (FileNotFoundError, NotADirectoryError) as exc:
            raise SandboxError(f"no such file in sandbox: {path!r} ({exc.strerror})") from exc
        except OSError as exc:
            raise SandboxError(f"read_file({path!r}) refused: {exc.strerror}") from exc
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            os.close(fd)
            raise SandboxError(f"read_file({path!r}) refused: not a regular file")
        with os.fdopen(fd, "rb", buffering=0) as fh:
            cap = self.limits.file_size_mb * 1024 * 1024
            chunks, size = [], 0
            while chunk := fh.read(1 << 20):
                chunks.append(chunk)
                size += len(chunk)
                if size > cap:
                    raise SandboxError(f"read_file({path!r}): file is larger than {self.limits.file_size_mb} MB")
                if time.monotonic() > deadline:
                    raise SandboxError(f"read_file({path!r}) did not finish within {timeout} s")
        return b"".join(chunks)

    @property
    def info(self) -> dict[str, Any]:
        return {"provider": "local", "image": None, "isolation": "none (rlimits only)", **self._info_extra}

    def close(self) -> None:
        """Kill every process this sandbox started that is still alive, remove its dirs. Idempotent."""
        if not self._closed:
            self._closed = True
            kill_marked(list(self._markers.values()), dirs=(self.work_dir, self._harness_dir))
            shutil.rmtree(self.work_dir, ignore_errors=True)
            shutil.rmtree(self._harness_dir, ignore_errors=True)

    def __enter__(self) -> "LocalSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
