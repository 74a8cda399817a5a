"""EvoAlloc's acceptance rule on simulated trials (``benchmarks/evoalloc_trials.py``): the docs page's
power table is what the committed results file renders, the rule keeps equivalent and worse
challengers out at every measured trial length, and the default trial length is the smallest
that meets every target."""

import json
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))


def _results() -> dict:
    return json.loads((ROOT / "benchmarks/results/evoalloc_trials.json").read_text())


def test_readme_evoalloc_power_table_is_what_the_results_file_renders():
    import evoalloc_trials

    readme = (ROOT / "docs/families/evolution.md").read_text()
    start, end = readme.index(evoalloc_trials.POWER_BEGIN), readme.index(evoalloc_trials.POWER_END)
    assert readme[start:end + len(evoalloc_trials.POWER_END)] == evoalloc_trials.power_table(_results())


def test_equivalent_and_worse_challengers_are_kept_out_at_every_trial_length():
    import evoalloc_trials

    results = _results()
    n = results["trials"]
    assert {"10", "30", "100"} <= set(results["accepted"])
    for length, counts in results["accepted"].items():
        for name in ("equivalent", "5% costlier", "5 points fewer new bests"):
            assert counts[name] / n <= 0.05, (length, name, counts[name])
    # the challengers are what their names say, measured on the model
    cost0, catch0 = results["policies"]["incumbent"]
    assert abs(results["policies"]["5% costlier"][0] / cost0 - 1.05) < 0.01
    assert abs(catch0 - results["policies"]["5 points fewer new bests"][1] - 0.05) < 0.01
    assert results["policies"]["20% cheaper, same catch rate"][0] / cost0 <= 0.805
    best = evoalloc_trials.smallest_length(results)
    assert best is not None and results["accepted"][str(best)]["20% cheaper, same catch rate"] / n >= 0.80


def test_the_default_trial_length_is_the_smallest_that_meets_every_target():
    import evoalloc_trials
    from rsigym.envs.evolution.evoalloc import DEFAULT_TRIAL_CANDIDATES

    assert DEFAULT_TRIAL_CANDIDATES == evoalloc_trials.smallest_length(_results())


def test_power_table_says_no_where_a_target_is_missed():
    import evoalloc_trials

    fake = {"trials": 100, "policies": {name: [0.3, 0.95] for name in ["incumbent", *evoalloc_trials.TARGETS]},
            "accepted": {"10": {"equivalent": 9, "5% costlier": 0, "5 points fewer new bests": 0,
                                "20% cheaper, same catch rate": 90}}}
    table = evoalloc_trials.power_table(fake)
    assert "| 10 | 9/100 = 9.0% [4.2%, 16.4%] |" in table and table.count("| NO |") == 1
    assert "Smallest trial length meeting every target: **none measured**" in table


def test_simulated_trials_smoke():
    import evoalloc_trials

    results = evoalloc_trials.run([5], trials=3, seed=1, candidates=300)
    assert set(results["accepted"]["5"]) == set(evoalloc_trials.TARGETS)
    assert all(0 <= k <= 3 for k in results["accepted"]["5"].values())
