"""GRPO maths: group advantages, the entropy-effect estimate, re-centring, the rollout filters."""

import math

import pytest
import torch

from rsigym.agents.train.filters import (
    GRPODropout, NoFilter, RandomDrop, RolloutGroup, entropy_effect, group_advantages, make_filter, recentre)
from rsigym.agents.train.grpo import group_statistics


def test_group_advantages_on_hand_computed_groups():
    rewards = torch.tensor([[1.0, 0.0, 0.0, 1.0], [1.0, 0.0, 0.0, 0.0], [1.0, 1.0, 1.0, 1.0]])
    advantages = group_advantages(rewards)
    # group 1: mean 0.5, population std 0.5; group 2: mean 0.25, std sqrt(0.25 * 0.75) = 0.4330
    s = math.sqrt(0.25 * 0.75)
    expected = torch.tensor([[1.0, -1.0, -1.0, 1.0], [0.75 / s, -0.25 / s, -0.25 / s, -0.25 / s], [0.0] * 4])
    assert torch.allclose(advantages, expected, atol=1e-5)


def _entropy(logits: torch.Tensor) -> torch.Tensor:
    log_pi = torch.log_softmax(logits, -1)
    return -(log_pi.exp() * log_pi).sum()


def test_entropy_effect_matches_the_entropy_change_of_a_small_gradient_step():
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -2.0])
    advantages = torch.tensor([1.2, -0.8, 0.9, -0.3, 1.5, -1.0])
    log_pi = torch.log_softmax(logits, -1)
    H = _entropy(logits)
    expected_term = (log_pi.exp() * log_pi.exp() * (log_pi + H)).sum()  # E_pi[pi (log pi + H)], exactly
    estimate = entropy_effect(log_pi, advantages, entropy=H, expected_term=expected_term)

    eta = 1e-3
    actual = torch.empty(len(logits))
    for i in range(len(logits)):
        z = logits.clone().requires_grad_(True)
        torch.log_softmax(z, -1)[i].backward()  # grad of log pi_i, by autograd (not the closed form)
        stepped = logits + eta * advantages[i] * z.grad
        actual[i] = (_entropy(stepped) - H) / eta

    assert torch.equal(torch.sign(estimate), torch.sign(actual))
    assert torch.equal(torch.argsort(estimate), torch.argsort(actual))  # same ranking
    assert torch.allclose(estimate, actual, rtol=1e-2, atol=1e-4)
    # the likely, positive-advantage outcome lowers entropy; the unlikely positive one raises it
    assert estimate[0] < 0 < estimate[4]


def test_entropy_effect_from_a_sampled_group_estimates_the_exact_one():
    logits = torch.tensor([2.0, 1.0, 0.5, 0.0, -1.0, -2.0])
    log_pi = torch.log_softmax(logits, -1)
    samples = torch.multinomial(log_pi.exp(), 200_000, replacement=True, generator=torch.Generator().manual_seed(0))
    H = _entropy(logits)
    expected_term = (log_pi.exp() ** 2 * (log_pi + H)).sum()
    ones = torch.ones(len(samples))
    sampled = entropy_effect(log_pi[samples], ones)  # H and the expectation estimated from the samples
    exact = entropy_effect(log_pi, torch.ones(6), entropy=H, expected_term=expected_term)
    per_outcome = torch.stack([sampled[samples == k][0] for k in range(6)])
    assert torch.allclose(per_outcome, exact, atol=2e-2)


def test_recentring_gives_zero_probability_weighted_mean():
    advantages = torch.tensor([1.5, -0.5, 0.7, -1.2, 0.3])
    log_probs = torch.tensor([-0.4, -2.0, -5.0, -1.1, -30.0])
    centred = recentre(advantages, log_probs)
    probs = log_probs.exp()
    assert abs(float((probs * centred).sum() / probs.sum())) < 1e-6
    assert torch.allclose(centred - advantages, (centred - advantages)[0].expand(5))  # a shift, nothing more


def _group() -> RolloutGroup:
    rewards = torch.tensor([1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0, 0.0])
    log_probs = torch.tensor([-0.3, -3.0, -6.0, -2.0, -4.0, -5.0, -7.0, -8.0])  # rollout 0: likely and correct
    return RolloutGroup(rewards, log_probs, group_advantages(rewards))


def test_grpo_dropout_drops_the_likely_correct_rollout_and_recentres():
    group = _group()
    result = GRPODropout(drop_share=0.125)(group)
    assert result.kept.tolist() == [1, 2, 3, 4, 5, 6, 7]
    weights = group.log_probs[result.kept].exp()
    assert abs(float((weights * result.advantages).sum())) < 1e-6
    assert not torch.allclose(result.advantages, group.advantages[result.kept])

    plain = GRPODropout(drop_share=0.125, recentre=False)(group)
    assert plain.kept.tolist() == [1, 2, 3, 4, 5, 6, 7]
    assert torch.equal(plain.advantages, group.advantages[plain.kept])


def test_grpo_dropout_keeps_the_only_correct_rollout_and_ignores_flat_groups():
    rewards = torch.tensor([1.0] + [0.0] * 7)
    log_probs = torch.tensor([-0.1] + [-5.0] * 7)
    lone = RolloutGroup(rewards, log_probs, group_advantages(rewards))
    assert len(GRPODropout()(lone).kept) == 8
    flat = RolloutGroup(torch.ones(8), log_probs, torch.zeros(8))
    assert len(GRPODropout()(flat).kept) == 8


def test_random_drop_removes_as_many_rollouts_as_dropout_would():
    generator = torch.Generator().manual_seed(0)
    random_drop = RandomDrop(GRPODropout(0.125), generator)
    group = _group()
    seen = set()
    for _ in range(30):
        result = random_drop(group)
        assert len(result.kept) == 7
        seen.add(tuple(result.kept.tolist()))
        weights = group.log_probs[result.kept].exp()
        assert abs(float((weights * result.advantages).sum() / weights.sum())) < 1e-5
    assert len(seen) > 3  # really random


def test_no_filter_and_make_filter():
    group = _group()
    result = NoFilter()(group)
    assert result.kept.tolist() == list(range(8)) and torch.equal(result.advantages, group.advantages)
    assert [make_filter(n).name for n in ("none", "dropout", "drop_no_recentre", "random_drop")] == [
        "none", "dropout", "drop_no_recentre", "random_drop"]
    with pytest.raises(ValueError, match="bogus"):
        make_filter("bogus")


def _twin_group() -> RolloutGroup:
    """Rollouts 0-2 are one likely right answer, 3 another right one, 4-7 wrong."""
    rewards = torch.tensor([1.0, 1.0, 1.0, 1.0, 0.0, 0.0, 0.0, 0.0])
    log_probs = torch.tensor([-0.3, -0.3, -0.3, -3.0, -4.0, -5.0, -7.0, -8.0])
    responses = torch.tensor([[9, 8], [9, 8], [9, 8], [8, 9], [1, 1], [1, 2], [2, 1], [0, 0]])
    return RolloutGroup(rewards, log_probs, group_advantages(rewards), responses)


def test_every_copy_dropout_removes_the_dropped_answer_with_all_its_twins():
    group = _twin_group()
    one_copy = GRPODropout(0.125)(group)
    assert len(one_copy.kept) == 7 and {0, 1, 2} & set(one_copy.kept.tolist())  # a twin stays
    every = GRPODropout(0.125, every_copy=True)
    assert every.dropped(group).tolist() == [0, 1, 2]
    result = every(group)
    assert result.kept.tolist() == [3, 4, 5, 6, 7]
    weights = group.log_probs[result.kept].exp()
    assert abs(float((weights * result.advantages).sum())) < 1e-6  # re-centred over what is left
    # the counted statistic of the training loop sees no surviving twin
    stats = group_statistics(group.responses, [result.kept], 8, group.log_probs.view(1, -1))
    assert stats["drops"] == 3 and stats["drops_with_copy"] == 0
    assert group_statistics(group.responses, [one_copy.kept], 8, group.log_probs.view(1, -1))["drops_with_copy"] == 1


def test_every_copy_dropout_keeps_a_positive_answer_and_needs_the_responses():
    group = _twin_group()
    only = RolloutGroup(group.rewards.clone(), group.log_probs, group.advantages,
                        torch.tensor([[9, 8]] * 4 + [[1, 1], [1, 2], [2, 1], [0, 0]]))
    assert GRPODropout(0.125, every_copy=True).dropped(only).tolist() == []  # dropping it would leave no right answer
    with pytest.raises(ValueError, match="responses"):
        GRPODropout(0.125, every_copy=True)(RolloutGroup(group.rewards, group.log_probs, group.advantages))
    matched = make_filter("random_drop_every_copy", 0.125, torch.Generator().manual_seed(1))
    assert matched.name == "random_drop_every_copy" and len(matched(group).kept) == 5  # as many, at random
    assert [make_filter(n).name for n in ("dropout_every_copy", "drop_every_copy_no_recentre")] == [
        "dropout_every_copy", "drop_every_copy_no_recentre"]
