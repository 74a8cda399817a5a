"""Group advantages and rollout filters for GRPO.

A filter sees one prompt's group of G complete rollouts and returns which of them enter the policy
update, with their (possibly re-centred) advantages: ``filter(group) -> FilterResult``.

``GRPODropout`` drops a small share of rollouts that are likely under the old policy, have a
positive advantage, and whose update would lower the policy entropy to first order; it then
re-centres the kept advantages so their old-policy-probability-weighted mean is zero. With
``every_copy`` it drops an answer with all its identical copies in the group: where a policy samples
its mode several times per group, dropping one copy leaves a twin that the update still reinforces.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Protocol

import torch


def group_advantages(rewards: torch.Tensor, eps: float = 1e-6) -> torch.Tensor:
    """(..., G) rewards -> (..., G) advantages ``(r - mean) / (std + eps)`` within each group.

    The standard deviation is the population one (divide by G). A group whose rewards are all
    equal gets zero advantages: it carries no learning signal.
    """
    mean = rewards.mean(dim=-1, keepdim=True)
    std = rewards.std(dim=-1, unbiased=False, keepdim=True)
    return (rewards - mean) / (std + eps)


def entropy_effect(log_probs: torch.Tensor, advantages: torch.Tensor, entropy: torch.Tensor | None = None,
                   expected_term: torch.Tensor | None = None) -> torch.Tensor:
    """First-order change of policy entropy per unit step when each rollout alone is reinforced.

    Treat the policy as a softmax over complete rollouts with logits z (pi = softmax(z)). Reinforcing
    rollout i moves the logits by ``eta * A_i * grad_z log pi_i = eta * A_i * (e_i - pi)``. With
    ``grad_z H = -pi * (log pi + H)``, the entropy changes by

        dH_i / eta = A_i * ( -pi_i (log pi_i + H) + E_pi[ pi (log pi + H) ] ).

    A likely rollout (log pi_i > -H) with a positive advantage lowers the entropy. ``entropy`` (H)
    and ``expected_term`` (the expectation) are known exactly for a small softmax; for sampled
    rollouts they are estimated from the group itself: H ~ -mean_j log pi_j and
    E_pi[pi (log pi + H)] ~ mean_j pi_j (log pi_j + H), both Monte Carlo averages over samples of pi.

    Args:
        log_probs: (G,) log-probability of each complete rollout under the old policy.
        advantages: (G,) group advantages.
    Returns:
        (G,) estimated entropy change per unit learning rate.
    """
    probs = log_probs.exp()
    H = -log_probs.mean() if entropy is None else entropy
    own = probs * (log_probs + H)
    expected = own.mean() if expected_term is None else expected_term
    return advantages * (expected - own)


def recentre(advantages: torch.Tensor, log_probs: torch.Tensor) -> torch.Tensor:
    """Subtract the old-policy-probability-weighted mean, so ``sum_k pi_k A'_k / sum_k pi_k == 0``."""
    weights = torch.softmax(log_probs, dim=-1)  # pi_k / sum pi over the kept rollouts, computed stably
    return advantages - (weights * advantages).sum(dim=-1, keepdim=True)


@dataclass(frozen=True)
class RolloutGroup:
    """One prompt's G rollouts."""

    rewards: torch.Tensor
    """(G,) verifier rewards"""
    log_probs: torch.Tensor
    """(G,) log-probability of each complete response under the old (sampling) policy"""
    advantages: torch.Tensor
    """(G,) group-normalised advantages"""
    responses: torch.Tensor | None = None
    """(G, R) response token ids: which rollouts are identical answers (needed by ``every_copy``)"""


@dataclass(frozen=True)
class FilterResult:
    kept: torch.Tensor
    """(K,) indices into the group of the rollouts that enter the update, ascending"""
    advantages: torch.Tensor
    """(K,) their advantages"""


class RolloutFilter(Protocol):
    name: str

    def __call__(self, group: RolloutGroup) -> FilterResult: ...


class NoFilter:
    """Vanilla GRPO: every rollout, advantages unchanged."""

    name = "none"

    def __call__(self, group: RolloutGroup) -> FilterResult:
        return FilterResult(torch.arange(len(group.rewards)), group.advantages)


class GRPODropout:
    """Drop up to ``drop_share`` of the group among positive-advantage, entropy-lowering rollouts.

    Candidates are ranked by how much they lower the entropy (most first). ``min_positive_kept``
    positive-advantage rollouts always stay, so a prompt solved only once still teaches (our
    choice: without it, re-centring an all-negative remainder would reward wrong answers).
    Re-centring happens only in a group where something was dropped, so a group left whole gets
    exactly the vanilla GRPO advantages.

    With ``every_copy``, the budget counts distinct answers (``floor(drop_share * G)`` of them) and each
    dropped answer leaves with all its copies in the group, so no identical twin of a dropped rollout
    stays in the update; an answer whose copies would leave fewer than ``min_positive_kept`` positive
    rollouts is skipped.
    """

    def __init__(self, drop_share: float = 0.125, recentre: bool = True, min_positive_kept: int = 1,
                 every_copy: bool = False):
        self.drop_share = drop_share
        self.recentre = recentre
        self.min_positive_kept = min_positive_kept
        self.every_copy = every_copy
        self.name = ("dropout" if recentre else "drop_no_recentre") if not every_copy else (
            "dropout_every_copy" if recentre else "drop_every_copy_no_recentre")

    def dropped(self, group: RolloutGroup) -> torch.Tensor:
        """Indices of the rollouts to drop, ascending for ``every_copy``, most entropy-lowering first otherwise."""
        effect = entropy_effect(group.log_probs, group.advantages)
        positive = group.advantages > 0
        candidates = torch.nonzero(positive & (effect < 0)).flatten()
        order = candidates[torch.argsort(effect[candidates], stable=True)]  # most entropy-lowering first
        answers = math.floor(self.drop_share * len(group.rewards) + 1e-9)
        if not self.every_copy:
            budget = min(answers, int(positive.sum()) - self.min_positive_kept, len(candidates))
            return order[:max(budget, 0)]
        if group.responses is None:
            raise ValueError("GRPODropout(every_copy=True) needs the group's responses to find identical copies")
        rows = [tuple(r) for r in group.responses.tolist()]
        positives_left, chosen = int(positive.sum()), []
        seen: set[tuple[int, ...]] = set()
        for i in order.tolist():
            if len(seen) == answers:
                break
            if rows[i] in seen:
                continue
            copies = [j for j, row in enumerate(rows) if row == rows[i]]  # same answer, so the same reward
            if positives_left - len(copies) < self.min_positive_kept:
                continue
            seen.add(rows[i])
            chosen += copies
            positives_left -= len(copies)
        return torch.tensor(sorted(chosen), dtype=torch.long)

    def __call__(self, group: RolloutGroup) -> FilterResult:
        return _keep_all_but(group, self.dropped(group), self.recentre)


class RandomDrop:
    """Drop as many rollouts as ``reference`` would from each group, chosen uniformly at random."""

    def __init__(self, reference: GRPODropout, generator: torch.Generator):
        self.reference = reference
        self.generator = generator
        self.name = "random_drop"

    def __call__(self, group: RolloutGroup) -> FilterResult:
        count = len(self.reference.dropped(group))
        dropped = torch.randperm(len(group.rewards), generator=self.generator)[:count]
        return _keep_all_but(group, dropped, self.reference.recentre)


def _keep_all_but(group: RolloutGroup, dropped: torch.Tensor, recentred: bool) -> FilterResult:
    keep = torch.ones(len(group.rewards), dtype=torch.bool)
    keep[dropped] = False
    kept = torch.nonzero(keep).flatten()
    advantages = group.advantages[kept]
    if recentred and len(dropped) > 0:
        advantages = recentre(advantages, group.log_probs[kept])
    return FilterResult(kept, advantages)


FILTERS = ("none", "dropout", "drop_no_recentre", "random_drop", "dropout_every_copy", "drop_every_copy_no_recentre",
           "random_drop_every_copy")


def make_filter(name: str, drop_share: float = 0.125, generator: torch.Generator | None = None) -> RolloutFilter:
    """One of ``FILTERS``: ``random_drop_every_copy`` drops as many rollouts as ``dropout_every_copy`` would,
    chosen uniformly at random."""
    if name == "none":
        return NoFilter()
    if name == "dropout":
        return GRPODropout(drop_share)
    if name == "drop_no_recentre":
        return GRPODropout(drop_share, recentre=False)
    if name == "random_drop":
        return RandomDrop(GRPODropout(drop_share), generator or torch.Generator().manual_seed(0))
    if name == "dropout_every_copy":
        return GRPODropout(drop_share, every_copy=True)
    if name == "drop_every_copy_no_recentre":
        return GRPODropout(drop_share, recentre=False, every_copy=True)
    if name == "random_drop_every_copy":
        random_drop = RandomDrop(GRPODropout(drop_share, every_copy=True), generator or torch.Generator().manual_seed(0))
        random_drop.name = name
        return random_drop
    raise ValueError(f"unknown rollout filter {name!r}; expected one of {', '.join(FILTERS)}")
