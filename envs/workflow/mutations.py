"""Mutation operators on workflow specs, with a refusal of repeated and no-op edits.

An edit is JSON (``MUTATION_SCHEMA``) so an LLM optimiser can propose one:

* ``add_role`` {role, instruction, tools, returns, position}: a new sub-agent the entry role
  may call, placed at ``position`` in the call order;
* ``remove_role`` {role}: drops a sub-agent and every call to it;
* ``edit_instruction`` {role, instruction}: replaces a role's instruction;
* ``change_contract`` {role, returns}: replaces a role's return contract (a JSON Schema);
* ``reorder_calls`` {order}: a new planned call order.

``apply_mutation`` returns the revised spec or a one-line refusal: an edit already in the spec's
``edit_log`` (the optimiser would otherwise propose the same rejected edit forever), an edit that
changes nothing, or one whose result is no valid spec.
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import jsonschema

from .spec import TOOLS, SpecError, spec_sha256, validate_spec

__all__ = ["MUTATION_SCHEMA", "OPERATORS", "apply_mutation", "mutation_key"]

OPERATORS = ("add_role", "remove_role", "edit_instruction", "change_contract", "reorder_calls")

_ROLE = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,23}$"}
MUTATION_SCHEMA: dict[str, Any] = {
    "type": "object",
    "required": ["op"],
    "properties": {"op": {"enum": list(OPERATORS)}},
    "oneOf": [
        {"properties": {"op": {"const": "add_role"}, "role": _ROLE, "instruction": {"type": "string", "maxLength": 2000},
                        "tools": {"type": "array", "items": {"enum": list(TOOLS)}, "uniqueItems": True},
                        "returns": {"type": "object"}, "position": {"type": "integer", "minimum": 0}},
         "required": ["op", "role", "instruction", "tools", "returns"], "additionalProperties": False},
        {"properties": {"op": {"const": "remove_role"}, "role": _ROLE},
         "required": ["op", "role"], "additionalProperties": False},
        {"properties": {"op": {"const": "edit_instruction"}, "role": _ROLE,
                        "instruction": {"type": "string", "maxLength": 2000}},
         "required": ["op", "role", "instruction"], "additionalProperties": False},
        {"properties": {"op": {"const": "change_contract"}, "role": _ROLE, "returns": {"type": "object"}},
         "required": ["op", "role", "returns"], "additionalProperties": False},
        {"properties": {"op": {"const": "reorder_calls"}, "order": {"type": "array", "items": _ROLE}},
         "required": ["op", "order"], "additionalProperties": False},
    ],
}
_VALIDATOR = jsonschema.Draft202012Validator(MUTATION_SCHEMA)


def mutation_key(mutation: dict[str, Any]) -> str:
    """A short stable id of an edit (sha256 of its canonical JSON)."""
    return hashlib.sha256(json.dumps(mutation, sort_keys=True, separators=(",", ":")).encode()).hexdigest()[:16]


def apply_mutation(spec: dict[str, Any], mutation: Any) -> tuple[dict[str, Any] | None, str | None]:
    """``(revised spec, None)``, or ``(None, reason)`` for a refused edit. Never raises for bad input."""
    if not isinstance(mutation, dict):
        return None, f"an edit is a JSON object, got {type(mutation).__name__}"
    errors = sorted(_VALIDATOR.iter_errors(mutation), key=lambda e: e.path)
    if errors:
        return None, f"invalid edit: {errors[0].message[:200]}"
    key = mutation_key(mutation)
    if key in spec.get("edit_log", []):
        return None, f"refused: edit {key} ({mutation['op']}) was already tried on this workflow"
    new = copy.deepcopy(spec)
    entry = new["entry_role"]
    op, role = mutation["op"], mutation.get("role")
    if op == "add_role":
        if role in new["roles"]:
            return None, f"refused: role {role!r} already exists"
        new["roles"][role] = {"instruction": mutation["instruction"], "tools": list(mutation["tools"]),
                              "returns": mutation["returns"]}
        new["allowed_calls"].setdefault(entry, []).append(role)
        position = min(int(mutation.get("position", len(new["call_order"]))), len(new["call_order"]))
        new["call_order"].insert(position, role)
    elif op == "remove_role":
        if role not in new["roles"] or role == entry:
            return None, f"refused: cannot remove role {role!r}"
        del new["roles"][role]
        new["allowed_calls"] = {caller: [r for r in callees if r != role]
                                for caller, callees in new["allowed_calls"].items() if caller != role}
        new["call_order"] = [r for r in new["call_order"] if r != role]
    elif op in ("edit_instruction", "change_contract"):
        if role not in new["roles"]:
            return None, f"refused: no role {role!r}"
        field = "instruction" if op == "edit_instruction" else "returns"
        new["roles"][role][field] = mutation[field]
    else:  # reorder_calls
        new["call_order"] = list(mutation["order"])
    try:
        validate_spec(new)
    except SpecError as exc:
        return None, f"refused: the edit breaks the spec: {exc}"
    if spec_sha256(new) == spec_sha256(spec):
        return None, "refused: the edit changes nothing"
    new["edit_log"] = [*spec.get("edit_log", []), key]
    return new, None
