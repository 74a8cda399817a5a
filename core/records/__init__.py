"""Trajectory records and everything that writes, reads, bounds or redacts them.

Owns the record types (``trajectory``: ``Trajectory``, ``Step``, ``Grade``, ``Usage``, ...), their
JSONL storage (``jsonl``), the compact shared text of long observations (``shared_text``), the size
limits of a record and of an action's display (``record_limits``, ``action_limits``), the encoding of
non-finite numbers (``record_numbers``) and the redaction of secrets (``redact``, ``redact_lines``).
It may import ``rsigym.errors`` and third-party libraries only: every other part of rsigym builds on
it. The record API of ``trajectory`` is re-exported here (``from rsigym.records import Trajectory``);
it loads on first use, so importing ``rsigym.records.redact`` costs no numpy.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .trajectory import (
    SCHEMA_VERSION, TERMINATIONS, AgentSpec, EnvRef, Step, Grade, FinalSnapshot, Usage, Trajectory,
    episode_key, canonical_json, to_jsonable, read_number, read_int, non_finite_marker,
    MAX_RECORD_DEPTH, state_sha256, utc_now,
    )

__all__ = [
    'SCHEMA_VERSION', 'TERMINATIONS', 'AgentSpec', 'EnvRef', 'Step', 'Grade', 'FinalSnapshot', 'Usage',
    'Trajectory', 'episode_key', 'canonical_json', 'to_jsonable', 'read_number', 'read_int',
    'non_finite_marker', 'MAX_RECORD_DEPTH', 'state_sha256', 'utc_now',
]


def __getattr__(name: str) -> Any:
    # The re-exported names load with .trajectory on first use (PEP 562).
    if name in __all__:
        return getattr(importlib.import_module(".trajectory", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def __dir__() -> list[str]:
    return sorted(set(globals()) | set(__all__))
