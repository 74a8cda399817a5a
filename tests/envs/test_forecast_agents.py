"""Forecasters on a small slice: kNN and ridge beat zero in-environment, and shuffled gains remove most of it."""

from __future__ import annotations

import json

import pytest

from rsigym.agent import make_agent
from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv
from rsigym.envs.forecast.evaluate import compare, episode
from rsigym.envs.forecast.policies import heuristic_predictions, prior_gain

SLICE = dict(tasks=["digits-mlp", "charlm-pydoc", "seq-season", "bc-mlp"], seeds=range(6))


@pytest.fixture(scope="module")
def table():
    rows = compare(["forecast_knn", "forecast_ridge"], "forecast_zero", SLICE["tasks"], ["in_env", "shuffled_gains"],
                   SLICE["seeds"])
    return {(r["condition"], r["agent"]): r for r in rows}


@pytest.mark.parametrize("agent", ["forecast_knn", "forecast_ridge"])
def test_knn_and_ridge_beat_zero_on_regret_in_env_and_shuffled_gains_remove_most_of_it(table, agent):
    real, shuffled = table[("in_env", agent)], table[("shuffled_gains", agent)]
    assert real["n"] == 24 and real["diff"] < 0, real
    assert real["ci"][1] < 0, real                                     # the whole CI below zero's regret
    assert -shuffled["diff"] < 0.5 * -real["diff"], (real, shuffled)    # at most half the advantage kept


def test_the_oracle_has_no_regret_and_agents_reject_unknown_params():
    assert episode("forecast_oracle", "tabular-bc", "cross_env", 0)["regret_best"] == 0.0
    with pytest.raises(Exception, match="min_rows"):
        make_agent({"id": "z", "kind": "forecast_zero", "params": {"min_rows": 2}})


def test_the_heuristic_reads_the_text_and_uses_its_feedback():
    env = ExperimentForecastEnv(condition="in_env")
    observation, _ = env.reset(seed=0, options={"task_id": "digits-mlp"})
    data = json.loads(observation["data"])
    predictions = heuristic_predictions(observation["text"])
    assert len(predictions) == 16
    placebo = [i for i, c in enumerate(data["candidates"]) if c["group"].startswith("placebo:")]
    assert placebo and all(predictions[i] == 0.0 for i in placebo)
    # the same round with every observed gain negated must move its predictions (it reads its feedback)
    flipped = observation["text"].replace("gain +", "gain #").replace("gain -", "gain +").replace("gain #", "gain -")
    assert heuristic_predictions(flipped) != predictions
    assert prior_gain("optimizer:lr:up", "Raise the learning rate 100x") < prior_gain("swap:schedule=cosine", "")


def test_the_llm_agent_runs_the_offline_heuristic_without_a_key():
    result = episode("llm", "tabular-bc", "no_experience", 0, model="rsigym/forecast_heuristic")
    assert result["rounds"] == 8 and result["best_gain"] is not None
