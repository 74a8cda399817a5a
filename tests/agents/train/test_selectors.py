"""DIAL scores and the token selectors on constructed examples."""

import math

import pytest
import torch

from rsigym.agents.train.selectors import (
    DIAL, AllTokens, RandomTokens, TopSignal, dial_scores, log_mean, make_selector, top_share)

# token 0: both models find it implausible, tenfold ratio; token 1: mid probability, twofold ratio
P_TEACHER = torch.tensor([[0.001, 0.6]])
P_STUDENT = torch.tensor([[0.0001, 0.3]])


def test_logarithmic_mean_values():
    a, b = torch.tensor([math.e, 0.2, 0.5]), torch.tensor([1.0, 0.2, 0.5 + 1e-9])
    L = log_mean(a, b, a.log(), b.log())
    assert torch.allclose(L, torch.tensor([math.e - 1.0, 0.2, 0.5]), atol=1e-6)


def test_dial_ranks_the_implausible_large_ratio_token_below_the_mid_probability_one():
    lt, ls = P_TEACHER.log(), P_STUDENT.log()
    signal = (lt - ls).abs()
    assert signal[0, 0] > signal[0, 1]  # by divergence alone the implausible token wins
    for beta in (0.5, 1.0, 2.0):
        scores = dial_scores(lt, ls, beta)
        assert scores[0, 0] < scores[0, 1], beta
    # hand-computed at beta = 0.5: L = 0.0009 / ln 10 and 0.3 / ln 2
    half = dial_scores(lt, ls, 0.5)
    assert torch.allclose(half, torch.tensor([[math.log(10) * math.sqrt(0.0009 / math.log(10)),
                                               math.log(2) * math.sqrt(0.3 / math.log(2))]]), rtol=1e-4)
    mask = torch.ones(1, 2, dtype=torch.bool)
    assert DIAL(beta=1.0, keep_ratio=0.5)(lt, ls, mask).tolist() == [[False, True]]
    assert TopSignal(keep_ratio=0.5)(lt, ls, mask).tolist() == [[True, False]]


def test_dial_at_beta_one_is_the_probability_gap_and_at_zero_the_divergence():
    generator = torch.Generator().manual_seed(0)
    p_teacher = torch.rand(4, 7, generator=generator).clamp(min=1e-4)
    p_student = torch.rand(4, 7, generator=generator).clamp(min=1e-4)
    p_student[0, 0] = p_teacher[0, 0]  # equal probabilities: score 0
    lt, ls = p_teacher.log(), p_student.log()
    assert torch.allclose(dial_scores(lt, ls, 1.0), (p_teacher - p_student).abs(), atol=1e-6)
    assert torch.allclose(dial_scores(lt, ls, 0.0), (lt - ls).abs())


def test_top_share_keeps_ceil_of_the_ratio_of_valid_positions_per_response():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.3, 0.7], [5.0, 4.0, 3.0, 2.0, 1.0]])
    mask = torch.tensor([[True] * 5, [False, True, True, True, False]])
    kept = top_share(scores, mask, 0.4)
    assert kept.tolist() == [[False, True, False, False, True], [False, True, True, False, False]]


def test_selectors_keep_the_same_number_of_tokens():
    generator = torch.Generator().manual_seed(1)
    lt = torch.log(torch.rand(8, 10, generator=generator))
    ls = torch.log(torch.rand(8, 10, generator=generator))
    mask = torch.ones(8, 10, dtype=torch.bool)
    assert AllTokens()(lt, ls, mask).all()
    for selector in (TopSignal(0.4), DIAL(1.0, 0.4), RandomTokens(0.4, torch.Generator().manual_seed(0))):
        assert selector(lt, ls, mask).sum(dim=1).tolist() == [4] * 8, selector.name
    with pytest.raises(ValueError, match="keep_ratio"):
        make_selector("dial", keep_ratio=0.0)
    with pytest.raises(ValueError, match="bogus"):
        make_selector("bogus")
