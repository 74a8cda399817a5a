"""Mapping caller paths onto a sandbox's work dir, rejecting any that escape it."""

from __future__ import annotations

import posixpath

from rsigym.errors import SandboxError

__all__ = ["work_relative"]


def work_relative(path: str, roots: tuple[str, ...]) -> str:
    """Return ``path`` relative to the work dir, or raise if it points outside.

    A relative path is taken inside the work dir; an absolute path must lie under one of
    ``roots`` (the names the work dir goes by, e.g. ``/work`` and a local temp dir). ``..`` is
    resolved lexically and may not climb above the work dir.

    Args:
        path: The caller's path.
        roots: Absolute names of the work dir.

    Returns:
        A normalised relative POSIX path; ``"."`` for the work dir itself.

    Raises:
        SandboxError: The path is empty, or escapes the work dir.
    """
    if not path:
        raise SandboxError("empty path")
    if "\x00" in path:
        raise SandboxError(f"path contains a NUL byte: {path!r}")
    if posixpath.isabs(path):
        norm = posixpath.normpath(path)
        for root in roots:
            root = posixpath.normpath(root)
            if norm == root:
                return "."
            if norm.startswith(root.rstrip("/") + "/"):
                return norm[len(root.rstrip("/")) + 1 :]
        raise SandboxError(f"path {path!r} is outside the sandbox work dir {roots[0]!r}")
    rel = posixpath.normpath(path)
    if rel == ".." or rel.startswith("../"):
        raise SandboxError(f"path {path!r} escapes the sandbox work dir")
    return rel
