"""mypy over the whole package, laid out as it is installed (core/ as rsigym, envs/ as rsigym.envs...)."""

import subprocess
import sys
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[2]


@pytest.mark.slow
def test_mypy_passes_on_the_package(tmp_path):
    pytest.importorskip("mypy")
    # An editable install is invisible to mypy, so mirror the installed layout with symlinks.
    package = tmp_path / "rsigym"
    package.mkdir()
    for item in (REPO / "core").iterdir():
        if item.name != "__pycache__":
            (package / item.name).symlink_to(item)
    for folder in ("envs", "agents", "graders", "scenarios"):
        (package / folder).symlink_to(REPO / folder)
    result = subprocess.run(
        [sys.executable, "-m", "mypy", "--config-file", str(REPO / "pyproject.toml"),
         "--cache-dir", str(tmp_path / ".mypy_cache"), "-p", "rsigym"],
        cwd=tmp_path, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stdout[-3000:]
