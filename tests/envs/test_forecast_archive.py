"""The archive: paired statistics, crash flooring, resumable building, the shipped file and a rerun check."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from rsigym.envs.forecast.archive import (BASELINE_ID, GAIN_FLOOR, assemble, build_runs, load_archive, paired_stats,
                                          read_runs, runs_from_archive)
from rsigym.envs.forecast.catalogue import interventions_of
from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS
from rsigym.envs.forecast.rerun import RERUN_ROWS, rerun_check


def _row(env: str, iv: str, seed: int, metric: float | None, crashed: bool = False) -> dict:
    return {"environment": env, "intervention": iv, "seed": seed, "metric": metric, "crashed": crashed,
            "curve": [1.0, 0.5], "seconds": 0.1}


def test_paired_stats_match_the_hand_computation():
    mean, se, p = paired_stats([0.1, 0.3])
    assert mean == pytest.approx(0.2)
    assert se == pytest.approx(math.sqrt(0.02) / math.sqrt(2))     # sd (ddof 1) / sqrt(n)
    assert 0.05 < p < 1
    assert paired_stats([0.0, 0.0, 0.0]) == (0.0, 0.0, 1.0)        # an exact no-op is not significant
    assert paired_stats([0.2, 0.2]) == (0.2, 0.0, 0.0)


def _full(env: str, base: float, seeds: range, overrides: dict) -> list[dict]:
    """Rows for the baseline and every catalogue intervention of ``env`` (metric = baseline unless overridden)."""
    rows = [_row(env, BASELINE_ID, s, base) for s in seeds]
    for iv in interventions_of(env):
        values = overrides.get(iv.id, [base] * len(seeds))
        rows += [_row(env, iv.id, s, v, crashed=v is None) for s, v in zip(seeds, values)]
    return rows


def test_assemble_floors_crashes_and_gains_and_flags_significance():
    rows = _full("digits-mlp", 1.0, range(4), {"digits-mlp/lr_x3": [0.5, 0.52, 0.49, 0.51],
                                               "digits-mlp/lr_x100": [None] * 4})
    rows += _full("tabular-bc", 0.02, range(4), {"tabular-bc/tree": [0.08] * 4})        # error x4: floored
    records = {r.intervention: r for r in assemble(rows)[0]}
    lr = records["digits-mlp/lr_x3"]
    assert lr.gains == pytest.approx([math.log(1 / m) for m in [0.5, 0.52, 0.49, 0.51]], abs=1e-6)
    assert lr.significant and lr.p_value < 0.05
    crash = records["digits-mlp/lr_x100"]
    assert crash.crashed == [True] * 4
    assert crash.gain == pytest.approx(math.log(1.0 / math.log(10)), abs=1e-6)   # scored as the uniform predictor
    assert records["tabular-bc/tree"].gains == [GAIN_FLOOR] * 4
    assert records["tabular-bc/run_name"].gain == 0.0 and not records["tabular-bc/run_name"].significant
    assert "digits-cnn/lr_x3" not in records                                  # no runs, no record


def test_a_partial_build_uses_the_seeds_every_row_completed():
    rows = _full("digits-mlp", 1.0, range(4), {})
    rows = [r for r in rows if not (r["intervention"] == "digits-mlp/dropout" and r["seed"] == 3)]
    records, baselines = assemble(rows)
    assert baselines["digits-mlp"].seeds == [0, 1, 2]
    assert {tuple(r.seeds) for r in records} == {(0, 1, 2)}


def test_a_killed_build_resumes_without_repeating_a_run(tmp_path: Path):
    runs = tmp_path / "runs.jsonl"
    only = ["tabular-bc/C_div10"]
    assert build_runs(runs, seeds=[0], environments=["tabular-bc"], only=only) == 2     # baseline + 1
    first = read_runs(runs)
    with open(runs, "a") as f:
        f.write('{"environment": "tabular-bc", "interv')              # a torn line from a kill
    assert build_runs(runs, seeds=[0, 1], environments=["tabular-bc"], only=only) == 2   # seed 1 only
    assert [(r["intervention"], r["seed"]) for r in read_runs(runs)][:2] == [
        (r["intervention"], r["seed"]) for r in first]
    assert len(read_runs(runs)) == 4


def test_runs_taken_from_the_archive_assemble_to_the_same_records_and_are_not_trained_again(tmp_path: Path):
    archive = load_archive()
    runs = tmp_path / "runs.jsonl"
    taken = runs_from_archive(archive, runs, ["seq-ar", "regress-diabetes"])
    assert taken == sum(len(archive.baselines[e].seeds) * (len(interventions_of(e)) + 1)
                        for e in ("seq-ar", "regress-diabetes"))
    assert runs_from_archive(archive, runs, ["seq-ar"]) == 0                       # nothing twice
    records, baselines = assemble(read_runs(runs))
    assert sorted(baselines) == ["regress-diabetes", "seq-ar"]
    assert baselines["seq-ar"] == archive.baselines["seq-ar"]
    shipped = {r.intervention: r for r in archive.records}
    for record in records:     # the archive keeps metrics to 6 decimals: gains agree to a few 1e-6
        original = shipped[record.intervention]
        assert (record.seeds, record.crashed) == (original.seeds, original.crashed), record.intervention
        assert record.gains == pytest.approx(original.gains, abs=1e-5), record.intervention
        if abs(original.gain) > 1e-4:     # a gain within rounding of 0 (a numerical no-op) has a p-value of rounding
            assert record.p_value == pytest.approx(original.p_value, abs=0.01, nan_ok=True), record.intervention
            if abs(original.p_value - 0.05) > 0.01:
                assert record.significant == original.significant, record.intervention
    # a build over the same seeds has nothing left to train
    assert build_runs(runs, seeds=archive.baselines["seq-ar"].seeds, environments=["seq-ar"]) == 0


def test_the_shipped_archive_has_provenance_and_every_intervention():
    archive = load_archive()
    provenance = archive.provenance
    for key in ("built_at", "command", "seeds_requested", "environments", "torch", "scikit_learn", "complete"):
        assert key in provenance, key
    assert set(archive.baselines) == set(RESEARCH_ENVIRONMENTS) and len(archive.baselines) >= 10
    assert set(RERUN_ROWS) == set(RESEARCH_ENVIRONMENTS)
    for env in RESEARCH_ENVIRONMENTS:   # every catalogue row of every environment is in the archive
        assert {r.intervention for r in archive.of(env)} == {iv.id for iv in interventions_of(env)}, env
    assert all(len(r.gains) == len(r.seeds) >= 2 for r in archive.records)


@pytest.mark.parametrize("environment", sorted(RERUN_ROWS))
def test_rerunning_a_row_of_every_environment_reproduces_its_gain_within_three_standard_errors(environment):
    record = load_archive().by_id()[RERUN_ROWS[environment]]
    assert not record.placebo and record.environment == environment
    # 4 of the paired seeds keep it short; 2 for the charlm twins (about 10 s a run)
    check = rerun_check(record, seeds=2 if environment.startswith("charlm") else 4)
    assert check.passed, (check.rerun_gains, check.archived_gains, check.margin)
    assert abs(check.rerun_mean - record.gain) <= check.margin + abs(check.archived_mean - record.gain)


def test_the_rerun_check_fails_a_row_whose_archived_gains_were_altered():
    import dataclasses
    record = load_archive().by_id()["seq-ar/lags_2"]
    forged = dataclasses.replace(record, gains=[g + 10 * max(record.gain_se, 0.01) for g in record.gains])
    assert not rerun_check(forged, seeds=2).passed


def test_the_archive_command_stops_bad_input_with_one_line(tmp_path: Path, capsys):
    from rsigym.cli import main
    assert main(["archive", "build", "--seeds", "1", "--out", str(tmp_path)]) == 2
    assert main(["archive", "build", "--environments", "imagenet", "--out", str(tmp_path)]) == 2
    assert main(["archive", "assemble", "--out", str(tmp_path / "empty")]) == 2
    errors = capsys.readouterr().err.strip().splitlines()
    assert len(errors) == 3 and all(line.startswith("rsigym: error: ") for line in errors), errors
    assert "imagenet" in errors[1] and "no runs" in errors[2]
