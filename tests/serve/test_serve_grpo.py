"""The project's GRPO learns through a served env: over ``rsigym serve`` it takes exactly the steps it takes
in-process (same seed: same rewards, same updates, same records), and the benchmark's agreement rule,
its docs table and its figure."""

from __future__ import annotations

import dataclasses
import importlib.util
import json
import math
import sys

import pytest

pytest.importorskip("rsigym.serve.openenv_server", reason="needs the 'serve' extra")
pytest.importorskip("torch")

import gymnasium as gym  # noqa: E402

import rsigym.remote as remote  # noqa: E402
from rsigym.agents.train import grpo  # noqa: E402
from rsigym.agents.train.env_task import ConfigEnvTask  # noqa: E402
from rsigym.envs.blackbox.objectives import task_ids  # noqa: E402
from rsigym.records.jsonl import read_records  # noqa: E402
from rsigym.registry import register_gym_envs  # noqa: E402
from rsigym.serve import ServeConfig, ServerThread  # noqa: E402
from tests.conftest import REPO  # noqa: E402

ENV_ID = "rsigym/BlackBox-v0"
TINY = grpo.Args(steps=3, prompts_per_step=2, group_size=4, sft_steps=2, eval_every=1, eval_size=6, sample_k=2,
                 learning_rate=1e-3, seed=3, sft_seed=3)


def _benchmark():
    spec = importlib.util.spec_from_file_location("serve_grpo_benchmark", REPO / "benchmarks" / "serve_grpo.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up while being made
    spec.loader.exec_module(module)
    return module


def _local_env(**kwargs):
    register_gym_envs()
    return gym.make(ENV_ID, disable_env_checker=True, **{"max_trials": 1, **kwargs})


def test_digits_decode_onto_the_schema_ranges():
    task = ConfigEnvTask(_local_env(), task_ids("train"))
    assert [f.name for f in task.fields] == ["learning_rate", "momentum", "layers", "optimizer"]
    assert task.response_length == 6 and task.prompt_length == 2 and task.tokenizer.vocab_size == 10
    low = task.action([0, 0, 0, 0, 0, 0])
    assert low == {"learning_rate": pytest.approx(1e-5), "momentum": 0.0, "layers": 1, "optimizer": 0}
    high = task.action([9, 9, 9, 9, 9, 9])
    assert high == {"learning_rate": pytest.approx(0.1), "momentum": pytest.approx(0.99), "layers": 6, "optimizer": 2}
    middle = task.action([4, 9, 5, 0, 5, 4])  # lr 10^(-5 + 4 * 49/99); momentum 0.99 * 50/99; 5*6//10 = 3 -> 4; 4*3//10 = 1
    assert middle["learning_rate"] == pytest.approx(10 ** (-5 + 4 * 49 / 99))
    assert middle["momentum"] == pytest.approx(0.5) and middle["layers"] == 4 and middle["optimizer"] == 1
    assert task.prompts(task.eval_problems(3) + 11).tolist() == [[1, 1], [1, 2], [1, 3]]


def test_the_reward_is_the_envs_and_an_episode_must_end_after_one_step():
    from rsigym.envs.blackbox.objectives import make_task

    task = ConfigEnvTask(_local_env(), task_ids("train"), seed=50)
    import torch

    responses = torch.tensor([[4, 9, 5, 0, 5, 4], [0, 0, 0, 0, 0, 0]])
    rewards = task.score(responses, torch.tensor([[7], [7]]))
    expected = [make_task("bb-007").value(task.action(r)) for r in responses.tolist()]
    assert rewards.tolist() == pytest.approx(expected) and task.episodes == 2
    assert [(s, t) for s, t, _ in task.played] == [(50, "bb-007"), (51, "bb-007")]
    two_trials = ConfigEnvTask(_local_env(max_trials=2), task_ids("train"))
    with pytest.raises(ValueError, match="did not end after one step"):
        two_trials.score(responses[:1], torch.tensor([[0]]))


def test_grpo_through_the_server_takes_the_in_process_steps(tmp_path):
    local = ConfigEnvTask(_local_env(), task_ids("train"))
    expected = grpo.main(TINY, local)
    config = ServeConfig(ENV_ID, {"max_trials": 1}, run_dir=tmp_path / "served", port=0)
    with ServerThread(config) as server:
        env = remote.make(server.url, agent_id="grpo-test")
        try:
            served = ConfigEnvTask(env, task_ids("train"))
            got = grpo.main(TINY, served)
        finally:
            env.close()
    assert got["history"] == expected["history"]  # every step: rewards, entropy, clip fraction, evaluations
    assert got["final_accuracy"] == expected["final_accuracy"] and got["final_sampled"] == expected["final_sampled"]
    assert served.played == local.played and served.episodes > TINY.steps * TINY.prompts_per_step * TINY.group_size
    records = read_records(tmp_path / "served" / "records.jsonl").records
    assert [(r.seed, r.env.task_id, r.steps[0].reward) for r in records] == served.played
    assert {r.agent.id for r in records} == {"grpo-test"} and all(r.termination == "budget_exhausted" for r in records)


def test_the_agreement_rule_agrees_and_disagrees_on_constructed_runs():
    agreement = _benchmark().agreement
    reference = [0.50, 0.60, 0.55, 0.45, 0.65]
    assert agreement(reference, list(reference))["verdict"] == "agree"
    assert agreement(reference, [0.52, 0.58, 0.47, 0.63, 0.56])["verdict"] == "agree"  # other draws, same spread
    shifted = agreement(reference, [v - 0.3 for v in reference])  # 0.3 = 3.8 reference SDs
    assert shifted["verdict"] == "disagree" and shifted["mean_difference"] == pytest.approx(-0.3)
    assert shifted["p_value"] < 0.05
    assert agreement(reference[:1], reference[:1])["verdict"] == "insufficient data"


def test_the_rule_calibration_counts_false_calls_and_detections():
    rows = _benchmark().rule_calibration(5, pairs=300)
    assert [row["shift_sd"] for row in rows] == [0.0, 1.0, 2.0, 3.0]
    null, *shifts = rows
    assert null["rate"] <= 0.10 and shifts[-1]["rate"] >= 0.80  # 5% test; a 3 SD difference at 5 runs a side
    assert [row["disagree"] for row in shifts] == sorted(row["disagree"] for row in shifts)
    assert all(row["ci95"][0] <= row["rate"] <= row["ci95"][1] for row in rows)


def test_the_benchmark_smoke_run_is_identical_through_the_server(tmp_path):
    module = _benchmark()
    args = dataclasses.replace(module.PRESETS["tiny"], results=str(tmp_path / "r.json"), plot=str(tmp_path / "c.png"))
    result = module.main(args)
    assert result["identical"]["identical"] and result["server_records"]["every_run_matches"]
    assert result["server_records"]["records"] == result["server_records"]["rollouts"] > 0
    assert result["agreement"]["served"]["verdict"] == "agree"
    assert json.loads((tmp_path / "r.json").read_text())["identical"] == result["identical"]
    assert (tmp_path / "c.png").stat().st_size > 0


def test_the_docs_show_the_committed_results_and_figure():
    module = _benchmark()
    result = json.loads((REPO / "benchmarks" / "results" / "serve_grpo.json").read_text())
    text = (REPO / "docs" / "serve.md").read_text()
    block = text.split("<!-- serve-grpo-table:begin -->\n", 1)[1].split("<!-- serve-grpo-table:end -->", 1)[0]
    assert block.strip() == module.render_table(result).strip()
    assert "plots/serve_grpo.png" in text and (REPO / "docs" / "plots" / "serve_grpo.png").stat().st_size > 0
    assert result["identical"]["identical"] and result["server_records"]["every_run_matches"]
    assert result["agreement"]["served"]["verdict"] == "agree"
    assert result["agreement"]["in_process_slow"]["verdict"] == "disagree"
    null = result["rule_calibration"][0]
    assert null["shift_sd"] == 0.0 and null["ci95"][1] <= 0.06  # the rule's false-call rate is held near 5%
    finals = [r["final_greedy"] for r in result["arms"]["in_process"]]
    starts = [r["initial_greedy"] for r in result["arms"]["in_process"]]
    assert all(math.isfinite(v) for v in finals) and sum(finals) > sum(starts)  # the policy learned
