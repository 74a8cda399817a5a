"""The README's post-training tables are generated from the committed results files, and cannot drift."""

import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[3]
sys.path.insert(0, str(ROOT / "benchmarks"))

import posttrain_tables  # noqa: E402


def test_readme_tables_equal_what_the_results_files_generate():
    for name in ("posttrain_regime.json", "grpo_dropout.json", "dial_opd.json"):
        assert (ROOT / "benchmarks" / "results" / name).exists(), name
    readme = (ROOT / "README.md").read_text()
    assert posttrain_tables.readme_block(readme) == posttrain_tables.render(), (
        "README post-training tables differ from benchmarks/results/*.json: run python benchmarks/posttrain_tables.py --write")


def test_summary_pairs_by_seed_and_a_changed_number_shows(tmp_path):
    per_seed = {"none": {"m": [0.5, 0.6, 0.7]}, "x": {"m": [0.6, 0.6, 0.9]}}
    summary = posttrain_tables.summarise(per_seed, "none", ("m",), [0, 1, 2])
    paired = summary["x"]["vs_none"]["m"]
    assert paired["deltas"] == pytest.approx([0.1, 0.0, 0.2]) and paired["mean"] == pytest.approx(0.1)
    assert paired["ci"][0] <= 0.1 <= paired["ci"][1]
    assert summary["x"]["mean"]["m"] == pytest.approx(0.7)

    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{posttrain_tables.BEGIN}\nstale\n{posttrain_tables.END}\nrest\n")
    posttrain_tables.write_readme(readme, ROOT / "benchmarks" / "results")
    text = readme.read_text()
    assert posttrain_tables.readme_block(text) == posttrain_tables.render()
    assert text.startswith("intro\n") and text.endswith("\nrest\n")
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="posttrain-tables"):
        posttrain_tables.write_readme(readme)


def test_verdict_sorts_variants_by_where_the_interval_lies():
    per_seed = {"none": {"m": [0.5, 0.5, 0.5]}, "up": {"m": [0.6, 0.7, 0.65]}, "down": {"m": [0.4, 0.3, 0.45]},
                "flat": {"m": [0.6, 0.4, 0.5]}}
    summary = posttrain_tables.summarise(per_seed, "none", ("m",), [0, 1, 2])
    line = posttrain_tables.verdict(summary, "vs_none", "m", "m")
    assert "above 0: `up`" in line and "below 0: `down`" in line and "includes 0: `flat`" in line
    assert "`none`" not in line
