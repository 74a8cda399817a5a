"""Tool names a condition renamed in a record, mapped back: what the viewer's pairs and the
inspect export both read, owned here so that the report's exports need not import the viewer."""

from __future__ import annotations

from .trajectory import Trajectory

__all__ = ["renamed_to_original", "renamed_away", "NO_SUCH_TOOL"]


def _tool_mapping(record: Trajectory) -> dict[str, str]:
    """{original: name shown} of a record's tools: its condition's mapping, else its snapshot's."""
    params = (record.env.condition or {}).get("params") or {}
    mapping = params.get("mapping")
    if not mapping and record.final is not None and isinstance(record.final.state, dict):
        mapping = record.final.state.get("tool_names")
    if not isinstance(mapping, dict):
        return {}
    return {str(original): str(shown) for original, shown in mapping.items()}


def renamed_to_original(record: Trajectory) -> dict[str, str]:
    """{renamed: original} tool names of a record: its condition's mapping, else its snapshot's."""
    return {shown: original for original, shown in _tool_mapping(record).items() if original != shown}


NO_SUCH_TOOL = "(no such tool here)"


def renamed_away(record: Trajectory) -> set[str]:
    """Original names a condition renamed that no tool of the record's env bears any more: a call
    of one is a call of no tool (under ``rename_tools`` the old name fails), not the original."""
    mapping = _tool_mapping(record)
    return {original for original, shown in mapping.items() if original != shown} - set(mapping.values())
