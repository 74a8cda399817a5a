"""The LLM candidate source (offline, LiteLLM ``mock_response``), the bundled scenarios and the
benchmarks' smoke runs."""

from __future__ import annotations

import math
import sys
from pathlib import Path
from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rsigym.envs  # noqa: F401
from rsigym.envs.evolution import make_source, make_task
from rsigym.envs.evolution.llm_source import apply_diff

sys.path.insert(0, str(Path(__file__).resolve().parents[2] / "benchmarks"))

GRID_ANSWER = "Here is a better one:\n```python\n{code}```\nIt uses a grid."


def test_llm_source_rewrite_uses_the_reply_and_counts_provider_tokens():
    task = make_task("circle_packing_26")
    source: Any = make_source({"kind": "llm", "model": "openai/gpt-4o-mini", "crossover_p": 0.0,
                               "litellm_kwargs": {"mock_response": GRID_ANSWER.format(code=task.library["grid"]),
                                                  "api_key": "sk-offline"}})
    messages = source.messages(task.seed_program, 0.98, None, task.description)
    assert "score 0.98" in messages[1]["content"] and task.seed_program in messages[1]["content"]
    proposal = source.propose(task.seed_program, 0.98, None, task.library, task.description, np.random.default_rng(0))
    assert proposal.code.strip() == task.library["grid"].strip() and proposal.operator == "llm mutation (rewrite)"
    assert proposal.prompt_tokens > 0 and proposal.completion_tokens > 0  # mock usage from LiteLLM


def test_llm_source_diff_mode_and_unusable_answers():
    parent = "def pack():\n    return 1\n"
    assert apply_diff(parent, "<<<<<<< SEARCH\n    return 1\n=======\n    return 2\n>>>>>>> REPLACE") == \
        "def pack():\n    return 2\n"
    assert apply_diff(parent, "<<<<<<< SEARCH\n    return 9\n=======\n    return 2\n>>>>>>> REPLACE") is None
    source: Any = make_source({"kind": "llm", "model": "openai/gpt-4o-mini", "mode": "diff",
                               "litellm_kwargs": {"mock_response": "I would not change anything.", "api_key": "x"}})
    proposal = source.propose(parent, 1.0, None, {}, "task", np.random.default_rng(0))
    assert proposal.operator.endswith("unusable")
    with pytest.raises(SyntaxError):
        compile(proposal.code, "c", "exec")  # it reaches the evaluator as a failing candidate


def test_env_with_the_llm_source_counts_generator_tokens():
    task = make_task("circle_packing_26")
    env: Any = gym.make("rsigym/ProgramEvolution-v0", task="circle_packing_26", sandbox="local", budget=1,
                        source={"kind": "llm", "model": "openai/gpt-4o-mini",
                                "litellm_kwargs": {"mock_response": GRID_ANSWER.format(code=task.library["hex"]),
                                                   "api_key": "x"}}).unwrapped
    _, info = env.reset(seed=0)
    assert info["tokens"]["prompt"] > 0 and info["tokens"]["completion"] > 0
    _, reward, terminated, _, info = env.step({"decision": "full"})
    assert terminated and info["best_score"] == pytest.approx(2.2723105625617657) and reward > 1.2


def test_bundled_scenarios_validate_and_quick_runs_offline(tmp_path):
    from rsigym.records.jsonl import read_records
    from rsigym.runner import run_scenario
    from rsigym.scenario import expand, load_scenario, parse_scenario

    paper = load_scenario("evolution_paper")
    assert len(paper.agents) == 4 and len(paper.seeds) == 5
    quick = load_scenario("evolution_quick")
    assert len(expand(quick)) == 8
    raw = dict(quick.raw)  # the same battery, smaller still and on the local sandbox
    raw["env"] = {"id": raw["env"]["id"], "kwargs": {**raw["env"]["kwargs"], "budget": 2, "sandbox": "local",
                  "task_params": {name: {"instances": 5, "partial_instances": 2, "items": 30}
                                  for name in ("bin_packing_online", "bin_packing_noisy")}}}
    raw["graders"] = ["evolution_best"]  # the held-out grader needs Docker: tested on its own
    summary = run_scenario(parse_scenario(raw, "quick-test"), tmp_path, workers=0, progress=False)
    records = read_records(tmp_path / "records.jsonl").records
    assert summary.ran == 8 and summary.infra_errors == 0
    assert {r.termination for r in records} == {"budget_exhausted"}
    assert all(g.score is not None for r in records for g in r.grades)
    report = (tmp_path / "report.md").read_text()
    assert "## Program evolution" in report and "Full evaluations to reach the target, per run" in report
    assert (tmp_path / "evolution_bin_packing_online.png").exists()


def test_evolution_offline_benchmark_smoke_run(capsys):
    import evolution_offline

    out = evolution_offline.main(evolution_offline.Args(seeds=1, budget=2, items=30, sandbox="local", workers=0))
    assert len(out["rises"]) == 1 and math.isfinite(out["rises"][0])
    assert set(out["reach"]) == set(out["crossing"]) == set(out["crossing_equivalents"]) == {"always_full", "cascade"}
    for agent, full in out["crossing"].items():  # partials add cost: never fewer equivalents than full evaluations
        equivalents = out["crossing_equivalents"][agent]
        assert (full is None) == (equivalents is None)
        assert full is None or equivalents is None or equivalents >= full - 1e-9
    assert "cascade needed fewer full evaluations" in capsys.readouterr().out


@pytest.mark.docker
def test_evaluation_throughput_benchmark_smoke_run(capsys):
    from rsigym.sandbox.factory import resolve_provider

    if resolve_provider("auto")[0] != "docker":
        import os

        if os.environ.get("RSIGYM_REQUIRE_DOCKER") == "1":
            pytest.fail("RSIGYM_REQUIRE_DOCKER=1 but docker is unusable")
        pytest.skip("docker is unusable")
    import evaluation_throughput

    rows = evaluation_throughput.main(evaluation_throughput.Args(evaluations=1, items=30))
    assert [r["task"] for r in rows] == ["circle_packing_26", "bin_packing_online"]
    assert all(r["docker"] > 0 and r["bare"] > 0 and r["scores_agree"] for r in rows)
    assert "ratio" in capsys.readouterr().out
