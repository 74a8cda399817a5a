"""A verifiable task with many valid answers: write ``length`` digits that add up to a target.

The prompt is the target, two digits and ``=`` (``"17="``); a response is ``length`` digits, and
the verifier gives 1 when they are all digits and add up to the target (``"98000"``, ``"35414"``
and ``"00890"`` are all right for 17). A middle target has thousands of valid answers, so a
group of sampled answers is mostly distinct and each has a low probability: the regime in which
rollout filtering and token selection can matter, unlike addition, where one answer is right.

The supervised demonstrations mix one favoured path with many rare ones: with probability
``canonical_share`` the canonical answer (nines first, then the remainder, then zeros), else an
answer drawn uniformly from all valid ones. A warm-started policy therefore has a mode it can
collapse onto and a long tail of low-probability correct answers. (A pilot with a share of 0.5
left an identical copy in the group for 90% of GRPODropout's drops; 0.2 keeps groups distinct.)
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import torch

from .arithmetic import CharTokenizer


@dataclass(frozen=True)
class DigitSumTask:
    """``length`` digits summing to a target in ``[0, 9 * length]``; see the module docstring."""

    length: int = 5
    """digits per response"""
    canonical_share: float = 0.2
    """share of demonstrations that take the canonical path"""
    name: ClassVar[str] = "digitsum"

    def __post_init__(self) -> None:
        if not 1 <= self.length <= 11:
            raise ValueError(f"length must be in [1, 11] (a two-digit target), got {self.length}")
        if not 0.0 <= self.canonical_share <= 1.0:
            raise ValueError(f"canonical_share must be in [0, 1], got {self.canonical_share}")

    @property
    def prompt_length(self) -> int:
        return 3  # "ss="

    @property
    def response_length(self) -> int:
        return self.length

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer()

    @cached_property
    def _ways(self) -> torch.Tensor:
        """``ways[k, r]``: number of k-digit strings whose digits add up to r (float64: exact to 2**53)."""
        top = 9 * self.length
        ways = torch.zeros(self.length + 1, top + 1, dtype=torch.float64)
        ways[0, 0] = 1.0
        for k in range(1, self.length + 1):
            for digit in range(10):
                ways[k, digit:] += ways[k - 1, :top + 1 - digit]
        return ways

    def sample_problems(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, 1) targets, uniform on ``[0, 9 * length]``."""
        return torch.randint(0, 9 * self.length + 1, (count, 1), generator=generator)

    def eval_problems(self, count: int, seed: int = 12345) -> torch.Tensor:
        """A fixed held-out set of targets."""
        return self.sample_problems(count, torch.Generator().manual_seed(seed))

    def prompts(self, problems: torch.Tensor) -> torch.Tensor:
        """(N, 1) targets -> (N, 3) token ids of ``"ss="``."""
        tok = self.tokenizer
        return torch.tensor([tok.encode(f"{int(t):02d}=") for t in problems[:, 0].tolist()],
                            dtype=torch.long).view(-1, self.prompt_length)

    def canonical(self, target: int) -> list[int]:
        """Nines first, then the remainder, then zeros."""
        digits, left = [], target
        for _ in range(self.length):
            digits.append(min(9, left))
            left -= digits[-1]
        return digits

    def uniform_answer(self, target: int, generator: torch.Generator) -> list[int]:
        """One valid answer, uniform over all of them (digit by digit, weighted by completions)."""
        ways, digits, left = self._ways, [], target
        for position in range(self.length):
            remaining = self.length - position - 1
            weights = torch.tensor([float(ways[remaining, left - d]) if 0 <= left - d else 0.0 for d in range(10)])
            digit = int(torch.multinomial(weights, 1, generator=generator))
            digits.append(digit)
            left -= digit
        return digits

    def demonstrations(self, problems: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """(N, 1) targets -> (N, length) correct responses for supervised training (mixed paths)."""
        coins = torch.rand(len(problems), generator=generator)
        rows = [self.canonical(int(t)) if float(c) < self.canonical_share else self.uniform_answer(int(t), generator)
                for t, c in zip(problems[:, 0].tolist(), coins)]
        return torch.tensor(rows, dtype=torch.long).view(-1, self.length)

    def score(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """The verifier: (N, length) responses and (N, 1) targets -> (N,) rewards in {0, 1}."""
        digits = responses < 10  # token ids 0-9 are the digits themselves
        return (digits.all(dim=1) & (responses.masked_fill(~digits, 0).sum(dim=1) == problems[:, 0])).float()

    def valid_answers(self, target: int) -> int:
        """How many responses are right for ``target``."""
        return int(self._ways[self.length, target]) if 0 <= target <= 9 * self.length else 0
