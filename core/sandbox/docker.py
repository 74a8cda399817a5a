"""The docker provider: one long-lived, locked-down container; commands run by ``docker exec``.

The container's PID 1 is its reaper (orphans of killed commands are reparented to it and must be
reaped) and the server of the reset's verification (``container_scripts.INIT_SERVER``, over the
container's attach stream), under its own uid, with no network, a read-only root,
tmpfs work dir, harness dir and /tmp, memory (no swap), CPU and pids limits, every capability
dropped and ``no-new-privileges``. Execs run as ``nobody`` (``as_user="user"``) or as a second
uid (``as_user="harness"``); neither can ptrace or signal PID 1 or the other.

PID 1 is protected by running it as a different uid, not by a seccomp profile denying ptrace or
by making it non-dumpable: a uid boundary also stops signals and /proc/1/mem writes, needs no
profile the engine may not support, and cannot be undone by the exec user (a non-dumpable flag
is lost when PID 1 execs, and a seccomp filter does not stop kill(2)).

Every exec that does not pass ``persist=True`` runs under a wrapper (``container_scripts.WRAP``)
that kills every other process of its identity when the command ends, so ``nohup``, ``setsid``
and double forks die with their exec at the price of one extra ``execve`` in the container, not
an extra engine round trip; when the wrapper itself was killed (status >= 128) the provider
runs the kill itself. A timeout kills every process of the exec's identity from a second exec.
If that exec cannot even start (a fork bomb filled the pids limit) the container is restarted,
which also empties its tmpfs; the command's stderr says so.

A dead container (killed, removed, engine gone) raises ``SandboxUnavailable`` from the next call:
its commands are never reported as having run.
"""

from __future__ import annotations

import io
import posixpath
import tarfile
import threading
import time
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Callable, Mapping, Sequence

from rsigym.errors import OutputLost, SandboxError, SandboxUnavailable
from rsigym.sandbox import engine
from rsigym.sandbox.base import (
    ExecResult,
    ExecTracker,
    Identity,
    SandboxLimits,
    validate_exec_args,
    validate_file_mode,
)
from rsigym.sandbox.container_scripts import (
    COMMAND_OOM_SCORE_ADJ,
    EXTRACT,
    HARNESS_DIR,
    KILL_ALL,
    OOM_READ,
    READ,
    SET_OOM_SCORE_ADJ,
    SHARED_DIRS,
    VERIFY,
    WIPE,
    WRAP,
    WRAPPER,
)
from rsigym.sandbox.engine import IDENTITY_USERS, INIT, NOBODY, connect, engine_errors
from rsigym.sandbox.exec_stream import buffered_output, new_mark, pump_exec_socket, raw_socket, strip_start_mark, unframe
from rsigym.sandbox.output import CappedBuffer
from rsigym.sandbox.paths import work_relative

if TYPE_CHECKING:
    import docker

    from rsigym.sandbox.exec_server import ExecServer, InitServer

__all__ = ["DockerSandbox"]

_MIB = 1024 * 1024
_SIGKILL_EXIT = 128 + 9
_READ_ATTEMPTS = 3  # read_file tries of a stream that lost output
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


def _both(first: Callable[[], bytes], second: Callable[[], bytes] | None) -> bytes:
    """``first()``, with ``second()`` (if any) run at the same time in a thread; ``first``'s
    result once both ended; the first error of either is raised."""
    if second is None:
        return first()
    box: list[BaseException | None] = [None]

    def run() -> None:
        try:
            second()
        except BaseException as exc:  # noqa: BLE001 - handed to the caller below
            box[0] = exc

    thread = threading.Thread(target=run, name="rsigym-reset", daemon=True)
    thread.start()
    try:
        result = first()
    finally:
        thread.join()
    if box[0] is not None:
        raise box[0]
    return result


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
        self._tracker = ExecTracker()
        self._harness_used = False  # the reset skips the harness part when no harness ran
        self._server: ExecServer | None = None  # made by exec_server(), closed with the sandbox
        self._harness_server: ExecServer | None = None  # exec_server("harness")
        self.server_wipes = 0  # resets whose part was done by a lease's live exec server (``_wipe``)
        # Exec servers the last reset kept (``ExecServer.wipe``), by identity: the next
        # lease's ``exec_server`` adopts them. The container's, shared by its handles like the INIT server.
        self._idle_servers: dict[str, ExecServer] = {}
        # The container's INIT server for the reset's verification: shared by every handle of the
        # container (a one-item list, copied by reference at handoff), closed with the container.
        self._init_server: list[InitServer | None] = [None]
        # ready as started: the wrapper and the closed dirs come with the image (no setup exec)
        self.container_id, self._image_id, pid1 = engine.create_container(self._api, image, limits)
        self._init_server[0] = self._pid1_server(pid1)

    def _pid1_server(self, stream: Any) -> "InitServer":
        """The INIT server over PID 1's ``stream``; the container is removed if that fails."""
        from rsigym.sandbox.exec_server import InitServer

        try:
            return InitServer(self, stream)
        except BaseException:
            stream.close()
            self.remove()
            raise

    # -- container lifecycle -----------------------------------------------------------------

    def is_running(self) -> bool:
        """One inspect: True when the container exists and runs."""
        with engine_errors(self.container_id):
            return engine.is_running(self._api, self.container_id)

    @property
    def harness_dir(self) -> str:
        """The harness identity's dir (``/harness``): readable by the user, never writable."""
        return HARNESS_DIR

    def _restart(self) -> None:
        self._drop_idle_servers()  # the restart kills them, PID 1 too
        server, self._init_server[0] = self._init_server[0], None
        if server is not None:
            server.close()
        self._init_server[0] = self._pid1_server(engine.restart(self._api, self.container_id))
        self._oom_kills = _oom_kill_count(self._raw_exec(OOM_READ, None, 10.0, 4096, user=INIT).stdout.decode())

    def _kill_all(self, user: str) -> bool:
        """Kill every process of ``user``; returns True when a restart was needed for it."""
        try:
            result = self._raw_exec(KILL_ALL, None, 5.0, 4096, user=user, kill_on_timeout=False)
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
        user: str = NOBODY,
        env: Mapping[str, str] | None = None,
        workdir: str | None = None,
        kill_on_timeout: bool = True,
        mark: bytes | None = None,
        marked_below: int = 128,
    ) -> _Raw:
        """Run ``argv`` to its end or ``deadline``. With ``mark``, the command prints it before and
        after its output when it exits with a status below ``marked_below`` (the exec wrapper:
        unless killed; READ: on success): stdout comes back without the marks, and a stream that
        lost them raises OutputLost (``_unmarked``)."""
        deadline = time.monotonic() + timeout
        out, err = CappedBuffer(cap + (len(mark) if mark else 0)), CappedBuffer(cap)  # the start mark, kept
        with engine_errors(self.container_id):
            exec_id = self._api.exec_create(
                self.container_id, list(argv), stdin=stdin is not None, user=user,
                environment=dict(env) if env else None, workdir=workdir or self.limits.work_dir,
            )["Id"]  # fmt: skip
            response = self._api.exec_start(exec_id, socket=True)
            sock = raw_socket(response)
            try:
                sock.setblocking(False)
                already = buffered_output(response, sock)
                finished = pump_exec_socket(sock, stdin, deadline, out, err, already=already)
            finally:
                sock.close()  # the real close happens once the SDK's wrapper lets go too
                response.close()
            if not finished:
                restarted = self._kill_all(user) if kill_on_timeout else False
                stdout = strip_start_mark(out, mark) if mark else out.getvalue()
                return _Raw(stdout, err.getvalue(), None, True, out.truncated or err.truncated, restarted)
            exit_code = self._exit_code(exec_id)
        if mark is None:
            return _Raw(out.getvalue(), err.getvalue(), exit_code, False, out.truncated or err.truncated)
        framed = unframe(out, mark)
        if framed is None:
            return _Raw(self._unmarked(out, mark, exit_code, marked_below), err.getvalue(), exit_code, False,
                        out.truncated or err.truncated)
        return _Raw(framed[0], err.getvalue(), exit_code, False, framed[1] or err.truncated)

    def _unmarked(self, out: CappedBuffer, mark: bytes, exit_code: int, marked_below: int) -> bytes:
        """Stdout of a finished command whose marks did not both arrive: its own doing when it
        exited with a status that prints none (killed) or could not start (the engine's 126);
        else the stream lost output."""
        if exit_code >= marked_below or out.getvalue().startswith(b"OCI runtime exec failed"):
            return strip_start_mark(out, mark)
        raise OutputLost(f"the engine's stream of an exec ended without the output the command wrote "
                         f"(exit {exit_code}, {out.written} bytes seen): output lost, not the command's")

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
        as_user: Identity = "user",
        persist: bool = False,
    ) -> ExecResult:
        """Run ``argv`` in the container as ``as_user`` (``"user"``: nobody; ``"harness"``: the
        harness uid). See ``rsigym.sandbox.base`` for ``cwd``, ``persist`` and overlapping execs.

        When it ends, every other process of its identity is killed unless ``persist``; on
        timeout every process of its identity is, ``persist`` or not. ``python`` means ``python3``.

        Raises:
            TypeError, ValueError: bad arguments (``validate_exec_args``), before anything runs.
            SandboxError: the sandbox is closed, ``cwd`` is outside, or an exec of the same
                identity is running and this or that one does not persist.
            SandboxUnavailable: the container is dead.
        """
        args = validate_exec_args(argv, stdin=stdin, timeout=timeout, env=env, as_user=as_user, persist=persist)
        self._check_open()
        command = args.argv
        if command[0] == "python":
            command[0] = "python3"  # Debian ships only python3; keep parity with the local provider
        home = HARNESS_DIR if args.as_user == "harness" else self.limits.work_dir
        workdir = home if cwd is None else self._resolve(cwd, args.as_user)
        user = IDENTITY_USERS[args.as_user]
        exec_env = {"HOME": home, **args.env}
        # A persisting exec has no wrapper, and so no check of its stream; both set the command's
        # place in the OOM killer's order first (``COMMAND_OOM_SCORE_ADJ``).
        mark = None if args.persist else new_mark()
        oom_score_adj = str(COMMAND_OOM_SCORE_ADJ[args.as_user])
        if mark is not None:
            command = [WRAPPER, "-c", WRAP, "rsigym", mark.decode(), oom_score_adj, *command]
        else:
            command = ["/bin/sh", "-c", SET_OOM_SCORE_ADJ, oom_score_adj, *command]
        started = time.monotonic()
        with self._tracker.running(args.as_user, args.persist):
            if args.as_user == "harness":
                self._harness_used = True
            raw = self._raw_exec(
                command, args.stdin, args.timeout, self.limits.output_bytes, user=user, env=exec_env, workdir=workdir,
                mark=mark,
            )
            if not args.persist and not raw.timed_out and (raw.exit_code is None or raw.exit_code >= 128):
                # Killed by a signal: perhaps the wrapper itself, before its kill ran.
                raw.restarted = self._kill_all(user)
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
            counts = self._raw_exec(OOM_READ, None, 10.0, 4096, user=INIT)
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

    def exec_server(self, identity: str = "user") -> "ExecServer":
        """This sandbox's exec server for ``identity``: runs its commands through one long-lived
        exec, ~2 ms each instead of the engine's ~45 ms per exec, with ``exec``'s guarantees (see
        ``rsigym.sandbox.exec_server``). One per identity, made on the first call, started on its
        first command and closed with the sandbox."""
        from rsigym.sandbox.exec_server import ExecServer

        self._check_open()
        if identity not in ("user", "harness"):
            raise ValueError(f"identity must be 'user' or 'harness', got {identity!r:.80}")
        server = self._harness_server if identity == "harness" else self._server
        if server is None:
            server = ExecServer(self, identity)
            idle = self._idle_servers.pop(identity, None)
            if idle is not None:  # kept by the last reset: no engine exec for this lease's server
                server.adopt(idle)
            if identity == "harness":
                self._harness_server = server
            else:
                self._server = server
        return server

    def _drop_idle_servers(self) -> None:
        idle = list(self._idle_servers.values())
        self._idle_servers.clear()
        for server in idle:
            server.close()

    def _close_server(self) -> None:
        servers = (self._server, self._harness_server)
        self._server = self._harness_server = None
        for server in servers:
            if server is not None:
                server.close()

    # -- files -------------------------------------------------------------------------------

    def _relative(self, path: str) -> str:
        return work_relative(path, (self.limits.work_dir,))

    def _resolve(self, path: str, identity: str) -> str:
        """An exec's cwd: relative to the identity's home, or absolute under a dir it may use."""
        if identity == "harness":
            if not posixpath.isabs(path) or posixpath.normpath(path).startswith(HARNESS_DIR):
                return posixpath.normpath(posixpath.join(HARNESS_DIR, work_relative(path, (HARNESS_DIR,))))
        return posixpath.normpath(posixpath.join(self.limits.work_dir, self._relative(path)))

    def write_files(
        self, files: Mapping[str, bytes | str], *, owner: Identity = "user", mode: int | None = None
    ) -> None:
        """Write each ``{path: content}`` (relative, or absolute inside the target dir).

        ``owner="user"``: into the work dir, as nobody. ``owner="harness"``: into ``harness_dir``
        as the harness uid, so the user can read them (when ``mode`` allows) but never write or
        delete them. ``mode`` (default 0o644) is each file's permission bits.
        """
        file_mode = validate_file_mode(mode)
        if owner not in IDENTITY_USERS:
            raise ValueError(f"owner must be 'user' or 'harness', got {owner!r:.80}")
        self._check_open()
        root = HARNESS_DIR if owner == "harness" else self.limits.work_dir
        payload = io.BytesIO()
        with tarfile.open(fileobj=payload, mode="w", format=tarfile.PAX_FORMAT) as tar:
            for path, content in files.items():
                rel = work_relative(path, (root,))
                if rel == ".":
                    raise SandboxError(f"cannot write a file over {root} itself")
                if not isinstance(content, (bytes, str)):
                    raise TypeError(f"content of {path!r} must be bytes or str, got {type(content).__name__}")
                data = content.encode() if isinstance(content, str) else content
                member = tarfile.TarInfo(rel)
                member.size, member.mtime = len(data), int(time.time())
                member.mode = 0o644 if file_mode is None else file_mode
                tar.addfile(member, io.BytesIO(data))
        if owner == "harness":
            self._harness_used = True
        user = IDENTITY_USERS[owner]
        raw = self._raw_exec(["python3", "-I", "-c", EXTRACT], payload.getvalue(), 120.0, 65536, user=user, workdir=root)
        if raw.timed_out or raw.exit_code != 0:
            detail = raw.stderr.decode(errors="replace").strip()
            raise SandboxError(f"write_files failed (exit {raw.exit_code}): {detail}")

    def read_file(self, path: str, *, timeout: float = 30.0) -> bytes:
        """The bytes of the regular file ``path`` in the work dir, read as nobody.

        Raises:
            SandboxError: missing; not a regular file (FIFO, device, directory); a symlink that
                leads out of the work dir; larger than ``file_size_mb``; not read in ``timeout``.
        """
        validate_exec_args(["cat"], timeout=timeout)
        self._check_open()
        cap = self.limits.file_size_mb * _MIB
        rel = self._relative(path)
        if rel == ".":
            raise SandboxError(f"read_file({path!r}): not a regular file")
        for attempt in range(1, _READ_ATTEMPTS + 1):  # reading is idempotent: a lost stream is retried
            mark = new_mark()
            argv = ["sh", "-c", READ, "read", posixpath.join(self.limits.work_dir, rel), self.limits.work_dir,
                    mark.decode()]
            try:
                raw = self._raw_exec(argv, None, timeout, cap, user=NOBODY, mark=mark, marked_below=1)
                break
            except OutputLost:
                if attempt == _READ_ATTEMPTS:
                    raise
        detail = raw.stderr.decode(errors="replace").strip()
        if raw.timed_out:
            raise SandboxError(f"read_file({path!r}) did not finish within {timeout} s")
        if raw.exit_code == 2:
            raise SandboxError(f"no such file in sandbox: {path!r} ({detail})")
        if raw.exit_code == 3:
            raise SandboxError(f"read_file({path!r}) refused: {detail}")
        if raw.exit_code != 0:
            raise SandboxError(f"read_file({path!r}) failed (exit {raw.exit_code}): {detail}")
        if raw.truncated:
            raise SandboxError(f"read_file({path!r}): file is larger than {self.limits.file_size_mb} MB")
        return raw.stdout

    # -- reuse and release -------------------------------------------------------------------

    def reset(self) -> None:
        """Make the container as a fresh one for the next user, or raise.

        Kills every process of both identities, empties the work dir, the harness dir, /tmp,
        /dev/shm and /dev/mqueue and removes System V IPC objects (each identity removing its
        own, the two at the same time: by the identity's live exec server where there is one,
        which then starts afresh in the same process and is kept for the next lease,
        ``ExecServer.wipe``, else in an engine exec of its own; a server that cannot do it whole,
        for whatever reason, leaves it to the exec), then verifies that
        from a third uid: the INIT uid of PID 1, through the container's INIT server (a fork of a
        long-lived INIT process that neither identity can signal or trace; ``InitServer``), or a
        fresh INIT exec where that server cannot answer. A reset whose programs cannot start (a
        fork bomb holds the pids limit) restarts the container instead.

        Raises:
            SandboxError: the verification found a survivor (the pool then discards the container).
            SandboxUnavailable: the container is dead.
        """
        self._check_open()
        self._reset()

    def _reset(self) -> None:
        # this lease's servers, else one an earlier reset kept and this lease did not use
        leased = {"user": self._server, "harness": self._harness_server}
        self._server = self._harness_server = None
        servers: dict[str, ExecServer | None] = {}
        for identity, server in leased.items():
            idle = self._idle_servers.pop(identity, None)
            servers[identity] = server or idle
            if server is not None and idle is not None:
                idle.close()
        harness = self._harness_used or servers["harness"] is not None
        parts = [("user", self.limits.work_dir)] + ([("harness", HARNESS_DIR)] if harness else [])
        kept: dict[str, ExecServer] = {}  # servers that wiped and started afresh for the next lease
        try:
            # The identities' parts touch nothing of each other's: they run at the same time.
            wiped = _both(lambda: self._wipe(*parts[0], servers["user"], kept),
                          (lambda: self._wipe(*parts[1], servers["harness"], kept)) if len(parts) > 1 else None)
            self._oom_kills = _oom_kill_count(wiped.decode())
        except SandboxUnavailable:
            for server in kept.values():
                server.close()
            raise
        except SandboxError:
            for server in kept.values():
                server.close()
            kept.clear()
            self._restart()
        finally:
            for server in servers.values():
                if server is not None:
                    server.close()
        self._harness_used = False
        code, stdout, stderr = self._verify([server.pid for server in kept.values() if server.pid])
        if code != 0:
            for server in kept.values():
                server.close()
            survivors = stdout.split("\n")
            raise SandboxError(f"reset left {', '.join(s for s in survivors if s)[:300] or stderr[:300]!r}")
        self._idle_servers.update(kept)

    def _wipe(self, identity: str, home: str, server: "ExecServer | None", kept: dict[str, "ExecServer"]) -> bytes:
        """One identity's part of the reset: by its live exec server where there is one
        (``ExecServer.wipe``: no engine exec; the server, started afresh, goes into ``kept`` for
        the next lease), else in a fresh exec of it; the oom counters' text."""
        args = [home, "755", *SHARED_DIRS]
        done = server.wipe(args) if server is not None else None
        if done is not None:
            counters, kept[identity] = done
            self.server_wipes += 1
            return counters
        # -I and cwd /: a module the user planted in the work dir (json.py, usercustomize.py)
        # must not run inside the reset, nor inside the check below that runs as INIT.
        argv = ["python3", "-I", "-S", "-c", WIPE, *args]  # -S: WIPE needs the stdlib only
        raw = self._raw_exec(argv, None, 30.0, 65536, user=IDENTITY_USERS[identity], workdir="/", kill_on_timeout=False)
        if raw.exit_code != 0:
            raise SandboxError(f"{identity} reset exit {raw.exit_code}")
        return raw.stdout

    def _verify(self, spared: Sequence[int] = ()) -> tuple[int | None, str, str]:
        """VERIFY as INIT: exit code, stdout, stderr. Through the container's INIT server (one
        fork, ~2 ms, instead of an exec and an interpreter's start); where that server cannot
        answer for itself (it died, froze or could not start), from a fresh exec, as before.
        ``spared``: the pids of the exec servers this reset kept (the only live processes allowed)."""
        from rsigym.sandbox.exec_server import InitServer

        argv = [self.limits.work_dir, *(str(int(pid)) for pid in spared)]
        program = f"import sys; sys.argv[1:] = {argv!r}\n" + VERIFY
        server = self._init_server[0]
        if server is None:
            server = self._init_server[0] = InitServer(self)
        server._sandbox = self  # the handle being reset (the server outlives leases)
        try:
            result = server.run_python(program, timeout=30.0)
            if result.exit_code in (0, 1) and not result.timed_out and not result.output_truncated:
                return result.exit_code, result.stdout, result.stderr
        except SandboxUnavailable:
            raise
        except SandboxError:
            pass
        raw = self._raw_exec(["python3", "-I", "-c", VERIFY, *argv], None, 30.0, 65536, user=INIT, workdir="/")
        return raw.exit_code, raw.stdout.decode(errors="replace"), raw.stderr.decode(errors="replace")

    def _handoff(self, on_close: Any) -> "DockerSandbox":
        """A fresh handle on this container; this one stops working (pool leases)."""
        handle = object.__new__(DockerSandbox)
        handle.__dict__.update(self.__dict__)
        handle._closed, handle._on_close, handle._info_extra = False, on_close, {}
        handle._tracker = ExecTracker()
        handle._server = handle._harness_server = None
        self._close_server()
        self._closed = True
        return handle

    def remove(self) -> None:
        """Force-remove the container. Idempotent; never raises for a container already gone."""
        self._close_server()
        self._drop_idle_servers()
        server, self._init_server[0] = self._init_server[0], None
        if server is not None:
            server.close()
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
            # the exec servers stay for the pool's reset, which wipes through them (``_reset``)
            self._closed = True
            self._on_close(self)
        else:
            self.remove()

    def __enter__(self) -> "DockerSandbox":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()
