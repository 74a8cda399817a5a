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
