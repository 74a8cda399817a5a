"""The TRACE verdicts against constructed ground truth: every case of the calibration must match;
the simulated families run in-process on a tiny number of data sets (the full run is the script's)."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_calibration_matches_every_constructed_truth(capsys):
    import trace_calibration

    matched, total = trace_calibration.main(["--datasets", "0"])
    out = capsys.readouterr().out
    assert total >= 12 and out.strip().endswith(f"verdicts matching constructed truth: {matched}/{total}")
    assert matched == total, out


def test_calibration_can_fail(monkeypatch, capsys):
    # a verdict that ignores the unit, noise and missing data is caught: the check can fail
    import trace_calibration

    monkeypatch.setattr(trace_calibration, "judge", lambda case: "behaviour change")
    matched, total = trace_calibration.main(["--datasets", "0"])
    assert matched < total and "NO" in capsys.readouterr().out
    truths = {c.truth for c in trace_calibration.cases()}
    assert {"mixed", "withheld", "insufficient data", "measurement artifact", "no effect"} <= truths
    met, targeted = trace_calibration.family_table(1)
    assert targeted >= 8 and met < targeted  # families whose truth is not behaviour change miss


def test_simulated_families_smoke(capsys):
    import trace_calibration
    from trace_families import FAMILIES

    met, targeted = trace_calibration.family_table(2, seed=1)
    out = capsys.readouterr().out
    assert f"simulated families on target: {met}/{targeted}" in out
    assert targeted == sum(f.target > 0 for f in FAMILIES) >= 8
    # each certain artifact is labelled so on every data set, however small the run
    for family in FAMILIES:
        if family.name.startswith("certain artifact"):
            assert trace_calibration.simulate(family, 2, seed=1) == {"measurement artifact": 2}


def _results(name: str) -> tuple[str, dict]:
    """The TRACE docs page (``docs/families/tooluse.md``) as one line (its lines wrap anywhere) and
    ``benchmarks/results/<name>``."""
    import json

    root = Path(__file__).resolve().parents[2]
    return " ".join((root / "docs/families/tooluse.md").read_text().split()), json.loads((root / "benchmarks/results" / name).read_text())


def test_readme_calibration_rates_come_from_the_50_data_set_run():
    from trace_families import ATTRIBUTIONS

    readme, results = _results("trace_calibration_50.json")
    n, families = results["datasets_per_family"], results["families"]
    assert n == 50 and len(families) == 13
    wrong = sum(families["stochastic agent, no shift, fixed ruler"].get(label, 0) for label in ATTRIBUTIONS)
    right = families["stochastic agent, shift -0.2, fixed ruler"].get("behaviour change", 0)
    assert f"mislabelled as an attribution in {wrong} of {n} ({wrong / n:.0%}) with a fixed ruler" in readme
    assert f"**behaviour change** in {right / n:.0%} ({right} of {n};" in readme
    unregraded = sum(families["stochastic agent, no shift, no regrade"].get(label, 0) for label in ATTRIBUTIONS)
    assert f"and {unregraded} of {n} without one" in readme
    matched, total = results["constructed"]["matched"], results["constructed"]["total"]
    assert f"{matched}/{total} constructed cases" in readme


def test_readme_rates_over_250_data_sets_come_from_the_results_file():
    from trace_families import ATTRIBUTIONS

    readme, results = _results("trace_calibration_250.json")
    n, families = results["datasets_per_family"], results["families"]
    wrong = sum(families["stochastic agent, no shift, fixed ruler"].get(label, 0) for label in ATTRIBUTIONS)
    right = families["stochastic agent, shift -0.2, fixed ruler"].get("behaviour change", 0)
    assert n == 250 and wrong / n <= 0.05 and right / n >= 0.80
    assert f"no shift mislabelled in {wrong} of {n} ({wrong / n:.1%}" in readme
    assert f"labelled **behaviour change** in {right} of {n} ({right / n:.0%})" in readme


def test_readme_power_table_is_what_the_noisy_results_file_renders():
    import json

    import trace_calibration

    root = Path(__file__).resolve().parents[2]
    results = json.loads((root / "benchmarks/results/trace_calibration_noisy.json").read_text())
    readme = (root / "docs/families/tooluse.md").read_text()
    assert trace_calibration.readme_power_block(readme) == trace_calibration.power_table(results)
    # the must-show rates, each over >= 200 data sets
    n, families = results["datasets_per_family"], results["families"]
    assert n >= 200
    from trace_families import ATTRIBUTIONS

    def share(name, labels):
        return sum(families[name].get(label, 0) for label in labels) / n

    assert share("noisy agent, grader artifact on cancel tasks, fixed ruler", ["measurement artifact"]) >= 0.80
    assert share("noisy agent, shift -0.2, no regrade (50 x 3)", ["behaviour change"]) >= 0.70
    for null in ("fixed ruler", "no regrade", "reruns share a seed, no regrade", "reruns share a seed, fixed ruler"):
        assert share(f"noisy agent, no shift, {null}", ATTRIBUTIONS) <= 0.05, null


def test_power_table_renders_counts_with_exact_intervals():
    import trace_calibration

    table = trace_calibration.power_table({"datasets_per_family": 200, "families": {
        "noisy agent, no shift, no regrade": {"behaviour change": 11, "no effect": 189},
        "noisy agent, shift -0.2, no regrade (50 x 3)": {"behaviour change": 150, "inconclusive": 50}}})
    # 11 of 200 false attributions is 5.5%: the target is missed, and the table says so
    assert "| no shift, no regrade | no effect | an attribution (false) | 11 / 200 | 5.5% | [2.8%, 9.6%] | <= 5% | NO |" in table
    assert "| shift -0.2, no regrade (50 x 3) | behaviour change | behaviour change | 150 / 200 | 75.0% |" in table
    assert table.startswith(trace_calibration.POWER_BEGIN) and table.endswith(trace_calibration.POWER_END)
