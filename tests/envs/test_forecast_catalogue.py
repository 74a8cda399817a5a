"""The intervention catalogue: size, placebos, group keys, and a lint that catches mislabelled groups."""

from __future__ import annotations

import dataclasses

import pytest

from rsigym.envs.forecast.catalogue import catalogue, interventions_of
from rsigym.envs.forecast.interventions import Intervention, lint_catalogue, normalised_diff
from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS, run

BASELINES = {name: env.baseline for name, env in RESEARCH_ENVIRONMENTS.items()}


def test_the_shipped_catalogue_is_clean_and_sized_40_to_70_per_environment_with_placebos():
    assert lint_catalogue(catalogue(), BASELINES) == []
    for env in RESEARCH_ENVIRONMENTS:
        ivs = interventions_of(env)
        assert 40 <= len(ivs) <= 70, (env, len(ivs))
        assert sum(iv.placebo for iv in ivs) >= 4, env
        components = {iv.component for iv in ivs}
        assert {"regularization", "data", "placebo"} <= components, (env, components)


def test_the_lint_catches_the_same_normalised_diff_under_two_groups():
    lr_up = Intervention("digits-mlp/a", "x", {"lr": 0.01}, "optimizer:lr:up")
    mislabelled = Intervention("digits-mlp/b", "y", {"lr": 0.005}, "optimizer:learning_rate:up")
    problems = lint_catalogue([lr_up, mislabelled], BASELINES)
    assert len(problems) == 1 and "same normalised diff" in problems[0]
    # across environments that share the knob, too
    other_env = dataclasses.replace(mislabelled, id="digits-cnn/b")
    assert lint_catalogue([lr_up, other_env], BASELINES)


def test_the_lint_catches_bad_keys_unknown_knobs_no_op_diffs_wrong_swaps_and_unmarked_placebos():
    bad = [
        Intervention("digits-mlp/a", "x", {"lr": 0.01}, "lr-up"),
        Intervention("digits-mlp/b", "x", {"learning_rate": 0.01}, "optimizer:lr:up"),
        Intervention("digits-mlp/c", "x", {"lr": 1e-3}, "optimizer:lr:up"),
        Intervention("digits-mlp/d", "x", {"optimizer": "sgd"}, "swap:optimizer=rmsprop"),
        Intervention("digits-mlp/e", "x", {"run_name": "b"}, "placebo:run_name:rename", placebo=False),
        Intervention("nowhere/f", "x", {"lr": 1.0}, "optimizer:lr:up"),
    ]
    problems = lint_catalogue(bad, BASELINES)
    for needle in ("not component:knob:direction", "not in the baseline", "already is", "swap:optimizer=rmsprop",
                   "placebo=False", "unknown environment"):
        assert any(needle in p for p in problems), (needle, problems)


def test_normalised_diffs_read_directions_and_switches():
    base = BASELINES["charlm-pydoc"]
    assert normalised_diff({"lr": 1.0, "grad_clip": 0.0, "tie_embeddings": True}, base) == frozenset(
        {("lr", "up"), ("grad_clip", "off"), ("tie_embeddings", "on")})


def test_exact_placebos_reproduce_the_baseline_metric_bit_for_bit():
    for env, slug in [("tabular-bc", "run_name"), ("digits-mlp", "log_less"), ("tabular-bc", "model_seed")]:
        iv = next(i for i in interventions_of(env) if i.id == f"{env}/{slug}")
        assert run(env, iv.diff, 3).metric == run(env, {}, 3).metric, iv.id


def test_a_study_drops_the_swaps_its_baseline_already_makes():
    from rsigym.envs.forecast.catalogue_studies import applicable
    entries = [("knn", "k-NN", {"model": "knn"}, "swap:model=knn"),
               ("knn15", "k-NN, 15", {"model": "knn", "n_neighbors": 15}, "swap:model=knn"),
               ("forest", "forest", {"model": "random_forest"}, "swap:model=random_forest")]
    assert [e[0] for e in applicable(entries, {"model": "knn", "n_neighbors": 5})] == ["forest"]
    assert [e[0] for e in applicable(entries, {"model": "logreg", "n_neighbors": 5})] == ["knn", "knn15", "forest"]


def test_the_shared_cv_recipe_pools_errors_over_ten_folds_and_a_refused_config_crashes():
    from rsigym.envs.forecast.classify import LOGREG_BASELINE, train_classifier
    result = train_classifier("moons", "error", dict(LOGREG_BASELINE), 0)
    assert not result.crashed and len(result.curve) == 10 and result.curve[-1] == round(result.metric, 4)
    assert 500 * 2 * result.metric == pytest.approx(round(500 * 2 * result.metric))   # whole wrong rows of 1,000
    crashed = train_classifier("moons", "error", {**LOGREG_BASELINE, "penalty": "l1"}, 0)   # lbfgs refuses L1
    assert crashed.crashed


def test_round_six_data_are_what_the_descriptions_say():
    import numpy as np

    from rsigym.envs.forecast.classify import _data as classification_data
    from rsigym.envs.forecast.regression import _data as regression_data
    from rsigym.envs.forecast.sequence import SERIES_LENGTH, series
    from rsigym.envs.forecast.text_bow import _corpus
    x, y = classification_data("patches")
    assert x.shape == (600, 64) and np.bincount(y).tolist() == [150, 150, 150, 150]
    assert np.allclose(x.mean(axis=1), 0.0)                       # texture only: every patch at mean 0
    x, y = classification_data("iris")
    assert x.shape == (150, 4) and np.bincount(y).tolist() == [50, 50, 50]
    for name, (rows, classes) in {"sentiment": (800, 2), "authors": (600, 5)}.items():
        counts, labels = _corpus(name)
        assert counts.shape == (rows, 400) and labels.max() + 1 == classes, name
    counts, labels = _corpus("authors")
    # the authors differ in style only: no word is missing from any author's documents among the 50 commonest
    common = np.argsort(-np.asarray(counts.sum(axis=0)).ravel())[:50]
    assert all(np.asarray(counts[labels == k][:, common].sum(axis=0)).min() > 0 for k in range(5))
    assert {name: regression_data(name)[0].shape for name in ("scurve", "swissroll", "linnerud")} == {
        "scurve": (400, 3), "swissroll": (400, 3), "linnerud": (20, 3)}
    walk = series("walk", 0)
    assert len(walk) == SERIES_LENGTH and walk[-240:].min() > walk[:560].max() - 5   # the test span drifts away
    resonant = series("resonant", 0)
    assert abs(np.corrcoef(resonant[:-1], resonant[1:])[0, 1]) > 0.9     # a slow oscillation: neighbours agree
    with pytest.raises(ValueError):
        series("garch", 0)
