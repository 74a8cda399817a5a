"""Claim verdicts of the post-training benchmarks: nested intervals, labels that can fail, the stability rule."""

import random
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).resolve().parents[3] / "benchmarks"))

import posttrain_verdicts as pv  # noqa: E402


def _grid(effect: float, noise: float, warm_starts: int = 4, seeds: int = 2, seed: int = 0) -> dict:
    """Constructed runs with a known effect: ``treated = base + effect + noise``, per (warm start, seed)."""
    rng = random.Random(seed)
    base, treated = {}, {}
    for w in range(warm_starts):
        level = rng.uniform(0.2, 0.6)  # warm starts differ a lot; the pairing removes it
        for s in range(seeds):
            key = pv.run_key(w, s)
            value = level + rng.gauss(0, 0.01)
            base[key] = {"m": value}
            treated[key] = {"m": value + effect + rng.gauss(0, noise)}
    return {"base": base, "treated": treated}


def test_labels_follow_where_the_interval_lies_and_the_claimed_direction():
    assert pv.label([0.01, 0.05], 1, 3) == "holds"
    assert pv.label([0.01, 0.05], -1, 3) == "refuted"
    assert pv.label([-0.05, -0.01], 1, 3) == "refuted"
    assert pv.label([-0.01, 0.05], 1, 3) == "not shown"
    assert pv.label([0.01, 0.05], 1, 2) == "insufficient data"  # fewer than MIN_WARM_STARTS
    assert pv.stable(["holds", "holds"]) == "holds" and pv.stable(["holds", "not shown"]) == "unstable"


def test_known_effects_are_recovered_on_constructed_runs():
    """Calibration: 20 grids each of a true gain, a true loss and no effect; count the matching verdicts."""
    matches = {"holds": 0, "refuted": 0, "not shown": 0}
    for seed in range(20):
        matches["holds"] += pv.compare(_grid(0.05, 0.01, seed=seed), "treated", "base", "m")["label"] == "holds"
        matches["refuted"] += pv.compare(_grid(-0.05, 0.01, seed=seed), "treated", "base", "m")["label"] == "refuted"
        matches["not shown"] += pv.compare(_grid(0.0, 0.01, seed=seed), "treated", "base", "m")["label"] == "not shown"
    assert matches["holds"] == 20 and matches["refuted"] == 20 and matches["not shown"] >= 16


def test_nested_interval_ignores_record_order_and_weighs_warm_starts_equally():
    deltas = {pv.run_key(w, s): 0.1 * w + 0.01 * s for w in range(3) for s in range(2)}
    shuffled = dict(sorted(deltas.items(), key=lambda kv: -kv[1]))
    assert pv.nested_bootstrap_ci(deltas) == pv.nested_bootstrap_ci(shuffled)
    low, high = pv.nested_bootstrap_ci(deltas)
    assert low < 0.105 < high
    comparison = pv.compare(_grid(0.0, 0.0, warm_starts=3, seeds=1), "treated", "base", "m")
    assert comparison["mean"] == pytest.approx(0.0, abs=0.05) and comparison["warm_starts"] == 3


def test_a_claim_that_flips_between_blocks_is_unstable():
    blocks = {"A": _grid(0.05, 0.01, seed=1), "B": _grid(-0.05, 0.01, seed=2)}
    claim = {"id": "X", "text": "treated is better", "variant": "treated", "baseline": "base", "metric": "m",
             "direction": 1}
    [verdict] = pv.claim_verdicts(blocks, [claim])
    assert verdict["blocks"]["A"]["label"] == "holds" and verdict["blocks"]["B"]["label"] == "refuted"
    assert verdict["verdict"] == "unstable"
    summaries = {b: pv.block_summary(grid, "base", ("m",)) for b, grid in blocks.items()}
    assert pv.stability_column(summaries, "base", "treated", "m") == "unstable"
    agreeing = {b: pv.block_summary(_grid(0.05, 0.01, seed=s), "base", ("m",)) for b, s in (("A", 3), ("B", 4))}
    assert pv.stability_column(agreeing, "base", "treated", "m") == "higher"


def test_the_t_rule_calls_a_null_about_as_often_as_its_level_where_the_bootstrap_over_3_units_did_not():
    """Calibration on 400 constructed blocks of 3 warm starts x 1 seed with no effect: the t interval calls about
    5%; the percentile bootstrap over 3 units (the rule before) about a quarter (all three deltas of one sign)."""
    t_calls = boot_calls = 0
    for seed in range(400):
        grid = _grid(0.0, 0.02, warm_starts=3, seeds=1, seed=seed)
        t_calls += pv.compare(grid, "treated", "base", "m")["label"] != "not shown"
        deltas = {k: grid["treated"][k]["m"] - grid["base"][k]["m"] for k in grid["base"]}
        boot_calls += pv.label(pv.nested_bootstrap_ci(deltas, resamples=500, seed=seed), 1, 3) != "not shown"
    assert t_calls / 400 <= 0.09 and boot_calls / 400 >= 0.15


def test_power_arms_count_detections_and_false_calls_with_exact_intervals():
    rng = random.Random(7)
    blocks = {}
    for i, name in enumerate("ABCDEFGHIJKLMNOPQRST"):
        block = _grid(0.05, 0.01, warm_starts=3, seeds=1, seed=i)
        block["null"] = {k: {"m": v["m"] + rng.gauss(0, 0.01)} for k, v in block["base"].items()}  # a reseeded rerun
        blocks[name] = block
    arms = [{"arm": "positive control", "variant": "treated", "baseline": "base", "metric": "m", "direction": 1},
            {"arm": "null", "variant": "null", "baseline": "base", "metric": "m", "direction": 1}]
    positive, null = pv.power_arms(blocks, arms)
    assert positive["per_block"]["count"] == 20 and positive["per_block"]["total"] == 20
    assert positive["two_blocks"] == pv.exact_rate(10, 10)
    assert positive["per_block"]["ci"][0] == pytest.approx(0.025 ** (1 / 20), abs=1e-4)  # exact lower bound of 20/20
    assert null["per_block"]["total"] == 20 and null["per_block"]["count"] <= 3
    assert len(null["labels"]) == 20 and null["mdd_mean"] > 0
    assert pv.exact_rate(0, 20)["ci"][1] == pytest.approx(1 - 0.025 ** (1 / 20), abs=1e-4)
