"""ExperimentForecast-v0: rounds, pools, conditions and scoring, on the shipped archive."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv

TASK = "digits-mlp"


def _play(env: ExperimentForecastEnv, predict=lambda data: [0.0] * len(data["candidates"])):
    observation, info = env.reset(seed=5, options={"task_id": TASK})
    observations, infos, rewards = [observation], [info], []
    terminated = False
    while not terminated:
        observation, reward, terminated, _, info = env.step({"predictions": predict(json.loads(observation["data"]))})
        observations.append(observation)
        infos.append(info)
        rewards.append(reward)
    return observations, infos, rewards


def test_an_episode_is_8_rounds_of_16_candidates_and_24_distinct_selections():
    env = ExperimentForecastEnv(condition="in_env")
    observations, infos, rewards = _play(env)
    state = env.snapshot()
    assert len(state["rounds"]) == 8 and len(state["executed"]) == len(set(state["executed"])) == 24
    for round_log in state["rounds"]:
        assert len(round_log["candidates"]) == 16
        assert not set(round_log["candidates"]) & set(state["executed"][: 3 * round_log["round"]])
    assert infos[-1]["termination"] == "budget_exhausted" and infos[-1]["budget"]["selections_left"] == 0
    assert sum(rewards) == pytest.approx(max(0.0, state["best_gain"]))
    assert state["best_gain_by_selection"] == sorted(state["best_gain_by_selection"])


def test_in_env_hides_the_pool_and_cross_env_hides_every_group_of_the_pool():
    archive = load_archive()
    env = ExperimentForecastEnv(condition="in_env")
    env.reset(seed=1, options={"task_id": TASK})
    pool = set(env.snapshot()["pool"])
    data = json.loads(env._observation()["data"])
    seen = {row["intervention"] for row in data["experience"]}
    assert seen and not seen & pool and all(row["environment"] == TASK for row in data["experience"])
    cross = ExperimentForecastEnv(condition="cross_env")
    cross.reset(seed=1, options={"task_id": TASK})
    pool_groups = {archive.by_id()[i].group for i in cross.snapshot()["pool"]}
    rows = json.loads(cross._observation()["data"])["experience"]
    assert rows and all(r["environment"] != TASK and r["group"] not in pool_groups for r in rows)
    blind = ExperimentForecastEnv(condition="no_experience")
    blind.reset(seed=1, options={"task_id": TASK})
    assert json.loads(blind._observation()["data"])["experience"] == []


def test_shuffled_gains_change_what_is_shown_but_not_how_rounds_are_scored():
    truth = load_archive().by_id()
    real = ExperimentForecastEnv(condition="in_env")
    shuffled = ExperimentForecastEnv(condition="shuffled_gains")
    for env in (real, shuffled):
        env.reset(seed=2, options={"task_id": TASK})
    shown_real = {r["intervention"]: r["gain"] for r in json.loads(real._observation()["data"])["experience"]}
    shown_shuffled = {r["intervention"]: r["gain"] for r in json.loads(shuffled._observation()["data"])["experience"]}
    assert shown_real.keys() == shown_shuffled.keys()
    assert all(shown_real[i] == truth[i].gain for i in shown_real)
    assert sum(shown_real[i] != shown_shuffled[i] for i in shown_real) >= len(shown_real) // 2
    _, infos, _ = _play(shuffled)
    state = shuffled.snapshot()
    assert all(r["true"] == [truth[c].gain for c in r["candidates"]] for r in state["rounds"])


def test_single_seed_observations_show_one_archived_seed_and_no_se():
    truth = load_archive().by_id()
    env = ExperimentForecastEnv(condition={"name": "in_env", "params": {"observed": "single_seed"}})
    env.reset(seed=3, options={"task_id": TASK})
    rows = json.loads(env._observation()["data"])["experience"]
    assert rows and all(r["se"] is None and r["gain"] in truth[r["intervention"]].gains for r in rows)
    assert "(one seed)" in env._observation()["text"]


def test_the_oracle_has_zero_regret_and_a_constant_predictor_counts_nan_spearman():
    truth = load_archive().by_id()
    env = ExperimentForecastEnv(condition="in_env")
    _, infos, _ = _play(env, lambda data: [truth[c["intervention"]].gain for c in data["candidates"]])
    assert all(r["metrics"]["regret_best"] == 0.0 for r in env.snapshot()["rounds"])
    _play(env)
    assert all(r["metrics"]["spearman"] is None and r["metrics"]["spearman_nan"] == 1 for r in env.snapshot()["rounds"])


def test_invalid_actions_cost_no_round_until_the_limit():
    env = ExperimentForecastEnv(max_invalid_actions=2)
    env.reset(seed=0, options={"task_id": TASK})
    for bad in ({"predictions": [0.0] * 15}, {"predictions": [float("nan")] * 16}):
        _, reward, terminated, _, info = env.step(bad)
        assert "error" in info and not terminated and info["budget"]["selections_used"] == 0
    _, _, terminated, _, info = env.step({"predictions": "high"})
    assert terminated and info["termination"] == "agent_error"


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown forecast condition"):
        ExperimentForecastEnv(condition="in_environment")
    with pytest.raises(ValueError, match="observed"):
        ExperimentForecastEnv(condition={"name": "in_env", "params": {"observed": "median"}})
    env = ExperimentForecastEnv()
    with pytest.raises(ValueError, match="target environment"):
        env.reset(seed=0, options={"task_id": "imagenet"})


def test_reset_is_deterministic_under_a_seed():
    texts = []
    for _ in range(2):
        env = ExperimentForecastEnv(condition="shuffled_gains")
        observation, _ = env.reset(seed=11, options={"task_id": TASK})
        texts.append(observation["text"])
        assert np.isfinite(observation["best_gain"])
    assert texts[0] == texts[1]


def test_cross_env_sources_and_related_only_choose_the_visible_environments():
    def seen(condition):
        env = ExperimentForecastEnv(condition=condition)
        env.reset(seed=2, options={"task_id": "charlm-pydoc"})
        return {row["environment"] for row in json.loads(env._observation()["data"])["experience"]}

    from rsigym.envs.forecast.research import RESEARCH_ENVIRONMENTS
    assert seen("cross_env") == set(RESEARCH_ENVIRONMENTS) - {"charlm-pydoc"}
    assert seen({"name": "cross_env", "params": {"sources": ["digits-cnn", "tabular-bc"]}}) == {"digits-cnn", "tabular-bc"}
    assert seen({"name": "cross_env", "params": {"related_only": True}}) == {"charlm-stdlib"}
    with pytest.raises(ValueError, match="sources must name research environments"):
        ExperimentForecastEnv(condition={"name": "cross_env", "params": {"sources": ["nope"]}})
    with pytest.raises(ValueError, match="bad params"):
        ExperimentForecastEnv(condition={"name": "in_env", "params": {"related_only": True}})


def test_placebos_are_labelled_by_their_diff_and_noise_rounds_are_marked():
    from rsigym.envs.forecast.catalogue import catalogue
    records = load_archive().by_id()
    by_diff = {iv.id: iv.placebo for iv in catalogue()}
    assert all(r.placebo == by_diff[r.intervention] for r in records.values())
    # exact no-ops found after the fact (every seed equal to the baseline) stay real interventions:
    # labelling them placebos would choose placebos by their outcome
    for noop in ("charlm-pydoc/adam", "digits-mlp/adamw", "tabular-bc/some_iters"):
        assert not records[noop].placebo and records[noop].gains == [0.0] * len(records[noop].gains)
    assert not records["digits-mlp/reseed_data"].gains == [0.0] * len(records["digits-mlp/reseed_data"].gains)
    env = ExperimentForecastEnv(condition="in_env")
    _play(env)
    for round_log in env.snapshot()["rounds"]:
        best = records[round_log["candidates"][int(np.argmax(round_log["true"]))]]
        assert round_log["best_is_noise"] == (best.placebo or not best.significant)


def test_placebos_enter_pools_and_rounds_as_often_as_real_interventions():
    archive = load_archive()
    env = ExperimentForecastEnv(rounds=4, pool=36)
    placebo_rate, real_rate = [], []
    for task in env.list_tasks():
        records = archive.of(task)
        counts = {r.intervention: 0 for r in records}
        seeds = range(40)
        for seed in seeds:
            env.reset(seed=seed, options={"task_id": task})
            for intervention in env.snapshot()["pool"]:
                counts[intervention] += 1
        placebo_rate += [counts[r.intervention] / len(seeds) for r in records if r.placebo]
        real_rate += [counts[r.intervention] / len(seeds) for r in records if not r.placebo]
    # before: every placebo was in every pool (rate 1.00 against 0.60-0.73)
    assert np.mean(placebo_rate) < 0.95
    assert abs(np.mean(placebo_rate) - np.mean(real_rate)) < 0.1, (np.mean(placebo_rate), np.mean(real_rate))


def test_a_larger_pool_is_kept_and_a_too_small_one_is_refused():
    env = ExperimentForecastEnv(rounds=4, pool=36)
    env.reset(seed=0, options={"task_id": "charlm-pydoc"})
    assert len(env.snapshot()["pool"]) == 36
    with pytest.raises(ValueError, match="pool must be >="):
        ExperimentForecastEnv(pool=20)
