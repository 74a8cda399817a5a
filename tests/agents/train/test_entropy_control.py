"""KL-Cov and Clip-Cov token masks, and their effect on the GRPO loss, on a constructed batch."""

import pytest
import torch

from rsigym.agents.train import grpo
from rsigym.agents.train.entropy_control import clip_cov_mask, kl_cov_mask, share_count, token_covariance

# two responses of three tokens: response 0 has advantage +1, response 1 has -1
LOG_PROBS = torch.tensor([[-0.1, -2.0, -0.5], [-3.0, -0.2, -1.0]])
ADVANTAGES = torch.tensor([1.0, -1.0])


def test_token_covariance_by_hand():
    mask = torch.ones(2, 3, dtype=torch.bool)
    cov = token_covariance(LOG_PROBS, ADVANTAGES, mask)
    mean_log_prob = LOG_PROBS.mean()  # -6.8 / 6; the mean advantage is 0
    expected = (LOG_PROBS - mean_log_prob) * torch.tensor([[1.0], [-1.0]])
    assert torch.allclose(cov, expected)
    # a likely token with a positive advantage, or an unlikely one with a negative advantage, co-varies positively
    assert cov[0, 0] > 0 and cov[1, 0] > 0 and cov[0, 1] < 0
    # invalid positions are left out of the means and get 0
    partial = torch.tensor([[True, True, True], [True, True, False]])
    cov_partial = token_covariance(LOG_PROBS, ADVANTAGES, partial)
    assert cov_partial[1, 2] == 0
    valid = LOG_PROBS[partial]
    advantages = torch.tensor([1.0, 1.0, 1.0, -1.0, -1.0])
    assert torch.allclose(cov_partial[partial], (valid - valid.mean()) * (advantages - advantages.mean()))


def test_kl_cov_takes_the_top_covariance_tokens():
    mask = torch.ones(2, 3, dtype=torch.bool)
    cov = token_covariance(LOG_PROBS, ADVANTAGES, mask)
    # cov by hand: row 0: 1.033, -0.867, 0.633; row 1: 1.867, -0.933, -0.133 -> top 2 are (1, 0) and (0, 0)
    chosen = kl_cov_mask(cov, mask, share=2 / 6)
    assert chosen.tolist() == [[True, False, False], [True, False, False]]
    assert kl_cov_mask(cov, mask, share=1e-6).sum() == 1  # at least one token when the share is positive
    assert kl_cov_mask(cov, mask, share=0.0).sum() == 0
    assert share_count(0.02, 640) == 13


def test_clip_cov_draws_only_inside_the_bounds_and_at_most_the_share():
    mask = torch.ones(2, 3, dtype=torch.bool)
    cov = token_covariance(LOG_PROBS, ADVANTAGES, mask)
    inside = (cov >= 0.5) & (cov <= 1.5)  # (0, 0) = 1.033 and (0, 2) = 0.633
    assert inside.sum() == 2
    seen = set()
    for seed in range(20):
        chosen = clip_cov_mask(cov, mask, share=1 / 6, low=0.5, high=1.5, generator=torch.Generator().manual_seed(seed))
        assert chosen.sum() == 1 and not (chosen & ~inside).any()
        seen.add(tuple(chosen.flatten().tolist()))
    assert len(seen) == 2  # random among the eligible tokens
    everything = clip_cov_mask(cov, mask, share=1.0, low=0.5, high=1.5, generator=torch.Generator().manual_seed(0))
    assert torch.equal(everything, inside)  # never more than the eligible tokens


@pytest.mark.parametrize("control", ["kl_cov", "clip_cov", "entropy_bonus"])
def test_grpo_with_each_control_runs_and_records_the_controlled_share(control):
    out = grpo.main(grpo.Args(control=control, steps=2, prompts_per_step=3, group_size=4, sft_steps=5, eval_every=1,
                              eval_size=10, sample_k=2, kl_cov_share=0.2, clip_cov_share=0.2,
                              clip_cov_bounds=(-10.0, 10.0)))
    shares = [r["controlled_share"] for r in out["history"]]
    if control == "entropy_bonus":
        assert shares == [0.0, 0.0]
    else:
        assert all(s > 0 for s in shares)
    with pytest.raises(ValueError, match="bogus"):
        grpo.main(grpo.Args(control="bogus"))
