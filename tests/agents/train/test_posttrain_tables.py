"""The README's post-training tables are generated from the committed results files, and cannot drift."""

import json
import math
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import posttrain_tables  # noqa: E402


PRESENT = [name for name in ("grpo_dropout.json", "dial_opd.json") if (ROOT / "benchmarks" / "results" / name).exists()]


def test_readme_tables_equal_what_the_results_files_generate():
    assert "grpo_dropout.json" in PRESENT
    readme = (ROOT / "docs/families/posttrain.md").read_text()
    assert posttrain_tables.readme_block(readme) == posttrain_tables.render(), (
        "README post-training tables differ from benchmarks/results/*.json: run python benchmarks/posttrain_tables.py --write")


def test_committed_results_state_a_verdict_per_claim_with_zero_held_out_overlap():
    for name in PRESENT:
        results = json.loads((ROOT / "benchmarks" / "results" / name).read_text())
        assert len(results["blocks"]) == 2, name  # two seed blocks: the stability rule needs both
        for block in results["blocks"].values():
            assert block["regime"]["held_out_overlap"] == 0
            assert len({u[0] for u in block["units"]}) >= 3  # at least 3 warm starts per block
        for claim in results["claims"]:
            labels = {c["label"] for c in claim["blocks"].values()}
            assert claim["verdict"] == (labels.pop() if len(labels) == 1 else "unstable"), claim["id"]


def test_a_changed_number_shows_and_the_markers_are_required(tmp_path):
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{posttrain_tables.BEGIN}\nstale\n{posttrain_tables.END}\nrest\n")
    posttrain_tables.write_readme(readme, ROOT / "benchmarks" / "results")
    text = readme.read_text()
    assert posttrain_tables.readme_block(text) == posttrain_tables.render()
    assert text.startswith("intro\n") and text.endswith("\nrest\n")
    results = tmp_path / "results"
    results.mkdir()
    data = json.loads((ROOT / "benchmarks" / "results" / "grpo_dropout.json").read_text())
    data["claims"][0]["verdict"] = "holds" if data["claims"][0]["verdict"] != "holds" else "refuted"
    (results / "grpo_dropout.json").write_text(json.dumps(data))
    assert posttrain_tables.render(results) != posttrain_tables.render().split("\n\nFrom `benchmarks/results/dial")[0]
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="posttrain-tables"):
        posttrain_tables.write_readme(readme)


def test_power_rows_say_met_or_not_met_against_their_targets():
    control, null = {"arm": "positive control"}, {"arm": "null"}
    assert posttrain_tables.power_met(control, {"total": 20, "rate": 0.8}) == "met"
    assert posttrain_tables.power_met(control, {"total": 20, "rate": 0.75}) == "not met"
    assert posttrain_tables.power_met(null, {"total": 20, "rate": 0.05}) == "met"
    assert posttrain_tables.power_met(null, {"total": 20, "rate": 0.1}) == "not met"
    assert posttrain_tables.power_met(null, {"total": 0, "rate": math.nan}) == "none"
    # 0 calls in 72 replications: the exact upper bound first falls below 5%
    assert posttrain_tables._clean_replications(0.05) == 72


def _arm(kind: str, variant: str, metric: str, count: int, pair_count: int | None = None) -> dict:
    """A power arm over 20 blocks (10 pairs): ``count`` blocks and ``pair_count`` pairs detected or called."""
    per_block = {"count": count, "total": 20, "rate": count / 20, "ci": [0.0, 1.0]}
    pair_count = count // 2 if pair_count is None else pair_count
    pairs = {"count": pair_count, "total": 10, "rate": pair_count / 10, "ci": [0.0, 1.0]}
    return {"arm": kind, "variant": variant, "baseline": "none", "metric": metric, "per_block": per_block,
            "two_blocks": pairs, "mdd_mean": 0.1, "effect_mean": 0.2}


def test_a_claimed_metric_meets_its_targets_only_with_a_detected_control_and_a_quiet_null():
    claims = [{"id": "G1", "metric": "mean_at_k"}, {"id": "G2", "metric": "pass_at_k"},
              {"id": "G3", "metric": "entropy_end"}, {"id": "G4", "metric": "mean_at_k"}]
    power = [_arm("positive control", "weak", "mean_at_k", 3), _arm("positive control", "strong", "mean_at_k", 20),
             _arm("null", "reseed", "mean_at_k", 1),
             _arm("positive control", "strong", "pass_at_k", 20), _arm("null", "reseed", "pass_at_k", 4, 1),
             _arm("null", "reseed", "entropy_end", 0)]
    rows = posttrain_tables.claim_metric_targets({"claims": claims, "power": power})[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| Mean@k", "| Pass@k", "| entropy (last 10%)"]
    assert rows[0].startswith("| Mean@k | G1, G4 |") and rows[0].endswith("| met |")  # the strong control counts
    assert rows[1].endswith("| not met |")  # the null called in 1 of 10 pairs
    assert rows[2].endswith("| not met |") and "| none |" in rows[2]  # no positive control on entropy


def test_targets_are_judged_by_the_two_block_rule_with_one_block_beside_it():
    # a null called in 2 of 20 single blocks (0.10) but in no pair, a control detected in 17 of 20 blocks (0.85)
    # but 7 of 10 pairs: the tables' rule is the pair's, so the null meets its target and the control misses it
    claims = [{"id": "G1", "metric": "mean_at_k"}]
    null, control = _arm("null", "reseed", "mean_at_k", 2, 0), _arm("positive control", "strong", "mean_at_k", 17, 7)
    row = posttrain_tables.claim_metric_targets({"claims": claims, "power": [control, null]})[2]
    assert "`reseed` 0/10 = 0.00 [0.00, 1.00]: met (one block 2/20 = 0.10 [0.00, 1.00])" in row
    assert "`strong` 7/10 = 0.70 [0.00, 1.00]: not met (one block 17/20 = 0.85 [0.00, 1.00]; mean Δ +0.200)" in row
    assert row.endswith("| not met |")
    rows = posttrain_tables.power_table({"power": [control, null]})[2:4]
    assert [r.split(" | ")[5] for r in rows] == ["**not met**", "**met**"]  # judged on the pairs
    assert [r.split(" | ")[7] for r in rows] == ["met", "not met"]  # one block beside it
    assert rows[0].split(" | ")[2] == "10 (20)"


def test_power_gap_pools_each_blocks_runs_and_counts_blocks_at_the_target():
    import dial_opd

    def run(end: float) -> dict:
        return {"start_mean_at_k_in": 0.2, "teacher_mean_at_k_in": 0.6, "mean_at_k_in": end}

    per_run = {"A": {"all": {"w0_s100": run(0.4), "w1_s100": run(0.4)}},  # (0.8 - 0.4) / (1.2 - 0.4) = 0.5
               "B": {"all": {"w2_s200": run(0.3), "w3_s200": run(0.3)}}}  # (0.6 - 0.4) / 0.8 = 0.25
    gap = dial_opd.power_gap(per_run)
    assert gap["per_block"] == pytest.approx({"A": 0.5, "B": 0.25})
    assert gap["pooled"] == pytest.approx(0.375)  # (1.4 - 0.8) / (2.4 - 0.8)
    assert gap["reaching_target"] == 1 and gap["blocks"] == 2 and gap["target"] == 0.4
    line = posttrain_tables.power_gap_line({"power_gap": gap})
    assert "37.5% pooled, 25% to 50% per block, 1 of 2 blocks at or above the 40% target" in line
    assert dial_opd.power_gap({}) is None
    assert posttrain_tables.power_gap_line({}).endswith("not measured.")
