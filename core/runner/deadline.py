"""The wall clock of one episode, on any thread of any backend.

On the main thread of its process (a process-pool worker, ``--workers 0``, a Ray task) the timer is
a ``SIGALRM``: it interrupts Python code, sleeps and blocking I/O. Episodes in flight on threads
(``--concurrency`` above one) cannot take signals, so a watchdog thread raises ``EpisodeTimeout``
in the episode's thread (``PyThreadState_SetAsyncExc``) at the deadline and again each second
until the episode has left: that interrupts Python code at its next bytecode, and a blocking call
as soon as it returns. The blocking call an episode spends most of its time in, a model request,
is bounded by the deadline too: the LLM client caps its request timeout and its backoff sleeps to
the time left (``rsigym.llm.call_deadline``). A native call that never returns is out of reach of
both.
"""

from __future__ import annotations

import contextlib
import ctypes
import signal
import threading
import time
from typing import Any, Iterator

from rsigym.llm import call_deadline

__all__ = ["EpisodeTimeout", "TIMEOUT_CAUSE", "deadline", "timeout_message"]

TIMEOUT_CAUSE = "timeout"  # the first word of the error of an episode stopped by its wall clock
_REPEAT_S = 1.0  # once more after this, should something swallow the first one


class EpisodeTimeout(BaseException):
    """The episode ran past its wall clock. A BaseException, so that no ``except Exception`` of an
    agent, env or provider client can swallow it and keep the run waiting."""


def timeout_message(timeout_s: float) -> str:
    return f"{TIMEOUT_CAUSE}: the episode ran past its wall clock of {timeout_s:g} s"


@contextlib.contextmanager
def deadline(timeout_s: float | None) -> Iterator[None]:
    """Raise ``EpisodeTimeout`` in this thread once ``timeout_s`` of wall clock have passed."""
    if not timeout_s:
        yield
        return
    with call_deadline(time.monotonic() + timeout_s):
        if threading.current_thread() is threading.main_thread():
            with _alarm(timeout_s):
                yield
        else:
            with _watchdog(timeout_s):
                yield


@contextlib.contextmanager
def _alarm(timeout_s: float) -> Iterator[None]:
    def on_alarm(signum: int, frame: Any) -> None:
        signal.setitimer(signal.ITIMER_REAL, _REPEAT_S)
        raise EpisodeTimeout(timeout_message(timeout_s))

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
def _watchdog(timeout_s: float) -> Iterator[None]:
    target = threading.get_ident()
    left = threading.Event()
    lock = threading.Lock()  # the watchdog never raises into a thread that has left the episode

    def watch() -> None:
        wait_s = timeout_s
        while not left.wait(wait_s):
            with lock:
                if left.is_set():
                    return
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
