"""Statistics checked against numbers worked out by hand (the arithmetic is in the comments)."""

import math

import numpy as np
import pytest

from rsigym.report.stats import (
    flip_rate, icc_oneway, mcnemar_exact, minimum_detectable_difference, ndcg_at_k, paired_bootstrap_ci,
    regret_at_k, single_run_difference_sd, spearman, tost_paired,
)


def test_mcnemar_exact_on_discordant_pairs():
    # b=8, c=2: 2 * P(X <= 2 | n=10, p=1/2) = 2 * (1 + 10 + 45) / 1024 = 0.109375
    assert mcnemar_exact(8, 2) == pytest.approx(0.109375, abs=1e-12)
    assert mcnemar_exact(2, 8) == pytest.approx(0.109375, abs=1e-12)
    # b=5, c=0: 2 * (1/2)^5 = 0.0625
    assert mcnemar_exact(5, 0) == pytest.approx(0.0625, abs=1e-12)
    assert mcnemar_exact(0, 0) == 1.0
    with pytest.raises(ValueError, match="b=-1"):
        mcnemar_exact(-1, 2)


def test_tost_on_a_known_sample():
    # d = (0, 0.02, 0.04): mean 0.02, sd 0.02, se = 0.02/sqrt(3), df = 2 where the t CDF is
    # F(t) = 1/2 + t / (2 sqrt(2 + t^2)). Upper test: t = (0.02 - 0.10)/se = -4 sqrt(3),
    # p = 1/2 - 4 sqrt(3) / (2 sqrt(50)) = 0.0101021; lower: t = 6 sqrt(3), p = 0.0045656.
    result = tost_paired([0.0, 0.02, 0.04], margin=0.10)
    assert result.p_value == pytest.approx(0.5 - 2 * math.sqrt(3 / 50), abs=1e-9)
    assert result.equivalent
    # 90% CI: t_{0.95, 2} = 0.9 / sqrt(2 * 0.95 * 0.05) = 2.919986; 0.02 -+ 2.919986 * 0.011547
    half = 0.9 / math.sqrt(0.095) * 0.02 / math.sqrt(3)
    assert (result.ci90_low, result.ci90_high) == pytest.approx((0.02 - half, 0.02 + half), abs=1e-9)
    # margin 0.05: t = -0.03/se = -1.5 sqrt(3), p = 1/2 - 0.75 sqrt(3/8.75) = 0.060845 > 0.05
    narrow = tost_paired([0.0, 0.02, 0.04], margin=0.05)
    assert narrow.p_value == pytest.approx(0.5 - 0.75 * math.sqrt(3 / 8.75), abs=1e-9)
    assert not narrow.equivalent


def test_tost_degenerate_samples():
    assert tost_paired([0.0, 0.0, 0.0]).equivalent
    assert tost_paired([0.05, 0.05]).ci90_low == 0.05
    assert not tost_paired([0.2, 0.2, 0.2]).equivalent
    assert tost_paired([0.2, 0.2, 0.2], margin=0.25).equivalent
    single = tost_paired([0.0])  # one difference cannot show equivalence
    assert not single.equivalent and single.p_value == 1.0
    assert not tost_paired([]).equivalent
    with pytest.raises(ValueError, match="margin"):
        tost_paired([0.0, 1.0], margin=0)


def test_paired_bootstrap_ci():
    assert paired_bootstrap_ci([0.3]) == (0.3, 0.3)
    assert paired_bootstrap_ci([-1.0] * 5) == (-1.0, -1.0)
    assert all(math.isnan(x) for x in paired_bootstrap_ci([]))
    low, high = paired_bootstrap_ci([0, 1, 0, 1, 1, 0, 1, 1], seed=3)
    # the mean 0.625 lies inside; a resampled mean of 8 binary values is a multiple of 1/8
    assert 0 <= low < 0.625 < high <= 1
    assert (low * 8) == pytest.approx(round(low * 8)) and (high * 8) == pytest.approx(round(high * 8))
    assert paired_bootstrap_ci([0, 1, 0, 1, 1, 0, 1, 1], seed=3) == (low, high)  # seeded


def test_flip_rate_on_a_small_table():
    # a: 2 passes 1 fail -> 2 of 3 pairs disagree; b: 0 of 1; c: scores 0,1,1,0 -> 2*2 = 4 of 6.
    # pooled 6 / 10. Wilson 95%: z^2/n = 0.384146; centre (0.6 + 0.192073)/1.384146 = 0.572247;
    # half = z/1.384146 * sqrt(0.024 + 0.0096036) = 0.259573 -> (0.312674, 0.831820)
    rate, low, high = flip_rate({"a": [True, True, False], "b": [True, True], "c": [0.0, 1.0, 1.0, 0.0]})
    assert rate == pytest.approx(0.6)
    assert (low, high) == pytest.approx((0.312674, 0.831820), abs=2e-6)
    rate, low, high = flip_rate({"a": [1.0, 1.0], "b": [0.0, 0.0, 0.0]})
    assert rate == 0.0 and low == 0.0 and 0 < high < 1  # no flip, yet not certainty
    assert math.isnan(flip_rate({"a": [1.0]})[0])
    assert flip_rate({"a": [0.4, 0.6]}, threshold=0.5)[0] == 1.0


def test_icc_oneway_by_hand():
    # rows (1,2), (3,5), (6,6): grand 23/6, row means 1.5, 4, 6.
    # MSB = 2 * (2.3333^2 + 0.1667^2 + 2.1667^2) / 2 = 10.1667; MSW = (0.5 + 2 + 0) / 3 = 0.8333
    # ICC = (10.1667 - 0.8333) / (10.1667 + 0.8333) = 9.3333 / 11 = 0.848485
    assert icc_oneway([[1, 2], [3, 5], [6, 6]]) == pytest.approx(28 / 33, abs=1e-12)
    # binary 3x2: MSB = 0.5, MSW = 1/6, ICC = (1/3) / (2/3) = 0.5
    assert icc_oneway([[1, 1], [0, 1], [0, 0]]) == pytest.approx(0.5)
    # ragged: rows (1,1,0), (1,1), (0,1,1,0): grand 6/9, means 2/3, 1, 1/2;
    # MSB = (0 + 2/9 + 4/36) / 2 = 1/6, MSW = (2/3 + 0 + 1) / 6 = 5/18, k0 = (9 - 29/9) / 2 = 26/9,
    # ICC = (1/6 - 5/18) / (1/6 + 17/9 * 5/18) = (-2/18) / (112/162) = -9/56
    assert icc_oneway([[1, 1, 0], [1, 1], [0, 1, 1, 0]]) == pytest.approx(-9 / 56)
    assert icc_oneway([[1, 1], [1, 1]]) == 1.0  # reruns agree; 0/0 defined as 1
    assert icc_oneway([[0, 0], [1, 1]]) == 1.0
    assert math.isnan(icc_oneway([[1, 0]]))         # one task
    assert math.isnan(icc_oneway([[1], [0]]))       # no rerun


def test_single_run_difference_sd_and_mdd():
    # MSW = 2.5 / 3 for rows (1,2), (3,5), (6,6): sd of a two-run difference = sqrt(5/3)
    assert single_run_difference_sd([[1, 2], [3, 5], [6, 6]]) == pytest.approx(math.sqrt(5 / 3))
    assert math.isnan(single_run_difference_sd([[1], [2]]))
    # (1.959964 + 0.841621) * 0.5 / sqrt(25) = 0.2801585
    assert minimum_detectable_difference(0.5, 25) == pytest.approx(0.2801585, abs=1e-6)
    # alpha 0.10, power 0.5: z = 1.644854 + 0 -> 1.644854 * 1.0 / 1
    assert minimum_detectable_difference(1.0, 1, alpha=0.10, power=0.5) == pytest.approx(1.644854, abs=1e-6)
    with pytest.raises(ValueError):
        minimum_detectable_difference(1.0, 0)


def test_ranking_metrics():
    # DCG = 3 + 2/log2(3) + 3/2 + 0 + 1/log2(6) + 2/log2(7) = 6.861127
    # ideal 3,3,2,2,1,0: 3 + 3/log2(3) + 1 + 2/log2(5) + 1/log2(6) = 7.140995
    assert ndcg_at_k([3, 2, 3, 0, 1, 2], 6) == pytest.approx(6.861127 / 7.140995, abs=1e-6)
    # k=2: (3 + 2/log2 3) / (3 + 3/log2 3) = 4.261860 / 4.892789
    assert ndcg_at_k([3, 2, 3, 0, 1, 2], 2) == pytest.approx(4.261860 / 4.892789, abs=1e-6)
    assert ndcg_at_k([0, 0], 2) == 0.0
    assert ndcg_at_k([1, 0, 0], 10) == 1.0
    with pytest.raises(ValueError):
        ndcg_at_k([-1, 2], 2)
    # best is 0.5 (index 1); picks 2, 0 -> best picked 0.3: regret 0.2; at k=3 it is picked
    assert regret_at_k([0.1, 0.5, 0.3], [2, 0, 1], 2) == pytest.approx(0.2)
    assert regret_at_k([0.1, 0.5, 0.3], [2, 0, 1], 3) == 0.0
    # ranks (1,2,3) vs (1,3,2): rho = 1 - 6 * 2 / (3 * 8) = 0.5
    assert spearman([1, 2, 3], [1, 3, 2]) == pytest.approx(0.5)
    assert math.isnan(spearman([1, 1, 1], [1, 2, 3]))


def test_sign_flip_test_is_exact_and_needs_no_variance():
    from rsigym.report.stats import sign_flip_test

    # 12 equal drops: only the all-negative and all-positive flips are as extreme: 2 / 2^12
    assert sign_flip_test([-1.0] * 12) == pytest.approx(2 / 4096)
    # 3 drops among 12 tasks: zeros carry no sign, 2 / 2^3 = 0.25
    assert sign_flip_test([-1.0] * 3 + [0.0] * 9) == pytest.approx(0.25)
    # (1, 2, -3): |mean| >= observed for flips with sum in {0 ... }: sums are +-6, +-4, +-2, 0, 0;
    # observed sum 0 -> every flip is as extreme: p = 1
    assert sign_flip_test([1.0, 2.0, -3.0]) == 1.0
    assert sign_flip_test([]) == 1.0 and sign_flip_test([0.5]) == 1.0


def test_tost_bound_for_a_constant_sample():
    # 3 equal zeros: a 10% share of differing tasks (by at most 1) hides with (0.9)^3 = 0.729
    result = tost_paired([0.0] * 3, margin=0.10, bound=1.0)
    assert result.p_value == pytest.approx(0.729) and not result.equivalent
    # 300 equal zeros: 0.9^300 ~ 1.9e-14; CI half-width (1 - 0.05^(1/300)) = 0.009937
    result = tost_paired([0.0] * 300, margin=0.10, bound=1.0)
    assert result.equivalent and result.p_value == pytest.approx(0.9 ** 300)
    assert result.ci90_high == pytest.approx(1 - 0.05 ** (1 / 300))
    # 30 equal -0.02: q = 0.08 / 1.02, p = (1 - q)^30 = 0.0868 -> not yet
    assert tost_paired([-0.02] * 30, bound=1.0).p_value == pytest.approx((1 - 0.08 / 1.02) ** 30)
    assert not tost_paired([0.2] * 50, bound=1.0).equivalent
    assert tost_paired([0.0] * 3).equivalent  # without a bound: the old reading, kept for callers that know


def test_task_flip_share_and_pass_hat_k():
    from rsigym.report.stats import pass_hat_k, task_flip_share

    table = {"a": [1.0, 1.0, 0.0], "b": [1.0, 1.0], "c": [0.0, 1.0, 1.0, 0.0], "d": [1.0]}
    share, low, high, tasks = task_flip_share(table)
    assert (share, tasks) == (2 / 3, 3) and low < 2 / 3 < high  # a and c flip, b does not, d has no rerun
    # pass^1 over all four tasks: (2/3 + 1 + 1/2 + 1) / 4; pass^2: a C(2,2)/C(3,2) = 1/3, b 1,
    # c C(2,2)/C(4,2) = 1/6 -> (1/3 + 1 + 1/6) / 3 = 0.5; pass^3: a 0, c C(2,3) = 0 -> 0
    assert pass_hat_k(table, 1) == pytest.approx((2 / 3 + 1 + 0.5 + 1) / 4)
    assert pass_hat_k(table, 2) == pytest.approx(0.5)
    assert pass_hat_k(table, 3) == 0.0 and math.isnan(pass_hat_k(table, 5))
    with pytest.raises(ValueError, match="k must be"):
        pass_hat_k(table, 0)


def test_resampling_statistics_ignore_the_order_of_their_units():
    from rsigym.report.stats import bootstrap_ci, cluster_bootstrap_ci, sign_flip_test

    rng = np.random.default_rng(5)
    values = rng.normal(0.1, 1.0, 40).tolist()
    clusters = [f"t{i % 7}" for i in range(40)]
    order = rng.permutation(40)
    shuffled = [values[i] for i in order]
    assert bootstrap_ci(values) == bootstrap_ci(shuffled)
    assert sign_flip_test(values[:30]) == sign_flip_test(sorted(values[:30], reverse=True))
    assert cluster_bootstrap_ci(values, clusters) == cluster_bootstrap_ci(shuffled, [clusters[i] for i in order])


def test_cluster_bootstrap_resamples_clusters_not_units():
    from rsigym.report.stats import bootstrap_ci, cluster_bootstrap_ci

    # one cluster carries the whole effect: units look significant, clusters do not
    values = [1.0] * 20 + [0.0] * 80
    clusters = ["a"] * 20 + [c for c in "bcde" for _ in range(20)]
    low, high, n = cluster_bootstrap_ci(values, clusters)
    assert n == 5 and low == 0.0 and high >= 0.4  # cluster means 1, 0, 0, 0, 0
    unit_low, _ = bootstrap_ci(values)
    assert unit_low > 0.1 and low <= 0.0
    assert cluster_bootstrap_ci([math.nan, 2.0], ["a", "b"])[2] == 1
    with pytest.raises(ValueError, match="differ in length"):
        cluster_bootstrap_ci([1.0], [])


def test_cluster_t_ci_is_a_t_interval_over_cluster_means():
    from rsigym.report.stats import cluster_t_ci

    # cluster means 1, 2, 3: mean 2, sd 1, t(0.975, 2) = 4.303 -> 2 +- 4.303 / sqrt(3) = 2 +- 2.484
    mean, low, high, n = cluster_t_ci([1.0, 1.0, 2.0, 3.0, 3.0, 3.0], ["a", "a", "b", "c", "c", "c"])
    assert (mean, n) == (2.0, 3) and low == pytest.approx(-0.484, abs=1e-3) and high == pytest.approx(4.484, abs=1e-3)
    assert cluster_t_ci([1.0, 1.0], ["a", "b"])[1:3] == (1.0, 1.0)
    assert math.isnan(cluster_t_ci([1.0], ["a"])[1])
