"""The task protocol the training scripts use, and the factory from a task name."""

from __future__ import annotations

from typing import ClassVar, Protocol

import torch

from .arithmetic import AdditionTask, CharTokenizer
from .digitsum import DigitSumTask

TASKS = ("addition", "digitsum")


class VerifiableTask(Protocol):
    """Fixed-length responses to generated problems, scored exactly."""

    name: ClassVar[str]

    @property
    def prompt_length(self) -> int: ...

    @property
    def response_length(self) -> int: ...

    @property
    def tokenizer(self) -> CharTokenizer: ...

    def sample_problems(self, count: int, generator: torch.Generator) -> torch.Tensor:
        """(count, k) problems."""
        ...

    def eval_problems(self, count: int, seed: int = 12345) -> torch.Tensor: ...

    def prompts(self, problems: torch.Tensor) -> torch.Tensor:
        """(N, k) problems -> (N, prompt_length) token ids."""
        ...

    def demonstrations(self, problems: torch.Tensor, generator: torch.Generator) -> torch.Tensor:
        """(N, k) problems -> (N, response_length) correct responses to imitate."""
        ...

    def score(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """(N, response_length) responses -> (N,) rewards in {0, 1}."""
        ...

    def completable(self, responses: torch.Tensor, problems: torch.Tensor) -> torch.Tensor:
        """(N, response_length) -> (N, response_length) bool: each prefix can still become a right answer."""
        ...


def make_task(name: str, digits: int = 3, length: int = 5, canonical_share: float = 0.2, base: int = 10,
              favoured: str = "canonical", held_out_every: int = 0) -> VerifiableTask:
    """``addition`` (``digits`` per operand, one right answer) or ``digitsum`` (``length`` base-``base``
    digits, many right answers; ``canonical_share`` of its demonstrations take the ``favoured`` path;
    targets ``t % held_out_every == 1`` held out of training)."""
    if name == "addition":
        return AdditionTask(digits)
    if name == "digitsum":
        return DigitSumTask(length, canonical_share, base, favoured, held_out_every)
    raise ValueError(f"unknown task {name!r}; expected one of {', '.join(TASKS)}")
