"""ProgramEvolution-v0 on the local sandbox with tiny tasks: protocol, stages, budget, exploration."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import pytest
from gymnasium.utils.env_checker import check_env

import rsigym.envs  # noqa: F401
from rsigym.envs.evolution import ProgramEvolutionEnv

TINY_BINPACK = {"bin_packing_online": {"instances": 5, "partial_instances": 2, "items": 40}}


def make(**kwargs: Any) -> ProgramEvolutionEnv:
    kwargs = {"sandbox": "local", "task_params": TINY_BINPACK, **kwargs}
    return gym.make("rsigym/ProgramEvolution-v0", **kwargs).unwrapped  # type: ignore[return-value]


def test_check_env_passes_on_both_tasks():
    check_env(make(task="bin_packing_online", budget=3), skip_render_check=True)
    check_env(make(task="circle_packing_26", budget=3), skip_render_check=True)


def test_partial_then_full_costs_one_full_evaluation_and_is_shown_in_two_stages():
    env = make(task="bin_packing_online", budget=10, explore_p=0.0)
    obs, info = env.reset(seed=3)
    assert int(obs["stage"]) == 0 and int(obs["partial_available"]) == 1 and info["partial_cost"] == pytest.approx(0.4)
    candidate = info["candidate"]["id"]
    obs, _, _, _, info = env.step({"decision": "partial"})
    if info["decided"]["status"] == "failed":
        pytest.skip("this seed's first candidate fails; the stage mechanics need a working one")
    assert int(obs["stage"]) == 1 and info["candidate"]["id"] == candidate  # the same candidate again
    assert info["budget"]["full_equivalents_spent"] == pytest.approx(0.4)
    assert "This candidate's partial score" in obs["text"] and float(obs["partial_score"]) > -1e6
    obs, _, _, _, info = env.step({"decision": "full"})
    assert info["budget"]["full_equivalents_spent"] == pytest.approx(1.0)
    assert info["budget"]["full_evaluations"] == 1 and info["budget"]["partial_evaluations"] == 1
    assert int(obs["stage"]) == 0 and info["candidate"]["id"] == candidate + 1
    program = env.archive.programs[candidate]
    assert program.status == "full" and len(program.details["excess_pct"]) == 5  # 2 partial + 3 rest instances


def test_partial_on_a_task_without_one_is_an_error_observation_that_costs_nothing():
    env = make(task="circle_packing_26", budget=2, max_invalid_actions=1)
    env.reset(seed=0)
    obs, reward, terminated, _, info = env.step({"decision": "partial"})
    assert "no partial evaluation" in info["error"] and not terminated and reward == 0.0
    assert info["budget"]["full_equivalents_spent"] == 0.0 and "Error:" in obs["text"]
    _, _, terminated, _, info = env.step({"decision": "maybe"})
    assert terminated and info["termination"] == "agent_error"


def test_the_episode_ends_when_the_budget_is_spent_and_reward_is_the_rise_of_the_best():
    env = make(task="circle_packing_26", budget=4)
    _, info = env.reset(seed=1)
    seed_score, total, steps = info["seed_score"], 0.0, 0
    terminated = False
    while not terminated:
        _, reward, terminated, truncated, info = env.step({"decision": 2})
        total, steps = total + reward, steps + 1
        assert reward >= 0 and not truncated
    assert steps == 4 and info["termination"] == "budget_exhausted"
    assert total == pytest.approx(info["best_score"] - seed_score)
    snapshot = env.snapshot()
    assert snapshot["counts"]["full"] == 4 and len(snapshot["curve"]) == 5  # the seed, then 4 evaluations
    assert snapshot["best_score"] == info["best_score"] and snapshot["best_program"].count("def pack") == 1
    with pytest.raises(RuntimeError, match="budget is spent"):
        env.step({"decision": "full"})


def test_counterfactual_exploration_is_shown_next_and_counted_apart():
    env = make(task="circle_packing_26", budget=2, explore_p=1.0)
    env.reset(seed=0)
    obs, _, terminated, _, info = env.step({"decision": "discard"})
    cf = info["counterfactual"]
    assert not terminated and cf["program_id"] == info["decided"]["id"] and cf["cost"] == 1.0
    assert info["budget"]["full_equivalents_spent"] == 0.0 and info["budget"]["discards"] == 1
    assert info["exploration"]["evaluations"] == 1 and info["exploration"]["cost"] == 1.0
    assert "Counterfactual: turned-away candidate" in obs["text"]
    assert info["exploration"]["missed_new_bests"] == int(cf["new_best"])
    program = env.archive.programs[cf["program_id"]]
    assert program.status == "discarded" and program.counterfactual_score == cf["score"]
    assert program not in env.archive.evaluated()  # never enters the search


def test_same_seed_same_candidates_and_infos():
    def run(seed: int) -> list[Any]:
        env = make(task="bin_packing_online", budget=2, explore_p=0.5)
        _, info = env.reset(seed=seed)
        out = [info]
        for decision in ("discard", "full", "partial", "full", "full"):
            _, _, terminated, _, info = env.step({"decision": decision})
            out.append((info, env.archive.programs[-1].code))
            if terminated:
                break
        return out

    assert run(7) == run(7)
    assert run(7) != run(8)


def test_bad_arguments_are_clear_errors():
    with pytest.raises(ValueError, match="unknown program-evolution task 'tsp'"):
        make(task="tsp")
    with pytest.raises(ValueError, match="explore_p"):
        make(explore_p=1.5)
    with pytest.raises(ValueError, match="unknown candidate source 'genetic'"):
        make(source="genetic")
    with pytest.raises(ValueError, match="task_params names unknown tasks"):
        make(task_params={"tsp": {}})


def test_nothing_is_cached_on_the_local_provider_which_cannot_keep_candidates_apart(tmp_path, monkeypatch):
    from rsigym.cache import cache_dir

    monkeypatch.setenv("RSIGYM_CACHE", str(tmp_path / "cache"))  # its own: other tests' Docker runs do cache
    from rsigym.envs.evolution import SandboxEvaluator, make_task
    from rsigym.sandbox import LocalSandbox

    task = make_task("circle_packing_26")
    with LocalSandbox() as sandbox:
        evaluator = SandboxEvaluator(task, sandbox, timeout_s=20.0, cache=True)
        assert not evaluator.guarded
        first = evaluator.evaluate(task.library["hex"], "full")
        assert evaluator.evaluate(task.library["hex"], "full") == first and first.ok
        assert evaluator.cache_hits == 0 and not evaluator.cache_path(task.library["hex"], "full").exists()
    assert not list(cache_dir("evolution").glob("*.json"))


@pytest.mark.docker
def test_deterministic_results_are_cached_on_disk_and_timeouts_are_not():
    import os

    from rsigym.envs.evolution import EVOLUTION_LIMITS, SandboxEvaluator, make_task
    from rsigym.sandbox import open_sandbox
    from rsigym.sandbox.factory import resolve_provider

    used, reason = resolve_provider("auto")
    if used != "docker":
        if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":
            pytest.fail(f"RSIGYM_REQUIRE_DOCKER=1 but docker is unusable: {reason}")
        pytest.skip(f"docker is unusable: {reason}")
    task = make_task("circle_packing_26")
    with open_sandbox("docker", EVOLUTION_LIMITS) as sandbox:
        evaluator = SandboxEvaluator(task, sandbox, timeout_s=20.0, cache=True)
        first = evaluator.evaluate(task.library["hex"], "full")
        again = evaluator.evaluate(task.library["hex"], "full")
        assert again == first and evaluator.cache_hits == 1
        looping = "def pack():\n    while True:\n        pass\n"
        short = SandboxEvaluator(task, sandbox, timeout_s=2.0, cache=True)
        assert short.evaluate(looping, "full").reason.startswith("timed out")
        assert short.evaluate(looping, "full").reason.startswith("timed out") and short.cache_hits == 0
        broken = "import rsigym_no_such_module\n"
        assert evaluator.evaluate(broken, "full") == evaluator.evaluate(broken, "full") and evaluator.cache_hits == 2
        env = make(task="circle_packing_26", budget=2, sandbox=sandbox)
        _, info = env.reset(seed=4)
        _, _, _, _, info = env.step({"decision": "full"})
        rerun = make(task="circle_packing_26", budget=2, sandbox=sandbox)
        _, again_info = rerun.reset(seed=4)
        _, _, _, _, again_info = rerun.step({"decision": "full"})
        assert again_info == info and rerun._evaluator.cache_hits == 2  # the seed and the candidate


def test_the_text_carries_the_same_sibling_failure_rate_as_the_numbers():
    from rsigym.envs.evolution.allocation_policy import parse_features

    env = make(task="circle_packing_26", budget=12)
    obs, _ = env.reset(seed=3)
    for _ in range(12):
        assert parse_features(str(obs["text"])).sibling_failure_rate == pytest.approx(float(obs["sibling_failure_rate"]))
        obs, _, terminated, _, _ = env.step({"decision": "full"})
        if terminated:
            break
