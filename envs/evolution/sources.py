"""Candidate sources: where the next program comes from (pluggable)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Protocol

import numpy as np

from rsigym.records import Usage

__all__ = ["Proposal", "CandidateSource", "make_source", "SOURCES", "estimate_tokens"]

SOURCES = ("mutate", "llm")


@dataclass(frozen=True)
class Proposal:
    """A new program and how it was made. Tokens are the generator's (estimated for ``mutate``).

    ``usage`` is the LLM usage of an LLM source (calls, retries, cost), None for offline ones.
    """

    code: str
    operator: str
    prompt_tokens: int = 0
    completion_tokens: int = 0
    usage: Usage | None = None


class CandidateSource(Protocol):
    name: str

    def propose(self, parent_code: str, parent_score: float, partner_code: str | None,
                library: dict[str, str], task_description: str, rng: np.random.Generator) -> Proposal: ...


def estimate_tokens(text: str) -> int:
    """About four characters a token: what an LLM would have been sent or produced."""
    return max(1, len(text) // 4)


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
