"""Workflow actions: the JSON schema LLM roles answer with, and the typed space that samples them.

JSON form (``ACTION_SCHEMA``), one object per turn::

    {"op": "delegate", "role": "analyst", "instruction": "..."}   call a role you may call
    {"op": "write_file", "path": "analysis.py", "content": "..."}
    {"op": "run_python", "path": "analysis.py"}                  run it in the sandbox
    {"op": "read_file", "path": "results.json"}
    {"op": "return", "result": {...}}                             a sub-agent's answer, per its contract
    {"op": "finish", "summary": "..."}                            the entry role ends the workflow

Typed form (``action_space(roles)``): ``Dict(op, role, path, text)`` with indices into
``OPS``, the spec's roles and ``PATHS``; ``text`` is the instruction, content, JSON result or
summary. ``parse_action`` turns either form (or a JSON string) into the JSON form.
"""

from __future__ import annotations

import json
from typing import Any

import numpy as np
from gymnasium import spaces

from rsigym.records.action_limits import short_repr
from rsigym.spaces import JsonActions, text_space

__all__ = ["OPS", "PATHS", "ACTION_SCHEMA", "action_space", "parse_action", "MAX_ACTION_CHARS"]

OPS = ("delegate", "write_file", "run_python", "read_file", "return", "finish")
PATHS = ("analysis.py", "results.json", "report.md", "notes.md", "task.md", "data.csv")
MAX_ACTION_CHARS = 100_000

_NAME = {"type": "string", "maxLength": 64}
ACTION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "oneOf": [
        {"properties": {"op": {"const": "delegate"}, "role": _NAME, "instruction": {"type": "string", "maxLength": 4000}},
         "required": ["op", "role", "instruction"], "additionalProperties": False},
        {"properties": {"op": {"const": "write_file"}, "path": _NAME, "content": {"type": "string", "maxLength": 64000}},
         "required": ["op", "path", "content"], "additionalProperties": False},
        {"properties": {"op": {"const": "run_python"}, "path": _NAME},
         "required": ["op", "path"], "additionalProperties": False},
        {"properties": {"op": {"const": "read_file"}, "path": _NAME},
         "required": ["op", "path"], "additionalProperties": False},
        {"properties": {"op": {"const": "return"}, "result": {"type": "object"}},
         "required": ["op", "result"], "additionalProperties": False},
        {"properties": {"op": {"const": "finish"}, "summary": {"type": "string", "maxLength": 4000}},
         "required": ["op", "summary"], "additionalProperties": False},
    ],
}
_JSON = JsonActions(ACTION_SCHEMA)


def action_space(roles: list[str]) -> spaces.Dict:
    return spaces.Dict({"op": spaces.Discrete(len(OPS)), "role": spaces.Discrete(len(roles)),
                        "path": spaces.Discrete(len(PATHS)), "text": text_space(2000)})


def _typed(action: dict[str, Any], roles: list[str]) -> dict[str, Any] | str:
    try:
        op, role, path = int(action["op"]), int(action["role"]), int(action["path"])
        text = str(action["text"])
    except (KeyError, TypeError, ValueError, OverflowError) as exc:
        return f"invalid typed action: {type(exc).__name__}: {str(exc)[:100]}"
    if not (0 <= op < len(OPS) and 0 <= role < len(roles) and 0 <= path < len(PATHS)):
        return (f"invalid typed action: index out of range (op {short_repr(op)}, role {short_repr(role)}, "
                f"path {short_repr(path)})")
    name = OPS[op]
    if name == "delegate":
        return {"op": name, "role": roles[role], "instruction": text}
    if name == "write_file":
        return {"op": name, "path": PATHS[path], "content": text}
    if name in ("run_python", "read_file"):
        return {"op": name, "path": PATHS[path]}
    if name == "finish":
        return {"op": name, "summary": text}
    try:
        result = json.loads(text)
    except ValueError:
        return "invalid typed action: return needs text holding a JSON object"
    return {"op": name, "result": result}


def parse_action(action: Any, roles: list[str]) -> tuple[dict[str, Any] | None, str | None]:
    """``(JSON action, None)`` or ``(None, error message)``; never raises."""
    if isinstance(action, str):
        if len(action) > MAX_ACTION_CHARS:
            return None, f"invalid action: a string of {len(action)} chars (limit {MAX_ACTION_CHARS})"
        try:
            action = json.loads(action)
        except (ValueError, RecursionError):
            return None, f"invalid action: not JSON: {action[:80]!r}"
    if isinstance(action, dict) and isinstance(action.get("op"), (int, np.integer)) and not isinstance(action.get("op"), bool):
        typed = _typed(action, roles)
        if isinstance(typed, str):
            return None, typed
        action = typed
    return _JSON.parse(action)
