"""Many short user commands through one docker exec: ``DockerSandbox.exec_server()``.

Each ``docker exec`` costs the engine about 45 ms here (runc sets up namespaces, cgroups and the
seccomp filter for every process it starts), which is a third of a circle-packing evaluation. An
exec server is one long-lived exec of the user identity (``container_scripts.EXEC_SERVER``) that
spawns each command itself, about 2 ms, with the same contract as ``sandbox.exec(...,
as_user="user")``: a fresh process with its own stdin, stdout and stderr capped at the sandbox's
output limit, a timeout, the exec's exit status (128+N for a signal), ``oom_killed`` from the
container's cgroup counter, and **every other process of the user killed when the command ends**
(and on its timeout), before the reply, so nothing one command started meets the next one.

Why the commands cannot reach the server or the host's stream: the server makes itself
non-dumpable before it serves, and the kernel refuses ptrace, ``/proc/<pid>/fd``, ``mem`` and
``environ`` of a non-dumpable process to every process without CAP_SYS_PTRACE, its own uid
included; its stdin and stdout (the host's stream) are moved off fds 0 and 1 and never inherited.
A command can change, without ptrace, what the server's next children would inherit (resource
limits, nice, scheduling policy and attributes, CPU affinity, I/O priority; the full list, and what
was tried and found refused, is in ``container_scripts``): the server checks them before each request and,
if any changed, exits before acknowledging it, so that request goes to a new server. What a
command can also do is signal the server (same uid). A killed server ends the stream: the
command's result says so (exit 137 and a note, never a result of the command's own), the host
kills every process of the user and the next command starts a new server. A stopped server
(SIGSTOP) misses the host's deadline (the command's timeout plus ``GUARD_S``): it is reported as a
timeout and handled the same way. ``tests/security/test_exec_server.py`` runs each of these as
an attack.

``run_python(program)`` runs a Python program as ``python3 -I -S -c program`` would, without an
interpreter's start (~20 ms here): the server (itself started ``-I -S``) forks, and the fork runs the
program. The server has run no command's code, so the fork starts from a fresh interpreter's state;
it closes every fd but its own three pipes before the program's first line (the host's stream and
the server's pipe ends never reach it), and the server reads each command's stdin into one buffer
that it zeroes once the command ended, so a later fork finds no earlier command's stdin in its
memory (code repair's runners get one-time tokens that way). Everything else (timeout, sweep,
inherited-settings check) is the spawned command's. Attacks: ``test_a_forked_program_*``.

The server holds the user identity (``ExecTracker``) only while a command runs, like any exec: a
plain ``exec`` as the user between two commands works, and its end-of-exec kill ends the idle
server too, which the next command notices (before it runs: the server acknowledges each request
before it spawns anything) and replaces. A sandbox has one exec server per identity (the harness
one, ``exec_server("harness")``, runs trusted programs such as code repair's collector next to
the user's), each closed with the sandbox.

At the end of a pooled lease the reset asks each live server to do its identity's wipe itself and
then execve a fresh interpreter in the same process (``wipe``): the next lease adopts
that server (``adopt``), so neither the wipe nor the next server costs an engine exec. What
carries over is only what an execve keeps, and the server checks that part (``inherited``) once
no other process of the uid is alive; the reset waits for the fresh server's ready frame (it is
non-dumpable again by then) before the container goes back to the pool, and the INIT verification
spares only its pid. Attacks: ``tests/security/test_reset.py`` (``test_a_server_kept_*``,
``test_the_next_leases_first_plain_exec_*``, ``test_a_server_whose_inherited_limits_*``).
"""

from __future__ import annotations

import contextlib
import json
import selectors
import socket
import threading
import time
from typing import TYPE_CHECKING, Any, Mapping, Sequence

from rsigym.errors import SandboxError, SandboxUnavailable
from rsigym.sandbox.base import ExecResult, validate_exec_args
from rsigym.sandbox.container_scripts import EXEC_SERVER
from rsigym.sandbox.container_scripts import HARNESS_DIR
from rsigym.sandbox.engine import IDENTITY_USERS, INIT, engine_errors
from rsigym.sandbox.exec_stream import Demux, buffered_output, raw_socket
from rsigym.sandbox.output import CappedBuffer

if TYPE_CHECKING:
    from rsigym.sandbox.docker import DockerSandbox

__all__ = ["ExecServer", "InitServer", "GUARD_S"]

# How long past a command's timeout the host waits for the server's reply before it treats the
# server as stopped (the server enforces the timeout itself; this only catches a frozen server).
GUARD_S = 5.0
# How long a new server may take to say it is ready: one engine exec and one interpreter start,
# well under a second on a quiet machine but tens of seconds at a load average near 20 (30 s was
# seen to fail there). A start that misses its limit is retried once, with a longer one, before
# the command fails as an infrastructure error.
START_TIMEOUTS_S = (60.0, 180.0)
_LOST_NOTE = ("\n[rsigym] the command ended the exec server (a signal from the command, or the memory limit); every process "
              "of the user was killed and the next command gets a new server\n")
_FROZEN_NOTE = "\n[rsigym] the exec server stopped answering (stopped by the command?); every process of the user was killed\n"
_SIGKILL_EXIT = 128 + 9


class _Lost(Exception):
    """The server's stream ended, or the deadline passed, before a whole reply came."""

    def __init__(self, frozen: bool) -> None:
        super().__init__("frozen" if frozen else "ended")
        self.frozen = frozen


class _Bytes:
    """An uncapped sink for the server's stdout (its replies are length-checked instead)."""

    def __init__(self) -> None:
        self.data = bytearray()

    def write(self, chunk: bytes) -> None:
        self.data += chunk


class ExecServer:
    """Runs user commands in a docker sandbox through one long-lived exec (see the module docstring).

    Use ``DockerSandbox.exec_server()`` to open one; ``exec`` has the signature and the result of
    ``sandbox.exec`` for the user identity (``cwd`` is the work dir; no ``persist``).
    """

    def __init__(self, sandbox: "DockerSandbox", identity: str = "user") -> None:
        self._sandbox = sandbox
        # "harness": the same server as the harness identity in the harness dir, for trusted
        # programs that must run next to the user's (code repair's collector)
        self.identity = identity
        self._uid = IDENTITY_USERS[identity]
        self._home = sandbox.limits.work_dir if identity == "user" else HARNESS_DIR
        self._lock = threading.Lock()
        self._sock: socket.socket | None = None
        self._response: Any = None
        self._stdout = _Bytes()
        self._stderr = CappedBuffer(65536)
        self._demux: Demux | None = None
        self.pid: int | None = None
        """The server's pid in the container (None until it has started)."""
        self.starts = 0
        """How many servers this object started (1 unless a command ended or froze one)."""
        self._closed = False
        self._swept = False  # True right after every process of the user was killed

    # -- lifecycle ---------------------------------------------------------------------------

    def _start(self) -> None:
        """Start a server; one that misses its start limit is replaced once (``START_TIMEOUTS_S``).

        Raises:
            SandboxError: no server said it was ready, twice.
            SandboxUnavailable: the container is dead.
        """
        for attempt, timeout_s in enumerate(START_TIMEOUTS_S):
            try:
                self._start_once(timeout_s, first=attempt == 0)
                return
            except SandboxError as exc:
                if isinstance(exc, SandboxUnavailable) or attempt == len(START_TIMEOUTS_S) - 1:
                    raise
                self._swept = False  # the late server (and anything it started) dies before the next

    def _start_once(self, timeout_s: float, first: bool = True) -> None:
        sandbox = self._sandbox
        argv = ["python3", "-I", "-S", "-c", EXEC_SERVER]
        if not self._swept:
            # The server is dumpable until its first line runs: no other process of the identity
            # may exist then (a persist=True exec may have left some). The exec that becomes the
            # server kills them first (a shell: kill -1 spares only itself and PID 1, atomic against
            # fork), then execs the server in the same process: one engine exec, not two. A retry
            # kills them from an exec of its own, which restarts the container when not even that
            # can start (a fork bomb filled the pids limit, so no shell starts either).
            if first:
                argv = ["sh", "-c", 'kill -9 -1 2>/dev/null; kill -9 -1 2>/dev/null; exec "$@"', "rsigym", *argv]
            else:
                sandbox._kill_all(self._uid)
        self._swept = False
        if self.identity == "harness":
            sandbox._harness_used = True  # the reset must clear the harness dir too
        try:
            with engine_errors(sandbox.container_id):
                exec_id = sandbox._api.exec_create(
                    sandbox.container_id, argv, stdin=True, user=self._uid,
                    environment={"HOME": self._home}, workdir=self._home,
                )["Id"]  # fmt: skip
                self._response = sandbox._api.exec_start(exec_id, socket=True)
            self._sock = raw_socket(self._response)
            self._sock.setblocking(False)
            self._stdout, self._stderr = _Bytes(), CappedBuffer(65536)
            self._demux = Demux(self._stdout, self._stderr)  # type: ignore[arg-type]
            # Its first frames (the ready line) may have come with the upgrade headers.
            self._demux.feed(buffered_output(self._response, self._sock))
            try:
                ready, _, _ = self._read_frame(time.monotonic() + timeout_s)
            except (_Lost, ValueError) as lost:
                detail = self._stderr.text().strip()[-300:]
                late = isinstance(lost, _Lost) and lost.frozen
                raise SandboxError(f"the exec server did not start{f' in {timeout_s:.0f} s' if late else ''}: "
                                   f"{detail or 'no output'}") from None
            self.pid = int(ready.get("pid", 0)) or None
        except BaseException:
            self._drop()
            raise
        self.starts += 1

    def _drop(self) -> None:
        """Close the stream (the server then exits on EOF, or is dead already)."""
        for thing in (self._sock, self._response):
            try:
                if thing is not None:
                    thing.close()
            except OSError:
                pass
        self._sock = self._response = self._demux = None

    def close(self) -> None:
        """Stop the server. Idempotent; never waits for a command in flight (its stream is shut
        down instead, so it ends as a lost server)."""
        self._closed = True
        if self._lock.acquire(blocking=False):
            try:
                self._drop()
            finally:
                self._lock.release()
            return
        sock = self._sock
        if sock is not None:
            try:
                sock.shutdown(socket.SHUT_RDWR)
            except OSError:
                pass

    def __enter__(self) -> "ExecServer":
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the wire ----------------------------------------------------------------------------

    def _pump(self, deadline: float, send: bytes = b"") -> None:
        """Send ``send`` (if any) and read at least one chunk, or raise _Lost."""
        assert self._sock is not None and self._demux is not None
        sel = selectors.DefaultSelector()
        sel.register(self._sock, selectors.EVENT_READ | (selectors.EVENT_WRITE if send else 0))
        pos = 0
        try:
            while True:
                left = deadline - time.monotonic()
                if left <= 0:
                    raise _Lost(frozen=True)
                for _, mask in sel.select(left):
                    if mask & selectors.EVENT_WRITE and pos < len(send):
                        try:
                            pos += self._sock.send(send[pos : pos + 65536])
                        except BlockingIOError:
                            pass
                        except OSError:
                            raise _Lost(frozen=False) from None
                        if pos >= len(send):
                            sel.modify(self._sock, selectors.EVENT_READ)
                    if mask & selectors.EVENT_READ:
                        try:
                            chunk = self._sock.recv(65536)
                        except BlockingIOError:
                            continue
                        except OSError:
                            raise _Lost(frozen=False) from None
                        if not chunk:
                            raise _Lost(frozen=False)
                        self._demux.feed(chunk)
                        if pos >= len(send):
                            return
        finally:
            sel.close()

    def _take(self, n: int, deadline: float) -> bytes:
        while len(self._stdout.data) < n:
            self._pump(deadline)
        data = bytes(self._stdout.data[:n])
        del self._stdout.data[:n]
        return data

    def _read_frame(self, deadline: float) -> tuple[dict[str, Any], bytes, bytes]:
        size = int.from_bytes(self._take(4, deadline), "big")
        if size > 65536:
            raise _Lost(frozen=False)  # not a reply: the stream is not the server's
        header = json.loads(self._take(size, deadline))
        cap = self._sandbox.limits.output_bytes
        out_n, err_n = int(header.get("out", 0)), int(header.get("err", 0))
        if not (0 <= out_n <= cap and 0 <= err_n <= cap):
            raise _Lost(frozen=False)
        return header, self._take(out_n, deadline), self._take(err_n, deadline)

    def _idle_dead(self) -> bool:
        """True when the idle server's stream is readable (it ended, or sent what it should not)."""
        assert self._sock is not None
        with selectors.DefaultSelector() as sel:
            sel.register(self._sock, selectors.EVENT_READ)
            return bool(sel.select(0))

    # -- exec --------------------------------------------------------------------------------

    def exec(
        self,
        argv: Sequence[str],
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run ``argv`` as the server's identity in its home, like ``sandbox.exec(argv, as_user=identity)``.

        Raises:
            TypeError, ValueError: bad arguments (``validate_exec_args``), before anything runs.
            SandboxError: the server is closed, or a new one could not start.
            SandboxUnavailable: the container is dead.
        """
        args = validate_exec_args(argv, stdin=stdin, timeout=timeout, env=env)
        command = args.argv
        if command[0] == "python":
            command[0] = "python3"
        (result,) = self._request({"argv": command}, [args.stdin or b""], args.timeout, args.env)
        assert result is not None  # only a batch with stop_after_s skips
        return result

    def run_python(
        self,
        program: str,
        *,
        stdin: bytes | str | None = None,
        timeout: float = 30.0,
        env: Mapping[str, str] | None = None,
    ) -> ExecResult:
        """Run ``program`` as ``python3 -I -S -c program`` would, in a fork of the server.

        The same contract as ``exec`` (own stdin/stdout/stderr, timeout, exit status, every other
        process of the identity killed at its end), without an interpreter's start: the server is
        a pristine interpreter that runs no command's code itself, and the fork gets only its own
        three pipes (see ``container_scripts.EXEC_SERVER``). For short Python programs run many
        times (code repair's per-test runner).

        Raises:
            TypeError, ValueError: bad arguments, before anything runs.
            SandboxError, SandboxUnavailable: as ``exec``.
        """
        (result,) = self.run_python_many(program, [b"" if stdin is None else stdin], timeout=timeout, env=env)
        assert result is not None  # only a batch with stop_after_s skips
        return result

    def run_python_many(
        self,
        program: str,
        stdins: Sequence[bytes | str],
        *,
        timeout: float = 30.0,
        stop_after_s: float | None = None,
        env: Mapping[str, str] | None = None,
        preload: Sequence[str] = (),
    ) -> list[ExecResult | None]:
        """``run_python(program, stdin=s)`` for each of ``stdins``, one after another, in one request.

        The host's stream carries them all at once, but the server reads each stdin only when its
        fork is about to start, so no fork holds a later one (they wait in the stream, out of its
        reach). After a run that timed out or lasted ``stop_after_s`` the rest are skipped (None).
        A run that ended or froze the server gets the note ``exec`` gives; the rest then go to a
        new server. ``preload``: standard-library modules the server imports once (it keeps them),
        so that each fork finds them loaded (code repair's programs import ``typing``, which costs
        more than the fork); a module that fails to import is left to the program's own import.

        Raises:
            TypeError, ValueError: bad arguments (also a ``preload`` entry that is not a module
                name), before anything runs.
        """
        checked = [validate_exec_args(["python3", "-c", program], stdin=data, timeout=timeout, env=env)
                   for data in stdins]  # fmt: skip
        modules = list(preload)
        bad = [name for name in modules if not isinstance(name, str) or not all(p.isidentifier() for p in name.split("."))]
        if bad:
            raise ValueError(f"preload takes module names, got {bad[0]!r}")
        extra: dict[str, Any] = {} if stop_after_s is None else {"stop_after": float(stop_after_s)}
        if modules:
            extra["preload"] = modules
        return self._request({"python": program, **extra}, [c.stdin or b"" for c in checked], timeout,
                             checked[0].env if checked else {}, stop_after_s)

    def _request(self, what: dict[str, Any], payloads: list[bytes], timeout: float, env: dict[str, str],
                 stop_after_s: float | None = None) -> list[ExecResult | None]:
        """Send one request (``what``: an argv, or a program to fork; one command per payload) and
        return each command's result, None for one the server skipped."""
        results: list[ExecResult | None] = [None] * len(payloads)
        index, retried = 0, -1  # the first command without a result; the one already retried
        with self._lock, self._holding():
            if self._closed:
                raise SandboxError("exec server was closed")
            self._check_sandbox()
            while index < len(payloads):
                if self._sock is not None and self._idle_dead():
                    self._drop()  # ended between commands (a plain exec's kill, a restart): start afresh
                if self._sock is None:
                    self._start()
                rest = payloads[index:]
                request = json.dumps({**what, "env": env, "timeout": timeout, "cap": self._sandbox.limits.output_bytes,
                                      "runs": [len(data) for data in rest]}).encode()
                started = time.monotonic()
                deadline = started + timeout + GUARD_S
                acknowledged = False
                try:
                    self._pump(started + len(rest) * (timeout + GUARD_S),
                               len(request).to_bytes(4, "big") + request + b"".join(rest))
                    while index < len(payloads):
                        header, out, err = self._read_frame(deadline)
                        if header.get("started"):  # the command runs from here on
                            acknowledged, started = True, time.monotonic()
                            deadline = started + timeout + GUARD_S
                            continue
                        if not header.get("skipped"):
                            results[index] = self._result(header, out, err, started)
                        index, acknowledged = index + 1, False
                except (_Lost, ValueError) as lost:
                    frozen = isinstance(lost, _Lost) and lost.frozen
                    restarted = self._recover()
                    if not acknowledged and not frozen and retried != index:
                        retried = index
                        continue  # the server was gone before it took the command: nothing ran
                    note = (_FROZEN_NOTE if frozen else _LOST_NOTE) + (
                        "[rsigym] the container was restarted to clear them\n" if restarted else "")
                    results[index] = ExecResult(stdout="", stderr=note.lstrip("\n"), exit_code=None if frozen else _SIGKILL_EXIT,
                                                timed_out=frozen, duration_s=time.monotonic() - started)
                    index += 1
                    if stop_after_s is not None and frozen:
                        break  # a timeout: the rest are skipped, as the server would have
        return results

    def wipe(self, args: Sequence[str], timeout: float = 30.0) -> tuple[bytes, "ExecServer"] | None:
        """The reset's part of this identity (``container_scripts.WIPE`` with ``args``: home, mode,
        shared dirs), done by the live server itself at the end of a lease: the reset pays no
        engine exec and no interpreter start for it. Then the server execs a fresh interpreter in
        the same process (nothing of its memory survives an execve), which says it is ready once
        it is non-dumpable: returned detached, for the next lease to ``adopt``, so that lease pays
        no engine exec for its server either. The server refuses when a command changed what it
        inherits or another process of the uid would not die.

        Returns the oom counters' text and the detached server, or None when the server could not
        do it whole (none live, a command in flight, a refusal, it failed, froze or died): the
        caller then wipes from a fresh exec. This object is closed either way. The INIT
        verification that follows is the wall; this only saves execs.
        """
        if not self._lock.acquire(blocking=False):
            self.close()  # a command in flight: its stream is shut down, the caller wipes afresh
            return None
        kept: ExecServer | None = None
        try:
            if self._closed or self._sock is None or self._idle_dead():
                return None
            request = json.dumps({"wipe": list(args), "again": EXEC_SERVER}).encode()
            deadline = time.monotonic() + timeout
            try:
                self._pump(deadline, len(request).to_bytes(4, "big") + request)
                header, counters, _ = self._read_frame(deadline)
                if header.get("wiped") is not True or header.get("left") != 0 or not header.get("again"):
                    return None
                ready, _, _ = self._read_frame(time.monotonic() + START_TIMEOUTS_S[0])
            except (_Lost, ValueError):
                return None
            if ready.get("ready") is not True or int(ready.get("pid", 0)) != self.pid or self._stdout.data:
                return None
            kept = self._detach()
            return counters, kept
        finally:
            self._closed = True
            if kept is None:
                self._drop()
            self._lock.release()

    _STREAM = ("_sock", "_response", "_stdout", "_stderr", "_demux", "pid", "starts")

    def _detach(self) -> "ExecServer":
        """A new object holding this one's live stream (this one keeps none)."""
        other = ExecServer(self._sandbox, self.identity)
        other.adopt(self)
        return other

    def adopt(self, idle: "ExecServer") -> None:
        """Take over ``idle``'s stream: a server kept by the last reset (``wipe``),
        ready and pristine; ``idle`` keeps nothing. One that died since (a plain exec's end-of-exec
        kill) is noticed on the first command and replaced, as any idle server is."""
        for name in self._STREAM:
            setattr(self, name, getattr(idle, name))
        idle._sock = idle._response = idle._demux = None
        idle._closed = True
        self._swept = False

    def _holding(self) -> Any:
        """Holds the identity on the sandbox while a request runs (``ExecTracker``)."""
        return self._sandbox._tracker.running(self.identity, False)

    def _check_sandbox(self) -> None:
        self._sandbox._check_open()

    def _result(self, header: dict[str, Any], out: bytes, err: bytes, started: float) -> ExecResult:
        if "oom_kills" in header:  # the sandbox's own count stays in step with the cgroup's
            self._sandbox._oom_kills = max(self._sandbox._oom_kills, int(header["oom_kills"]))
        return ExecResult(
            stdout=out.decode("utf-8", errors="replace"),
            stderr=err.decode("utf-8", errors="replace"),
            exit_code=header["exit_code"],
            timed_out=bool(header["timed_out"]),
            # the server's own clock: a batch's later results arrive together
            duration_s=float(header.get("duration_s", time.monotonic() - started)),
            output_truncated=bool(header["truncated"]),
            oom_killed=bool(header["oom"]),
        )

    def _recover(self) -> bool:
        """Drop the stream and kill every process of the user; True when the container restarted."""
        self._drop()
        restarted = self._sandbox._kill_all(self._uid)
        self._swept = True
        return restarted


class InitServer(ExecServer):
    """The container's own server, as the INIT uid (PID 1's, which no exec identity can signal,
    ptrace or write to), for the reset's verification (``DockerSandbox._reset``).

    It belongs to the container, not to a lease: it lives across leases (its ``sandbox`` is
    pointed at the handle being reset before each use) and is closed when the container is
    removed. Neither identity can reach it: kill(2), ptrace and its /proc files need its uid or a
    capability the container does not have, so a program cannot fake or stop the verification
    (a stopped or dead server is noticed and the verification falls back to a fresh exec). It runs
    only the host's verification program, in a fork, as the exec server runs ``run_python``; the
    identities' execs never wait on it and it holds no identity of theirs.

    It is PID 1 itself (``container_scripts.INIT_SERVER``), over the container's attach ``stream``
    (``engine.create_container``): no engine exec and no interpreter start per container. Where
    that stream fails (PID 1 stopped serving, or a restart's PID 1 did not say it was ready), the
    server is started as before, in an INIT exec of its own; without a ``stream``, at once.
    """

    def __init__(self, sandbox: "DockerSandbox", stream: Any = None) -> None:
        super().__init__(sandbox, "user")
        self.identity = "init"
        self._uid = INIT
        self._home = "/"
        self._awaiting_ready = stream is not None  # PID 1's ready frame, read on first use
        if stream is not None:
            self._response, self._sock = stream, raw_socket(stream)
            self._sock.setblocking(False)
            self._demux = Demux(self._stdout, self._stderr)  # type: ignore[arg-type]
            self._demux.feed(buffered_output(stream, self._sock))  # what came with the upgrade headers

    def _idle_dead(self) -> bool:
        if self._awaiting_ready:  # PID 1's first frame says it serves
            self._awaiting_ready = False
            try:
                ready, _, _ = self._read_frame(time.monotonic() + START_TIMEOUTS_S[0])
            except (_Lost, ValueError):
                return True
            if ready.get("ready") is not True or ready.get("pid") != 1:
                return True
            self.pid = 1
            self.starts += 1
        return super()._idle_dead()

    def _start(self) -> None:
        if self._closed:  # replaced (a restart) while a request of its own was in flight
            raise SandboxError("the container's INIT server was closed")
        super()._start()

    def _holding(self) -> Any:
        return contextlib.nullcontext()  # neither identity: their execs may run beside it

    def _check_sandbox(self) -> None:
        pass  # used by the pool on a released handle
