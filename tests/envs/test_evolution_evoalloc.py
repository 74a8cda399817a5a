"""Allocators of ProgramEvolution-v0: the EvoAlloc acceptance rule on constructed cases, the
policy text round trip, the offline stand-in, cascade's thresholds, and whole offline episodes."""

from __future__ import annotations

from typing import Any

import gymnasium as gym
import numpy as np
import pytest

import rsigym.envs  # noqa: F401
from rsigym.agents import make_agent
from rsigym.envs.evolution.allocation_policy import (DEFAULT_POLICY, Features, PolicyParams, decide, parse_features,
                                             parse_policy, policy_text)
from rsigym.envs.evolution.acceptance import UNOBSERVED_PARTIAL, evaluates_fully
from rsigym.envs.evolution.evoalloc import (Case, accept_challenger, missed_new_bests_estimate,
                                           prior_new_best_rate, summarise_experience)
from rsigym.envs.evolution.policies import revise_policy

PC = 8 / 30  # the bin-packing partial cost


def test_a_challenger_that_misses_a_new_best_is_rejected_even_if_it_saves_evaluations():
    cases = [Case("full", "discard", new_best=True),              # the challenger would have missed it
             Case("full", "discard", new_best=False), Case("full", "discard", new_best=False),
             Case("full", "partial", new_best=False),              # only one starts with a partial: left out
             Case("partial", "partial", new_best=None)]           # agreement: ignored
    verdict = accept_challenger(cases, PC)
    assert not verdict.accepted and verdict.disagreements == 4
    # three discards, one new best: 3 x the posterior mean (1 + 1) / (3 + 10) of the class's rate
    assert verdict.misses_incumbent == 0 and verdict.misses_challenger == pytest.approx(3 * 2 / 13, abs=0.02)
    assert verdict.cost_incumbent == pytest.approx(3.0) and verdict.cost_challenger == 0.0
    assert "1 where only one policy starts with a partial left out" in verdict.reason
    assert "more than 0.25 extra with posterior probability" in verdict.reason


def test_a_challenger_that_saves_evaluations_and_misses_nothing_is_accepted_only_on_enough_evidence():
    cases = [Case("full", "discard", new_best=False), Case("partial+full", "partial", new_best=False),
             Case("full", "full", new_best=True)]
    verdict = accept_challenger(cases, PC)
    assert verdict.prefers_challenger and verdict.misses_incumbent == 0
    assert verdict.cost_challenger == pytest.approx(PC) and verdict.cost_incumbent == pytest.approx(2.0)
    # two disagreements, both cheaper: an equivalent challenger does that once in 2^2 role swaps
    assert verdict.p_value == pytest.approx(1 / 4) and not verdict.accepted
    assert "role-swap p=0.25 over 2 disagreements (not below 0.05" in verdict.reason
    # ten discards with no new best seen, in a run where one candidate in five is a new best: the
    # challenger would still be expected to miss one; rejected (the luck of the trial is not evidence)
    many = [Case("full", "discard", new_best=False)] * 10
    assert not accept_challenger(many, PC, prior_rate=0.2).accepted
    assert accept_challenger(many, PC, prior_rate=0.01).accepted


def test_an_unobserved_counterfactual_is_not_no_miss_and_needs_its_own_interval():
    # the incumbent discarded, the challenger would have evaluated; exploration saw none of them
    unseen = [Case("discard", "full", new_best=None)] * 10
    verdict = accept_challenger(unseen, PC, prior_rate=0.1)
    assert verdict.misses_incumbent == pytest.approx(1.0, abs=0.05)  # not 0: unobserved is not "no miss"
    assert verdict.only_challenger_full == 10 and verdict.observed_only_challenger_full == 0
    # but at the run's 10% rate, with nothing observed, "fewer by more than 0.25" has posterior
    # probability 1 - 0.975^9 = 0.80 only: not accepted; in a run at 30% it is established
    assert not verdict.accepted and 0.75 < 1 - verdict.p_value < 0.85
    assert accept_challenger(unseen, PC, prior_rate=0.3).accepted
    # the same in a run that rarely finds new bests: the extra evaluations are not worth it
    assert not accept_challenger(unseen, PC, prior_rate=0.01).accepted
    # an explored new best among them weighs for the whole class
    seen = [Case("discard", "full", new_best=True, counterfactual=True)] + unseen[1:]
    assert accept_challenger(seen, PC, prior_rate=0.01).misses_incumbent == pytest.approx(10 * 1.1 / 11, abs=0.05)
    # no disagreement is no evidence; equal paths and cost keep the incumbent
    assert not accept_challenger([Case("full", "partial+full", new_best=False)], PC).accepted
    verdict = accept_challenger([Case("full", "full", new_best=True)], PC)
    assert not verdict.accepted and verdict.reason == "the policies never disagreed"
    with pytest.raises(ValueError, match="explore_p"):
        accept_challenger(unseen, PC, explore_p=1.5)


def test_an_unobserved_partial_is_not_a_full_evaluation():
    # the challenger wanted a partial evaluation the incumbent never ran: not a catch of the new
    # best (the former rule charged it as partial + full, so it caught every one)
    cases = [Case("discard", UNOBSERVED_PARTIAL, new_best=True, counterfactual=True)] * 6
    verdict = accept_challenger(cases, PC, prior_rate=0.1)
    assert verdict.only_challenger_full == 0 and not verdict.accepted
    assert "6 where only one policy starts with a partial left out" in verdict.reason
    assert not evaluates_fully(UNOBSERVED_PARTIAL)


def test_a_challenger_that_disagrees_at_random_is_not_accepted():
    # six cheaper and four dearer disagreements: the point estimates prefer the challenger (it is
    # cheaper overall), but 386 of the 1,024 role swaps of the cost differences are as cheap
    cases = ([Case("full", "discard", new_best=False)] * 6 + [Case("discard", "full", new_best=None)] * 4)
    verdict = accept_challenger(cases, PC, prior_rate=0.01)
    assert verdict.prefers_challenger and not verdict.accepted
    assert verdict.p_value == pytest.approx(386 / 1024)
    # more than 12 disagreements: seeded draws of the swaps, the same answer every call
    many = cases * 2
    assert accept_challenger(many, PC, prior_rate=0.01).p_value == accept_challenger(many, PC, prior_rate=0.01).p_value
    with pytest.raises(ValueError, match="alpha"):
        accept_challenger(cases, PC, alpha=0.0)


def test_the_prior_rate_weights_explored_outcomes_by_inverse_propensity():
    full = [Case("full", "full", new_best=False)] * 8
    explored = [Case("discard", "discard", new_best=True, counterfactual=True)]
    unexplored = [Case("discard", "discard", new_best=None)] * 9
    # one explored new best at explore_p 0.1 stands for ten turned-away candidates
    assert prior_new_best_rate(full + explored + unexplored, 0.1) == pytest.approx((10 + 1) / (18 + 2))
    assert prior_new_best_rate(full + unexplored, 0.1) == pytest.approx(1 / 19)
    assert 0 < prior_new_best_rate([], 0.1) < 1


def test_missed_new_bests_are_scaled_by_exploration_and_zero_seen_is_not_zero():
    estimate, low, high = missed_new_bests_estimate(40, 4, 1)
    assert estimate == pytest.approx(10.0) and 0 < low < 10 < high <= 40
    estimate, low, high = missed_new_bests_estimate(40, 4, 0)
    assert estimate == 0 and low == 0 and high > 10      # "0 seen in 4 explored" is far from "0 missed"
    assert missed_new_bests_estimate(40, 0, 0)[1:] == (0.0, 40.0)
    with pytest.raises(ValueError):
        missed_new_bests_estimate(3, 5, 1)


def test_policy_text_round_trips_and_decides_by_its_rules():
    params = PolicyParams(0.05, 0.2, 0.01, 0.5, 0)
    assert parse_policy(policy_text(params, 3)) == params and parse_policy("no params here") is None
    near = Features(best=-5.0, parent=-5.1, partial_available=True, stage=0)   # 2% short
    far = Features(best=-5.0, parent=-5.75, partial_available=True, stage=0)   # 15% short
    assert decide(params, near) == "full" and decide(DEFAULT_POLICY, near) == "partial"
    assert decide(params, far) == "partial" and decide(DEFAULT_POLICY, far) == "discard"
    assert decide(params, Features(-5.0, -5.75, False, 0)) == "full"  # no partial evaluation: full
    failing = Features(best=-5.0, parent=-5.75, partial_available=True, stage=0, sibling_failure_rate=0.75)
    assert decide(params, failing) == "discard"
    stage1 = Features(-5.0, -5.0, True, 1, partial=-4.02, reference_partial=-4.0)  # 0.5% short
    assert decide(params, stage1) == "full" and decide(PolicyParams(stage1_margin=0.001), stage1) == "discard"


def test_features_are_read_from_the_env_text():
    env: Any = gym.make("rsigym/ProgramEvolution-v0", task="bin_packing_online", sandbox="local", budget=3,
                        task_params={"bin_packing_online": {"instances": 5, "partial_instances": 2, "items": 40}}).unwrapped
    obs, _ = env.reset(seed=0)
    features = parse_features(obs["text"])
    assert features.best == pytest.approx(float(obs["best_score"]), rel=1e-5)
    assert features.parent == pytest.approx(float(obs["parent_score"]), rel=1e-5)
    assert features.partial_available and features.stage == 0
    obs, *_ = env.step({"decision": "partial"})
    if int(obs["stage"]) == 1:
        features = parse_features(obs["text"])
        assert features.stage == 1 and features.partial == pytest.approx(float(obs["partial_score"]), rel=1e-5)
        assert features.reference_partial == pytest.approx(float(obs["reference_partial"]), rel=1e-5)


def test_the_offline_revision_loosens_after_misses_and_tightens_after_waste():
    policy = policy_text(DEFAULT_POLICY, 1)
    missed = [Case("discard", "discard", True, -4.0, -4.1, True)]
    looser = parse_policy(revise_policy(policy, summarise_experience(missed)))
    assert looser is not None and looser.full_margin > DEFAULT_POLICY.full_margin
    assert "Allocation policy v2" in revise_policy(policy, summarise_experience(missed))
    wasted = [Case("full", "full", False, -9.0, -4.0)] * 3
    tighter = parse_policy(revise_policy(policy, summarise_experience(wasted)))
    assert tighter is not None and tighter.partial_margin < DEFAULT_POLICY.partial_margin


def test_cascade_promotes_only_within_its_margin():
    agent = make_agent({"kind": "cascade", "params": {"margin": 0.05}})
    stage0 = {"partial_available": 1, "stage": 0, "partial_score": -1e6, "reference_partial": -4.0}
    assert agent.act(stage0) == {"decision": "partial"}
    assert agent.act({**stage0, "stage": 1, "partial_score": -4.19})["decision"] == "full"   # 4.75% short
    assert agent.act({**stage0, "stage": 1, "partial_score": -4.21})["decision"] == "discard"
    assert agent.act({**stage0, "partial_available": 0})["decision"] == "full"
    with pytest.raises(Exception, match="margin"):
        make_agent({"kind": "cascade", "params": {"threshold": 1}})


@pytest.mark.parametrize("kind", ["oneshot_llm", "evoalloc"])
def test_llm_allocators_run_whole_offline_episodes(kind):
    env: Any = gym.make("rsigym/ProgramEvolution-v0", task="bin_packing_online", sandbox="local", budget=4,
                        explore_p=0.3, max_episode_steps=200,
                        task_params={"bin_packing_online": {"instances": 5, "partial_instances": 2, "items": 40}}).unwrapped
    obs, _ = env.reset(seed=2)
    params = {"revise_after_full": 1, "trial_candidates": 2} if kind == "evoalloc" else {}
    agent: Any = make_agent({"kind": kind, "model": "rsigym/evoalloc_heuristic", "params": params})
    agent.reset({"env_id": "rsigym/ProgramEvolution-v0", "action_schema": env.action_schema,
                 "action_space": env.action_space, "observation_space": env.observation_space}, 2)
    tokens, terminated, steps, rationales = 0, False, 0, []
    while not terminated and steps < 200:
        action = agent.act(obs)
        assert action["decision"] in ("discard", "partial", "full")
        rationales += str(action.get("rationale", "")).splitlines()
        obs, reward, terminated, _, info = env.step(action)
        if hasattr(agent, "observe"):
            agent.observe(reward, obs, info)
        tokens += agent.last_usage.prompt_tokens + agent.last_usage.completion_tokens
        steps += 1
    assert terminated and info["termination"] == "budget_exhausted" and tokens > 0
    if kind == "evoalloc":
        events = [h["event"] for h in agent.history]
        proposed = [h for h in agent.history if h["event"] == "proposed"]
        assert all(h["full_results"] >= 1 for h in proposed)
        assert any(line.startswith("[policy] challenger v2 proposed") for line in rationales)
        assert "proposed" in events and ({"accepted", "rejected"} & set(events))
        assert len(agent.experience) >= 4 and any(c.counterfactual for c in agent.experience) == (
            info["exploration"]["evaluations"] > 0)


def test_mutate_source_is_seeded_and_varies_quality():
    from rsigym.envs.evolution import make_source, make_task

    source, task = make_source("mutate"), make_task("circle_packing_26")
    def children(seed: int) -> list[str]:
        rng = np.random.default_rng(seed)
        return [source.propose(task.seed_program, 0.98, task.library["grid"], task.library, task.description, rng).code
                for _ in range(20)]
    assert children(0) == children(0) and children(0) != children(1)
    assert len(set(children(0))) >= 15 and task.seed_program not in children(0)
    operators = {source.propose(task.seed_program, 0.98, None, task.library, "", np.random.default_rng(s)).operator.split()[0]
                 for s in range(30)}
    assert {"crossover", "constant"} <= operators


def _scripted_evoalloc(monkeypatch, **params):
    agent: Any = make_agent({"kind": "evoalloc", "model": "rsigym/evoalloc_heuristic", "params": params})
    agent.reset({}, 0)
    prompts: list[str] = []

    def complete(messages):
        prompts.append(messages[0]["content"])
        if "[evoalloc:revise]" in messages[0]["content"]:
            return policy_text(DEFAULT_POLICY.scaled(2.0), 2)
        return '{"decision": "%s"}' % script[0]

    script = ["discard"]
    monkeypatch.setattr(agent, "_complete", complete)
    return agent, prompts, script


def _decide(agent, decision_status, counterfactual=None, best=-5.0):
    obs = {"text": "Candidate code: x", "best_score": best, "stage": 0, "partial_available": 0}
    agent.act(obs)
    info = {"decided": {"id": 1, "status": decision_status, "score": -4.0 if decision_status == "full" else None},
            "explore_p": 0.2}
    if counterfactual is not None:
        info["counterfactual"] = {"program_id": 1, "score": counterfactual}
    agent.observe(0.0, obs, info)


def test_revision_waits_for_enough_full_results_not_candidates(monkeypatch):
    agent, prompts, script = _scripted_evoalloc(monkeypatch, revise_after_full=3, trial_candidates=2)
    for _ in range(10):
        _decide(agent, "discarded")        # ten candidates, no full result: no proposal
    assert [h["event"] for h in agent.history] == ["initial"]
    _decide(agent, "discarded", counterfactual=-6.0)  # counterfactual results count as full results
    script[0] = "full"
    _decide(agent, "full")
    assert agent.challenger is None
    _decide(agent, "full")
    assert agent.challenger is not None and agent.history[-1]["full_results"] == 3
    assert agent._explore_p == 0.2  # read from the env's info for the acceptance rule


def test_the_decision_prompt_carries_the_experience(monkeypatch):
    agent, prompts, _ = _scripted_evoalloc(monkeypatch)
    _decide(agent, "discarded")
    assert "Experience so far" not in prompts[0]
    _decide(agent, "discarded", counterfactual=-4.0)   # a missed new best: a refuting case
    _decide(agent, "discarded")
    assert "Experience so far" in prompts[-1] and "refuting (missed or near-best candidates turned away): 1" in prompts[-1]
    quiet, quiet_prompts, _ = _scripted_evoalloc(monkeypatch, experience_in_prompt=False)
    _decide(quiet, "discarded", counterfactual=-4.0)
    _decide(quiet, "discarded")
    assert not any("Experience so far" in p for p in quiet_prompts)
