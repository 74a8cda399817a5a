"""Layout metrics of the package: module count and size, hub edits per family, upward imports.

Measured from the source tree (no import of rsigym), so it runs on any checkout:

* ``modules``: Python files of the package (``core/``, ``envs/``, ``agents/``, ``graders/``;
  ``__init__.py`` counted), with the median and 90th percentile of their line counts;
* ``shared file names``: base names (other than ``__init__.py``/``__main__.py``) that more than one
  module of the package uses;
* ``edits to add a family``, per family folder ``envs/<family>/``: the files outside that folder
  that belong to the family or name it (package modules and ``pyproject.toml``). A module counts
  when it imports the family (``rsigym.envs.<family>...``, also inside functions), names it in a
  string (``"rsigym.envs.<family>..."``), or imports a module that already counts (not through a
  package ``__init__``, so ``import rsigym.agents`` does not drag every user of the agents in).
  ``pyproject.toml`` counts when it names the family's package. Adding a family means creating or
  editing each of these files;
* ``upward imports from core/``: import statements in ``core/`` (module level or inside
  functions) of ``rsigym.envs``, ``rsigym.agents`` or ``rsigym.graders``, plus string literals that
  name those packages as modules to import (e.g. a list handed to ``importlib.import_module``).

Run: ``python benchmarks/layout_metrics.py [--root PATH] [--json]``.
"""

from __future__ import annotations

import argparse
import ast
import json
import re
import statistics
from collections import Counter
from pathlib import Path

from rich.console import Console
from rich.table import Table

# folder of the source tree -> dotted package it installs as (pyproject's package-dir)
PACKAGE_DIRS = {"core": "rsigym", "envs": "rsigym.envs", "agents": "rsigym.agents", "graders": "rsigym.graders"}
UPWARD = ("rsigym.envs", "rsigym.agents", "rsigym.graders")
# File names that mean the same role in every family folder (envs/<family>/env.py is always the
# Gymnasium env, graders.py its graders, ...) and in every tool-use domain (tau2-bench's
# data_model.py + tools.py); a shared name outside these is a clash.
CONVENTIONAL_NAMES = frozenset({"env.py", "tasks.py", "agents.py", "policies.py", "graders.py", "analyses.py",
                                "conditions.py", "render.py", "data_model.py", "tools.py"})
# module-name prefixes that mark a module outside envs/<family>/ as the family's own (the layout
# before issue 15 kept EvoAlloc's agents as agents/evoalloc*.py and agents/allocat*.py)
FAMILY_ALIASES = {"evolution": ("evoalloc", "allocat")}


def _in_kernel(module: str) -> bool:
    return not any(module == d or module.startswith(d + ".") for d in UPWARD)
_UPWARD_STRING = re.compile(r"^rsigym\.(envs|agents|graders)(\.|:|$)")


def package_modules(root: Path) -> dict[str, Path]:
    """Dotted module name -> file, for every ``.py`` file of the package folders."""
    modules: dict[str, Path] = {}
    for folder, dotted in PACKAGE_DIRS.items():
        base = root / folder
        if not base.is_dir():
            continue
        for path in sorted(base.rglob("*.py")):
            parts = list(path.relative_to(base).with_suffix("").parts)
            if parts[-1] == "__init__":
                parts = parts[:-1]
            modules[".".join([dotted, *parts])] = path
    # a folder mapped below another (envs/ inside core/ never happens, but be exact)
    return modules


def _imports(path: Path, module: str) -> tuple[list[str], list[str], list[str]]:
    """Absolute names this module imports (anywhere in the file) and its string literals."""
    tree = ast.parse(path.read_text(encoding="utf-8"), filename=str(path))
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    names: list[str] = []
    statements: list[str] = []
    strings: list[str] = []
    # an entry-point group's name (``Registry("grader", "rsigym.graders")``) is not a module to import
    groups = {id(arg) for node in ast.walk(tree) if isinstance(node, ast.Call)
              and getattr(node.func, "id", getattr(node.func, "attr", "")) in ("Registry", "entry_points")
              for arg in [*node.args, *(k.value for k in node.keywords)]}
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            names.extend(alias.name for alias in node.names)
            statements.extend(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base_parts = package.split(".")
                base_parts = base_parts[: len(base_parts) - (node.level - 1)]
                base = ".".join(base_parts)
                target = f"{base}.{node.module}" if node.module else base
            else:
                target = node.module or ""
            names.append(target)
            statements.append(target)
            # ``from pkg import submodule`` imports the submodule too
            names.extend(f"{target}.{alias.name}" for alias in node.names)
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in groups:
            strings.append(node.value)
    return names, statements, strings


def _resolve(name: str, modules: dict[str, Path]) -> str | None:
    while name:
        if name in modules:
            return name
        name = name.rpartition(".")[0]
    return None


def measure(root: Path) -> dict[str, object]:
    modules = package_modules(root)
    lines = sorted(len(p.read_text(encoding="utf-8").splitlines()) for p in modules.values())
    parsed = {m: _imports(p, m) for m, p in modules.items()}
    edges = {m: {r for n in names if (r := _resolve(n, modules)) and r != m} for m, (names, _, _) in parsed.items()}

    names = Counter(p.name for p in modules.values() if p.name not in ("__init__.py", "__main__.py"))
    shared = sorted(n for n, c in names.items() if c > 1)
    shared_unconventional = sorted(n for n in shared if n not in CONVENTIONAL_NAMES)

    upward: list[str] = []
    for m, (_, statements, strings) in parsed.items():
        if not _in_kernel(m):
            continue
        rel = modules[m].relative_to(root)
        upward.extend(f"{rel}: import {n}" for n in statements if n.startswith(UPWARD))
        upward.extend(f"{rel}: string {s!r}" for s in sorted(set(strings)) if _UPWARD_STRING.match(s))

    pyproject = (root / "pyproject.toml").read_text(encoding="utf-8") if (root / "pyproject.toml").exists() else ""
    families = sorted(p.parent.name for p in (root / "envs").glob("*/__init__.py"))
    edits: dict[str, list[str]] = {}
    for family in families:
        inside = f"rsigym.envs.{family}"
        prefixes = (family, *FAMILY_ALIASES.get(family, ()))
        members = {m for m in modules if m == inside or m.startswith(inside + ".")}
        # modules of the family that live outside its folder: named for it, or importing it
        others = tuple(f"rsigym.envs.{f}" for f in families if f != family)
        # another family that builds on this one (data selection reuses the tool-use domains) is
        # not an edit needed to add this family
        foreign = {m for m in modules if m.startswith(others)}
        outside: set[str] = set()
        for m, path in modules.items():
            if m in members or m in foreign or path.name == "__init__.py":
                continue
            if path.stem.startswith(prefixes) and not _in_kernel(m):
                outside.add(m)
            elif not _in_kernel(m) and edges[m] & members:
                outside.add(m)
        family_modules = members | outside
        hubs: set[str] = set()
        for m in modules:
            if m in family_modules or m in foreign:
                continue
            strings = parsed[m][2]
            named = any(s == inside or s.startswith((inside + ".", inside + ":")) for s in strings)
            if named or edges[m] & family_modules:
                hubs.add(m)
        files = sorted(str(modules[m].relative_to(root)) for m in outside | hubs)
        if inside in pyproject or f"envs/{family}" in pyproject:
            files.append("pyproject.toml")
        edits[family] = files

    return {
        "modules": len(modules),
        "median_lines": statistics.median(lines),
        "p90_lines": lines[min(len(lines) - 1, int(round(0.9 * (len(lines) - 1))))],
        "max_lines": lines[-1],
        "shared_file_names": shared,
        "shared_file_names_outside_conventions": shared_unconventional,
        "edits_per_family": edits,
        "upward_imports": upward,
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--root", type=Path, default=Path(__file__).resolve().parents[1])
    parser.add_argument("--json", action="store_true", help="print the raw measurements as JSON")
    args = parser.parse_args()
    result = measure(args.root)
    if args.json:
        print(json.dumps(result, indent=2))
        return
    console = Console()
    edits = result["edits_per_family"]
    assert isinstance(edits, dict)
    counts = [len(v) for v in edits.values()]
    table = Table(title=f"layout of {args.root}")
    table.add_column("metric")
    table.add_column("value", justify="right")
    table.add_row("modules", str(result["modules"]))
    table.add_row("median lines per module", f"{result['median_lines']:.0f}")
    table.add_row("p90 lines per module", str(result["p90_lines"]))
    table.add_row("largest module (lines)", str(result["max_lines"]))
    table.add_row("file names shared by 2+ modules", str(len(result["shared_file_names"])))  # type: ignore[arg-type]
    table.add_row("  of which outside the family/domain conventions",
                  str(len(result["shared_file_names_outside_conventions"])))  # type: ignore[arg-type]
    table.add_row("files outside envs/<family>/ per family (median)", f"{statistics.median(counts):.0f}" if counts else "-")
    table.add_row("upward imports from core/", str(len(result["upward_imports"])))  # type: ignore[arg-type]
    console.print(table)
    detail = Table(title="files outside the family folder")
    detail.add_column("family")
    detail.add_column("n", justify="right")
    detail.add_column("files")
    for family, files in edits.items():
        detail.add_row(family, str(len(files)), ", ".join(files))
    console.print(detail)
    if result["shared_file_names"]:
        console.print("shared file names: " + ", ".join(result["shared_file_names"]))  # type: ignore[arg-type]
    for line in result["upward_imports"]:  # type: ignore[attr-defined]
        console.print("upward: " + line)


if __name__ == "__main__":
    main()
