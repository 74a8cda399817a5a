"""Token selectors for on-policy distillation: which sampled positions enter the loss.

Every selector sees the teacher's and the student's log-probabilities of the sampled tokens and
returns a boolean mask; unselected tokens stay in the context, they only leave the loss. The
signal of a kept token is always the original signed ``log p_teacher - log p_student``.
"""

from __future__ import annotations

import math
from typing import Protocol

import torch


def log_mean(p_teacher: torch.Tensor, p_student: torch.Tensor, log_p_teacher: torch.Tensor,
             log_p_student: torch.Tensor) -> torch.Tensor:
    """Logarithmic mean L(a, b) = (a - b) / (log a - log b), with L(a, a) = a."""
    delta = log_p_teacher - log_p_student
    close = delta.abs() < 1e-6
    # Near equality the quotient is 0/0; the geometric mean agrees with L to second order there.
    safe_delta = torch.where(close, torch.ones_like(delta), delta)
    return torch.where(close, ((log_p_teacher + log_p_student) / 2).exp(), (p_teacher - p_student) / safe_delta)


def dial_scores(log_p_teacher: torch.Tensor, log_p_student: torch.Tensor, beta: float = 1.0) -> torch.Tensor:
    """DIAL score ``|log p_t - log p_s| * L(p_t, p_s) ** beta``, elementwise.

    A tenfold ratio between two tiny probabilities scores low (both models find the token
    implausible); at ``beta = 1`` the score is ``|p_t - p_s|``; at ``beta = 0`` it is |signal|.
    """
    p_teacher, p_student = log_p_teacher.exp(), log_p_student.exp()
    weight = log_mean(p_teacher, p_student, log_p_teacher, log_p_student)
    return (log_p_teacher - log_p_student).abs() * weight.pow(beta)


def top_share(scores: torch.Tensor, mask: torch.Tensor, keep_ratio: float) -> torch.Tensor:
    """Per row of (N, T) ``scores``, keep the ``ceil(keep_ratio * n)`` highest of its n valid positions."""
    counts = (mask.sum(dim=1).float() * keep_ratio).ceil().long()  # (N,)
    masked = scores.masked_fill(~mask, float("-inf"))
    ranks = masked.argsort(dim=1, descending=True).argsort(dim=1)  # (N, T) rank of each position
    return (ranks < counts.unsqueeze(1)) & mask


class TokenSelector(Protocol):
    name: str

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        """(N, T) log-probs of the sampled tokens and valid-position mask -> (N, T) bool selection."""
        ...


class AllTokens:
    name = "all"

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        return mask.clone()


class TopSignal:
    """Keep the tokens of largest |log p_t - log p_s| (divergence only)."""

    name = "top_signal"

    def __init__(self, keep_ratio: float = 0.4):
        self.keep_ratio = keep_ratio

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        return top_share((log_p_teacher - log_p_student).abs(), mask, self.keep_ratio)


class DIAL:
    """Keep the tokens of highest ``dial_scores`` (divergence weighted by the logarithmic mean ** beta)."""

    name = "dial"

    def __init__(self, beta: float = 1.0, keep_ratio: float = 0.4):
        self.beta = beta
        self.keep_ratio = keep_ratio

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        return top_share(dial_scores(log_p_teacher, log_p_student, self.beta), mask, self.keep_ratio)


class RandomTokens:
    """Keep the same number of tokens per response as the others, uniformly at random."""

    name = "random"

    def __init__(self, keep_ratio: float, generator: torch.Generator):
        self.keep_ratio = keep_ratio
        self.generator = generator

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        return top_share(torch.rand(mask.shape, generator=self.generator), mask, self.keep_ratio)


def make_selector(name: str, keep_ratio: float = 0.4, beta: float = 1.0,
                  generator: torch.Generator | None = None) -> TokenSelector:
    """``all``, ``top_signal``, ``dial`` or ``random``."""
    if not 0 < keep_ratio <= 1 or math.isnan(keep_ratio):
        raise ValueError(f"keep_ratio must be in (0, 1], got {keep_ratio}")
    if name == "all":
        return AllTokens()
    if name == "top_signal":
        return TopSignal(keep_ratio)
    if name == "dial":
        return DIAL(beta, keep_ratio)
    if name == "random":
        return RandomTokens(keep_ratio, generator or torch.Generator().manual_seed(0))
    raise ValueError(f"unknown token selector {name!r}; expected all, top_signal, dial or random")
