"""Features of a candidate program: static ones and cheap checks that execute nothing.

Computed from what the agent sees (the round's candidates and its own history of executed
programs); nothing here reads the simulator's labels.
"""

from __future__ import annotations

import ast
from typing import Sequence

import numpy as np

from .mutation import canonical_form, undefined_names

__all__ = ["FEATURE_NAMES", "candidate_features"]

FEATURE_NAMES = ("parses", "defines_entry", "undefined_names", "endless_loop", "agreement",
                 "size_deviation", "returns_none", "known_failure", "round")


def _endless_loop(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value:
            if not any(isinstance(n, (ast.Break, ast.Return)) for n in ast.walk(node)):
                return True
    return False


def candidate_features(codes: Sequence[str], entry: str, round_index: int,
                       failed_forms: set[str] | frozenset[str] = frozenset()) -> np.ndarray:
    """``(len(codes), len(FEATURE_NAMES))`` features of one round's candidates.

    ``agreement``: share of the other candidates with the same canonical form (locals renamed,
    docstring dropped); ``known_failure``: the canonical form was executed before and failed.
    """
    forms = [canonical_form(code, entry) for code in codes]
    trees: list[ast.AST | None] = []
    for code in codes:
        try:
            trees.append(ast.parse(code))
        except SyntaxError:
            trees.append(None)
    sizes = [sum(1 for _ in ast.walk(t)) if t is not None else 0 for t in trees]
    median = float(np.median([s for s in sizes if s] or [1]))
    rows = []
    for i, (code, form, tree) in enumerate(zip(codes, forms, trees)):
        others = [f for j, f in enumerate(forms) if j != i]
        agreement = sum(1 for f in others if form is not None and f == form) / max(len(others), 1)
        returns_none = tree is not None and any(
            isinstance(n, ast.Return) and isinstance(n.value, ast.Constant) and n.value.value is None for n in ast.walk(tree))
        rows.append([float(tree is not None), float(form is not None), float(min(undefined_names(code), 3)),
                     float(tree is not None and _endless_loop(tree)), agreement,
                     abs(sizes[i] - median) / median if tree is not None else 1.0, float(returns_none),
                     float(form is not None and form in failed_forms), float(round_index)])
    return np.asarray(rows, dtype=np.float64)  # (C, F)
