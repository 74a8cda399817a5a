"""The kernel (core/, installed as ``rsigym``) imports nothing above it.

Every name a scenario uses resolves through ``rsigym.registry``; an import of ``rsigym.envs``,
``rsigym.agents`` or ``rsigym.graders`` anywhere in core/ (module level, inside a function, or
as a string handed to importlib) would make the kernel depend on the families again.
"""

from __future__ import annotations

import ast
import subprocess
import sys
from pathlib import Path

import pytest

CORE = Path(__file__).resolve().parents[2] / "core"
ABOVE = ("rsigym.envs", "rsigym.agents", "rsigym.graders")


def _module_name(path: Path) -> str:
    parts = list(path.relative_to(CORE).with_suffix("").parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(["rsigym", *parts])


def upward_imports(path: Path) -> list[str]:
    """``file:line target`` for each import of a package above the kernel in ``path``."""
    module = _module_name(path)
    package = module if path.name == "__init__.py" else module.rpartition(".")[0]
    found = []
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"), filename=str(path))):
        targets: list[str] = []
        if isinstance(node, ast.Import):
            targets = [alias.name for alias in node.names]
        elif isinstance(node, ast.ImportFrom):
            if node.level:
                base = package.split(".")[: len(package.split(".")) - (node.level - 1)]
                target = ".".join(base + ([node.module] if node.module else []))
            else:
                target = node.module or ""
            targets = [target] + [f"{target}.{alias.name}" for alias in node.names]
        elif isinstance(node, ast.Call) and getattr(node.func, "attr", getattr(node.func, "id", "")) in (
                "import_module", "__import__"):
            targets = [a.value for a in node.args if isinstance(a, ast.Constant) and isinstance(a.value, str)]
        found += [f"{path.relative_to(CORE.parent)}:{node.lineno} {t}"  # type: ignore[attr-defined]
                  for t in targets if any(t == a or t.startswith(a + ".") for a in ABOVE)]
    return found


def test_no_module_of_the_kernel_imports_envs_agents_or_graders():
    files = sorted(CORE.rglob("*.py"))
    assert len(files) > 20
    offences = [line for path in files for line in upward_imports(path)]
    assert offences == []


def test_the_check_catches_each_form_of_upward_import(tmp_path, monkeypatch):
    # the attack: each way the kernel used to reach upward, in a file the check must flag
    fake_core = tmp_path / "core"
    (fake_core / "runner").mkdir(parents=True)
    (fake_core / "runner" / "episode.py").write_text(
        "def f():\n    import rsigym.envs  # noqa\n    from rsigym.agents import make_agent\n"
        "    from ..graders import get_grader\n"
        "import importlib\nimportlib.import_module('rsigym.envs.hpo.analyses')\n"
        "from rsigym import graders\nfrom rsigym import grader\n")
    monkeypatch.setattr(sys.modules[__name__], "CORE", fake_core)
    found = upward_imports(fake_core / "runner" / "episode.py")
    assert sorted(f.split(" ")[1] for f in found) == sorted([
        "rsigym.envs", "rsigym.agents", "rsigym.agents.make_agent", "rsigym.graders",
        "rsigym.graders.get_grader", "rsigym.envs.hpo.analyses", "rsigym.graders"])


@pytest.mark.parametrize("module", ["rsigym.cli.commands", "rsigym.runner", "rsigym.scenario.spec", "rsigym.report.report",
                                    "rsigym.registry", "rsigym.grader", "rsigym.agent", "rsigym.regrade"])
def test_importing_the_kernel_loads_no_family(module):
    code = (f"import sys, {module}\n"
            "bad = sorted(m for m in sys.modules if m.startswith(('rsigym.envs', 'rsigym.agents', 'rsigym.graders')))\n"
            "print(bad)\nsys.exit(1 if bad else 0)")
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0, result.stdout + result.stderr
