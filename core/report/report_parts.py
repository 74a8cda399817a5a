"""What every report section is made of, owned here so that the report, its score cells and the
cost section share it without importing one another: ``ReportSection`` and the Markdown escapes of
names taken from records (``md_text``, ``md_code``, ``md_file_name``, ``condition_label``).
Imports nothing of rsigym."""

from __future__ import annotations

import hashlib
import re
from dataclasses import dataclass, field
from typing import Any

__all__ = ["ReportSection", "md_text", "md_code", "md_file_name", "condition_label"]


@dataclass
class ReportSection:
    title: str
    markdown: str
    verdict: str = ""
    plots: list[str] = field(default_factory=list)  # file names relative to the report folder



# Enough to keep a name literal: no link or image ([, ], !), no HTML or entity (<, &), no cell
# break (|), no code or emphasis (`, *), no escape (\\); "_" inside a word is already literal. ">"
# opens nothing inside a line (a name never starts one), so an adaptation "adv0.4->adv1.0" stays as typed.
_MD_ACTIVE = re.compile(r"([\\`*\[\]<!|&])")


def md_text(value: Any) -> str:
    """A name (agent id, condition, task) as literal text in Markdown, table cells included:
    every character Markdown, a table or an HTML renderer acts on is escaped and line breaks become
    spaces, so an id like ``[x](http://...)``, ``<img>`` or a ``|`` before a line break stays text."""
    return _MD_ACTIVE.sub(r"\\\1", " ".join(str(value).splitlines()))


def md_code(value: Any) -> str:
    """A name as inline code (a code span shows ``<``, ``[`` and ``*`` literally), or as ``md_text``
    when it holds what a code span cannot: a backtick, a line break, or a ``|`` (a cell break in a
    table, even inside code)."""
    text = str(value)
    return md_text(text) if not text or re.search(r"[`|\r\n]", text) else f"`{text}`"


def md_file_name(*parts: Any) -> str:
    """A plot's file name from names in records: only ``[A-Za-z0-9._-]`` (no path, no space or
    parenthesis to break the report's image link), with a digest of the parts so that two names
    that differ only in other characters do not share a file."""
    raw = "_".join(str(p) for p in parts)
    stem, dot, suffix = raw.rpartition(".")
    safe = re.sub(r"[^A-Za-z0-9._-]+", "_", stem if dot else raw).strip("._")[:80] or "plot"
    if safe != (stem if dot else raw):
        safe += "_" + hashlib.sha256(raw.encode()).hexdigest()[:6]
    return f"{safe}.{re.sub(r'[^A-Za-z0-9]', '', suffix)}" if dot else safe


def condition_label(condition: dict[str, Any] | None) -> str:
    if condition is None:
        return "none"
    params = ",".join(f"{k}={v}" for k, v in sorted((condition.get("params") or {}).items()))
    return f"{condition['name']}({params})" if params else condition["name"]
