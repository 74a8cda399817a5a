"""Single-site AST mutation operators, crash bugs and correct rewrites of a reference solution.

Operators (the classic mutation-testing set): ``comparison`` (< <= > >= == != swapped),
``arithmetic`` (+ - * // % swapped), ``boundary`` (an integer constant moved by one),
``constant`` (a number or string constant replaced), ``statement_deletion`` (one statement of a
function body removed), ``return_value`` (a returned expression replaced) and ``edge_guard`` (an
empty or zero argument answered early with a wrong default: the missed edge case). Crash bugs raise or
hang: an undefined name, a ``None`` subscript, a division by zero, an endless loop, a syntax error.
A correct rewrite renames local variables and re-prints the code (the AST, hence the behaviour,
is unchanged).
"""

from __future__ import annotations

import ast
import builtins
import copy
import re
import numpy as np

__all__ = ["OPERATORS", "CRASHES", "mutate", "crash", "rewrite", "canonical_form", "undefined_names"]

_CMP_SWAP: dict[type, type] = {ast.Lt: ast.LtE, ast.LtE: ast.Lt, ast.Gt: ast.GtE, ast.GtE: ast.Gt,
                               ast.Eq: ast.NotEq, ast.NotEq: ast.Eq}
_ARITH_SWAP: dict[type, type] = {ast.Add: ast.Sub, ast.Sub: ast.Add, ast.Mult: ast.FloorDiv,
                                 ast.FloorDiv: ast.Mult, ast.Mod: ast.FloorDiv, ast.Div: ast.Mult}


def _function(tree: ast.Module, entry: str) -> ast.FunctionDef:
    for node in tree.body:
        if isinstance(node, ast.FunctionDef) and node.name == entry:
            return node
    raise ValueError(f"no function {entry!r} in the program")


def _sites(fn: ast.FunctionDef, operator: str) -> list[ast.AST]:
    nodes = [n for stmt in fn.body[_docstring_offset(fn):] for n in ast.walk(stmt)]
    if operator == "comparison":
        return [n for n in nodes if isinstance(n, ast.Compare) and type(n.ops[0]) in _CMP_SWAP]
    if operator == "arithmetic":
        return [n for n in nodes if isinstance(n, (ast.BinOp, ast.AugAssign)) and type(n.op) in _ARITH_SWAP]
    if operator == "boundary":
        return [n for n in nodes if isinstance(n, ast.Constant) and type(n.value) is int]
    if operator == "constant":
        return [n for n in nodes if isinstance(n, ast.Constant) and type(n.value) in (int, float, str)]
    if operator == "statement_deletion":
        return [n for n in nodes if isinstance(n, (ast.Assign, ast.AugAssign, ast.Expr, ast.If, ast.For, ast.While))]
    if operator == "return_value":
        return [n for n in nodes if isinstance(n, ast.Return) and n.value is not None]
    if operator == "edge_guard":
        return [fn] if fn.args.args else []
    raise ValueError(f"unknown mutation operator {operator!r}")


def _docstring_offset(fn: ast.FunctionDef) -> int:
    first = fn.body[0] if fn.body else None
    return int(isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant) and isinstance(first.value.value, str))


def _apply(site: ast.AST, operator: str, rng: np.random.Generator, parents: dict[int, ast.AST]) -> None:
    if operator == "comparison":
        assert isinstance(site, ast.Compare)
        site.ops[0] = _CMP_SWAP[type(site.ops[0])]()
    elif operator == "arithmetic":
        assert isinstance(site, (ast.BinOp, ast.AugAssign))
        site.op = _ARITH_SWAP[type(site.op)]()
    elif operator == "boundary":
        assert isinstance(site, ast.Constant)
        assert isinstance(site.value, int)
        site.value = site.value + int(rng.choice([-1, 1]))
    elif operator == "constant":
        assert isinstance(site, ast.Constant)
        value = site.value
        if isinstance(value, str):
            site.value = "" if value else "x"
        elif isinstance(value, int):
            site.value = 0 if value else 1
        elif isinstance(value, float):
            site.value = value * 2 + 1.0
    elif operator == "statement_deletion":
        parent = parents[id(site)]
        for name in ("body", "orelse"):
            block = getattr(parent, name, None)
            if isinstance(block, list) and site in block:
                block.remove(site)
                if not block:
                    block.append(ast.Pass())
    elif operator == "edge_guard":
        assert isinstance(site, ast.FunctionDef)
        param = site.args.args[int(rng.integers(len(site.args.args)))].arg
        default = ["None", "0", "[]", "''", "False"][int(rng.integers(5))]
        site.body.insert(_docstring_offset(site), ast.parse(f"if not {param}:\n    return {default}").body[0])
    elif operator == "return_value":
        assert isinstance(site, ast.Return) and site.value is not None
        site.value = ast.UnaryOp(ast.Not(), site.value) if rng.random() < 0.5 else ast.Constant(None)


def mutate(source: str, entry: str, operator: str, rng: np.random.Generator) -> str | None:
    """``source`` with one ``operator`` mutation at a random site of ``entry``; None without a site."""
    tree = ast.parse(source)
    sites = _sites(_function(tree, entry), operator)
    if not sites:
        return None
    parents = {id(child): node for node in ast.walk(tree) for child in ast.iter_child_nodes(node)}
    _apply(sites[int(rng.integers(len(sites)))], operator, rng, parents)
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def _crash_statement(kind: str) -> str:
    return {"name_error": "_unused = helper_value + 1", "none_subscript": "_unused = None[0]",
            "zero_division": "_unused = 1 // 0", "endless_loop": "while True:\n    pass"}[kind]


def crash(source: str, entry: str, kind: str, rng: np.random.Generator) -> str:
    """``source`` with a crash bug of ``kind`` (see ``CRASHES``) inserted in ``entry``'s body."""
    if kind == "syntax_error":  # a malformed answer: the colon of the def line lost
        text = ast.unparse(ast.parse(source))
        return re.sub(rf"(def {re.escape(entry)}\(.*\)(?: -> .*)?):", r"\1", text, count=1) + "\n"
    tree = ast.parse(source)
    fn = _function(tree, entry)
    at = _docstring_offset(fn)  # first: a crash placed after a return would never run
    fn.body[at:at] = ast.parse(_crash_statement(kind)).body
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


OPERATORS = ("comparison", "arithmetic", "boundary", "constant", "statement_deletion", "return_value", "edge_guard")
CRASHES = ("name_error", "none_subscript", "zero_division", "endless_loop", "syntax_error")


class _Renamer(ast.NodeTransformer):
    def __init__(self, mapping: dict[str, str]) -> None:
        self.mapping = mapping

    def visit_Name(self, node: ast.Name) -> ast.Name:
        node.id = self.mapping.get(node.id, node.id)
        return node

    def visit_arg(self, node: ast.arg) -> ast.arg:
        node.arg = self.mapping.get(node.arg, node.arg)
        return node


def _local_names(fn: ast.FunctionDef) -> list[str]:
    """Names assigned inside ``fn`` (not its parameters, which callers may pass by keyword)."""
    params = {a.arg for a in fn.args.args + fn.args.kwonlyargs}
    stored = {n.id for n in ast.walk(fn) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Store)}
    return sorted(stored - params - set(dir(builtins)))


def rewrite(source: str, entry: str, rng: np.random.Generator, style: str = "rename") -> str:
    """A behaviour-preserving rewrite: local variables renamed (``style="rename"``), or renamed and
    with the docstring dropped and a guard-free temporary result variable (``style="restyle"``)."""
    tree = ast.parse(source)
    fn = _function(tree, entry)
    names = _local_names(fn)
    stems = ["val", "item", "tmp", "acc", "cur", "res", "elem", "part"]
    mapping = {name: f"{stems[int(rng.integers(len(stems)))]}_{i}" for i, name in enumerate(names)}
    _Renamer(mapping).visit(fn)
    if style == "restyle" and _docstring_offset(fn):
        fn.body = fn.body[1:] or [ast.Pass()]
    return ast.unparse(ast.fix_missing_locations(tree)) + "\n"


def canonical_form(source: str, entry: str) -> str | None:
    """The program with docstrings dropped and locals renamed in order of appearance (None: no parse)."""
    try:
        tree = ast.parse(source)
        fn = _function(tree, entry)
    except (SyntaxError, ValueError):
        return None
    tree = copy.deepcopy(tree)
    fn = _function(tree, entry)
    if _docstring_offset(fn):
        fn.body = fn.body[1:] or [ast.Pass()]
    order: list[str] = []
    for node in ast.walk(fn):
        if isinstance(node, ast.Name) and isinstance(node.ctx, ast.Store) and node.id not in order:
            order.append(node.id)
    params = {a.arg for a in fn.args.args}
    _Renamer({name: f"v{i}" for i, name in enumerate(n for n in order if n not in params)}).visit(fn)
    return ast.dump(fn)


def undefined_names(source: str) -> int:
    """How many names are read but never bound anywhere in the module nor builtins (a cheap check)."""
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return 0
    bound = set(dir(builtins))
    for node in ast.walk(tree):
        if isinstance(node, ast.Name) and not isinstance(node.ctx, ast.Load):
            bound.add(node.id)
        elif isinstance(node, (ast.FunctionDef, ast.ClassDef)):
            bound.add(node.name)
        elif isinstance(node, ast.arg):
            bound.add(node.arg)
        elif isinstance(node, (ast.Import, ast.ImportFrom)):
            bound.update((a.asname or a.name).split(".")[0] for a in node.names)
        elif isinstance(node, ast.ExceptHandler) and node.name:
            bound.add(node.name)
    return sum(1 for n in ast.walk(tree) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load) and n.id not in bound)

