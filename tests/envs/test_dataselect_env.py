"""DataSelection-v0 env: the protocol, analysis actions, retry and penalty rules, the sandbox."""

from __future__ import annotations

import json

import gymnasium as gym
import numpy as np
import pytest
from gymnasium.utils.env_checker import check_env

import rsigym.envs  # noqa: F401
from rsigym.envs.dataselect.subset_selectors import selector_script
from rsigym.envs.dataselect.digits_track import DigitsPool
from rsigym.envs.dataselect.pools import PoolSpec, cached_scores

SMALL = {"pool": "digits", "pool_size": 400, "group_size": 20, "student_seeds": 2, "n_random": 2, "sandbox": "local"}


def make(**kwargs):
    return gym.make("rsigym/DataSelection-v0", **{**SMALL, **kwargs}).unwrapped


def groups_of(size=20):
    return [list(range(k * size, (k + 1) * size)) for k in range(5)]


def test_check_env_passes():
    check_env(make(), skip_render_check=True)


def test_unknown_pool_and_oversized_groups_are_clear_errors():
    with pytest.raises(ValueError, match="unknown pool 'cifar'"):
        make(pool="cifar")
    with pytest.raises(ValueError, match="5 groups of 100 exceed the pool of 400"):
        make(group_size=100)


def test_analysis_actions_and_budgets():
    env = make(base_loss_rows=50, max_actions=5)
    obs, info = env.reset(seed=0)
    assert "groups of exactly 20 rows" in obs["text"]
    obs, _, _, _, info = env.step({"action": "inspect", "rows": [3, 4]})
    assert [i["row"] for i in info["result"]["items"]] == [3, 4] and len(info["result"]["items"][0]["pixels"]) == 8
    _, _, _, _, info = env.step({"action": "base_losses", "rows": list(range(40))})
    assert len(info["result"]["losses"]) == 40 and info["budget"]["base_loss_rows"]["left"] == 10
    _, _, terminated, _, info = env.step({"action": "base_losses", "rows": "all"})
    assert "exceeds the base_loss_rows budget (10 left)" in info["error"] and not terminated
    _, _, _, _, info = env.step('{"action": "stats"}')  # a JSON string is an action too
    assert info["result"]["rows"] == 400
    _, _, _, _, info = env.step({"action": "embed", "rows": [0, 1]})
    assert np.asarray(info["result"]["embeddings"]).shape == (2, 128)
    _, _, _, _, info = env.step({"action": "search", "query": "label 3"})
    assert info["budget"]["actions"]["left"] == 0 and info["result"]["count"] > 0
    _, _, _, _, info = env.step({"action": "stats"})
    assert "the analysis budget is spent; submit now" in info["error"]


@pytest.mark.parametrize("bad, message", [
    ({"groups": [list(range(20))] * 5}, "groups overlap"),
    ({"groups": groups_of()[:4] + [list(range(80, 99))]}, "group 4 has 19 rows"),
    ({"groups": groups_of()[:4] + [list(range(80, 99)) + [999]]}, "group 4 holds unknown rows [999]"),
    ({"groups": groups_of()[:4], "order": [0, 1, 2, 3]}, "expected 5 groups, got 4"),
    ({"order": [0, 1, 1, 2, 3]}, "order must be a permutation of 0..4"),
])
def test_invalid_submission_returns_its_error_then_penalty(bad, message):
    env = make()
    env.reset(seed=0)
    action = {"action": "submit", "groups": groups_of(), "order": [0, 1, 2, 3, 4], **bad}
    obs, reward, terminated, _, info = env.step(action)
    assert not terminated and reward == 0.0 and "one retry left" in obs["text"]
    assert any(message in e for e in info["submission_errors"]), info["submission_errors"]
    obs, reward, terminated, _, info = env.step(action)  # the second invalid one is penalised
    assert terminated and reward == -1.0 and info["metrics"]["penalised"] and info["metrics"]["spearman"] == -1.0
    assert env.snapshot()["invalid_submissions"] == 2


def test_retry_after_an_invalid_submission_is_scored():
    env = make()
    env.reset(seed=0)
    env.step({"action": "submit", "groups": groups_of()[:4], "order": [0, 1, 2, 3]})
    _, reward, terminated, _, info = env.step({"action": "submit", "groups": groups_of(), "order": [2, 0, 1, 3, 4]})
    m = info["metrics"]
    assert terminated and not m["penalised"] and reward == pytest.approx(m["gain"])
    assert m["top_group"] == 2 and len(m["group_scores"]) == 5 and len(m["random_draw_means"]) == 2
    assert m["gain"] == pytest.approx(m["top_score"] - m["random_mean"])
    assert env.snapshot()["submission"]["order"] == [2, 0, 1, 3, 4]


def test_scores_are_cached_by_rows_and_seed(monkeypatch):
    pool = DigitsPool(PoolSpec("digits", 400, 20, 0, 0))
    calls = []
    original = pool.train_and_score
    monkeypatch.setattr(pool, "train_and_score", lambda rows, seed: calls.append(seed) or original(rows, seed))
    first = cached_scores(pool, [5, 1, 2], 0)
    assert cached_scores(pool, [1, 2, 5], 0) == first and calls == [0]  # row order does not matter
    cached_scores(pool, [1, 2, 5], 1)
    assert calls == [0, 1]


def test_digits_label_swaps_hurt_the_confusable_classes():
    pool = DigitsPool(PoolSpec("digits", 1200, 100, 0, 0))
    f = np.array(pool.factors)
    rng = np.random.default_rng(0)
    clean = rng.choice(np.where(f == "clean")[0], 150, replace=False)
    swapped = np.concatenate([rng.choice(np.where(f == "clean")[0], 100, replace=False),
                              rng.choice(np.where(f == "label_swap")[0], 50, replace=False)])
    clean_score = np.mean([pool.train_and_score(clean, s)["confusable"] for s in range(2)])
    swap_score = np.mean([pool.train_and_score(swapped, s)["confusable"] for s in range(2)])
    assert clean_score - swap_score > 0.05


def test_run_python_submits_a_csv_written_in_the_work_dir():
    env = make()
    env.reset(seed=0)
    env.step({"action": "base_losses", "rows": "all"})
    _, _, _, _, info = env.step({"action": "run_python", "code": selector_script("stratified", 20, 0)})
    assert info["result"]["exit_code"] == 0, info["result"]["stderr"]
    _, _, terminated, _, info = env.step({"action": "submit", "csv_file": "submission.csv", "order": [0, 1, 2, 3, 4]})
    assert terminated and not info["metrics"]["penalised"]


@pytest.mark.docker
def test_run_python_cannot_read_the_evaluation_or_write_outside_its_work_dir():
    env = make(pool="function_calling", pool_size=300, group_size=20, eval_per_category=5, sandbox="docker")
    env.reset(seed=0)
    eval_items, _ = env.pool.eval_items()
    secret = eval_items[0]["request"]
    # The script holds the secret reversed, so that only a real copy of the item would match.
    code = f"""
import json, os
secret = {secret[::-1]!r}[::-1]
found = []
for root in ("/work", "/tmp", "/home", "/root", "/opt", "/srv"):
    for path, dirs, files in os.walk(root):
        for name in files:
            try:
                if secret in open(os.path.join(path, name), errors="ignore").read():
                    found.append(os.path.join(path, name))
            except OSError:
                pass
writes = {{}}
for target in ("/etc/rsigym", "/usr/rsigym", "/rsigym", "pool/items.jsonl"):
    try:
        open(target, "a").write("x")
        writes[target] = "written"
    except OSError as exc:
        writes[target] = type(exc).__name__
try:
    import rsigym
    importable = True
except ImportError:
    importable = False
print(json.dumps({{"found": found, "writes": writes, "rsigym": importable, "files": sorted(os.listdir("."))}}))
"""
    _, _, _, _, info = env.step({"action": "run_python", "code": code})
    assert info["result"]["exit_code"] == 0, info["result"]["stderr"]
    report = json.loads(info["result"]["stdout"].strip().splitlines()[-1])
    assert report["found"] == [] and report["rsigym"] is False
    assert all(v != "written" for v in report["writes"].values()), report["writes"]
    assert report["files"] == ["analysis", "pool", "run.py"]
    env.close()


def test_offline_heuristic_runs_through_llm_agent(monkeypatch):
    monkeypatch.setenv("LITELLM_LOCAL_MODEL_COST_MAP", "True")
    from rsigym.agents import LLMAgent

    env = make()
    obs, info = env.reset(seed=0)
    agent = LLMAgent("rsigym/dataselect_heuristic")
    agent.reset({"env_id": "rsigym/DataSelection-v0", "action_schema": env.action_schema}, seed=0)
    kinds = []
    for _ in range(6):
        action = agent.act(obs)
        kinds.append(action["action"])
        obs, reward, terminated, _, info = env.step(action)
        if terminated:
            break
    assert kinds == ["base_losses", "run_python", "submit"]
    assert not info["metrics"]["penalised"] and len(info["metrics"]["group_scores"]) == 5


@pytest.mark.parametrize("name", ["dataselect_quick", "dataselect_paper"])
def test_scenarios_validate(name):
    from rsigym.scenario import expand, load_scenario
    from tests.conftest import REPO

    episodes = expand(load_scenario(REPO / "scenarios" / f"{name}.yaml"))
    assert episodes and all(e.env.id == "rsigym/DataSelection-v0" for e in episodes)
