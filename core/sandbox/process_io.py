"""Driving a local child process: feed its stdin, drain its output under a cap, and kill its
process group at a deadline or when it exits.

One selector loop instead of ``subprocess.communicate()``: communicate buffers output without a
cap and, on timeout, leaves the process group alive.
"""

from __future__ import annotations

import os
import selectors
import signal
import subprocess
import time

from rsigym.sandbox.output import CappedBuffer

__all__ = ["pump_process"]

# How long to keep draining pipes after the command died, in case an escaped process holds them.
_DRAIN_GRACE_S = 0.5
_READY_READS = 64  # reads at most of what the pipes already hold when the grace ends


def _kill_group(proc: subprocess.Popen[bytes]) -> None:
    try:
        os.killpg(proc.pid, signal.SIGKILL)
    except (ProcessLookupError, PermissionError):
        pass


def _exited(pid: int) -> bool:
    """True once the command has exited; WNOWAIT leaves the zombie for ``proc.wait()``."""
    try:
        return os.waitid(os.P_PID, pid, os.WEXITED | os.WNOHANG | os.WNOWAIT) is not None
    except ChildProcessError:
        return True


def pump_process(
    proc: subprocess.Popen[bytes],
    data: bytes | None,
    deadline: float,
    out: CappedBuffer,
    err: CappedBuffer,
    *,
    keep_group: bool = False,
) -> bool:
    """Feed stdin and drain stdout/stderr until the command ends or ``deadline``.

    ``proc`` must lead its own process group (``start_new_session=True``). When it exits, what
    is left of its group is killed unless ``keep_group``; at the deadline the whole group is.
    Returns True when the deadline killed the command.
    """
    assert proc.stdout is not None and proc.stderr is not None
    sel = selectors.DefaultSelector()
    sel.register(proc.stdout, selectors.EVENT_READ, out)
    sel.register(proc.stderr, selectors.EVENT_READ, err)
    if proc.stdin is not None:
        os.set_blocking(proc.stdin.fileno(), False)
        sel.register(proc.stdin, selectors.EVENT_WRITE, None)
    # A pidfd becomes readable when the command exits, even while a grandchild holds the pipes;
    # without one (old kernels) the loop polls waitid instead.
    pidfd = os.pidfd_open(proc.pid) if hasattr(os, "pidfd_open") else None
    if pidfd is not None:
        sel.register(pidfd, selectors.EVENT_READ, "exit")
    pending, pos = data or b"", 0
    timed_out, exit_deadline = False, None
    try:
        while True:
            readers = [k for k in sel.get_map().values() if isinstance(k.data, CappedBuffer)]
            now = time.monotonic()
            if exit_deadline is None and pidfd is None and _exited(proc.pid):
                exit_deadline = _on_exit(proc, keep_group)
            if exit_deadline is not None and (not readers or now >= exit_deadline):
                # Done, or an escaped process holds the pipes: stop waiting for it, but first take
                # what is already in them (a starved thread can reach here with it unread).
                _take_ready(sel)
                break
            if exit_deadline is None and now >= deadline:
                if _exited(proc.pid):
                    # It ended before this thread looked (a starved harness thread can wake up
                    # past the deadline with the exit event unread): a finished command, not a
                    # timeout. Drain what it wrote, as after any exit.
                    exit_deadline = _on_exit(proc, keep_group)
                    continue
                timed_out = True
                _kill_group(proc)
                break
            limit = (exit_deadline if exit_deadline is not None else deadline) - now
            if pidfd is None and exit_deadline is None:
                limit = min(limit, 0.05)
            for key, _ in sel.select(max(limit, 0.0)):
                if key.data == "exit":
                    sel.unregister(key.fileobj)
                    if exit_deadline is None:  # not already seen at the deadline
                        exit_deadline = _on_exit(proc, keep_group)
                elif key.data is None:  # stdin writable
                    try:
                        pos += os.write(key.fd, pending[pos : pos + 65536])
                    except BlockingIOError:
                        continue
                    except BrokenPipeError:
                        pos = len(pending)  # the command stopped reading; that is its business
                    if pos >= len(pending):
                        sel.unregister(key.fileobj)
                        if proc.stdin is not None:
                            proc.stdin.close()  # EOF for the child
                else:
                    chunk = os.read(key.fd, 65536)
                    if chunk:
                        key.data.write(chunk)
                    else:
                        sel.unregister(key.fileobj)
        proc.wait()
        if timed_out:
            _drain(sel, time.monotonic() + 0.2)
        return timed_out
    finally:
        for key in list(sel.get_map().values()):
            sel.unregister(key.fileobj)
        sel.close()
        for stream in (proc.stdin, proc.stdout, proc.stderr):
            if stream is not None and not stream.closed:
                stream.close()
        if pidfd is not None:
            os.close(pidfd)


def _on_exit(proc: subprocess.Popen[bytes], keep_group: bool) -> float:
    """Kill what the command left in its group (unless ``keep_group``); return until when to
    keep draining its pipes.

    Runs before the leader is reaped: its zombie keeps the group id from being reused while we
    signal the group.
    """
    if not keep_group:
        _kill_group(proc)
    return time.monotonic() + _DRAIN_GRACE_S


def _take_ready(sel: selectors.BaseSelector) -> None:
    """Read what the pipes hold now, without waiting; bounded, should an escaped process keep
    writing (a pipe holds at most 1 MiB by default: 16 reads of 64 KiB)."""
    for _ in range(_READY_READS):
        ready = [key for key, _ in sel.select(0) if isinstance(key.data, CappedBuffer)]
        if not ready:
            return
        for key in ready:
            chunk = os.read(key.fd, 65536)
            if chunk:
                key.data.write(chunk)
            else:
                sel.unregister(key.fileobj)


def _drain(sel: selectors.BaseSelector, until: float) -> None:
    """Collect what the killed command had already written to its pipes."""
    while time.monotonic() < until:
        readers = [k for k in sel.get_map().values() if isinstance(k.data, CappedBuffer)]
        if not readers:
            return
        for key, _ in sel.select(max(until - time.monotonic(), 0.0)):
            if not isinstance(key.data, CappedBuffer):
                sel.unregister(key.fileobj)  # the exit pidfd: it would stay readable
                continue
            chunk = os.read(key.fd, 65536)
            if chunk:
                key.data.write(chunk)
            else:
                sel.unregister(key.fileobj)
