"""LiteLLM, loaded once and configured (local price map, quiet logs, the socket deadline, keys
registered for redaction, ``on_load`` hooks), and the per-thread call deadline. Owned here so that
the client (``llm``) and the structured-output probe (``output_modes``) both use it without
importing each other. Imports only ``http_guard`` and ``redact``."""

from __future__ import annotations

import contextlib
import contextvars
import logging
import os
from typing import Any, Callable, Iterator

from . import http_guard
from ..records.redact import is_secret_key, register_secret

__all__ = ["call_deadline", "deadline", "load_litellm", "on_load"]

_litellm: Any = None
_on_load: list[Callable[[Any], None]] = []


# time.monotonic() by which the calling episode must end (set by the runner's episode deadline):
# a request's timeout and a backoff sleep never run past it. A context variable: each thread of
# episodes in flight has its own.
_DEADLINE: contextvars.ContextVar[float | None] = contextvars.ContextVar("rsigym_call_deadline", default=None)


@contextlib.contextmanager
def call_deadline(monotonic_s: float) -> Iterator[None]:
    """Within the block, requests and backoff sleeps of this thread end by ``monotonic_s``."""
    token = _DEADLINE.set(monotonic_s)
    try:
        yield
    finally:
        _DEADLINE.reset(token)


def deadline() -> float | None:
    """The calling thread's deadline (``time.monotonic()``), or None."""
    return _DEADLINE.get()


def on_load(hook: Callable[[Any], None]) -> None:
    """Run ``hook(litellm)`` before every call (it must be cheap and idempotent)."""
    if hook not in _on_load:
        _on_load.append(hook)


def load_litellm() -> Any:
    """The ``litellm`` module, configured: local price map, quiet, ``on_load`` hooks run."""
    global _litellm
    if _litellm is None:
        # Without this LiteLLM fetches its price map over the network at import time.
        os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")
        import litellm

        litellm.suppress_debug_info = True  # no "Provider List" banners on every error
        logging.getLogger("LiteLLM").setLevel(logging.ERROR)
        http_guard.install(litellm, _DEADLINE.get)  # the call deadline holds per socket operation too
        # LiteLLM reads keys from the environment; a spawned worker never ran the CLI that registered them
        for name, value in os.environ.items():
            if is_secret_key(name):
                register_secret(value)
        _litellm = litellm
    for hook in _on_load:
        hook(_litellm)
    return _litellm
