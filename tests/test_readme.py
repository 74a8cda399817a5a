"""The README's Python snippets run as the scripts a user would paste them into.

Each ```python block carries a marker on the line above it: ``<!-- readme-test: run -->`` (run it
as a script, in a fresh folder, with a subprocess: the way ``workers=2`` spawns and re-imports it)
or ``<!-- readme-test: fragment (why) -->`` (a fragment that needs data from elsewhere). A block
without a marker fails the test, so a new snippet cannot be skipped silently.
"""

import re
import subprocess
import sys

import pytest

from .conftest import REPO

_BLOCK = re.compile(r"(?:<!-- readme-test: (\w+)[^>]*-->\n)?```python\n(.*?)```", re.S)


def _blocks():
    return [(m.group(1), m.group(2), (REPO / "README.md").read_text()[:m.start()].count("\n") + 1)
            for m in _BLOCK.finditer((REPO / "README.md").read_text())]


def test_every_python_block_is_marked():
    blocks = _blocks()
    assert [line for marker, _, line in blocks if marker not in ("run", "fragment")] == []
    assert sum(marker == "run" for marker, _, _ in blocks) >= 3


@pytest.mark.parametrize("line", [line for marker, _, line in _blocks() if marker == "run"])
def test_runnable_snippet_runs_as_a_script(tmp_path, line):
    code = next(code for _, code, at in _blocks() if at == line)
    script = tmp_path / "snippet.py"
    script.write_text(code)
    proc = subprocess.run([sys.executable, str(script)], cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, f"README line {line}:\n{proc.stderr[-3000:]}"
    assert "Traceback" not in proc.stderr
    if "run_scenario" in code:  # the runner snippet: every episode ran, none as an infra error
        ran, infra_errors, regraded = map(int, proc.stdout.split()[-3:])
        assert ran == regraded > 0 and infra_errors == 0, proc.stdout
