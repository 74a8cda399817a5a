"""Leave-one-group-out transfer and the 24-choice budget: conditions, tables on hand-computed rows, the README block."""

from __future__ import annotations

import json
import math
import random
import sys
from pathlib import Path

import pytest

from rsigym.envs.forecast.archive import load_archive
from rsigym.envs.forecast.env import ExperimentForecastEnv
from rsigym.envs.forecast.research import ENVIRONMENT_GROUPS, RESEARCH_ENVIRONMENTS, group_of
from rsigym.envs.forecast.transfer import BUDGET_DESIGN, budget_table, logo_condition, play, ratio_ci, transfer_table

ROOT = Path(__file__).resolve().parents[2]


def test_groups_partition_the_environments_and_logo_sources_are_every_other_group():
    members = [env for group in ENVIRONMENT_GROUPS.values() for env in group]
    assert sorted(members) == sorted(RESEARCH_ENVIRONMENTS) and len(members) == len(set(members))
    for target in RESEARCH_ENVIRONMENTS:
        sources = set(logo_condition(target)["params"]["sources"])
        assert not sources & set(ENVIRONMENT_GROUPS[group_of(target)])
        assert sources | set(ENVIRONMENT_GROUPS[group_of(target)]) == set(RESEARCH_ENVIRONMENTS)


def test_a_logo_episode_spends_24_choices_and_sees_only_other_groups():
    archive = load_archive()
    target = "regress-friedman"
    env = ExperimentForecastEnv(condition=logo_condition(target), archive=archive, **BUDGET_DESIGN)
    observation, _ = env.reset(seed=3, options={"task_id": target})
    shown = {row["environment"] for row in json.loads(observation["data"])["experience"]}
    assert shown and not shown & set(ENVIRONMENT_GROUPS["regression"])
    row = play({"id": "ridge", "kind": "forecast_ridge"}, target, logo_condition(target), 3, archive=archive,
               label="logo")
    assert len(row["round_regret"]) == 8 and row["condition"] == "logo" and row["condition_name"] == "cross_env"
    state_env = ExperimentForecastEnv(condition={"name": "no_experience"}, archive=archive, **BUDGET_DESIGN)
    state_env.reset(seed=3, options={"task_id": target})
    assert BUDGET_DESIGN["rounds"] * BUDGET_DESIGN["select"] == 24
    assert len(state_env.snapshot()["pool"]) == 8 + 3 * 7


def _row(agent: str, condition: str, task: str, seed: int, best: float, regret: float) -> dict:
    return {"agent": agent, "condition": condition, "condition_name": condition, "task": task, "seed": seed,
            "rep": 0, "observed": "mean", "best_gain": best, "gain_sd": 2.0, "round_regret": [regret, regret],
            "round_noise": [False, False], "regret_best": regret}


def _rows() -> list[dict]:
    rows = []
    for task, (none, same) in {"seq-ar": (1.0, 1.5), "seq-season": (2.0, 2.0), "digits-mlp": (3.0, 4.0)}.items():
        for seed in (0, 1):
            rows.append(_row("zero", "no_experience", task, seed, 0.0, 0.5))
            rows.append(_row("a", "no_experience", task, seed, none, 0.4))
            rows.append(_row("a", "in_env", task, seed, same, 0.4))
            rows.append(_row("a", "logo", task, seed, same, 0.1 if task.startswith("seq") else 0.4))
    return rows


def test_the_budget_table_matches_the_hand_computation():
    entry = next(b for b in budget_table(_rows(), conditions=("in_env",)) if b["agent"] == "a")
    # normalised by gain_sd 2: none (0.5, 1.0, 1.5), same-env (0.75, 1.0, 2.0)
    assert entry["targets"] == 3 and entry["pairs"] == 6
    assert entry["delta"] == pytest.approx((0.25 + 0.0 + 0.5) / 3)
    assert entry["best"] == pytest.approx(3.75 / 3) and entry["best_reference"] == pytest.approx(1.0)
    assert entry["relative"] == pytest.approx(0.25)          # (3.75 / 3) / 1 - 1
    assert entry["relative_low"] <= entry["relative"] <= entry["relative_high"]


def test_the_transfer_table_cuts_regret_where_the_condition_lowers_it():
    table = {(t["group"], t["reading"]): t for t in transfer_table(_rows()) if t["agent"] == "a"}
    sequence = table[("sequence", "round1")]
    # zero's regret 0.5 is the unit: 0.4 -> 0.8 without, 0.1 -> 0.2 with: a 75% cut
    assert sequence["regret_reference"] == pytest.approx(0.8) and sequence["regret"] == pytest.approx(0.2)
    assert sequence["cut"] == pytest.approx(0.75)
    image = table[("image", "round1")]          # one target: a difference, no ratio over targets
    assert image["delta"] == 0.0 and math.isnan(image["cut"])
    assert table[("all", "curve")]["targets"] == 3
    assert ("text", "round1") not in table                   # no rows, no entry


def test_ratio_ci_does_not_depend_on_the_order_of_targets():
    top = {f"t{i}": 1.0 + i * 0.1 for i in range(6)}
    bottom = {f"t{i}": 1.0 for i in range(6)}
    shuffled = list(top.items())
    random.Random(4).shuffle(shuffled)
    assert ratio_ci(top, bottom) == ratio_ci(dict(shuffled), bottom)
    assert math.isnan(ratio_ci({"a": 1.0}, {"a": 1.0})[0])


def test_the_readme_transfer_block_equals_what_the_results_file_renders():
    sys.path.insert(0, str(ROOT / "benchmarks"))
    import forecast_transfer
    import readme_blocks
    result = json.loads(forecast_transfer.RESULTS.read_text())
    assert forecast_transfer.CALIBRATION.exists()
    readme = (ROOT / "docs/families/forecast.md").read_text()
    assert readme_blocks.block(readme, forecast_transfer.BEGIN, forecast_transfer.END) == forecast_transfer.render_files(), (
        "README forecast-transfer block differs: run python benchmarks/forecast_transfer.py --write")
    changed = json.loads(json.dumps(result))
    changed["budget"][0]["delta"] += 0.5
    assert forecast_transfer.render(changed) != forecast_transfer.render(result)
    calibration = json.loads(forecast_transfer.CALIBRATION.read_text())
    moved = json.loads(json.dumps(calibration))
    moved["readings"]["curve"]["arms"][0]["called"] += 1
    assert forecast_transfer.render(result, moved) != forecast_transfer.render(result, calibration)
