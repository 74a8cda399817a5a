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


def test_a_claimed_metric_meets_its_targets_only_with_a_detected_control_and_a_quiet_null():
    def arm(kind: str, variant: str, metric: str, count: int) -> dict:
        rate = {"count": count, "total": 20, "rate": count / 20, "ci": [0.0, 1.0]}
        return {"arm": kind, "variant": variant, "baseline": "none", "metric": metric, "per_block": rate,
                "two_blocks": rate, "mdd_mean": 0.1, "effect_mean": 0.2}

    claims = [{"id": "G1", "metric": "mean_at_k"}, {"id": "G2", "metric": "pass_at_k"},
              {"id": "G3", "metric": "entropy_end"}, {"id": "G4", "metric": "mean_at_k"}]
    power = [arm("positive control", "weak", "mean_at_k", 3), arm("positive control", "strong", "mean_at_k", 20),
             arm("null", "reseed", "mean_at_k", 1),
             arm("positive control", "strong", "pass_at_k", 20), arm("null", "reseed", "pass_at_k", 2),
             arm("null", "reseed", "entropy_end", 0)]
    rows = posttrain_tables.claim_metric_targets({"claims": claims, "power": power})[2:]
    assert [row.split(" | ")[0] for row in rows] == ["| Mean@k", "| Pass@k", "| entropy (last 10%)"]
    assert rows[0].startswith("| Mean@k | G1, G4 |") and rows[0].endswith("| met |")  # the strong control counts
    assert rows[1].endswith("| not met |")  # the null called in 2 of 20 blocks
    assert rows[2].endswith("| not met |") and "| none |" in rows[2]  # no positive control on entropy
