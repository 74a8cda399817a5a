"""mkdocs hook: lay out the package as it is installed, for the API pages.

The source folders are not named after the packages they hold (``core/`` is ``rsigym``, ``envs/``
is ``rsigym.envs``: see ``package-dir`` in ``pyproject.toml``), and griffe, which reads the code
for mkdocstrings, finds a package by its folder's name. So before the build this hook mirrors the
installed layout in ``.cache/docs-api/rsigym`` with symbolic links into the source folders, read
from ``package-dir`` itself, and points the Python handler there. Nothing is imported: the API
pages are read from the source, as it is in the working tree.
"""

from __future__ import annotations

import shutil
import tomllib
from pathlib import Path
from typing import Any

from mkdocs.plugins import event_priority

ROOT = Path(__file__).resolve().parents[1]
TREE = ROOT / ".cache" / "docs-api"


def build_tree(root: Path = ROOT, tree: Path = TREE) -> Path:
    """Mirror the installed package layout under ``tree`` with symlinks; return the search path."""
    package_dir: dict[str, str] = tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["package-dir"]
    top = [name for name in package_dir if "." not in name]
    if tree.exists():
        shutil.rmtree(tree)
    for name in top:
        (tree / name).mkdir(parents=True)
        for child in sorted((root / package_dir[name]).iterdir()):
            if child.name != "__pycache__":
                (tree / name / child.name).symlink_to(child)
    for name, folder in sorted(package_dir.items()):
        if "." in name:
            target = tree.joinpath(*name.split("."))
            if target.is_symlink() or target.exists():
                raise ValueError(f"{name}: the folder {package_dir[name.rsplit('.', 1)[0]]} already has {target.name}")
            target.symlink_to(root / folder)
    return tree


@event_priority(100)  # before mkdocstrings reads its handlers' options
def on_config(config: Any) -> Any:
    path = str(build_tree())
    python = config["plugins"]["mkdocstrings"].config["handlers"].setdefault("python", {})
    python["paths"] = [path]
    return config
