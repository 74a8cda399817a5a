"""Normalised matching of the facts an agent must tell the user (shared by env reward and graders)."""

from __future__ import annotations

import re
from typing import Iterable

__all__ = ["normalise", "communicated"]

_SPACE = re.compile(r"\s+")


def normalise(text: str) -> str:
    """Lower case, no currency signs, thousands separators or surrounding punctuation."""
    text = text.lower().replace("$", "").replace(",", "")
    return _SPACE.sub(" ", text).strip(" .!")


def communicated(required: Iterable[str], agent_messages: Iterable[str]) -> list[bool]:
    """For each required fact, whether some agent message contains it (normalised)."""
    said = " \n ".join(normalise(m) for m in agent_messages)
    return [normalise(fact) in said for fact in required]
