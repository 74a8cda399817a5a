"""A generic edit generator for workflow specs: random edits from templates, no knowledge of what wins.

The optimiser's search space. Every operator of ``mutations`` is drawn with equal chance, its
arguments from generic templates written as a research lead would phrase advice, good and bad
alike (rigour, brevity, double-checking, planning, reporting, speed): nothing here knows which
edit raises the score. The search (``mass.evolve``) decides what to keep from the judge's
verdicts alone.

What the sound method needs from a workflow (stated for the report): the analyst's instructions
must ask for rigour (a phrase such as "validated", "held-out", "robust") or a reviewer must send
an unvalidated method back. Two of the nine instruction fragments carry such a phrase, so the
seed reaches the sound method in one ``edit_instruction`` of the analyst, or in one
``add_role`` of a reviewer.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from .mutations import OPERATORS, apply_mutation, mutation_key
from .spec import FINDINGS_CONTRACT, REPORT_CONTRACT, REVIEW_CONTRACT

__all__ = ["FRAGMENTS", "ROLE_NAMES", "ROLE_VERBS", "CONTRACTS", "random_edit", "edit_pool", "random_spec"]

FRAGMENTS = (
    "Work step by step.",
    "Keep the code short and quick.",
    "Use a robust, validated method (held-out data or cross-validation), not a quick threshold.",
    "Double-check the names of the files you write.",
    "State your assumptions.",
    "Prefer the simplest method that answers the question.",
    "Test significance where it applies.",
    "Write report.md with the sections the task asks for.",
    "Finish fast; time is short.",
)
ROLE_NAMES = ("reviewer", "writer", "checker", "planner", "critic", "assistant")
ROLE_VERBS = ("Review the results in results.json and list every issue.",
              "Check results.json against task.md and list every issue.",
              "Write report.md from results.json with the sections the task asks for.",
              "Plan the analysis and note it.",
              "Summarise what the team did.")
_TOOLSETS = (("read_file",), ("read_file", "write_file"), ("read_file", "write_file", "run_python"))
CONTRACTS: tuple[dict[str, Any], ...] = (FINDINGS_CONTRACT, REVIEW_CONTRACT, REPORT_CONTRACT,
                                        {"type": "object", "required": ["status"],
                                         "properties": {"status": {"type": "string"}}})


def _pick(rng: np.random.Generator, options: Any) -> Any:
    return options[int(rng.integers(len(options)))]


def _instruction(rng: np.random.Generator, base: str) -> str:
    """The role's task sentence plus one or two fragments."""
    count = 1 + int(rng.integers(2))
    chosen = [FRAGMENTS[int(i)] for i in rng.choice(len(FRAGMENTS), size=count, replace=False)]
    return " ".join([base, *chosen])


def _draw(spec: dict[str, Any], rng: np.random.Generator) -> dict[str, Any]:
    roles, entry = spec["roles"], spec["entry_role"]
    others = [r for r in roles if r != entry]
    op = _pick(rng, OPERATORS)
    if op == "add_role":
        free = [n for n in ROLE_NAMES if n not in roles]
        name = _pick(rng, free) if free else f"helper{len(roles)}"
        return {"op": op, "role": name, "instruction": _pick(rng, ROLE_VERBS), "tools": list(_pick(rng, _TOOLSETS)),
                "returns": _pick(rng, CONTRACTS), "position": int(rng.integers(len(spec["call_order"]) + 1))}
    if op == "remove_role" and others:
        return {"op": op, "role": _pick(rng, others)}
    if op == "change_contract" and others:
        return {"op": op, "role": _pick(rng, others), "returns": _pick(rng, CONTRACTS)}
    if op == "reorder_calls" and len(spec["call_order"]) > 1:
        return {"op": op, "order": [spec["call_order"][int(i)] for i in rng.permutation(len(spec["call_order"]))]}
    role = _pick(rng, list(roles))
    base = roles[role]["instruction"].split(".")[0].strip() + "."
    return {"op": "edit_instruction", "role": role, "instruction": _instruction(rng, base)}


def random_edit(spec: dict[str, Any], rng: np.random.Generator, tried: set[str] | None = None,
                attempts: int = 50) -> tuple[dict[str, Any], dict[str, Any]] | None:
    """``(edit, revised spec)`` for a random valid edit not in ``tried`` or the edit log; None if none found."""
    tried = set(tried or ()) | set(spec.get("edit_log", []))
    for _ in range(attempts):
        edit = _draw(spec, rng)
        if mutation_key(edit) in tried:
            continue
        revised, _ = apply_mutation(spec, edit)
        if revised is not None:
            return edit, revised
    return None


def edit_pool(spec: dict[str, Any], rng: np.random.Generator, tried: set[str], size: int) -> list[dict[str, Any]]:
    """Up to ``size`` distinct random valid edits of ``spec``, none in ``tried`` (which grows with them)."""
    pool: list[dict[str, Any]] = []
    for _ in range(size):
        found = random_edit(spec, rng, tried)
        if found is None:
            break
        pool.append(found[0])
        tried.add(mutation_key(found[0]))
    return pool


def random_spec(spec: dict[str, Any], rng: np.random.Generator, edits: int) -> dict[str, Any]:
    """``spec`` after ``edits`` random edits in a row (random search's candidates)."""
    for _ in range(edits):
        found = random_edit(spec, rng)
        if found is None:
            break
        spec = found[1]
    return spec
