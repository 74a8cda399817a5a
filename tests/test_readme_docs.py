"""The Python snippets of the README and of the docs pages (``docs/**/*.md``) run as the scripts a
user would paste them into, and the commands of "Look at a run" run as written.

Each ```python block carries a marker on the line above it: ``<!-- readme-test: run -->`` (run it
as a script, in a fresh folder, with a subprocess: the way ``workers=2`` spawns and re-imports it)
or ``<!-- readme-test: fragment (why) -->`` (a fragment that needs data from elsewhere). A block
without a marker fails the test, so a new snippet cannot be skipped silently; so does an import
in any block (fragments included) of a name that rsigym no longer has.
"""

from __future__ import annotations

import ast
import importlib
import re
import subprocess
import sys

import pytest

from .conftest import REPO

_BLOCK = re.compile(r"(?:<!-- readme-test: (\w+)[^>]*-->\n)?```python\n(.*?)```", re.S)
PAGES = ["README.md", *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs").rglob("*.md"))]


def _blocks() -> list[tuple[str, int, str | None, str]]:
    """(page, line, marker, code) of every ```python block of the README and the docs pages."""
    out = []
    for page in PAGES:
        text = (REPO / page).read_text()
        out += [(page, text[:m.start()].count("\n") + 1, m.group(1), m.group(2)) for m in _BLOCK.finditer(text)]
    return out


def test_every_python_block_is_marked():
    blocks = _blocks()
    assert [f"{page}:{line}" for page, line, marker, _ in blocks if marker not in ("run", "fragment")] == []
    assert sum(marker == "run" for _, _, marker, _ in blocks) >= 6
    assert {page for page, _, marker, _ in blocks if marker == "run"} >= {
        "docs/guides/python.md", "docs/guides/providers.md", "docs/guides/grader.md", "docs/guides/family.md"}


@pytest.mark.parametrize("page, line", [(page, line) for page, line, marker, _ in _blocks() if marker == "run"],
                         ids=lambda v: str(v))
def test_runnable_snippet_runs_as_a_script(tmp_path, page, line):
    code = next(code for p, at, _, code in _blocks() if (p, at) == (page, line))
    script = tmp_path / "snippet.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"{page} line {line}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    if "run_scenario" in code:  # the runner snippets: every episode ran, none as an infra error
        ran, infra_errors, regraded = map(int, proc.stdout.split()[-3:])
        assert ran == regraded > 0 and infra_errors == 0, proc.stdout


def _imports(code: str) -> list[tuple[str, str | None]]:
    """(module, name or None) of each rsigym import statement of a snippet."""
    out: list[tuple[str, str | None]] = []
    for node in ast.walk(ast.parse(code)):
        if isinstance(node, ast.Import):
            out += [(alias.name, None) for alias in node.names if alias.name.split(".")[0] == "rsigym"]
        elif isinstance(node, ast.ImportFrom) and node.module and node.module.split(".")[0] == "rsigym":
            out += [(node.module, alias.name) for alias in node.names]
    return out


def test_every_rsigym_import_of_a_snippet_resolves():
    """The public import paths the pages show (fragments too, which no test runs) keep working."""
    broken = []
    for page, line, _, code in _blocks():
        for module, name in _imports(code):
            try:
                imported = importlib.import_module(module)
                if name is not None and not hasattr(imported, name):
                    importlib.import_module(f"{module}.{name}")  # a submodule
            except ImportError as exc:
                broken.append(f"{page}:{line}: {module} {name or ''}: {exc}")
    assert broken == []
    assert len([1 for *_, code in _blocks() for _ in _imports(code)]) >= 20


def test_every_api_page_names_a_module_or_object_that_exists():
    """The ``::: path`` lines the API pages are generated from (mkdocstrings) name what rsigym has."""
    targets = [line[4:].strip() for page in (REPO / "docs" / "api").glob("*.md")
               for line in page.read_text().splitlines() if line.startswith("::: ")]
    assert len(targets) >= 8
    for target in targets:
        module, _, attr = target.partition(":")
        imported = importlib.import_module(module)
        assert not attr or hasattr(imported, attr), target


def _look_at_a_run_commands() -> list[str]:
    text = (REPO / "docs" / "guides" / "viewer.md").read_text()
    block = re.search(r"```bash\n(.*?)```", text, re.S).group(1)
    return [line.split("  #")[0].strip() for line in block.splitlines() if line.strip().startswith("rsigym ")]


def test_the_look_at_a_run_commands_all_run(tmp_path, monkeypatch, capsys):
    """Each command of "Look at a run" (docs/guides/viewer.md), as written, in a folder holding
    runs/trace_quickstart (one task of it). The trace_llm command runs against the fake provider
    (--api-base; one task): its --cost-limit and --episode-timeout with the default 16 episodes in
    flight are what is checked. The commands go through the CLI's entry point in this process (the
    words after ``rsigym`` are its argv): a process of its own costs 2-5 CPU-seconds of imports each
    and checks nothing more here (the console script and fresh-process runs are tests/core/test_cli_contract.py's)."""
    sys.path.insert(0, str(REPO / "benchmarks"))
    from fake_provider import FakeProvider

    from rsigym.cli import main

    commands = _look_at_a_run_commands()
    assert [c.split()[1] for c in commands] == ["view", "export", "run"]
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")

    def run(args: list[str]) -> tuple[str, str]:
        status = main(args)
        out, err = capsys.readouterr()
        assert status == 0, f"rsigym {' '.join(args)}:\n{out[-2000:]}\n{err[-3000:]}"
        assert "Traceback" not in err
        return out, err

    run(["run", "trace_quickstart", "--limit", "1", "--workers", "0", "--no-progress"])
    with FakeProvider(latency_s=0.02) as provider:
        for command in commands:
            args = command.split()[1:]
            if args[0] == "run":
                args += ["--api-base", provider.api_base, "--limit", "1", "--workers", "1", "--no-progress"]
            out, err = run(args)
    assert (tmp_path / "runs" / "trace_quickstart" / "view.html").exists()
    assert list((tmp_path / "runs" / "trace_quickstart").glob("*.parquet"))
    assert "endpoint check: 1 endpoint answered" in err and "0 infra errors" in out
