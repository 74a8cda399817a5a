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


def keep_counts(valid: torch.Tensor, keep_ratio: float) -> torch.Tensor:
    """(N,) valid positions per row -> (N,) tokens to keep per row, exactly ``keep_ratio`` of the batch.

    Each row keeps the floor or the ceiling of ``keep_ratio * n_i``, and the batch total is
    ``round(keep_ratio * sum n_i)``, so the realised share is within half a token of the ratio over
    the batch and within one token of it in every row (a per-row ceiling would keep 2 of 4 tokens
    for a ratio of 0.4, a realised 0.5). The rows with the largest fractional part get the ceiling,
    ties by row order (rows are independent samples, so the order carries no information).
    """
    target = valid.double() * keep_ratio
    base = (target + 1e-9).floor()  # the epsilon absorbs 0.4 * 5 = 2.0000000000000004-style float noise
    fractions = (target - base).clamp(min=0.0)
    extra = int(torch.floor(target.sum() + 0.5)) - int(base.sum())
    counts = base.long()
    if extra > 0:
        counts[torch.argsort(-fractions, stable=True)[:extra]] += 1
    return counts


def _top_counts(scores: torch.Tensor, mask: torch.Tensor, counts: torch.Tensor) -> torch.Tensor:
    """Per row of (N, T) ``scores``, keep the ``counts[i]`` highest valid positions (ties by position)."""
    masked = scores.masked_fill(~mask, float("-inf"))
    ranks = masked.argsort(dim=1, descending=True, stable=True).argsort(dim=1)  # (N, T) rank of each position
    return (ranks < counts.unsqueeze(1)) & mask


def top_share(scores: torch.Tensor, mask: torch.Tensor, keep_ratio: float) -> torch.Tensor:
    """Per row of (N, T) ``scores``, keep the highest valid positions, ``keep_counts`` of them."""
    return _top_counts(scores, mask, keep_counts(mask.sum(dim=1), keep_ratio))


def low_low(log_p_teacher: torch.Tensor, log_p_student: torch.Tensor, mask: torch.Tensor,
            low_prob: float) -> torch.Tensor:
    """Valid tokens that both models find implausible: ``p_t < low_prob`` and ``p_s < low_prob``."""
    threshold = math.log(low_prob)
    return (log_p_teacher < threshold) & (log_p_student < threshold) & mask


def _squash(values: torch.Tensor) -> torch.Tensor:
    """Order-preserving map of [0, inf] onto [0, 1], to break ties inside a tier."""
    values = values.double().clamp(min=0.0, max=1e12)
    return values / (1.0 + values)


def swap_selection(signal: torch.Tensor, mask: torch.Tensor, base: torch.Tensor, removed: torch.Tensor,
                   banned: torch.Tensor) -> torch.Tensor:
    """Replace the ``removed`` tokens of the ``base`` selection by the highest-``signal`` others.

    The replacements are valid tokens outside ``base`` and outside ``banned``, best first; when a
    row has too few of them, its removed tokens with the highest signal stay. Every row keeps
    exactly as many tokens as ``base`` selects in it.
    """
    squashed = _squash(signal)
    stays = base & ~removed
    replacement = mask & ~base & ~banned
    tier = 3.0 * stays.double() + 2.0 * replacement.double() + 1.0 * (removed & base).double()
    return _top_counts(tier + squashed, mask, base.sum(dim=1))


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

    def __init__(self, beta: float = 0.5, keep_ratio: float = 0.4):
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


class LowLowSwap:
    """Divergence-only selection with its low-low tokens swapped for others at a matched count.

    Start from the top-|signal| tokens; drop those that both models find implausible
    (``low_low``); add as many of the highest-|signal| unselected tokens that are not low-low. The
    count per response is unchanged, so any difference to ``top_signal`` is the low-low tokens'.
    """

    name = "swap_low_low"

    def __init__(self, keep_ratio: float = 0.4, low_prob: float = 0.1):
        self.keep_ratio = keep_ratio
        self.low_prob = low_prob

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        signal = (log_p_teacher - log_p_student).abs()
        base = top_share(signal, mask, self.keep_ratio)
        banned = low_low(log_p_teacher, log_p_student, mask, self.low_prob)
        return swap_selection(signal, mask, base, base & banned, banned)


class RandomSwap:
    """The control of ``LowLowSwap``: swap as many selected tokens per response, chosen at random.

    Same start (top-|signal|), same number of tokens leaving each response as ``LowLowSwap``
    would remove, the same replacement rule; only which tokens leave differs.
    """

    name = "swap_random"

    def __init__(self, keep_ratio: float, generator: torch.Generator, low_prob: float = 0.1):
        self.keep_ratio = keep_ratio
        self.low_prob = low_prob
        self.generator = generator

    def __call__(self, log_p_teacher: torch.Tensor, log_p_student: torch.Tensor,
                 mask: torch.Tensor) -> torch.Tensor:
        signal = (log_p_teacher - log_p_student).abs()
        base = top_share(signal, mask, self.keep_ratio)
        banned = low_low(log_p_teacher, log_p_student, mask, self.low_prob)
        leaving = (base & banned).sum(dim=1)  # (N,) as many as the low-low swap removes
        removed = _top_counts(torch.rand(mask.shape, generator=self.generator), base, leaving)
        return swap_selection(signal, mask, base, removed, banned)


SELECTORS = ("all", "top_signal", "dial", "random", "swap_low_low", "swap_random")


def make_selector(name: str, keep_ratio: float = 0.4, beta: float = 0.5, generator: torch.Generator | None = None,
                  low_prob: float = 0.1) -> TokenSelector:
    """One of ``SELECTORS``; ``low_prob`` is the low-low threshold of the swaps."""
    if not 0 < keep_ratio <= 1 or math.isnan(keep_ratio):
        raise ValueError(f"keep_ratio must be in (0, 1], got {keep_ratio}")
    if not 0 < low_prob < 1:
        raise ValueError(f"low_prob must be in (0, 1), got {low_prob}")
    generator = generator or torch.Generator().manual_seed(0)
    if name == "all":
        return AllTokens()
    if name == "top_signal":
        return TopSignal(keep_ratio)
    if name == "dial":
        return DIAL(beta, keep_ratio)
    if name == "random":
        return RandomTokens(keep_ratio, generator)
    if name == "swap_low_low":
        return LowLowSwap(keep_ratio, low_prob)
    if name == "swap_random":
        return RandomSwap(keep_ratio, generator, low_prob)
    raise ValueError(f"unknown token selector {name!r}; expected one of {', '.join(SELECTORS)}")
