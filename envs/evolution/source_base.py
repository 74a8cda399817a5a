"""What a candidate source returns and the protocol it follows, owned apart from the factory
(``sources``) so that the sources themselves import this and the factory imports them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Protocol

import numpy as np

from rsigym.records import Usage

__all__ = ["Proposal", "CandidateSource", "estimate_tokens"]


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
