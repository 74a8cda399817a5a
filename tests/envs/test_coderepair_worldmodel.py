"""CodeRepair-v0's world-model side: cheap sandbox checks as features, the non-linear predictor,
the greedy static verifier and its audit variant, the coder's drift, and the headroom table."""

from __future__ import annotations

import json

import numpy as np
import pytest

from rsigym.envs.coderepair.agents import WorldModelAgent
from rsigym.envs.coderepair.checks import probe_inputs, run_checks
from rsigym.envs.coderepair.coders import CatalogueEntry, MixtureCoder
from rsigym.envs.coderepair.features import FEATURE_NAMES, check_features
from rsigym.envs.coderepair.headroom import FirstRound, headroom_rows
from rsigym.envs.coderepair.predictors import make_predictor
from rsigym.envs.coderepair.problems import Problem
from rsigym.records import AgentSpec
from rsigym.sandbox import open_sandbox

PROBLEM = Problem(task_id="HumanEval/900", entry="double", prompt="def double(xs: list) -> list:\n    pass\n",
                  reference="def double(xs: list) -> list:\n    return [2 * x for x in xs]\n", prelude="",
                  hidden=["assert candidate([5]) == [10]"], public=["assert (double([1, 2])) == [2, 4]"],
                  public_calls=["double([1, 2])"])
RIGHT = "def double(xs):\n    return [x * 2 for x in xs]\n"
WRONG = "def double(xs):\n    return [x + 2 for x in xs]\n"
CRASH = "def double(xs):\n    return xs[10]\n"
BROKEN = "def double(xs)\n    return xs\n"


def test_checks_call_public_and_boundary_inputs_and_never_compare_outputs():
    public, boundary = probe_inputs(PROBLEM)
    assert public == ["double([1, 2])"] and "double([])" in boundary
    with open_sandbox("local") as box:
        checks = run_checks(box, PROBLEM, [RIGHT, RIGHT, WRONG, CRASH, BROKEN])
    assert [c["loads"] for c in checks] == [True, True, True, True, False]
    assert checks[3]["public"] == ["raise"] and checks[0]["public"] == ["ok"]
    assert checks[0]["outputs"] == checks[1]["outputs"] != checks[2]["outputs"]
    assert all(set(c) == {"loads", "public", "types", "outputs", "boundary"} for c in checks)
    assert "[2, 4]" not in json.dumps(checks)  # digests only, and nothing compared with the expected output
    features = check_features(checks, 5)
    col = {name: i for i, name in enumerate(FEATURE_NAMES[9:])}
    assert features[0, col["output_agreement"]] == 0.25 and features[2, col["output_agreement"]] == 0.0
    assert features[3, col["public_raise"]] == 1.0 and features[4, col["loads"]] == 0.0


def test_static_verifier_is_greedy_and_its_audit_variant_is_named_apart():
    with pytest.raises(TypeError, match="static_verifier_audit"):
        WorldModelAgent(AgentSpec(id="s", kind="static_verifier", params={"audit_rate": 0.2}))
    greedy = WorldModelAgent(AgentSpec(id="s", kind="static_verifier"))
    audit = WorldModelAgent(AgentSpec(id="a", kind="static_verifier_audit"))
    assert greedy.audit_rate == 0.0 and audit.audit_rate == 0.05  # the world models' base audit rate
    greedy.reset({"info": {"entry": "double", "problem_id": "he-900"}}, 0)
    with open_sandbox("local") as box:
        checks = run_checks(box, PROBLEM, [WRONG, RIGHT, CRASH, RIGHT])
    observation = {"candidates": (WRONG, RIGHT, CRASH, RIGHT), "round": np.int64(1), "checks": json.dumps(checks)}
    actions = [greedy.act(observation) for _ in range(30)]
    assert {a["candidate"] for a in actions} <= {1, 3} and not any(a["audit"] for a in actions)
    assert all(a["propensity"] == 1.0 for a in actions)


def test_boosting_learns_an_interaction_a_linear_model_cannot():
    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (400, 2)).astype(float)
    y = (X[:, 0] != X[:, 1]).astype(float)  # XOR
    w = np.ones_like(y)
    boosted = make_predictor("boosting").fit(X, y, w).predict(X)
    linear = make_predictor("logistic").fit(X, y, w).predict(X)
    assert np.mean((boosted > 0.5) == y) == 1.0 and np.mean((linear > 0.5) == y) < 0.8


def test_after_the_drift_the_coder_repeats_one_wrong_program():
    catalogue = [CatalogueEntry(RIGHT, "rewrite:rename", "correct", None)] + [
        CatalogueEntry(f"def double(xs):\n    return [x + {k} for x in xs]\n", f"mutant:constant{k}", "wrong", "wrong")
        for k in range(1, 30)]
    coder = MixtureCoder(drift_at=0.5, drift_echo=1.0)

    def distinct_wrong(progress: float) -> float:
        counts = []
        for seed in range(60):
            cands = coder.propose(PROBLEM, catalogue, round_index=0, progress=progress, feedback=None, n=4,
                                  rng=np.random.default_rng(seed))
            wrong = [c.origin for c in cands if c.kind == "wrong"]
            if len(wrong) >= 2:
                counts.append(len(set(wrong)) / len(wrong))
        return float(np.mean(counts))

    assert distinct_wrong(0.9) == pytest.approx(0.5, abs=0.25) and distinct_wrong(0.1) > 0.9
    assert not coder.drifted(0.49) and coder.drifted(0.5)


def _rounds(flipped: bool, seeds: int = 3, problems: int = 30) -> list[FirstRound]:
    rng = np.random.default_rng(1)
    out = []
    for seed in range(seeds):
        for p in range(problems):
            features = np.zeros((4, len(FEATURE_NAMES)))
            features[:, 12] = rng.random(4)  # output_agreement only
            good = int(np.argmin(features[:, 12])) if flipped else int(np.argmax(features[:, 12]))
            labels = np.zeros(4)
            labels[good] = 1.0
            out.append(FirstRound(seed, f"he-{p:03d}", flipped, features, labels, {"fixed": 0}))
    return out


def test_headroom_shows_an_oracle_over_static_when_the_relation_flips():
    table = headroom_rows(_rounds(False) + _rounds(True), ["fixed"], oracles=("logistic",))
    after = {row["method"]: row for row in table["after drift"]}
    before = {row["method"]: row for row in table["before drift"]}
    # static weights output_agreement (column 12) up: right before the drift, wrong after it
    assert before["static"]["rate"] > 0.5 and after["static"]["rate"] < 0.2
    assert after["oracle:logistic"]["delta"] > 0.5 and after["oracle:logistic"]["ci"][0] > 0
    assert after["random"]["rate"] == pytest.approx(0.25) and "mdd" in after["fixed"]


def test_hidden_assertions_that_repeat_a_public_call_are_flagged_for_hidden_only():
    from rsigym.envs.coderepair.overlap import overlap_table, overlapping

    problem = Problem(task_id="HumanEval/901", entry="double", prompt="", reference="", prelude="",
                      hidden=["assert candidate([1,2]) == [2, 4]", "assert candidate([5]) == [10]",
                              "x = [1, 2]\nassert candidate(x) == [2, 4]"],
                      public_calls=["double([1, 2])"])
    assert overlapping(problem) == [True, False, False]  # a non-literal argument is not a repeat
    assert overlap_table([problem])[0]["repeat_public"] == 1
