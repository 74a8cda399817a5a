"""The README's forecasting numbers are generated from the committed run summaries, and cannot drift."""

import json
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))

import forecast_results  # noqa: E402


def test_readme_forecast_block_equals_what_the_results_files_render():
    for name in forecast_results.NAMES:
        assert (ROOT / "benchmarks" / "results" / f"{name}.json").exists(), name
    readme = (ROOT / "docs/families/forecast.md").read_text()
    assert forecast_results.readme_block(readme) == forecast_results.render(), (
        "README forecast block differs from benchmarks/results/forecast_*.json: "
        "run python benchmarks/forecast_results.py --write")


def test_a_changed_number_shows_and_missing_markers_are_an_error(tmp_path):
    results = tmp_path / "results"
    results.mkdir()
    summary = json.loads((ROOT / "benchmarks" / "results" / "forecast_quick.json").read_text())
    (results / "forecast_quick.json").write_text(json.dumps(summary))
    readme = tmp_path / "README.md"
    readme.write_text(f"intro\n{forecast_results.BEGIN}\nstale\n{forecast_results.END}\nrest\n")
    forecast_results.write_readme(readme, results)
    before = forecast_results.readme_block(readme.read_text())
    assert before == forecast_results.render(results) and "stale" not in before
    key = next(k for k in summary["experience"] if k.endswith("|round1") and not k.startswith("zero|"))
    summary["experience"][key]["mean"] += 0.5
    (results / "forecast_quick.json").write_text(json.dumps(summary))
    assert forecast_results.render(results) != before
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="forecast-results"):
        forecast_results.write_readme(readme, results)
