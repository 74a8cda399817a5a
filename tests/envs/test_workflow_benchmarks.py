"""The workflow benchmarks' verdicts: the judge calibration (and that it can fail), paired verdicts."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rsigym.envs.workflow.analyses import paired_verdict

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_judge_calibration_puts_the_judge_above_a_coin_at_chance_and_identical_pairs_are_ties():
    import workflow_judge_calibration as calibration

    result = calibration.main(calibration.Args(instances=1))
    (k, n), (kc, nc) = result["totals"]["judge"], result["totals"]["coin"]
    assert n == nc == 60 and k > kc
    assert result["tally"][("identical", "judge")] == [10, 10]
    assert result["tally"][("label vs answer", "judge")] == [10, 10]
    assert 0.3 < result["per_order"]["coin"] < 0.7
    assert result["verdict"].startswith("judge above the coin control")


def test_judge_calibration_can_fail_with_a_coin_in_the_judge_seat():
    import workflow_judge_calibration as calibration

    result = calibration.main(calibration.Args(instances=1, judge="rsigym/workflow_judge_coin"))
    assert "NOT ABOVE THE CONTROL" in result["verdict"]


def test_paired_verdict_reports_direction_detectable_difference_and_unstable_blocks():
    better = paired_verdict([0.2, 0.3, 0.25, 0.2, 0.3, 0.22, 0.28, 0.3, 0.2, 0.25], ["s0"] * 5 + ["s1"] * 5)
    assert ": better (stable" in better and "minimum detectable difference" in better
    flips = paired_verdict([0.3, 0.25, 0.3, 0.28, 0.3, -0.3, -0.25, -0.3, -0.28, -0.3], ["s0"] * 5 + ["s1"] * 5)
    assert ": unstable (unstable between seed blocks" in flips
    assert paired_verdict([0.1, 0.2], ["s0", "s0"]).startswith("insufficient data")


@pytest.mark.slow
def test_the_equal_budget_search_benchmark_runs_every_arm_at_a_tiny_budget(tmp_path):
    import workflow_evolution

    result = workflow_evolution.main(workflow_evolution.Args(seeds=[0], budget=1, test_per_family=1, sandbox="local",
                                                             out=str(tmp_path)))
    assert set(result["pooled"]) == set(workflow_evolution.ARMS)
    assert all(len(v) == 5 for v in result["pooled"].values())
    assert max(result["blind"].values()) < 0.5  # no constant answer to model_comparison

