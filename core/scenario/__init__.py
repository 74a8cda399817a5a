"""From a scenario file to checked episode specs and the run's manifest.

Owns the scenario (``spec``: ``Scenario``, ``load_scenario``, ``expand``), its YAML reader
(``safe_yaml``), the checks before a run (``preflight``) and the manifest a run directory keeps
(``manifest``). It may import ``rsigym.records``, ``rsigym.registry``, ``rsigym.errors`` and, inside
functions, ``rsigym.agent``, ``rsigym.grader`` and ``rsigym.llm``; never the runner or the CLI. The
scenario API of ``spec`` is re-exported here, loaded on first use.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .spec import (
    Scenario, EpisodeSpec, NamedSpec, load_scenario, parse_scenario, expand,
    )

__all__ = [
    'Scenario', 'EpisodeSpec', 'NamedSpec', 'load_scenario', 'parse_scenario', 'expand',
]


def __getattr__(name: str) -> Any:
    # The re-exported names load with .spec on first use (PEP 562).
    if name in __all__:
        return getattr(importlib.import_module(".spec", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
