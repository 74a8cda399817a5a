"""A verifiable task family: multi-digit addition with the sum written least significant digit first.

A problem ``a + b`` with ``digits``-digit operands (zero-padded) is the prompt ``"047+285="``; the
response is the ``digits + 1`` digits of the sum, reversed and zero-padded (``"2330"`` for 332).
Writing the sum backwards is the short worked format: each output digit then depends only on the
digits already seen and the carry, so a small causal model can learn it, yet a few minutes of
supervised training leave it imperfect on carries, which is what the post-training algorithms
have to fix. Rewards are exact: 1 when every response character matches, else 0.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch

VOCAB = "0123456789+="


@dataclass(frozen=True)
class CharTokenizer:
    """One token per character of ``alphabet``."""

    alphabet: str = VOCAB

    @property
    def vocab_size(self) -> int:
        return len(self.alphabet)

    def encode(self, text: str) -> list[int]:
        try:
            return [self.alphabet.index(ch) for ch in text]
        except ValueError:
            raise ValueError(f"{text!r} has a character outside {self.alphabet!r}") from None

    def decode(self, ids: list[int] | torch.Tensor) -> str:
        return "".join(self.alphabet[int(i)] for i in ids)


@dataclass(frozen=True)
class AdditionTask:
    """Addition of two ``digits``-digit numbers; see the module docstring for the format."""

    digits: int = 3
    """digits per operand"""

    @property
    def prompt_length(self) -> int:
        return 2 * self.digits + 2  # "a+b="

    @property
    def response_length(self) -> int:
        return self.digits + 1

    @property
    def tokenizer(self) -> CharTokenizer:
        return CharTokenizer()

    def sample_operands(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, 2) operands, uniform on ``[0, 10**digits)``."""
        return torch.randint(0, 10 ** self.digits, (count, 2), generator=generator)

    def prompt_text(self, a: int, b: int) -> str:
        return f"{a:0{self.digits}d}+{b:0{self.digits}d}="

    def answer_text(self, a: int, b: int) -> str:
        return f"{a + b:0{self.response_length}d}"[::-1]

    def prompts(self, operands: torch.Tensor) -> torch.Tensor:
        """(N, 2) operands -> (N, prompt_length) token ids."""
        tok = self.tokenizer
        return torch.tensor([tok.encode(self.prompt_text(int(a), int(b))) for a, b in operands.tolist()],
                            dtype=torch.long).view(-1, self.prompt_length)

    def answers(self, operands: torch.Tensor) -> torch.Tensor:
        """(N, 2) operands -> (N, response_length) token ids of the correct response."""
        tok = self.tokenizer
        return torch.tensor([tok.encode(self.answer_text(int(a), int(b))) for a, b in operands.tolist()],
                            dtype=torch.long).view(-1, self.response_length)

    def rewards(self, responses: torch.Tensor, answers: torch.Tensor) -> torch.Tensor:
        """The verifier: (N, R) sampled and correct responses -> (N,) rewards in {0, 1}."""
        return (responses == answers).all(dim=1).float()

    def eval_operands(self, count: int, seed: int = 12345) -> torch.Tensor:
        """A fixed held-out set (the seed is apart from training seeds by convention, not by construction)."""
        return self.sample_operands(count, torch.Generator().manual_seed(seed))

    # The task protocol shared with ``DigitSumTask`` (problems are operand pairs here).
    name: ClassVar[str] = "addition"

    def sample_problems(self, count: int, generator: torch.Generator) -> torch.Tensor:
        return self.sample_operands(count, generator)

    def eval_problems(self, count: int, seed: int = 12345) -> torch.Tensor:
        return self.eval_operands(count, seed)

    def demonstrations(self, problems: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """The one correct response per problem (the generator is unused: there is one path)."""
        return self.answers(problems)

    def score(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        return self.rewards(responses, self.answers(problems))

    def completable(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """(N, R) -> (N, R) bool: the response matches the one right answer up to and including each token."""
        return (responses == self.answers(problems)).long().cumprod(dim=1).bool()
