"""The workflow spec: roles, their instructions, tools and return contracts, who may call whom.

A spec is plain JSON (``SPEC_SCHEMA`` is its JSON Schema) so that an LLM optimiser can read and
revise it, a record can store it and a hash can name it. ``validate_spec`` checks the schema
and what a schema cannot say (the entry role exists, calls name known roles, every return
contract is itself a valid JSON Schema, the call order only names roles the entry may call).
"""

from __future__ import annotations

import copy
import hashlib
import json
from typing import Any

import jsonschema

__all__ = ["SPEC_SCHEMA", "TOOLS", "SpecError", "validate_spec", "spec_sha256", "seed_spec",
           "workflow_prompt", "FINDINGS_CONTRACT", "REVIEW_CONTRACT", "REPORT_CONTRACT"]

# What a role may do in the workspace; ``delegate`` is implied by ``allowed_calls``.
TOOLS = ("write_file", "run_python", "read_file")

_ROLE_NAME = {"type": "string", "pattern": "^[a-z][a-z0-9_]{0,23}$"}

SPEC_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "title": "rsigym workflow spec",
    "type": "object",
    "required": ["name", "entry_role", "roles", "allowed_calls", "call_order", "call_budget"],
    "additionalProperties": False,
    "properties": {
        "name": {"type": "string", "maxLength": 80},
        "entry_role": _ROLE_NAME,
        "roles": {
            "type": "object", "minProperties": 1, "maxProperties": 8,
            "propertyNames": _ROLE_NAME,
            "additionalProperties": {
                "type": "object", "required": ["instruction", "tools", "returns"], "additionalProperties": False,
                "properties": {
                    "instruction": {"type": "string", "maxLength": 2000},
                    "tools": {"type": "array", "items": {"enum": list(TOOLS)}, "uniqueItems": True},
                    "returns": {"type": "object"},
                },
            },
        },
        "allowed_calls": {"type": "object", "propertyNames": _ROLE_NAME,
                          "additionalProperties": {"type": "array", "items": _ROLE_NAME, "uniqueItems": True}},
        "call_order": {"type": "array", "items": _ROLE_NAME, "maxItems": 12},
        "call_budget": {"type": "integer", "minimum": 1, "maximum": 24},
        "max_turns_per_call": {"type": "integer", "minimum": 1, "maximum": 24},
        "edit_log": {"type": "array", "items": {"type": "string"}},
    },
}


class SpecError(ValueError):
    """A spec that breaks the schema or the rules the schema cannot state."""


_SPEC_VALIDATOR = jsonschema.Draft202012Validator(SPEC_SCHEMA)  # built once: a search validates thousands of specs
_VALID_RETURNS: set[str] = set()  # JSON texts of ``returns`` schemas that passed check_schema (a pure check)


def _check_returns(returns: Any) -> None:
    """check_schema, skipped for a schema text that passed before (the check depends on the text alone)."""
    try:
        text = json.dumps(returns, sort_keys=True, separators=(",", ":"))
    except (TypeError, ValueError):  # not JSON text: checked, never cached
        jsonschema.Draft202012Validator.check_schema(returns)
        return
    if text in _VALID_RETURNS:
        return
    jsonschema.Draft202012Validator.check_schema(returns)
    if len(_VALID_RETURNS) < 10_000:
        _VALID_RETURNS.add(text)


def validate_spec(spec: Any) -> dict[str, Any]:
    """Return ``spec`` when it is a valid workflow spec; SpecError naming the first problem."""
    try:
        _SPEC_VALIDATOR.validate(spec)
    except jsonschema.ValidationError as exc:
        where = "/".join(str(p) for p in exc.absolute_path) or "<spec>"
        raise SpecError(f"workflow spec {where}: {exc.message[:200]}") from None
    roles = spec["roles"]
    if spec["entry_role"] not in roles:
        raise SpecError(f"workflow spec entry_role {spec['entry_role']!r} is not a role ({', '.join(roles)})")
    for caller, callees in spec["allowed_calls"].items():
        unknown = [r for r in [caller, *callees] if r not in roles]
        if unknown:
            raise SpecError(f"workflow spec allowed_calls names unknown role(s) {unknown}")
        if caller in callees:
            raise SpecError(f"workflow spec allowed_calls: {caller!r} may not call itself")
    entry_calls = spec["allowed_calls"].get(spec["entry_role"], [])
    stray = [r for r in spec["call_order"] if r not in entry_calls]
    if stray:
        raise SpecError(f"workflow spec call_order names role(s) the entry role may not call: {stray}")
    for name, role in roles.items():
        try:
            _check_returns(role["returns"])
        except jsonschema.SchemaError as exc:
            raise SpecError(f"workflow spec roles/{name}/returns is no JSON Schema: {exc.message[:160]}") from None
    return spec


def spec_sha256(spec: dict[str, Any]) -> str:
    """A stable name for a spec's behaviour: its JSON without the name and the edit log."""
    body = {k: v for k, v in spec.items() if k not in ("name", "edit_log")}
    return hashlib.sha256(json.dumps(body, sort_keys=True, separators=(",", ":")).encode()).hexdigest()


FINDINGS_CONTRACT: dict[str, Any] = {
    "type": "object", "required": ["status", "files"], "additionalProperties": True,
    "properties": {"status": {"enum": ["done", "failed"]},
                   "files": {"type": "array", "items": {"type": "string"}},
                   "note": {"type": "string"}},
}
REVIEW_CONTRACT: dict[str, Any] = {
    "type": "object", "required": ["approved", "issues"], "additionalProperties": False,
    "properties": {"approved": {"type": "boolean"},
                   "issues": {"type": "array", "items": {"type": "string"}}},
}
REPORT_CONTRACT: dict[str, Any] = {
    "type": "object", "required": ["status", "sections"], "additionalProperties": False,
    "properties": {"status": {"enum": ["done", "failed"]},
                   "sections": {"type": "array", "items": {"type": "string"}}},
}
_SUMMARY_CONTRACT: dict[str, Any] = {"type": "object", "required": ["summary"],
                                     "properties": {"summary": {"type": "string"}}}


def seed_spec() -> dict[str, Any]:
    """The workflow evolution starts from: an orchestrator and one analyst who answers and reports.

    A reasonable first draft: the analyst answers in results.json and writes the report the task
    asks for. Nothing asks for a validated method or a review; the generic operators reach the
    sound method in one edit (see ``operators``).
    """
    return validate_spec(copy.deepcopy({
        "name": "seed",
        "entry_role": "orchestrator",
        "roles": {
            "orchestrator": {"instruction": "Delegate the research task to your team, then finish with a summary.",
                             "tools": [], "returns": _SUMMARY_CONTRACT},
            "analyst": {"instruction": "Analyse the data and answer the question in results.json. Write report.md "
                                        "with the sections the task asks for.",
                        "tools": ["read_file", "write_file", "run_python"], "returns": FINDINGS_CONTRACT},
        },
        "allowed_calls": {"orchestrator": ["analyst"]},
        "call_order": ["analyst"],
        "call_budget": 6,
        "max_turns_per_call": 6,
        "edit_log": [],
    }))


def workflow_prompt(spec: dict[str, Any]) -> str:
    """The explicit workflow description the entry role is shown (and SFT export strips)."""
    entry = spec["entry_role"]
    lines = ["[workflow]", f"Call budget: {spec['call_budget']} delegations in all.",
             f"Planned call order: {', '.join(spec['call_order']) or '(none)'}", "Team:"]
    for name in spec["allowed_calls"].get(entry, []):
        role = spec["roles"][name]
        lines.append(f"- {name}: {role['instruction']} (returns {json.dumps(role['returns'], sort_keys=True)})")
    lines.append("[/workflow]")
    return "\n".join(lines)
