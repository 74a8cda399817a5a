"""DIAL scores and the token selectors on constructed examples."""

import math

import pytest
import torch

from rsigym.agents.train.selectors import (
    DIAL, AllTokens, LowLowSwap, RandomSwap, RandomTokens, TopSignal, dial_scores, keep_counts, log_mean, low_low,
    make_selector, top_share)

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


def test_top_share_keeps_the_highest_positions_in_exact_counts():
    scores = torch.tensor([[0.1, 0.9, 0.5, 0.3, 0.7], [5.0, 4.0, 3.0, 2.0, 1.0]])
    mask = torch.tensor([[True] * 5, [False, True, True, True, False]])
    # 0.4 * 5 = 2 and 0.4 * 3 = 1.2: total round(3.2) = 3, so the second row keeps 1, not ceil(1.2) = 2
    kept = top_share(scores, mask, 0.4)
    assert kept.tolist() == [[False, True, False, False, True], [False, True, False, False, False]]


def test_keep_ratio_is_realised_within_one_token():
    # the old per-row ceiling kept 2 of 4 tokens at a ratio of 0.4: a realised 0.5
    counts = keep_counts(torch.full((10,), 4), 0.4)
    assert counts.sum().item() == 16 and set(counts.tolist()) == {1, 2}
    generator = torch.Generator().manual_seed(3)
    for _ in range(200):
        rows = int(torch.randint(1, 40, (1,), generator=generator))
        valid = torch.randint(0, 12, (rows,), generator=generator)
        ratio = float(torch.rand(1, generator=generator).clamp(min=0.01))
        counts = keep_counts(valid, ratio)
        assert abs(counts.sum().item() - ratio * valid.sum().item()) <= 0.5 + 1e-9, (valid, ratio)
        assert ((counts.double() - ratio * valid.double()).abs() < 1.0).all(), (valid, ratio)
        assert (counts <= valid).all()
        mask = torch.arange(12).unsqueeze(0) < valid.unsqueeze(1)  # (rows, 12) ragged valid positions
        kept = top_share(torch.rand(rows, 12, generator=generator), mask, ratio)
        assert torch.equal(kept.sum(dim=1), counts) and not (kept & ~mask).any()


def _swap_batch() -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
    # per row: probabilities (teacher, student); tokens 0 and 1 are low-low (both < 0.1) with the largest
    # divergence, so divergence-only selection (keep 2 of 5) picks exactly them
    p_teacher = torch.tensor([[0.001, 0.05, 0.5, 0.6, 0.9], [0.02, 0.3, 0.001, 0.5, 0.8]])
    p_student = torch.tensor([[0.05, 0.002, 0.2, 0.4, 0.85], [0.09, 0.1, 0.08, 0.45, 0.81]])
    return p_teacher.log(), p_student.log(), torch.ones(2, 5, dtype=torch.bool)


def test_low_low_swap_replaces_the_low_low_picks_at_a_matched_count():
    lt, ls, mask = _swap_batch()
    base = TopSignal(0.4)(lt, ls, mask)
    assert base.tolist() == [[True, True, False, False, False], [True, False, True, False, False]]
    assert low_low(lt, ls, mask, 0.1).tolist() == [[True, True, False, False, False], [True, False, True, False, False]]
    swapped = LowLowSwap(0.4, low_prob=0.1)(lt, ls, mask)
    # the next-largest divergences among the other tokens: row 0 tokens 2 (ln 2.5) and 3 (ln 1.5);
    # row 1 tokens 1 (ln 3) and 3 (ln 1.11)
    assert swapped.tolist() == [[False, False, True, True, False], [False, True, False, True, False]]
    assert torch.equal(swapped.sum(dim=1), base.sum(dim=1))


def test_swaps_keep_the_number_of_selected_tokens_and_the_random_swap_moves_as_many():
    generator = torch.Generator().manual_seed(4)
    lt = torch.log(torch.rand(64, 9, generator=generator) ** 3)  # cubed: many low probabilities
    ls = torch.log(torch.rand(64, 9, generator=generator) ** 3)
    mask = torch.arange(9).unsqueeze(0) < torch.randint(1, 10, (64, 1), generator=generator)
    base = TopSignal(0.4)(lt, ls, mask)
    both_low = low_low(lt, ls, mask, 0.1)
    swapped = LowLowSwap(0.4, 0.1)(lt, ls, mask)
    randomly = RandomSwap(0.4, torch.Generator().manual_seed(0), 0.1)(lt, ls, mask)
    for selection in (swapped, randomly):
        assert torch.equal(selection.sum(dim=1), base.sum(dim=1))
        assert not (selection & ~mask).any()
    # where enough non-low-low replacements exist, no low-low token stays selected
    spare = (mask & ~base & ~both_low).sum(dim=1) >= (base & both_low).sum(dim=1)
    assert not (swapped & both_low)[spare].any()
    assert (base & both_low).any() and (randomly & both_low).any()  # the control keeps some low-low picks
    # the random swap removes exactly as many of the base picks as the low-low swap in each row
    assert torch.equal((base & ~randomly).sum(dim=1), (base & ~swapped).sum(dim=1))
    assert not torch.equal(randomly, swapped)


def test_selectors_keep_the_same_number_of_tokens():
    generator = torch.Generator().manual_seed(1)
    lt = torch.log(torch.rand(8, 10, generator=generator))
    ls = torch.log(torch.rand(8, 10, generator=generator))
    mask = torch.ones(8, 10, dtype=torch.bool)
    assert AllTokens()(lt, ls, mask).all()
    for selector in (TopSignal(0.4), DIAL(1.0, 0.4), RandomTokens(0.4, torch.Generator().manual_seed(0)),
                     make_selector("swap_low_low", 0.4), make_selector("swap_random", 0.4)):
        assert selector(lt, ls, mask).sum(dim=1).tolist() == [4] * 8, selector.name
    with pytest.raises(ValueError, match="keep_ratio"):
        make_selector("dial", keep_ratio=0.0)
    with pytest.raises(ValueError, match="low_prob"):
        make_selector("swap_low_low", low_prob=1.5)
    with pytest.raises(ValueError, match="bogus"):
        make_selector("bogus")
