"""HPO attribution analyses as attacks: each control shown to catch the agent it exists for.

Episodes run with the analytic trial runner of ``test_hpo_env`` (no FNO is trained).
"""

from __future__ import annotations

import math
import zlib

import numpy as np
import pytest

import rsigym.envs  # noqa: F401
from rsigym.envs.hpo import analyses
from rsigym.envs.hpo.replay import cold_start_replay, replay_decision_points
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Trajectory
from rsigym.runner import run_episode
from rsigym.scenario import EpisodeSpec

from .test_hpo_env import TRIALS  # noqa: F401  (registers rsigym-test/HPOAnalytic-v0)


def _episode(model: str, seed: int, task: str = "adv0.4->adv1.0", budget: int = 6, **params):
    env = EnvRef("rsigym-test/HPOAnalytic-v0", {"budget": budget}, task, None)
    key = f"{seed:02d}{zlib.crc32(task.encode()) % 10**6:06d}" + "1" * 24
    record = run_episode(EpisodeSpec(key, env, AgentSpec(model, "llm", model, params), seed, 0, 40))
    assert record.termination == "budget_exhausted", record.error
    return record


@pytest.mark.parametrize("model", ["rsigym/hpo_random", "rsigym/hpo_heuristic"])
def test_replayed_original_is_the_recorded_decision(model):
    """The recorded conversation is resent: a deterministic model gives its recorded answer again."""
    records = [_episode(model, seed) for seed in range(2)]
    points = [p for r in records for p in replay_decision_points(r, k=1, max_points=3)]
    assert points and all(p.reproduced for p in points)


def test_single_turn_replay_misses_a_history_dependent_model():
    """The attack the resent history stops: hpo_random answers from the whole conversation."""
    records = [_episode("rsigym/hpo_random", seed) for seed in range(2)]
    single = [p for r in records for p in replay_decision_points(r, k=1, max_points=3, resend_history=False)]
    assert not any(p.reproduced for p in single)


def test_recorded_turns_reach_the_model_as_a_conversation():
    from rsigym.agents import make_agent
    from rsigym.envs.hpo.space import ACTION_SCHEMA

    for tool_mode in ("tools", "json"):
        agent = make_agent(AgentSpec("r", "llm", "rsigym/hpo_random", {"tool_mode": tool_mode}))
        agent.reset({"env_id": "x", "action_schema": ACTION_SCHEMA}, 0)
        action = {"learning_rate": 1e-3, "optimizer": "adam", "loss": "mse"}
        agent.add_recorded_turn("first observation", action)
        agent.add_recorded_turn("second observation", action)
        roles = [m["role"] for m in agent.messages]
        assert roles == (["system", "user", "assistant", "tool", "assistant"] if tool_mode == "tools"
                         else ["system", "user", "assistant", "user", "assistant"])
        assert agent.act({"text": "third"})["optimizer"]  # the model answers after the resent turns


def test_stochastic_blind_control_is_not_flagged_and_fails_when_the_control_breaks():
    records = [_episode("rsigym/hpo_random", seed, task) for seed in range(3)
               for task in ("adv0.4->adv1.0", "burg0.01->adv1.0")]

    def sensitivity(**kwargs):
        points = [p for r in records for p in replay_decision_points(r, k=2, max_points=3, **kwargs)]
        return analyses.clustered_mean_ci([p.sensitivity for p in points], [p.episode_key for p in points])

    mean, low, high, clusters = sensitivity()
    assert clusters == 6 and low <= 0 <= high, (mean, low, high)
    mean, low, high, _ = sensitivity(control_notation="decimal")  # the control now changes nothing
    assert low > 0, (mean, low, high)


def _row(section, agent):
    line = next(line for line in section.markdown.splitlines() if line.startswith(f"| {agent} |"))
    return [c.strip() for c in line.strip("|").split("|")]


def test_cold_start_needs_the_swap_to_beat_both_resampling_controls(tmp_path):
    records = [_episode(m, 0) for m in ("rsigym/hpo_heuristic", "rsigym/hpo_random")]
    section = analyses.cold_start_analysis(records, tmp_path, k=3)
    heuristic, random = _row(section, "rsigym/hpo_heuristic"), _row(section, "rsigym/hpo_random")
    assert heuristic[-1] == "yes" and float(heuristic[3]) == float(heuristic[4]) == 0.0
    # the uncontrolled shift rates the prior-free agent as more task-conditioned than the heuristic ...
    assert float(random[2]) > float(heuristic[2])
    # ... the no-op edit moves it as much, so no verdict of conditioning
    assert random[-1] == "not shown" and float(random[4]) > 0.5
    assert heuristic[1] == "12"  # asked on all twelve adaptations


def test_cold_start_with_a_fixed_model_seed_is_caught_by_the_noop_edit():
    """Re-asking a seed-fixed random agent gives the same answer; one trailing space does not."""
    replay = cold_start_replay(AgentSpec("r", "llm", "rsigym/hpo_random", {"seed": 5}), "adv0.4->adv1.0", 8,
                               analyses.swapped_description("adv0.4->adv1.0"), k=3)
    assert replay.reask == (0.0, 0.0, 0.0) and min(replay.noop) > 0
    assert all(math.isfinite(v) for v in replay.swap)


def test_cold_start_with_too_few_adaptations_gives_no_verdict(tmp_path):
    section = analyses.cold_start_analysis([_episode("rsigym/hpo_heuristic", 0)], tmp_path, k=1,
                                           tasks=["adv0.4->adv1.0", "burg0.01->adv1.0"])
    assert _row(section, "rsigym/hpo_heuristic")[-1] == "no verdict"


def _compare_record(agent, task, seed, test):
    state = {"task_id": task, "seed": seed, "budget": 1, "test_nrmse": test,
             "trials": [{"learning_rate": 1e-3, "optimizer": "adam", "loss": "mse", "val_nrmse": test}]}
    return Trajectory(f"{seed:04d}{zlib.crc32((agent + task).encode()) % 10**8:08d}" + "0" * 20, EnvRef("x", {}, task, None),
                      AgentSpec(agent, "llm", None, {}), seed, 0, final=FinalSnapshot.of(state))


def test_wilcoxon_pairs_adaptations_not_correlated_seeds(tmp_path):
    """24 matched runs on 2 adaptations are 2 clusters: no p-value, although pooling gives p < 1e-4."""
    rng, records = np.random.default_rng(0), []
    for task, gain in (("adv0.4->adv1.0", 0.02), ("burg0.01->adv1.0", -0.004)):
        for seed in range(12):
            base = 0.1 + rng.normal(0, 0.001)
            records += [_compare_record("random-search", task, seed, base),
                        _compare_record("x", task, seed, base - gain + rng.normal(0, 0.002))]
    row = _row(analyses.compare_analysis(records, tmp_path), "x")
    assert row[-2] == "2" and row[-1] == "nan"
    records = []
    for task in analyses.adaptation_names()[:8]:
        for seed in range(2):
            base = 0.1 + rng.normal(0, 0.01)
            records += [_compare_record("random-search", task, seed, base),
                        _compare_record("x", task, seed, base - 0.01)]
    row = _row(analyses.compare_analysis(records, tmp_path), "x")
    assert row[-2] == "8" and float(row[-1]) < 0.01




def test_feedback_reports_each_adaptation(tmp_path):
    records = [_episode("rsigym/hpo_heuristic", seed, task) for seed in range(2)
               for task in ("adv0.4->adv1.0", "burg0.01->adv1.0")]
    section = analyses.feedback_analysis(records, tmp_path, k=1, max_points=2)
    body = section.markdown
    assert "| rsigym/hpo_heuristic | adv0.4->adv1.0 | 2 |" in body
    assert "| rsigym/hpo_heuristic | burg0.01->adv1.0 | 2 |" in body
    assert _row(section, "rsigym/hpo_heuristic")[3] == "8/8"  # every replayed original reproduced


def test_score_derangement_never_swaps_tied_scores():
    """Two diverged trials both show the cap: swapping them would change nothing in the prompt."""
    from rsigym.envs.hpo.replay import score_derangement

    rng = np.random.default_rng(0)
    labels = ["10.000000", "0.120000", "10.000000", "0.300000"]
    for _ in range(50):
        order = score_derangement(labels, rng)
        assert order is not None and all(labels[j] != labels[i] for i, j in enumerate(order))
    assert score_derangement(["10.000000", "10.000000", "10.000000", "0.1"], rng) is None  # impossible
    assert score_derangement(["0.1"], rng) is None
