"""The policy side of CodeRepair-v0: the coder's mutation mix re-estimated from executed failures,
checked with the predictor in the joint protocol, every decision recorded (tiny presets)."""

from __future__ import annotations

import numpy as np
import pytest

from rsigym.envs.coderepair.agents import WorldModelAgent
from rsigym.envs.coderepair.coder_mix import CoderMix, RoundOrigins, candidate_quality, executed_ratio, reestimate
from rsigym.envs.coderepair.coders import MixtureCoder
from rsigym.envs.coderepair.coupdate import CoUpdateState, LoggedRound
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.features import FEATURE_NAMES
from rsigym.records import AgentSpec

ORIGINS = ("mutant:comparison", "crash:name_error", "rewrite:rename", "mutant:boundary")
PASS_RATE = {"mutant:comparison": 0.3, "crash:name_error": 0.0, "rewrite:rename": 0.95, "mutant:boundary": 0.3}


def _rounds(rng: np.random.Generator, n: int, *, informative: bool, audit: float = 0.5) -> list[LoggedRound]:
    """Rounds of 4 candidates drawn from a uniform mix; outcome by origin (or, as the control, not)."""
    mass = {o: 0.25 for o in ORIGINS}
    rows = []
    for t in range(n):
        origins = tuple(str(o) for o in rng.choice(ORIGINS, 4))
        features = rng.normal(size=(4, len(FEATURE_NAMES)))
        features[:, FEATURE_NAMES.index("known_failure")] = 0
        chosen = int(rng.integers(4)) if rng.random() < audit else 0
        propensity = (1 - audit) * float(chosen == 0) + audit / 4
        rate = PASS_RATE[origins[chosen]] if informative else 0.35
        rows.append(LoggedRound(t, features, chosen, propensity, float(rng.random() < rate), "wm-0000", 0.5,
                                RoundOrigins(origins[chosen], mass, {})))  # the executed one's origin only
    return rows


def _told(rows: list[LoggedRound]) -> list[tuple]:
    return [(r.origins, r.chosen, r.propensity, r.outcome) for r in rows]


def test_the_mix_moves_away_from_origins_that_fail_and_its_quality_estimate_is_right():
    rows = _rounds(np.random.default_rng(0), 600, informative=True)
    mix = reestimate(_told(rows), 1)
    assert mix.weight("rewrite:rename") == 1.0
    assert mix.weight("crash:name_error") == pytest.approx(0.2)  # floored, never dropped
    assert mix.weight("mutant:comparison") < 0.6
    # truth under the new mix: origins drawn with probability proportional to weight
    w = np.array([mix.weight(o) for o in ORIGINS])
    truth = float(np.sum(w / w.sum() * np.array([PASS_RATE[o] for o in ORIGINS])))
    estimate = candidate_quality(_told(rows), mix, 4)
    assert abs(estimate - truth) < 0.05
    assert estimate > candidate_quality(_told(rows), CoderMix(), 4) + 0.1


def test_executed_ratio_is_the_executed_candidates_probability_ratio_under_the_two_mixes():
    mass = {"a": 0.5, "b": 0.25, "c": 0.25}
    new = CoderMix({"a": 1.0, "b": 0.5, "c": 0.5})
    # under new: a 2/3, b 1/6, c 1/6; under uniform: a 1/2, b 1/4, c 1/4
    assert executed_ratio(RoundOrigins("a", mass, {}), new) == pytest.approx(2 / 3 / 0.5)
    assert executed_ratio(RoundOrigins("b", mass, {}), new) == pytest.approx(1 / 6 / 0.25)
    # from a round generated under a non-uniform mix (b 1/3 there) back to the uniform one
    assert executed_ratio(RoundOrigins("b", mass, {"b": 2.0}), CoderMix()) == pytest.approx(0.25 / (2 * 0.25 / 1.25))


def _state(rows: list[LoggedRound], mix: CoderMix | None) -> CoUpdateState:
    state = CoUpdateState("logistic", FEATURE_NAMES.index("known_failure"), min_fit_rows=50, mix=mix)
    state.rows = list(rows)
    return state


def test_the_joint_protocol_accepts_a_better_mix_and_records_both_checks():
    state = _state(_rounds(np.random.default_rng(1), 400, informative=True), CoderMix())
    state.adapt(100)
    decision = state.audit[-1]
    assert decision["event"] == "accept", decision
    assert decision["coder"]["passes"] and decision["coder"]["new_quality"] > decision["coder"]["retained_quality"]
    assert decision["pair"]["new_wins"] and "policy" in decision
    assert state.mix is not None and state.mix.version.startswith("mix-0001-")


def test_control_outcomes_unrelated_to_origin_give_no_accepted_gain():
    """The control: when failures do not depend on the origin, a re-estimated mix gains nothing."""
    accepted, gains = 0, []
    for seed in range(6):
        state = _state(_rounds(np.random.default_rng(10 + seed), 400, informative=False), CoderMix())
        state.adapt(100)
        decision = state.audit[-1]
        if "coder" in decision:
            gains.append(decision["coder"]["new_quality"] - decision["coder"]["retained_quality"])
        accepted += decision["event"] == "accept"
    assert len(gains) == 6 and abs(float(np.mean(gains))) < 0.03
    assert accepted <= 4  # some accepted by chance (a tie-level gain), never all


def test_without_a_mix_the_protocol_is_the_predictor_protocol():
    state = _state(_rounds(np.random.default_rng(2), 200, informative=True), None)
    state.adapt(100)
    assert "coder" not in state.audit[-1] and state.mix is None


def test_a_uniform_mix_draws_exactly_what_the_shipped_coder_draws():
    from rsigym.envs.coderepair.coders import CatalogueEntry
    catalogue = [CatalogueEntry("def f(x):\n    return x\n", "rewrite:rename", "correct", None),
                 CatalogueEntry("def f(x):\n    return -x\n", "mutant:arithmetic", "wrong", "wrong"),
                 CatalogueEntry("def f(x):\n    return y\n", "crash:name_error", "crash", "NameError"),
                 CatalogueEntry("def f(x):\n    return abs(x)\n", "mutant:boundary", "sneaky", "wrong")]
    from rsigym.envs.coderepair.problems import Problem
    problem = Problem("HumanEval/999", "f", "def f(x):\n", "def f(x):\n    return x\n", "", ["assert f(2) == 2"])
    shipped, mixed = MixtureCoder(), MixtureCoder()
    mixed.origin_weights = {"*": 0.7}
    draw = lambda coder: [c.origin for c in coder.propose(problem, catalogue, round_index=0, progress=0.0,
                                                         feedback=None, n=4, rng=np.random.default_rng(3))]
    assert draw(shipped) == draw(mixed)
    mixed.origin_weights = {"rewrite:rename": 1.0, "*": 0.01}
    origins = [o for seed in range(30) for o in [c.origin for c in mixed.propose(
        problem, catalogue, round_index=0, progress=0.0, feedback=None, n=4, rng=np.random.default_rng(seed))]]
    assert origins.count("rewrite:rename") > 0.8 * len(origins)
    assert sum(shipped.last_origin_mass.values()) == pytest.approx(1.0)


def test_env_applies_the_mix_tells_origins_only_after_the_problem_and_records_decisions():
    env = CodeRepairEnv(sandbox="local", problems=10, coder_params={"drift_at": 0.5})
    params = {"warmup": 3, "check_every": 2, "min_fit_rows": 4, "min_samples": 4, "update_coder": True,
              "audit_rate": 0.5, "holdout": 0.5}
    agent = WorldModelAgent(AgentSpec(id="joint", kind="adaptive_world_model", params=params))
    try:
        observation, info = env.reset(seed=0)
        agent.reset({"info": info}, 0)
        done, sent = False, []
        while not done:
            assert "mutant:" not in str(observation) and "rewrite:" not in str(observation)  # no live origin
            action = agent.act(observation)
            sent += [action["coder_weights"]] if "coder_weights" in action else []
            observation, reward, done, _, info = env.step(action)
            executed = info.get("executed") or {}
            if "finished_rounds" in executed:
                assert info["problem_id"] != executed["problem_id"]  # told only once the problem is over
                # per round the executed candidate's origin, never the whole round's
                assert all(set(r) == {"candidate", "origin", "origin_mass", "mix"} for r in executed["finished_rounds"])
            agent.observe(reward, observation, info)
        state = env.snapshot()
    finally:
        env.close()
    events = [d["event"] for d in state["wm_decisions"]]
    assert events[0] in {"warmup_fit", "warmup_keep_static"} and ("accept" in events or "reject" in events)
    assert any("coder" in d for d in state["wm_decisions"] if d["event"] in ("accept", "reject"))
    rows = [r for p in state["problems"] for r in p["rounds"]]
    assert all(abs(sum(r["origin_mass"].values()) - 1) < 1e-3 for r in rows)
    if sent:  # an accepted mix is in force in the rounds proposed after it was sent
        assert any(r["mix"] == sent[0] for r in rows)


def test_coder_weights_are_refused_for_the_llm_coder_and_for_unknown_origins():
    env = CodeRepairEnv(sandbox="local", problems=1)
    try:
        env.reset(seed=0)
        _, _, _, _, info = env.step({"candidate": 0, "coder_weights": {"mutant:teleport": 0.5}})
        assert "error" in info
    finally:
        env.close()
    with pytest.raises(TypeError, match="adaptive_world_model only"):
        WorldModelAgent(AgentSpec(id="f", kind="fixed_world_model", params={"update_coder": True}))
