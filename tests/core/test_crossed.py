"""The two-way (seed x problem) bootstrap: its unit, its order invariance, its test and MDD."""

from __future__ import annotations

import random

import numpy as np
import pytest

from rsigym.report.crossed import crossed_bootstrap, crossed_matrix


def _seed_dominated(seed_sd: float, problem_sd: float = 0.05, seeds: int = 8, problems: int = 60) -> dict:
    rng = np.random.default_rng(3)
    offsets = rng.normal(0.0, seed_sd, seeds)
    return {(s, f"he-{p:03d}"): float(offsets[s] + rng.normal(0.0, problem_sd)) for s in range(seeds) for p in range(problems)}


def test_the_ci_widens_when_seed_variance_dominates_because_seeds_are_resampled():
    cells = _seed_dominated(seed_sd=0.3)
    crossed = crossed_bootstrap(cells)
    problems_only = crossed_bootstrap(cells, resample_seeds=False)
    width = crossed.ci[1] - crossed.ci[0]
    assert width > 10 * (problems_only.ci[1] - problems_only.ci[0])
    # the seed means' spread alone: SD(offsets) / sqrt(8) ~ 0.1, so a 95% CI is a few tenths wide
    assert 0.2 < width < 0.8 and crossed.mdd > 0.2
    quiet = crossed_bootstrap(_seed_dominated(seed_sd=0.0))
    assert quiet.ci[1] - quiet.ci[0] < 0.1 * width


def test_estimate_is_the_mean_of_the_cells_and_missing_cells_are_skipped():
    cells = {(0, "a"): 1.0, (0, "b"): 0.0, (1, "a"): 1.0}
    matrix, seeds, problems = crossed_matrix(cells)
    assert seeds == [0, 1] and problems == ["a", "b"] and np.isnan(matrix[1, 1])
    result = crossed_bootstrap(cells, resamples=500)
    assert result.estimate == pytest.approx(2 / 3) and result.n_cells == 3
    assert result.ci[0] <= result.estimate <= result.ci[1]


def test_result_does_not_depend_on_record_order():
    cells = _seed_dominated(seed_sd=0.1)
    items = list(cells.items())
    random.Random(1).shuffle(items)
    assert crossed_bootstrap(dict(items)) == crossed_bootstrap(cells)


def test_the_test_calls_a_clear_effect_and_not_a_null_one():
    rng = np.random.default_rng(0)
    effect = {(s, f"p{p}"): float(rng.normal(0.2, 0.3)) for s in range(5) for p in range(40)}
    null = {(s, f"p{p}"): float(rng.normal(0.0, 0.3)) for s in range(5) for p in range(40)}
    assert crossed_bootstrap(effect).p_value < 0.01 and crossed_bootstrap(effect).ci[0] > 0
    assert crossed_bootstrap(null).p_value > 0.05


def test_bad_input_is_refused_with_a_clear_error():
    with pytest.raises(ValueError, match="at least one"):
        crossed_bootstrap({})
    with pytest.raises(ValueError, match="finite"):
        crossed_bootstrap({(0, "a"): float("nan"), (0, "b"): 1.0})
