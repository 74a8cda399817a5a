"""Issue 17 pieces of ProgramEvolution-v0: the noisy task, behavioural deduplication, the report's
exploration-inclusive cost, scaled missed new bests and policy history, and the held-out grader."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rsigym.envs  # noqa: F401
from rsigym.envs.evolution import make_task
from rsigym.envs.evolution.evaluator import SandboxEvaluator
from rsigym.envs.evolution.analyses import missed_new_bests, policy_events, turned_away
from rsigym.envs.evolution.noisy import instance_noise
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Step, Trajectory
from rsigym.sandbox import LocalSandbox

TINY = {"instances": 5, "partial_instances": 2, "items": 40}


def test_noise_is_fixed_per_candidate_and_instance_and_has_the_stated_spread():
    assert instance_noise(0, 3, "abc", 1.0) == instance_noise(0, 3, "abc", 1.0)
    draws = np.array([instance_noise(0, i, "abc", 2.0) for i in range(3000)])
    assert abs(draws.mean()) < 0.15 and 1.85 < draws.std() < 2.15
    assert instance_noise(0, 3, "abc", 1.0) != instance_noise(1, 3, "abc", 1.0)  # the noise seed redraws
    assert instance_noise(0, 3, "abc", 1.0) != instance_noise(0, 3, "abd", 1.0)  # another behaviour


def test_the_noisy_task_is_reproducible_merges_exactly_and_differs_from_the_clean_one():
    clean = make_task("bin_packing_online", **TINY)
    noisy = make_task("bin_packing_noisy", noise_sd=1.0, **TINY)
    silent = make_task("bin_packing_noisy", noise_sd=0.0, **TINY)
    code = clean.library["best_fit"]
    with LocalSandbox() as sandbox:
        full = SandboxEvaluator(noisy, sandbox).evaluate(code, "full")
        again = SandboxEvaluator(noisy, sandbox).evaluate(code, "full")
        partial = SandboxEvaluator(noisy, sandbox).evaluate(code, "partial")
        rest = SandboxEvaluator(noisy, sandbox).evaluate(code, "rest")
        reference = SandboxEvaluator(clean, sandbox).evaluate(code, "full")
        zero = SandboxEvaluator(silent, sandbox).evaluate(code, "full")
    assert full.score == again.score and full.score != reference.score and zero.score == reference.score
    assert noisy.merge(partial, rest).score == pytest.approx(full.score)
    assert noisy.spec()["name"] == "bin_packing_noisy" and noisy.spec()["noise_sd"] == 1.0
    with pytest.raises(ValueError, match="noise_sd"):
        make_task("bin_packing_noisy", noise_sd=-1.0)


def test_behavioural_duplicates_stop_after_the_partial_evaluation():
    env: Any = gym.make("rsigym/ProgramEvolution-v0", task="bin_packing_online", sandbox="local", budget=6,
                        explore_p=1.0, dedup="behaviour", task_params={"bin_packing_online": TINY}).unwrapped
    env.reset(seed=0)
    duplicates, steps, done = 0, 0, False
    while not done and steps < 400:
        _, _, done, _, info = env.step({"decision": "partial" if info_stage(env) == 0 else "full"})
        steps += 1
        decided = info.get("decided") or {}
        if decided.get("status") == "duplicate":
            duplicates += 1
            assert "counterfactual" not in info and int(info["candidate"]["stage"]) == 0
    assert duplicates > 0, "tiny first-fit mutants should often pack identically"
    assert env.snapshot()["counts"]["duplicate"] == duplicates
    twins = [p for p in env.archive.programs if p.status == "duplicate"]
    assert all(p.score is None for p in twins)
    with pytest.raises(ValueError, match="dedup"):
        gym.make("rsigym/ProgramEvolution-v0", dedup="text")


def info_stage(env: Any) -> int:
    return int(env._stage)


def _record(agent: str, curve: list[dict[str, Any]], counts: dict[str, int], exploration: dict[str, Any],
            rationales: list[str] = ()) -> Trajectory:  # type: ignore[assignment]
    state = {"task_id": "bin_packing_online", "seed_score": -5.0, "best_score": curve[-1]["best_score"],
             "counts": counts, "exploration": exploration, "curve": curve, "best_program": "x", "task": {}}
    steps = [Step(t, {}, {"decision": "discard", "rationale": text}, 0.0, False, False) for t, text in enumerate(rationales)]
    return Trajectory("k" + agent, EnvRef("rsigym/ProgramEvolution-v0", {}), AgentSpec(id=agent, kind=agent), 0, 0,
                      steps=steps, final=FinalSnapshot.of(state), termination="budget_exhausted")


def test_missed_new_bests_are_scaled_and_never_read_zero_when_unmeasured():
    counts = {"full": 3, "partial": 4, "rest": 1, "discard": 10, "failed": 0, "duplicate": 1}
    assert turned_away({"counts": counts}) == 12
    seen = missed_new_bests([{"counts": counts, "exploration": {"evaluations": 3, "missed_new_bests": 1}}])
    assert seen.startswith("4 [") and "1 seen in 3 of 12 explored" in seen
    none_seen = missed_new_bests([{"counts": counts, "exploration": {"evaluations": 3, "missed_new_bests": 0}}])
    assert none_seen.startswith("0 [0, ") and not none_seen.startswith("0 [0, 0]")
    assert missed_new_bests([{"counts": counts, "exploration": {"evaluations": 0, "missed_new_bests": 0}}]
                            ).startswith("unknown")


def test_the_report_has_exploration_cost_and_policy_history(tmp_path):
    from rsigym.envs.evolution.analyses import evolution_analysis

    def curve(points: list[tuple[int, float, float, float]]) -> list[dict[str, Any]]:
        return [{"full_evaluations": f, "full_equivalents": e, "exploration_cost": x, "tokens": 0, "best_score": b}
                for f, e, x, b in points]

    counts = {"full": 2, "partial": 0, "rest": 0, "discard": 4, "failed": 0}
    base = _record("always_full", curve([(1, 1.0, 0.0, -5.0), (2, 2.0, 0.0, -4.0)]), counts,
                   {"evaluations": 0, "cost": 0.0, "missed_new_bests": 0})
    events = ["policy v1", "policy v1\n[policy] challenger v2 proposed at candidate 3 after 2 full results: [params: x]",
              "policy v1; challenger v2 on trial\n[policy] challenger v2 rejected at candidate 7: 3 disagreements of 4; "
              "expected misses 0.50 vs 0.00"]
    evo = _record("evoalloc", curve([(1, 1.0, 0.0, -5.0), (2, 2.0, 3.0, -4.0)]), counts,
                  {"evaluations": 3, "cost": 3.0, "missed_new_bests": 0}, events)
    assert policy_events(evo) == [events[1].splitlines()[1][9:], events[2].splitlines()[1][9:]]
    section = evolution_analysis([base, evo], tmp_path)
    assert "incl. exploration" in section.markdown
    row = next(line for line in section.markdown.splitlines() if line.startswith("| evoalloc"))
    cells = [c.strip() for c in row.split("|")[1:-1]]
    assert cells[2] == "2" and cells[3] == "2" and cells[4] == "5"  # exploration paid 3 more equivalents
    assert "Policy history of evoalloc" in section.markdown and "1 challengers, 0 accepted, 1 rejected" in section.markdown
    assert "challenger v2 rejected at candidate 7" in section.markdown


@pytest.mark.docker
def test_the_heldout_grader_reexecutes_the_best_program_on_instances_the_search_never_saw():
    from rsigym.envs.evolution.graders import EvolutionHeldOut
    from rsigym.sandbox.factory import resolve_provider

    if resolve_provider("auto")[0] != "docker":
        pytest.skip("needs Docker")
    task = make_task("bin_packing_online", instances=4, partial_instances=1, items=300)
    state = {"task_id": task.name, "task": task.spec(), "best_score": -1.0, "best_program": task.library["best_fit"],
             "curve": [], "counts": {}, "exploration": {}}
    record = Trajectory("k", EnvRef("rsigym/ProgramEvolution-v0", {}), AgentSpec(id="a", kind="a"), 0, 0,
                        final=FinalSnapshot.of(state))
    grade = EvolutionHeldOut().grade(record)
    assert grade.details["held_out"] and grade.details["instance_seed"] == task.instance_seed + 1_000_003
    assert grade.details["sandbox"] == "docker" and grade.details["gain_over_seed"] >= 0  # best fit never loses to first fit
    with LocalSandbox() as sandbox:
        same = SandboxEvaluator(task, sandbox).evaluate(task.library["best_fit"], "full")
    assert grade.score != same.score  # other instances, another score
