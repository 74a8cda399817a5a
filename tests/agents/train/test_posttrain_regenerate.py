"""The regeneration check: the quick presets rerun within the committed tolerance with the same verdicts, and the
comparison catches a number moved past its tolerance or a changed verdict."""

import copy
import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import posttrain_regenerate as regen  # noqa: E402


@pytest.mark.parametrize("module_name", sorted(regen.QUICK))
def test_the_quick_preset_regenerates_within_the_committed_tolerance(tmp_path, module_name):
    committed = json.loads((ROOT / regen.QUICK[module_name]).read_text())
    assert committed["tolerance"]["blocks"] >= 2 and all(v > 0 for v in committed["tolerance"]["metrics"].values())
    regenerated = regen.regenerate(module_name, tmp_path)
    assert regen.mismatches(committed, regenerated) == []


def test_a_moved_number_or_a_changed_verdict_is_a_mismatch():
    committed = json.loads((ROOT / regen.QUICK["grpo_dropout"]).read_text())
    metric, limit = next(iter(committed["tolerance"]["metrics"].items()))
    assert regen.mismatches(committed, copy.deepcopy(committed)) == []

    within, beyond = copy.deepcopy(committed), copy.deepcopy(committed)
    within["blocks"]["A"]["variants"]["none"]["mean"][metric] += 0.5 * limit
    beyond["blocks"]["A"]["variants"]["none"]["mean"][metric] += 1.5 * limit
    assert regen.mismatches(committed, within) == []
    assert [m for m in regen.mismatches(committed, beyond) if f"block A none {metric}" in m]

    flipped = copy.deepcopy(committed)
    claim = flipped["claims"][0]
    claim["verdict"] = "holds" if claim["verdict"] != "holds" else "refuted"
    assert [m for m in regen.mismatches(committed, flipped) if m.startswith(f"claim {claim['id']}")]

    other = copy.deepcopy(committed)
    other["settings"]["steps"] += 1
    assert regen.mismatches(committed, other) == ["settings differ"]


def test_the_tolerance_is_the_measured_rerun_spread_with_a_floor():
    def block(delta: float) -> dict:
        return {"base": {"w0_s1": {"m": 0.5}, "w1_s1": {"m": 0.4}},
                "again": {"w0_s1": {"m": 0.5 + delta}, "w1_s1": {"m": 0.4 + delta}}}

    tolerance = regen.rerun_tolerance({"A": block(0.01), "B": block(0.03)}, "base", "again", ["m"], floor=0.001)
    # block means of the difference 0.01 and 0.03: SD 0.01414, times 2
    assert tolerance["metrics"]["m"] == pytest.approx(2 * 0.0141421, abs=1e-6) and tolerance["blocks"] == 2
    flat = regen.rerun_tolerance({"A": block(0.0), "B": block(0.0)}, "base", "again", ["m"], floor=0.001)
    assert flat["metrics"]["m"] == 0.001
