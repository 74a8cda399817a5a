"""The offline candidate source: AST mutations of constants and operators, and block crossover.

Written by hand (no library mutates Python ASTs this way). A proposal applies one to
``max_mutations`` point mutations to the parent, or, with probability ``crossover_p``, first
replaces one top-level function of the parent by the same-named function of a donor (another
archived program, or a hand-written seed of the task's library). Many children are worse or
broken, a few better: the quality spread an allocator must cope with.
"""

from __future__ import annotations

import ast
import math
from typing import Any

import numpy as np

from .source_base import Proposal, estimate_tokens

__all__ = ["MutateSource", "mutate_constants_and_operators", "crossover"]

_BINOP_SWAPS: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.Div, ast.Div: ast.Mult}
_COMPARE_SWAPS: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt}
_CALL_SWAPS = {"min": "max", "max": "min", "minimum": "maximum", "maximum": "minimum"}


def _sites(tree: ast.AST) -> list[tuple[str, Any]]:
    sites: list[tuple[str, Any]] = []
    for node in ast.walk(tree):
        if isinstance(node, ast.Constant) and type(node.value) in (int, float):
            sites.append(("constant", node))
        elif isinstance(node, ast.BinOp) and type(node.op) in _BINOP_SWAPS:
            sites.append(("binop", node))
        elif isinstance(node, ast.Compare) and type(node.ops[0]) in _COMPARE_SWAPS:
            sites.append(("compare", node))
        elif isinstance(node, ast.Call):
            name = node.func.id if isinstance(node.func, ast.Name) else (
                node.func.attr if isinstance(node.func, ast.Attribute) else None)
            if name in _CALL_SWAPS:
                sites.append(("call", node))
    return sites


def _new_constant(value: int | float, rng: np.random.Generator) -> int | float:
    if isinstance(value, int):
        return value + int(rng.choice([-2, -1, 1, 2]))
    if value == 0:  # a switched-off term: switch it on, either sign
        return float(f"{float(rng.normal(0.0, 0.5)):.4g}")
    if rng.random() < 0.6:  # relative step, most of the time small
        new = value * math.exp(float(rng.normal(0.0, 0.2)))
    else:
        new = value + float(rng.normal(0.0, 0.1 * max(abs(value), 0.5)))
    return float(f"{new:.4g}")


def mutate_constants_and_operators(tree: ast.Module, count: int, rng: np.random.Generator) -> list[str]:
    """Apply ``count`` point mutations in place; returns what was done, e.g. ``["constant 0.3->0.34"]``."""
    done = []
    for _ in range(count):
        sites = _sites(tree)
        if not sites:
            break
        # Constants are the most common edit an LLM makes too: weight them up.
        weights = np.array([3.0 if kind == "constant" else 1.0 for kind, _ in sites])
        kind, node = sites[int(rng.choice(len(sites), p=weights / weights.sum()))]
        if kind == "constant":
            old = node.value
            node.value = _new_constant(old, rng)
            done.append(f"constant {old!r}->{node.value!r}")
        elif kind == "binop":
            old_op = type(node.op)
            node.op = _BINOP_SWAPS[old_op]()
            done.append(f"operator {old_op.__name__}->{type(node.op).__name__}")
        elif kind == "compare":
            old_op = type(node.ops[0])
            node.ops[0] = _COMPARE_SWAPS[old_op]()
            done.append(f"comparison {old_op.__name__}->{type(node.ops[0]).__name__}")
        else:
            func = node.func
            if isinstance(func, ast.Name):
                old_name, func.id = func.id, _CALL_SWAPS[func.id]
                done.append(f"call {old_name}->{func.id}")
            else:
                old_name, func.attr = func.attr, _CALL_SWAPS[func.attr]
                done.append(f"call {old_name}->{func.attr}")
    return done


def crossover(tree: ast.Module, donor_code: str, rng: np.random.Generator) -> str | None:
    """Replace one top-level function of ``tree`` by the donor's function of the same name, in place.

    Returns the function's name, or None when the two programs share no function.
    """
    try:
        donor = ast.parse(donor_code)
    except SyntaxError:
        return None
    donor_defs = {n.name: n for n in donor.body if isinstance(n, ast.FunctionDef)}
    slots = [i for i, n in enumerate(tree.body) if isinstance(n, ast.FunctionDef) and n.name in donor_defs]
    if not slots:
        return None
    index = slots[int(rng.integers(len(slots)))]
    name = tree.body[index].name  # type: ignore[attr-defined]
    tree.body[index] = donor_defs[name]
    return name


class MutateSource:
    """Offline mutation and crossover (see the module docstring).

    Args:
        crossover_p: Probability that a proposal starts with a block crossover.
        library_p: Probability that a crossover's donor is a hand-written library program
            rather than the archive partner.
        max_mutations: Upper bound of point mutations per proposal (drawn uniformly from 1..max).
    """

    name = "mutate"

    def __init__(self, crossover_p: float = 0.35, library_p: float = 0.5, max_mutations: int = 3) -> None:
        if not (0 <= crossover_p <= 1 and 0 <= library_p <= 1) or max_mutations < 1:
            raise ValueError(f"bad mutate params: crossover_p={crossover_p}, library_p={library_p}, "
                             f"max_mutations={max_mutations}")
        self.crossover_p, self.library_p, self.max_mutations = crossover_p, library_p, max_mutations

    def propose(self, parent_code: str, parent_score: float, partner_code: str | None,
                library: dict[str, str], task_description: str, rng: np.random.Generator) -> Proposal:
        tree = ast.parse(parent_code)
        steps: list[str] = []
        donor_text = ""
        if rng.random() < self.crossover_p:
            names = sorted(library)
            use_library = partner_code is None or rng.random() < self.library_p
            donor = library[names[int(rng.integers(len(names)))]] if use_library else partner_code
            assert donor is not None
            swapped = crossover(tree, donor, rng)
            if swapped:
                steps.append(f"crossover {swapped}")
                donor_text = donor
        count = int(rng.integers(1, self.max_mutations + 1)) if not steps or rng.random() < 0.5 else 0
        steps += mutate_constants_and_operators(tree, count, rng)
        code = ast.unparse(ast.fix_missing_locations(tree)) + "\n"
        # What an LLM generator would have read (parent, donor, task) and written (the program).
        prompt = task_description + parent_code + donor_text
        return Proposal(code, "; ".join(steps) or "copy", estimate_tokens(prompt), estimate_tokens(code))
