"""``rsigym serve``: any registered env id over OpenEnv's HTTP/WebSocket contract, recorded as a run.

Owns the served app (``app``: OpenEnv's server, rsigym's limits), its sessions (``session``: one
Gymnasium env each), the one count of live envs (``ledger``), the bounds on clients (``guards``), the run folder's one writer (``recorder``), the typed models (``models``),
the space descriptions clients rebuild spaces from (``wire``) and the command (``cli``). Imports
the kernel (records, jsonl, runner lock, registry), ``openenv-core``, FastAPI and uvicorn (the
``serve`` extra), each only when a name below is first used; the kernel never imports this
package, so ``import rsigym`` stays free of them.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .config import ServeConfig
    from .server import ServerThread, serve
    from .spawn import start_server_process

__all__ = ["ServeConfig", "serve", "ServerThread", "start_server_process"]

_WHERE = {"ServeConfig": ".config", "serve": ".server", "ServerThread": ".server", "start_server_process": ".spawn"}


def __getattr__(name: str) -> Any:
    if name not in _WHERE:
        raise AttributeError(f"module 'rsigym.serve' has no attribute {name!r}")
    import importlib

    return getattr(importlib.import_module(_WHERE[name], __name__), name)
