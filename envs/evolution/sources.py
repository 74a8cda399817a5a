"""Candidate sources: where the next program comes from (pluggable)."""

from __future__ import annotations

from typing import Any

from .source_base import CandidateSource, Proposal, estimate_tokens

__all__ = ["Proposal", "CandidateSource", "make_source", "SOURCES", "estimate_tokens"]

SOURCES = ("mutate", "llm")


def make_source(spec: str | dict[str, Any] | CandidateSource) -> CandidateSource:
    """``"mutate"``, ``{"kind": "llm", "model": ...}``, or a ready source object."""
    if not isinstance(spec, (str, dict)):
        return spec
    params = {} if isinstance(spec, str) else {k: v for k, v in spec.items() if k != "kind"}
    kind = spec if isinstance(spec, str) else spec.get("kind")
    if kind == "mutate":
        from .mutate import MutateSource

        return MutateSource(**params)
    if kind == "llm":
        from .llm_source import LLMSource

        return LLMSource(**params)
    raise ValueError(f"unknown candidate source {kind!r}; known: {', '.join(SOURCES)}")
