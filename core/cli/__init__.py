"""The command line: ``rsigym run``, ``report``, ``regrade``, ``list``, ``sandbox``, ``view``,
``export``, ``new``.

Owns the parser and dispatch (``commands``: ``main``) and the two long commands (``run_command``,
``regrade_command``). It is the top of the kernel and may import any part of it, each inside the
command that needs it so that a refused flag costs no heavy import; nothing imports it but
``rsigym.__main__`` and the ``rsigym`` script. ``main`` is re-exported here, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .commands import (
    main,
    )

__all__ = [
    'main',
]


def __getattr__(name: str) -> Any:
    # The re-exported names load with .commands on first use (PEP 562).
    if name in __all__:
        return getattr(importlib.import_module(".commands", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
