"""Public/hidden overlap: which hidden assertions only repeat a call the public tests already make.

A hidden assertion that calls the function on exactly the arguments of a public test call (after
literal evaluation, so ``[1, 2]`` and ``[1,2]`` are one call) checks nothing the public tests did
not already check; a program tuned to pass the public tests passes it for free. ``hidden_only``
scores only the other assertions; ``overlap_table`` gives the per-problem counts docs/families/coderepair.md states.
"""

from __future__ import annotations

import ast
from typing import Any

from .problems import Problem

__all__ = ["overlapping", "overlap_table"]


def _args_key(args: list[str]) -> str | None:
    try:
        return repr([ast.literal_eval(a) for a in args])
    except (ValueError, TypeError, SyntaxError, MemoryError, RecursionError):
        return None


def _calls(block: str, name: str) -> list[str | None]:
    """Keys of every ``name(...)`` call in ``block`` (None for a call whose arguments are not literals)."""
    out: list[str | None] = []
    for node in ast.walk(ast.parse(block)):
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Name) and node.func.id == name and not node.keywords:
            out.append(_args_key([ast.unparse(a) for a in node.args]))
    return out


def overlapping(problem: Problem) -> list[bool]:
    """Per hidden assertion: True when every function call it makes is a public test call."""
    public = {key for call in problem.public_calls for key in _calls(call, problem.entry) if key is not None}
    flags = []
    for block in problem.hidden:
        keys = _calls(block, "candidate") + _calls(block, problem.entry)
        flags.append(bool(keys) and all(k is not None and k in public for k in keys))
    return flags


def overlap_table(problems: list[Problem]) -> list[dict[str, Any]]:
    """Per problem: hidden assertions, how many repeat a public call, and the share."""
    rows = []
    for problem in problems:
        flags = overlapping(problem)
        rows.append({"problem_id": problem.problem_id, "hidden": len(flags), "repeat_public": sum(flags),
                     "share": sum(flags) / len(flags) if flags else 0.0})
    return rows
