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
def test_the_equal_budget_search_benchmark_runs_every_arm_at_a_tiny_budget(tmp_path, monkeypatch):
    import workflow_evolution

    # a fixed salt: with a fresh one per run, one of the three constant answers hits 30 or more of
    # the 60 instances in 1.7% of runs (Binomial(60, 1/3)), and the check below failed once that way
    monkeypatch.setattr(workflow_evolution, "new_salt", lambda: "0123456789abcdef0123456789abcdef")
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
    readme = (Path(__file__).resolve().parents[2] / "docs/families/workflow.md").read_text()
    assert generations.readme_sentence(result) in " ".join(readme.split()), (
        "docs/families/workflow.md's two-generations sentence differs from benchmarks/results/workflow_generations.json")
    assert generations.recursion_call(result["per_run"]) in " ".join(readme.split())


def test_the_recursion_call_rejects_an_even_share_only_when_the_runs_show_it():
    import workflow_generations as generations

    strong = generations.run_summary(_runs(0.0, 0.8))
    assert strong["recursion_verdict"] == "gen-2 designs preferred" and strong["recursion_p"] < 0.05
    assert generations.run_summary(_runs(0.0, 0.2))["recursion_verdict"] == "gen-1 designs preferred"
    called = sum(generations.run_summary(_runs(0.0, 0.5, seed=s), resamples=1000)["recursion_verdict"]
                 != "no detectable preference" for s in range(40))
    assert called <= 6                                          # a 5% test over 40 constructed nulls
    assert generations.recursion_verdict(0.2, 5.0) == "no detectable preference"


def test_the_recursion_calibration_counts_calls_per_true_share_and_can_fail():
    import workflow_recursion_calibration as calibration

    decided = [20, 10, 0, 15]
    case = calibration.calibrate(30, 20, 0.0, decided, 0, 500)
    assert case["grid"]["0.80"]["gen2_called"]["k"] == 30          # a large preference is always seen
    assert case["null"]["n"] == 30 and case["null"]["k"] <= 5
    few = calibration.calibrate(30, 20, 0.0, [2, 0, 1], 0, 500)     # too few comparisons: the positive control fails
    assert not few["positive_met"]
    assert calibration.estimated_kappa([{"prefer_gen2": k, "prefer_gen1": 20 - k} for k in (0, 20, 0, 20, 10)]) < 2
    assert calibration.estimated_kappa([{"prefer_gen2": k, "prefer_gen1": 20 - k} for k in (10, 10, 10, 11)]) == 0


def test_the_readme_states_the_committed_recursion_calibration():
    import json

    import workflow_recursion_calibration as calibration

    result = json.loads(calibration.RESULTS.read_text())
    assert result["args"]["designs"] >= 200 and all(len(c["grid"]) == len(calibration.GRID) for c in result["cases"])
    readme = (Path(__file__).resolve().parents[2] / "docs/families/workflow.md").read_text()
    assert calibration.render(result) in " ".join(readme.split()), (
        "docs/families/workflow.md's recursion-calibration sentence differs from benchmarks/results/workflow_recursion_calibration.json")
