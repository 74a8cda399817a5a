"""Entropy-control baselines for GRPO from the entropy-mechanism paper (Cui et al., 2025).

Both act on the tokens whose log-probability and advantage co-vary most, the tokens that drive
the entropy down. Per token i of the batch the centred covariance term is

    cov_i = (log pi_i - mean_j log pi_j) * (A_i - mean_j A_j),

means over every valid token of the batch. ``Clip-Cov`` picks, at random, a ``share`` of all
tokens among those with ``low <= cov_i <= high`` and removes them from the policy gradient;
``KL-Cov`` picks the top ``share`` of tokens by ``cov_i`` and adds ``coef * |log pi - log pi_old|``
to their loss. Both are applied on top of the same clipped objective as every other GRPO variant,
so a comparison isolates the control. The paper's shares (2e-4, 2e-3) were set for batches of
millions of tokens; here the batches hold hundreds, so the defaults in ``grpo.Args`` are larger.
"""

from __future__ import annotations

import math

import torch


def token_covariance(log_probs: torch.Tensor, advantages: torch.Tensor, mask: torch.Tensor) -> torch.Tensor:
    """(N, R) token log-probs, (N,) sequence advantages, (N, R) bool mask -> (N, R) centred covariance terms.

    Invalid positions get 0 and do not enter the means.
    """
    A = advantages.unsqueeze(1).expand_as(log_probs)  # (N, R): every token of a response shares its advantage
    weights = mask.float()
    count = weights.sum().clamp(min=1.0)
    centred_log_probs = log_probs - (log_probs * weights).sum() / count
    centred_advantages = A - (A * weights).sum() / count
    return centred_log_probs * centred_advantages * weights


def share_count(share: float, total: int) -> int:
    """``round(share * total)`` tokens, at least 1 when ``share > 0`` and there is a token."""
    if share <= 0 or total == 0:
        return 0
    return max(1, min(total, int(math.floor(share * total + 0.5))))


def kl_cov_mask(covariance: torch.Tensor, mask: torch.Tensor, share: float) -> torch.Tensor:
    """The top ``share`` of valid tokens by covariance (ties by position) -> (N, R) bool."""
    count = share_count(share, int(mask.sum()))
    flat = covariance.masked_fill(~mask, float("-inf")).flatten()
    chosen = torch.zeros_like(flat, dtype=torch.bool)
    if count:
        chosen[torch.topk(flat, count).indices] = True
    return chosen.view_as(mask) & mask


def clip_cov_mask(covariance: torch.Tensor, mask: torch.Tensor, share: float, low: float, high: float,
                  generator: torch.Generator) -> torch.Tensor:
    """``share`` of all valid tokens, drawn at random among those with covariance in ``[low, high]``."""
    eligible = torch.nonzero((mask & (covariance >= low) & (covariance <= high)).flatten()).flatten()
    count = min(share_count(share, int(mask.sum())), len(eligible))
    chosen = torch.zeros(mask.numel(), dtype=torch.bool)
    chosen[eligible[torch.randperm(len(eligible), generator=generator)[:count]]] = True
    return chosen.view_as(mask)
