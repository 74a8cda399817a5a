"""A verifiable task with many valid answers: write ``length`` base-``base`` digits that add up to a target.

The prompt is the target in decimal and ``=`` (``"17="``); a response is ``length`` digits (tokens
``0 .. base-1``), and the verifier gives 1 when they are all digits and add up to the target
(``"98000"``, ``"35414"`` and ``"00890"`` are all right for 17 in base 10). A middle target has
thousands of valid answers, so a group of sampled answers is mostly distinct and each has a low
probability: the regime in which rollout filtering and token selection can matter, unlike
addition, where one answer is right.

The supervised demonstrations mix one favoured path with many rare ones: with probability
``canonical_share`` the favoured answer, else an answer drawn uniformly from all valid ones. The
favoured answer is either ``canonical`` (nines first, then the remainder, then zeros: one rule
right for every target) or ``per_target`` (one fixed uniform draw per target value: a memorised
answer that says nothing about any other target). With ``held_out_every = k > 0`` the targets
``t % k == 1`` are held out: training and demonstrations draw only the others, evaluation only
those, so a mode learnt on a training target cannot be right on a held-out one by recall.
"""

from __future__ import annotations

from dataclasses import dataclass
from functools import cached_property
from typing import ClassVar

import torch

from .arithmetic import CharTokenizer

DIGIT_CHARS = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
FAVOURED = ("canonical", "per_target")


@dataclass(frozen=True)
class DigitSumTask:
    """``length`` digits in base ``base`` summing to a target in ``[0, (base - 1) * length]``."""

    length: int = 5
    """digits per response"""
    canonical_share: float = 0.2
    """share of demonstrations that take the favoured path"""
    base: int = 10
    """digits per position (the vocabulary is ``base`` digits plus ``+`` and ``=``)"""
    favoured: str = "canonical"
    """the favoured path: ``canonical`` (one rule for all targets) or ``per_target`` (a memorised answer each)"""
    held_out_every: int = 0
    """targets ``t % held_out_every == 1`` are held out of training (0: none, evaluation draws all targets)"""
    name: ClassVar[str] = "digitsum"

    def __post_init__(self) -> None:
        if not 2 <= self.base <= len(DIGIT_CHARS):
            raise ValueError(f"base must be in [2, {len(DIGIT_CHARS)}], got {self.base}")
        if not 1 <= self.length <= 11:
            raise ValueError(f"length must be in [1, 11], got {self.length}")
        if not 0.0 <= self.canonical_share <= 1.0:
            raise ValueError(f"canonical_share must be in [0, 1], got {self.canonical_share}")
        if self.favoured not in FAVOURED:
            raise ValueError(f"favoured must be one of {', '.join(FAVOURED)}, got {self.favoured!r}")
        if self.held_out_every < 0 or self.held_out_every == 1:
            raise ValueError(f"held_out_every must be 0 (no split) or >= 2, got {self.held_out_every}")

    @property
    def top(self) -> int:
        """The largest target."""
        return (self.base - 1) * self.length

    @property
    def prompt_length(self) -> int:
        return len(str(self.top)) + 1  # the target in decimal, zero-padded, then "="

    @property
    def response_length(self) -> int:
        return self.length

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer(DIGIT_CHARS[:self.base] + "+=")

    def train_targets(self) -> list[int]:
        """The target values training and demonstrations draw from."""
        k = self.held_out_every
        return [t for t in range(self.top + 1) if not (k and t % k == 1)]

    def held_out_targets(self) -> list[int]:
        """The target values evaluation draws from (all of them when nothing is held out)."""
        k = self.held_out_every
        return [t for t in range(self.top + 1) if t % k == 1] if k else list(range(self.top + 1))

    @cached_property
    def _ways(self) -> torch.Tensor:
        """``ways[k, r]``: number of k-digit strings whose digits add up to r (float64: exact to 2**53)."""
        ways = torch.zeros(self.length + 1, self.top + 1, dtype=torch.float64)
        ways[0, 0] = 1.0
        for k in range(1, self.length + 1):
            for digit in range(self.base):
                ways[k, digit:] += ways[k - 1, :self.top + 1 - digit]
        return ways

    @cached_property
    def _ways_rows(self) -> list[list[float]]:
        """``_ways`` as Python floats (the same values): the per-digit weights are built from them without a
        tensor index per element, which dominated the supervised warm starts' time."""
        return self._ways.tolist()

    def sample_problems(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, 1) targets, uniform on the training targets."""
        if not self.held_out_every:
            return torch.randint(0, self.top + 1, (count, 1), generator=generator)
        targets = torch.tensor(self.train_targets())
        return targets[torch.randint(0, len(targets), (count,), generator=generator)].view(-1, 1)

    def eval_problems(self, count: int, seed: int = 12345) -> torch.Tensor:
        """A fixed evaluation set: with a split, the held-out targets in turn (each ``count / n`` times)."""
        if not self.held_out_every:
            return torch.randint(0, self.top + 1, (count, 1), generator=torch.Generator().manual_seed(seed))
        held = self.held_out_targets()
        return torch.tensor([held[i % len(held)] for i in range(count)]).view(-1, 1)

    def in_distribution_problems(self, count: int) -> torch.Tensor:
        """A fixed evaluation set from the training distribution: the training targets in turn (each ``count / n``
        times). The prompt is the target alone, so these are the prompts training draws; what is fresh is the
        sampling, never a prompt."""
        targets = self.train_targets()
        return torch.tensor([targets[i % len(targets)] for i in range(count)]).view(-1, 1)

    def prompts(self, problems: torch.Tensor) -> torch.Tensor:
        """(N, 1) targets -> (N, prompt_length) token ids of ``"ss="``."""
        tok, width = self.tokenizer, self.prompt_length - 1
        return torch.tensor([tok.encode(f"{int(t):0{width}d}=") for t in problems[:, 0].tolist()],
                            dtype=torch.long).view(-1, self.prompt_length)

    def canonical(self, target: int) -> list[int]:
        """Largest digits first, then the remainder, then zeros."""
        digits, left = [], target
        for _ in range(self.length):
            digits.append(min(self.base - 1, left))
            left -= digits[-1]
        return digits

    def favoured_answer(self, target: int) -> list[int]:
        """The favoured path: ``canonical``, or one uniform answer fixed per target value."""
        if self.favoured == "canonical":
            return self.canonical(target)
        return self.uniform_answer(target, torch.Generator().manual_seed(1_000_003 * (target + 1)))

    def uniform_answer(self, target: int, generator: torch.Generator) -> list[int]:
        """One valid answer, uniform over all of them (digit by digit, weighted by completions)."""
        ways, digits, left = self._ways_rows, [], target
        for position in range(self.length):
            row = ways[self.length - position - 1]
            weights = torch.tensor([row[left - d] if 0 <= left - d else 0.0 for d in range(self.base)])
            digit = int(torch.multinomial(weights, 1, generator=generator))
            digits.append(digit)
            left -= digit
        return digits

    def demonstrations(self, problems: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """(N, 1) targets -> (N, length) correct responses for supervised training (mixed paths)."""
        coins = torch.rand(len(problems), generator=generator)
        rows = [self.favoured_answer(int(t)) if float(c) < self.canonical_share
                else self.uniform_answer(int(t), generator) for t, c in zip(problems[:, 0].tolist(), coins)]
        return torch.tensor(rows, dtype=torch.long).view(-1, self.length)

    def score(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """The verifier: (N, length) responses and (N, 1) targets -> (N,) rewards in {0, 1}."""
        digits = responses < self.base  # token ids 0 .. base-1 are the digits themselves
        return (digits.all(dim=1) & (responses.masked_fill(~digits, 0).sum(dim=1) == problems[:, 0])).float()

    def completable(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """(N, length) responses, (N, 1) targets -> (N, length) bool: the prefix up to and including each
        token can still be completed to a right answer (False from the first mistake on)."""
        digits = responses < self.base
        sums = responses.masked_fill(~digits, 0).cumsum(dim=1)  # (N, R)
        left = problems[:, :1] - sums
        room = (self.base - 1) * (self.length - 1 - torch.arange(self.length))  # (R,) most the rest can add
        return (digits.long().cumprod(dim=1).bool() & (left >= 0) & (left <= room)).cumprod(dim=1).bool()

    def valid_answers(self, target: int) -> int:
        """How many responses are right for ``target``."""
        return int(self._ways[self.length, target]) if 0 <= target <= self.top else 0
