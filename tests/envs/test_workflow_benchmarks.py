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



def _runs(gen2_gain: float, prefer: float, n: int = 20, seed: int = 0) -> list[dict]:
    import numpy as np

    rng = np.random.default_rng(seed)
    runs = []
    for s in range(n):
        gen1 = float(rng.uniform(0.2, 0.5))
        wins = int(rng.binomial(8, prefer))
        runs.append({"seed": s, "gen1": gen1, "gen2": gen1 + gen2_gain + float(rng.normal(0, 0.05)),
                     "gen2_seedspec": gen1, "prefer_gen2": wins, "prefer_gen1": 8 - wins, "ties": 12})
    return runs


def test_generations_are_compared_with_the_run_as_the_unit_and_the_verdict_can_fail():
    import workflow_generations as generations

    assert generations.run_summary(_runs(0.10, 0.7))["verdict"] == "gen-2 better"
    nulls = sum(generations.run_summary(_runs(0.0, 0.5, seed=s))["verdict"] != "no detectable difference"
                for s in range(40))
    assert nulls <= 6                                          # a 5% test over 40 constructed nulls
    summary = generations.run_summary(_runs(0.0, 0.64))
    assert summary["share_ci"][0] < 0.64 < summary["share_ci"][1]
    assert generations.run_summary(list(reversed(_runs(0.1, 0.6)))) == generations.run_summary(_runs(0.1, 0.6))
    assert "insufficient data" in generations.run_summary(_runs(0.1, 0.6, n=3))["lines"][0]


def test_the_readme_states_the_committed_generations_results():
    import json

    import workflow_generations as generations

    result = json.loads(generations.RESULTS.read_text())
    assert result["summary"]["runs"] >= 20
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text()
    assert generations.readme_sentence(result) in " ".join(readme.split()), (
        "README's two-generations sentence differs from benchmarks/results/workflow_generations.json")
