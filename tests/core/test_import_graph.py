"""The import graph of the installed package has no circles (that the kernel imports no family is
``test_kernel_imports``), and the kernel is a tree of sub-packages by concern, not a flat bag.

Every ``import`` and ``from ... import`` of every module under ``rsigym`` counts, inside functions
too (a lazy import is still a dependency, only a deferred one); only ``if TYPE_CHECKING:`` blocks
are left out (they never run). A circle means two modules that cannot be understood, tested or
moved apart: the fix is a module that owns the shared piece (``report_parts``, ``litellm_setup``,
``evolution.task_base``, ...).
"""

from __future__ import annotations

import ast
import importlib.util
from pathlib import Path

import pytest

PACKAGES = ("rsigym", "rsigym.envs", "rsigym.agents", "rsigym.graders", "rsigym.scenarios")


def _package_dir(name: str) -> Path:
    spec = importlib.util.find_spec(name)
    assert spec is not None and spec.submodule_search_locations, f"{name} is not an installed package"
    return Path(next(iter(spec.submodule_search_locations)))


def _modules() -> dict[str, Path]:
    """Every module of the package by dotted name (a family folder is mapped apart from the kernel's)."""
    roots = {name: _package_dir(name) for name in PACKAGES}
    found: dict[str, Path] = {}
    for package, folder in roots.items():
        for path in folder.rglob("*.py"):
            parts = list(path.relative_to(folder).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            found[".".join([package, *parts])] = path
    return found


class _Imports(ast.NodeVisitor):
    def __init__(self, module: str, is_package: bool, known: dict[str, Path], module_level: bool = False) -> None:
        self.module, self.is_package, self.known = module, is_package, known
        self.module_level = module_level  # True: the imports that run when the module is imported
        self.targets: set[str] = set()

    def visit_FunctionDef(self, node: ast.FunctionDef | ast.AsyncFunctionDef) -> None:
        if not self.module_level:
            self.generic_visit(node)

    visit_AsyncFunctionDef = visit_FunctionDef

    def visit_If(self, node: ast.If) -> None:
        test = node.test
        if (isinstance(test, ast.Name) and test.id == "TYPE_CHECKING") or (
                isinstance(test, ast.Attribute) and test.attr == "TYPE_CHECKING"):
            for child in node.orelse:
                self.visit(child)
            return
        self.generic_visit(node)

    def visit_Import(self, node: ast.Import) -> None:
        for alias in node.names:
            self._add(alias.name)

    def visit_ImportFrom(self, node: ast.ImportFrom) -> None:
        base = node.module or ""
        if node.level:
            parts = self.module.split(".") if self.is_package else self.module.split(".")[:-1]
            parts = parts[:len(parts) - (node.level - 1)]
            base = ".".join(parts + ([base] if base else []))
        for alias in node.names:
            full = f"{base}.{alias.name}"
            self._add(full if full in self.known else base)

    def _add(self, name: str) -> None:
        while name and name not in self.known:
            name = name.rpartition(".")[0]
        if name and name != self.module:
            self.targets.add(name)


def _graph(module_level: bool = False) -> dict[str, set[str]]:
    known = _modules()
    graph = {}
    for module, path in known.items():
        visitor = _Imports(module, path.name == "__init__.py", known, module_level)
        visitor.visit(ast.parse(path.read_text(encoding="utf-8"), str(path)))
        graph[module] = visitor.targets
    return graph


def strongly_connected(graph: dict[str, set[str]]) -> list[list[str]]:
    """Tarjan's strongly connected components with more than one module (iterative: no recursion limit)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    circles: list[list[str]] = []
    counter = 0
    for root in sorted(graph):
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter
        counter += 1
        stack.append(root)
        on_stack.add(root)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = counter
                    counter += 1
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph.get(child, ())))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    circles.append(sorted(component))
    return circles


@pytest.fixture(scope="module")
def graph() -> dict[str, set[str]]:
    return _graph()


def test_the_walk_sees_the_whole_package(graph):
    assert len(graph) > 250 and "rsigym.records.trajectory" in graph and "rsigym.envs.coderepair.agents" in graph
    assert "rsigym.records.trajectory" in graph["rsigym.report.report"]  # an edge the walk must find


def test_the_finder_reports_a_circle_it_is_given():
    assert strongly_connected({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert strongly_connected({"a": {"b"}, "b": set()}) == []


def test_no_module_of_the_package_is_in_an_import_circle(graph):
    circles = strongly_connected(graph)
    assert not circles, "import circles (each needs a module that owns the shared piece):\n" + "\n".join(
        " <-> ".join(c) for c in circles)



KERNEL_DIR = _package_dir("rsigym")
FAMILIES = ("rsigym.envs", "rsigym.agents", "rsigym.graders", "rsigym.scenarios")
MAX_FLAT_MODULES = 15


def kernel_part(module: str) -> str | None:
    """The kernel sub-package (or flat module) a module belongs to; None outside the kernel."""
    if module.startswith(tuple(f + "." for f in FAMILIES)) or module in FAMILIES:
        return None
    parts = module.split(".")
    return "rsigym" if len(parts) == 1 else parts[1]


def package_graph(graph: dict[str, set[str]]) -> dict[str, set[str]]:
    """The module graph collapsed onto the kernel's sub-packages and flat modules."""
    collapsed: dict[str, set[str]] = {}
    for module, targets in graph.items():
        part = kernel_part(module)
        if part is None or part == "rsigym":  # the root package re-exports lazily, from every part
            continue
        collapsed.setdefault(part, set()).update(
            t for t in map(kernel_part, targets) if t is not None and t not in (part, "rsigym"))
    return collapsed


def test_the_kernel_keeps_at_most_15_flat_modules():
    flat = sorted(p.name for p in KERNEL_DIR.glob("*.py"))
    packages = sorted(p.parent.name for p in KERNEL_DIR.glob("*/__init__.py"))
    print(f"kernel: {len(flat)} flat modules ({', '.join(flat)}); sub-packages: {', '.join(packages)}")
    assert len(flat) <= MAX_FLAT_MODULES, flat
    for name in packages:  # each says what it owns and what it may import
        doc = ast.get_docstring(ast.parse((KERNEL_DIR / name / "__init__.py").read_text(encoding="utf-8")))
        assert doc and "import" in doc, f"rsigym.{name}/__init__.py needs a docstring: what it owns, what it may import"


def test_the_kernel_sub_packages_import_one_another_without_a_circle():
    """At import time (functions left out: a command imports what it runs), the sub-packages form
    layers: records below llm, report and scenario; the runner above them; the CLI on top."""
    layers = package_graph(_graph(module_level=True))
    print("kernel layers at import time:")
    for part in sorted(layers):
        print(f"  {part} -> {', '.join(sorted(layers[part])) or '-'}")
    circles = strongly_connected(layers)
    assert not circles, "sub-packages in a circle at import time:\n" + "\n".join(" <-> ".join(c) for c in circles)
    assert layers["records"] <= {"errors"}, layers["records"]
    assert "cli" not in set().union(*(t for p, t in layers.items() if p not in ("cli", "__main__")))


def test_the_layer_check_sees_a_circle_between_sub_packages():
    graph = {"rsigym.report.report": {"rsigym.viewer.pairs"}, "rsigym.viewer.pairs": {"rsigym.report.report"},
             "rsigym.envs.hpo.env": {"rsigym.report.report"}}
    assert package_graph(graph) == {"report": {"viewer"}, "viewer": {"report"}}
    assert strongly_connected(package_graph(graph)) == [["report", "viewer"]]
