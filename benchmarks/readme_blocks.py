"""The blocks of the README and the docs pages (``docs/families/*.md``) that benchmark scripts render
from committed results files: text between a begin and an end marker, read (for the tests that
check the page agrees with the file) and replaced (``--write``). One place for the marker handling
of every results-rendering script."""

from __future__ import annotations

from pathlib import Path

__all__ = ["block", "replace"]


def _parts(readme: str, begin: str, end: str) -> tuple[str, str, str]:
    head, found_begin, rest = readme.partition(begin)
    inside, found_end, tail = rest.partition(end)
    if not found_begin or not found_end:
        raise ValueError(f"the page has no {begin} ... {end} block")
    return head, inside, tail


def block(readme: str, begin: str, end: str) -> str:
    """The text between the markers of ``readme``; a clear error when they are missing."""
    return _parts(readme, begin, end)[1].strip("\n")


def replace(readme_path: Path, begin: str, end: str, body: str) -> None:
    """Rewrite ``readme_path`` (the README or a docs page) with ``body`` between the markers (which must be there)."""
    head, _, tail = _parts(readme_path.read_text(), begin, end)
    readme_path.write_text(f"{head}{begin}\n{body}\n{end}{tail}")
