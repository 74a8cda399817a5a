"""The null calibration separates the two causes it names, on constructed blocks with known truth."""

import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import posttrain_null_calibration as calibration  # noqa: E402


def _blocks(shared_sd: float, seed: int) -> list[list[float]]:
    rng = np.random.default_rng(seed)
    # 60 blocks of 3 warm starts: independent unit noise plus a part every warm start of a block shares
    return [(rng.normal(0, 1, 3) + rng.normal(0, shared_sd)).tolist() for _ in range(60)]


def test_independent_warm_starts_give_a_five_percent_rule_and_a_ratio_near_one():
    out = calibration.calibrate(_blocks(0.0, 1), draws=20000)
    low, high = out["constructed"]["ci"]
    assert low <= 0.05 <= high + 0.01
    assert 0.5 < out["ratio"] < 1.6 and out["f_p"] > 0.01


def test_a_shared_block_part_shows_in_the_ratio_not_in_the_constructed_rate():
    out = calibration.calibrate(_blocks(1.0, 2), draws=20000)
    assert out["ratio"] > 2.5 and out["f_p"] < 0.001  # between blocks: 1/3 + 1 against 1/3 within
    assert out["constructed"]["rate"] < 0.08  # the pooled draws break the blocks up: the rule's shape is fine
