"""Which rsigym code this process runs: a content hash of the installed package's files.

The version string is the same at every commit (``0.1.0``), so it cannot tell two checkouts
apart. ``build_hash`` hashes every file of the ``rsigym`` package as this interpreter imports it
(source, schemas, data files; not ``__pycache__`` or ``.pyc``), each under its name relative to the
package (``runner/ray_backend.py``, ``envs/probe/env.py``), so two installs of the same code in
different folders, or an editable checkout and a wheel of it, hash the same; any byte changed,
any file added or removed, hashes differently. The Ray driver compares each node's hash with its
own and refuses a node that differs (``ray_backend``).

The package may be spread over several folders (an editable checkout maps ``rsigym.envs`` and the
other top-level parts to folders of their own): each part found outside the root folder is
hashed too, under its name. Symbolic links are followed. Computed once per process (about 330
files, 3 MB: tens of milliseconds) and cached.
"""

from __future__ import annotations

import functools
import hashlib
import importlib.util
import os
from pathlib import Path

__all__ = ["build_hash", "PARTS"]

PARTS = ("envs", "agents", "graders", "scenarios")  # rsigym's parts that an editable install maps elsewhere
_SKIP_DIRS = {"__pycache__"}
_SKIP_SUFFIXES = (".pyc", ".pyo")


def _files(root: Path, prefix: str) -> list[tuple[str, Path]]:
    found = []
    for folder, dirs, names in os.walk(root, followlinks=True):
        dirs[:] = sorted(d for d in dirs if d not in _SKIP_DIRS and not d.startswith("."))
        for name in names:
            if name.endswith(_SKIP_SUFFIXES) or name.startswith("."):
                continue
            path = Path(folder) / name
            found.append((prefix + path.relative_to(root).as_posix(), path))
    return found


def _roots() -> list[tuple[str, Path]]:
    """(name prefix, folder) of the package root and of each part outside it."""
    import rsigym

    roots = [("", Path(p)) for p in rsigym.__path__]
    for part in PARTS:
        spec = importlib.util.find_spec(f"rsigym.{part}")
        for location in (spec.submodule_search_locations or []) if spec else []:
            folder = Path(location)
            if not any(_inside(folder, root) for _, root in roots):
                roots.append((f"{part}/", folder))
    return roots


def _inside(folder: Path, root: Path) -> bool:
    try:
        folder.resolve().relative_to(root.resolve())
    except ValueError:
        try:  # a part linked into the root (a copy made of links) is inside it by name
            folder.relative_to(root)
        except ValueError:
            return False
    return True


@functools.lru_cache(maxsize=1)
def build_hash() -> str:
    """The sha256 (hex, first 16 digits) of this process's rsigym files, names and contents."""
    digest = hashlib.sha256()
    files = sorted({name: path for prefix, root in _roots() for name, path in _files(root, prefix)}.items())
    for name, path in files:
        digest.update(name.encode() + b"\0")
        digest.update(hashlib.sha256(path.read_bytes()).digest())
    return digest.hexdigest()[:16]
