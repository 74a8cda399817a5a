"""Typed domain tools: a tool is a documented Python function whose signature becomes its schema.

``@tool("read")`` / ``@tool("write")`` turns ``def get_order(db, order_id: str) -> dict`` with a
Google-style docstring into a ``Tool``: name, kind, description (the docstring's first
paragraph), and JSON-Schema parameters built from the type hints and the ``Args:`` section.
A tool raises ``ToolError`` for a bad argument or a policy violation; the env shows the message
to the agent as an error observation, and a WRITE tool's changes are rolled back.
"""

from __future__ import annotations

import inspect
import re
import sqlite3
import types
import typing
from dataclasses import dataclass, field
from typing import Any, Callable, Literal

import jsonschema

__all__ = ["Tool", "ToolError", "tool", "call_tool", "schema_of"]


class ToolError(Exception):
    """A tool refused the call: the message is what the agent sees."""


@dataclass(frozen=True)
class Tool:
    name: str
    kind: Literal["read", "write"]
    description: str
    parameters: dict[str, Any]
    fn: Callable[..., Any] = field(repr=False, compare=False)

    def spec(self, name: str | None = None, description: str | None = None) -> dict[str, Any]:
        """The OpenAI-style function spec, under a (possibly renamed) name and description."""
        return {"type": "function", "function": {"name": name or self.name,
                                                 "description": description or self.description,
                                                 "parameters": self.parameters}}


def _json_type(hint: Any) -> dict[str, Any]:
    origin = typing.get_origin(hint)
    if hint is str:
        return {"type": "string"}
    if hint is bool:
        return {"type": "boolean"}
    if hint is int:
        return {"type": "integer"}
    if hint is float:
        return {"type": "number"}
    if origin is Literal:
        return {"enum": list(typing.get_args(hint))}
    if origin in (list, tuple):
        (item,) = typing.get_args(hint)[:1] or (Any,)
        return {"type": "array", "items": _json_type(item) if item is not Any else {}}
    if origin in (typing.Union, types.UnionType):
        options = [a for a in typing.get_args(hint) if a is not type(None)]
        if len(options) == 1:
            return _json_type(options[0])
        return {"anyOf": [_json_type(a) for a in options]}
    if origin is dict or hint is dict:
        return {"type": "object"}
    raise TypeError(f"unsupported tool parameter type {hint!r}")


_ARG_START = re.compile(r"^    (\w+)(?: \([^)]*\))?: (.+)$")  # "    name: text" or "    name (type): text"


def _docstring_parts(fn: Callable[..., Any]) -> tuple[str, dict[str, str]]:
    """The first paragraph, and each ``Args:`` entry (continuation lines joined)."""
    doc = inspect.getdoc(fn) or ""
    description = doc.split("\n\n", 1)[0].replace("\n", " ").strip()
    args: dict[str, str] = {}
    lines = doc.splitlines()
    start = next((i + 1 for i, line in enumerate(lines) if line.strip() in ("Args:", "Arguments:")), len(lines))
    current = None
    for line in lines[start:]:
        if line and not line.startswith(" "):
            break  # the next section (Returns:, Raises:)
        match = _ARG_START.match(line)
        if match:
            current = match.group(1)
            args[current] = match.group(2).strip()
        elif current and line.strip():
            args[current] += " " + line.strip()
    return description, args


def schema_of(fn: Callable[..., Any]) -> tuple[str, dict[str, Any]]:
    """(description, parameters schema) of a tool function; its first parameter is the database."""
    description, arg_docs = _docstring_parts(fn)
    hints = typing.get_type_hints(fn)
    properties: dict[str, Any] = {}
    required = []
    for index, (name, parameter) in enumerate(inspect.signature(fn).parameters.items()):
        if index == 0:
            continue  # the database connection
        prop = _json_type(hints[name])
        if name in arg_docs:
            prop["description"] = arg_docs[name]
        if parameter.default is inspect.Parameter.empty:
            required.append(name)
        properties[name] = prop
    if not description:
        raise TypeError(f"tool {fn.__name__} needs a docstring: it is the tool's description")
    return description, {"type": "object", "properties": properties, "required": required,
                         "additionalProperties": False}


def tool(kind: Literal["read", "write"]) -> Callable[[Callable[..., Any]], Tool]:
    """Decorator: make a ``Tool`` from a documented, type-hinted function ``fn(db, **args)``."""

    def decorate(fn: Callable[..., Any]) -> Tool:
        description, parameters = schema_of(fn)
        return Tool(fn.__name__, kind, description, parameters, fn)

    return decorate


_VALIDATORS: dict[int, jsonschema.protocols.Validator] = {}


def call_tool(tool_: Tool, db: sqlite3.Connection, arguments: Any) -> tuple[Any, str | None]:
    """Run a tool; returns ``(result, None)`` or ``(None, error message)``, never raises for bad calls.

    Arguments are checked against the tool's schema first. A WRITE tool runs in a transaction
    that is rolled back when it fails, so a refused call leaves the database as it was.
    """
    validator = _VALIDATORS.get(id(tool_.parameters))
    if validator is None:  # tools live as long as their domain module: id() is a stable key
        validator = _VALIDATORS[id(tool_.parameters)] = jsonschema.Draft202012Validator(tool_.parameters)
    if not isinstance(arguments, dict):
        return None, f"arguments must be an object, got {type(arguments).__name__}"
    # is_valid stops at the first failure; errors are collected (and sorted) only for a bad call.
    errors = [] if validator.is_valid(arguments) else sorted(validator.iter_errors(arguments),
                                                            key=lambda e: list(e.absolute_path))
    if errors:
        where = "/".join(str(p) for p in errors[0].absolute_path) or "arguments"
        return None, f"invalid arguments at {where}: {errors[0].message}"
    try:
        if tool_.kind == "write":
            with db:  # commit on success, roll back on ToolError
                return tool_.fn(db, **arguments), None
        return tool_.fn(db, **arguments), None
    except ToolError as exc:
        return None, str(exc)
    except UnicodeEncodeError as exc:  # e.g. a lone surrogate from an agent, which SQLite refuses
        return None, f"invalid arguments: text that cannot be encoded ({exc.reason} at position {exc.start})"
