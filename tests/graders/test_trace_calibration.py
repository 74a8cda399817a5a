"""The TRACE verdicts against constructed ground truth: every case of the calibration must match."""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))


def test_calibration_matches_every_constructed_truth(capsys):
    import trace_calibration

    matched, total = trace_calibration.main()
    out = capsys.readouterr().out
    assert total >= 12 and out.strip().endswith(f"verdicts matching constructed truth: {matched}/{total}")
    assert matched == total, out


def test_calibration_can_fail(monkeypatch, capsys):
    # a verdict that ignores the unit, noise and missing data is caught: the check can fail
    import trace_calibration

    monkeypatch.setattr(trace_calibration, "judge", lambda case: "behaviour change")
    matched, total = trace_calibration.main()
    assert matched < total and "NO" in capsys.readouterr().out
    truths = {c.truth for c in trace_calibration.cases()}
    assert {"mixed", "withheld", "insufficient data", "measurement artifact", "no effect"} <= truths
