"""Features of a candidate program: static ones (AST), and the cheap sandbox checks (``checks``).

Computed from what the agent sees (the round's candidates, the checks' results shown in the
observation, and its own history of executed programs); nothing here reads the simulator's labels.
The check features: ``loads``; the share of public inputs on which the candidate raises or times
out; ``output_agreement`` (share of the other candidates whose outputs on every public input are
identical: agreeing programs are likelier right, unless the coder repeats one wrong program);
``type_agreement`` (same for the return types); ``boundary_raise`` (share of boundary inputs that
raise); ``output_cluster`` (size of the largest group of candidates with identical outputs, over C).
"""

from __future__ import annotations

import ast
from typing import Any, Sequence

import numpy as np

from .mutation import canonical_form, undefined_names

__all__ = ["FEATURE_NAMES", "candidate_features", "check_features"]

FEATURE_NAMES = ("parses", "defines_entry", "undefined_names", "endless_loop", "agreement",
                 "size_deviation", "returns_none", "known_failure", "round",
                 "loads", "public_raise", "public_timeout", "output_agreement", "type_agreement",
                 "boundary_raise", "output_cluster")


def _endless_loop(tree: ast.AST) -> bool:
    for node in ast.walk(tree):
        if isinstance(node, ast.While) and isinstance(node.test, ast.Constant) and node.test.value:
            if not any(isinstance(n, (ast.Break, ast.Return)) for n in ast.walk(node)):
                return True
    return False


def _share(values: Sequence[str], wanted: str) -> float:
    return sum(v == wanted for v in values) / len(values) if values else 0.0


def check_features(checks: Sequence[dict[str, Any]] | None, n: int) -> np.ndarray:
    """``(n, 7)`` check features (see the module docstring); neutral zeros without checks."""
    if not checks:
        return np.zeros((n, 7))
    signatures = [tuple(c.get("outputs") or []) if c.get("loads") and all(o is not None for o in c.get("outputs") or [None])
                  else None for c in checks]
    kinds = [tuple(c.get("types") or []) if c.get("loads") else None for c in checks]
    rows = []
    for i, check in enumerate(checks):
        others = [j for j in range(n) if j != i]
        same_out = sum(1 for j in others if signatures[i] is not None and signatures[j] == signatures[i])
        same_type = sum(1 for j in others if kinds[i] is not None and kinds[j] == kinds[i])
        cluster = (same_out + 1) / n if signatures[i] is not None else 0.0
        public = list(check.get("public") or [])
        rows.append([float(bool(check.get("loads"))), _share(public, "raise"), _share(public, "timeout"),
                     same_out / max(len(others), 1), same_type / max(len(others), 1),
                     _share(list(check.get("boundary") or []), "raise"), cluster])
    return np.asarray(rows, dtype=np.float64)  # (n, 7)


def candidate_features(codes: Sequence[str], entry: str, round_index: int,
                       failed_forms: set[str] | frozenset[str] = frozenset(),
                       checks: Sequence[dict[str, Any]] | None = None) -> np.ndarray:
    """``(len(codes), len(FEATURE_NAMES))`` features of one round's candidates.

    ``agreement``: share of the other candidates with the same canonical form (locals renamed,
    docstring dropped); ``known_failure``: the canonical form was executed before and failed;
    ``checks``: the sandbox checks of ``checks.run_checks`` (None: the check features are zeros).
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
    static = np.asarray(rows, dtype=np.float64)  # (C, 9)
    return np.concatenate([static, check_features(checks, len(codes))], axis=1)  # (C, F)
