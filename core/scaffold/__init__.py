"""``rsigym new family NAME``: write a working skeleton of an env family as its own package.

The skeleton (``core/scaffold/family/*.tmpl``, ``__NAME__`` replaced) is a small but complete
family: an env with tasks, splits, an action schema and example actions, a condition that serves
as the control, a scripted agent, a grader that reads only the record, an analysis with its
control and unit of inference, a scenario, and tests that call ``rsigym.testing.check_family``.
Installed (``pip install -e NAME``), it passes ``check_family`` and ``rsigym run`` as written;
``tests/test_family_kit.py`` checks both.

It may import ``rsigym.errors`` only (the templates import what a family needs).
"""

from __future__ import annotations

import keyword
import re
from importlib.resources import files
from pathlib import Path

from ..errors import UserError

__all__ = ["new_family", "FAMILY_FILES"]

# template (under family/) -> path in the new project (NAME replaced)
FAMILY_FILES = {
    "pyproject.toml.tmpl": "pyproject.toml",
    "README.md.tmpl": "README.md",
    "package/__init__.py.tmpl": "NAME/__init__.py",
    "package/env.py.tmpl": "NAME/env.py",
    "package/tasks.py.tmpl": "NAME/tasks.py",
    "package/agents.py.tmpl": "NAME/agents.py",
    "package/graders.py.tmpl": "NAME/graders.py",
    "package/analyses.py.tmpl": "NAME/analyses.py",
    "scenarios/scenario.yaml.tmpl": "scenarios/NAME.yaml",
    "tests/test_family.py.tmpl": "tests/test_family.py",
}
_NAME = re.compile(r"[a-z][a-z0-9_]{0,39}")


def new_family(name: str, parent: str | Path = ".") -> Path:
    """Write the skeleton family ``name`` into ``parent/name``; returns that folder.

    Raises:
        UserError: ``name`` is not a lowercase Python identifier (it names the package, the env
            namespace and the entry points), shadows a module Python or rsigym imports, or the
            folder exists already.
    """
    if not _NAME.fullmatch(name) or keyword.iskeyword(name):
        raise UserError(f"new family: {name!r} is not a usable name: lowercase letters, digits and _, "
                        "starting with a letter, at most 40 characters (it names the package and the env ids)")
    import importlib.util
    import sys

    if name in sys.stdlib_module_names or name in ("rsigym", "gymnasium", "numpy", "tests") or (
            importlib.util.find_spec(name) is not None):
        raise UserError(f"new family: {name!r} is already the name of an importable module; choose another")
    root = Path(parent) / name
    if root.is_symlink():  # exists() is False for a dangling link, which mkdir then trips over
        raise UserError(f"new family: {root} exists already (a symbolic link); nothing written")
    if root.exists():
        raise UserError(f"new family: {root} exists already; nothing written")
    template = files(__package__) / "family"
    try:
        root.mkdir(parents=True)  # exclusive: a folder made meanwhile (or a link) is refused, not written into
        for source, target in FAMILY_FILES.items():
            text = (template / source).read_text(encoding="utf-8").replace("__NAME__", name)
            path = root / target.replace("NAME", name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text, encoding="utf-8")
    except OSError as exc:
        raise UserError(f"new family: cannot write {root}: {exc.strerror or exc}") from None
    return root
