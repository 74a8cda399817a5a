"""The wall clock of one episode, on any thread of any backend.

On the main thread of its process (a process-pool worker, ``--workers 0``, a Ray task) the timer is
a ``SIGALRM``: it interrupts Python code, sleeps and blocking I/O. Episodes in flight on threads
(``--concurrency`` above one) cannot take signals, so a watchdog thread raises ``EpisodeTimeout``
in the episode's thread (``PyThreadState_SetAsyncExc``) at the deadline and again each second
until the episode has left: that interrupts Python code at its next bytecode, and a blocking call
as soon as it returns. The blocking call an episode spends most of its time in, a model request,
is bounded by the deadline too: the LLM client caps its request timeout and its backoff sleeps to
the time left (``rsigym.llm.client.call_deadline``). A native call that never returns is out of reach of
both.

Neither timer fires inside an import. An exception raised while a module executes leaves the
worker with a half-made module (a later ``import litellm`` then fails with "partially initialized
module"): the timer waits until the import has returned, up to ``IMPORT_GRACE_S``. On the main
thread that wait is exact (the handler sees the interrupted frame). On a thread the watchdog
checks the episode thread's frames just before it raises, which leaves a window of a few bytecodes;
``interrupted_import`` reads from the timeout's traceback whether it landed in an import anyway (or
the grace ran out), and the runner then retires that worker (``inflight``).
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import sys
import threading
from types import FrameType, TracebackType
import time
from typing import Any, Iterator

from rsigym.llm.client import call_deadline

__all__ = ["EpisodeTimeout", "TIMEOUT_CAUSE", "IMPORT_GRACE_S", "deadline", "interrupted_import",
           "timeout_message"]

TIMEOUT_CAUSE = "timeout"  # the first word of the error of an episode stopped by its wall clock
_REPEAT_S = 1.0  # once more after this, should something swallow the first one
IMPORT_GRACE_S = 60.0  # how long past its deadline an episode may finish an import before the timer fires anyway
_IMPORT_POLL_S = 0.05  # how often a deferred timer looks again whether the import has returned
_IMPORTLIB = "<frozen importlib._bootstrap"  # both _bootstrap and _bootstrap_external


class EpisodeTimeout(BaseException):
    """The episode ran past its wall clock. A BaseException, so that no ``except Exception`` of an
    agent, env or provider client can swallow it and keep the run waiting."""


def timeout_message(timeout_s: float, what: str = "the episode") -> str:
    return f"{TIMEOUT_CAUSE}: {what} ran past its wall clock of {timeout_s:g} s"


def _imports_on_stack(frame: FrameType | None) -> int:
    """How many importlib frames are on the stack ending at ``frame`` (each import adds some)."""
    count = 0
    while frame is not None:
        count += frame.f_code.co_filename.startswith(_IMPORTLIB)
        frame = frame.f_back
    return count


def interrupted_import(exc: BaseException) -> bool:
    """Whether ``exc`` (or an exception it surfaced as) passed through a module being imported or
    through importlib itself: the worker may then hold a half-made module."""
    seen: set[int] = set()
    current: BaseException | None = exc
    while current is not None and id(current) not in seen:
        seen.add(id(current))
        tb: TracebackType | None = current.__traceback__
        while tb is not None:
            code = tb.tb_frame.f_code
            module = code.co_name == "<module>" and tb.tb_frame.f_globals.get("__spec__") is not None
            if module or code.co_filename.startswith(_IMPORTLIB):
                return True
            tb = tb.tb_next
        current = current.__context__
    return False


@contextlib.contextmanager
def deadline(timeout_s: float | None, what: str = "the episode") -> Iterator[None]:
    """Raise ``EpisodeTimeout`` in this thread once ``timeout_s`` of wall clock have passed (never
    inside an import, up to ``IMPORT_GRACE_S`` more); ``what`` names the stage in its message."""
    if not timeout_s:
        yield
        return
    baseline = _imports_on_stack(sys._getframe())  # a run started from an import has some already
    message = timeout_message(timeout_s, what)
    with call_deadline(time.monotonic() + timeout_s):
        if threading.current_thread() is threading.main_thread():
            with _alarm(timeout_s, message, baseline):
                yield
        else:
            with _watchdog(timeout_s, baseline):
                yield


@contextlib.contextmanager
def _alarm(timeout_s: float, message: str, baseline: int) -> Iterator[None]:
    give_up = time.monotonic() + timeout_s + IMPORT_GRACE_S

    def on_alarm(signum: int, frame: Any) -> None:
        if _imports_on_stack(frame) > baseline and time.monotonic() < give_up:
            signal.setitimer(signal.ITIMER_REAL, _IMPORT_POLL_S)  # let the import finish first
            return
        signal.setitimer(signal.ITIMER_REAL, _REPEAT_S)
        raise EpisodeTimeout(message)

    previous = signal.signal(signal.SIGALRM, on_alarm)
    signal.setitimer(signal.ITIMER_REAL, timeout_s)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, previous)


def _set_async_exc(thread_id: int, exc: type[BaseException] | None) -> None:
    # None clears an exception set but not yet raised (the episode left in between)
    ctypes.pythonapi.PyThreadState_SetAsyncExc(ctypes.c_ulong(thread_id),
                                               ctypes.py_object(exc) if exc is not None else None)


@contextlib.contextmanager
def _watchdog(timeout_s: float, baseline: int) -> Iterator[None]:
    target = threading.get_ident()
    left = threading.Event()
    lock = threading.Lock()  # the watchdog never raises into a thread that has left the episode
    give_up = time.monotonic() + timeout_s + IMPORT_GRACE_S

    def watch() -> None:
        wait_s = timeout_s
        while not left.wait(wait_s):
            with lock:
                if left.is_set():
                    return
                frame = sys._current_frames().get(target)
                if _imports_on_stack(frame) > baseline and time.monotonic() < give_up:
                    wait_s = _IMPORT_POLL_S  # the episode is importing: raise once it has returned
                    continue
                _set_async_exc(target, EpisodeTimeout)
            wait_s = _REPEAT_S

    watcher = threading.Thread(target=watch, name="rsigym-episode-deadline", daemon=True)
    watcher.start()
    try:
        yield
    finally:
        while True:  # an exception set just before we leave may land here: leave all the same
            try:
                left.set()  # from here on the watchdog sets nothing new ...
                with lock:
                    _set_async_exc(target, None)  # ... and what it set before is cleared
                break
            except EpisodeTimeout:
                continue
