"""CodeRepair-v0: the HumanEval split, the coders' building blocks, the reliability check, the
co-update protocol, the env and its graders, and the analyses' controls."""

from __future__ import annotations

import ast
from pathlib import Path

import numpy as np
import pytest

from rsigym.envs.coderepair.agents import RandomPickAgent, WorldModelAgent
from rsigym.envs.coderepair.analyses import _verdict, coderepair_compare, coderepair_regrade, holm_adjusted
from rsigym.envs.coderepair.coupdate import CoUpdateState, LoggedRound
from rsigym.envs.coderepair.env import CodeRepairEnv
from rsigym.envs.coderepair.execution import Job, run_jobs
from rsigym.envs.coderepair.features import FEATURE_NAMES, candidate_features
from rsigym.envs.coderepair.graders import HiddenTests, HiddenTestsStrict
from rsigym.envs.coderepair.mutation import CRASHES, OPERATORS, canonical_form, crash, mutate, rewrite
from rsigym.envs.coderepair.problems import build_suite, docstring_calls, split_check
from rsigym.envs.coderepair.reliability import ReliabilityCheck
from rsigym.records import AgentSpec, EnvRef, FinalSnapshot, Grade, Trajectory
from rsigym.sandbox import open_sandbox

SOURCE = '''def clip_sum(xs: list, cap: int) -> int:
    """Sum of xs, each capped at cap.
    >>> clip_sum([1, 5, 2], 3)
    6
    """
    total = 0
    for x in xs:
        if x > cap:
            total += cap
        else:
            total += x
    return total
'''


@pytest.fixture(scope="module")
def suite(tmp_path_factory):
    # the session's isolated cache (tests/conftest.py), so the env tests reuse this build
    with pytest.MonkeyPatch.context() as patch:
        patch.setenv("RSIGYM_CACHE", str(tmp_path_factory.getbasetemp() / "cache"))
        with open_sandbox("local") as sandbox:
            return build_suite(sandbox)


def test_every_reference_solution_passes_public_hidden_and_strict_tests(suite):
    stats = suite.stats()
    assert stats["problems"] == 164 and stats["without_public_tests"] == 0
    assert stats["with_docstring_examples"] + stats["fallback"] == 164
    assert stats["hidden_assertions"] > 164 * 3
    jobs = [Job(p.problem_id, p.reference, p.entry, p.public + p.hidden + p.strict_extra, prelude=p.prelude,
                helpers=p.helpers)
            for p in suite.problems]
    with open_sandbox("local") as sandbox:
        results = run_jobs(sandbox, jobs, trusted=True)  # the references: one exec
    failing = {k: r.failure_type() for k, r in results.items() if not r.all_pass}
    assert failing == {}


def test_public_outputs_come_from_the_reference_not_the_docstring(suite):
    problem = suite.by_id()["he-000"]
    assert problem.public_source == "docstring"
    assert problem.public[0] == "assert (has_close_elements([1.0, 2.0, 3.0], 0.5)) == False"


def test_docstring_calls_parse_prompts_and_prose_and_drop_comments():
    prompt = 'def f(x):\n    """\n    >>> round(f([1, 2]), 2) # a comment\n    f(3) ==> 4\n    f(y) is not literal\n    """\n'
    assert docstring_calls(prompt, "f") == ["round(f([1, 2]), 2)", "f(3)"]


def test_check_function_is_split_into_one_test_per_assertion_with_its_setup():
    prelude, blocks = split_check("M = 1\n\ndef check(candidate):\n    import math\n    assert candidate(1) == 2\n"
                                  "    x = 3\n    for i in range(2):\n        assert candidate(i) >= 0\n")
    assert prelude == "M = 1"
    assert blocks == ["import math\nassert candidate(1) == 2",
                      "import math\nx = 3\nfor i in range(2):\n    assert candidate(i) >= 0"]


@pytest.mark.parametrize("operator", OPERATORS)
def test_each_mutation_operator_changes_exactly_the_program_not_its_parse(operator):
    code = mutate(SOURCE, "clip_sum", operator, np.random.default_rng(1))
    assert code is not None
    assert canonical_form(code, "clip_sum") != canonical_form(SOURCE, "clip_sum")
    ast.parse(code)


def test_rewrites_keep_the_canonical_form_and_crashes_break_the_program():
    rng = np.random.default_rng(0)
    assert canonical_form(rewrite(SOURCE, "clip_sum", rng), "clip_sum") == canonical_form(SOURCE, "clip_sum")
    with open_sandbox("local") as sandbox:
        jobs = [Job(kind, crash(SOURCE, "clip_sum", kind, rng), "clip_sum", ["assert clip_sum([1], 3) == 1"],
                    timeout_s=1.0) for kind in CRASHES]
        results = run_jobs(sandbox, jobs)
    assert {k: r.failure_type() for k, r in results.items()} == {
        "name_error": "error:NameError", "none_subscript": "error:TypeError", "zero_division": "error:ZeroDivisionError",
        "endless_loop": "timeout", "syntax_error": "load"}


def test_features_see_agreement_and_static_crashes():
    rng = np.random.default_rng(0)
    codes = [rewrite(SOURCE, "clip_sum", rng), rewrite(SOURCE, "clip_sum", rng),
             crash(SOURCE, "clip_sum", "name_error", rng), crash(SOURCE, "clip_sum", "syntax_error", rng)]
    X = candidate_features(codes, "clip_sum", 0)
    col = {name: i for i, name in enumerate(FEATURE_NAMES)}
    assert X[0, col["agreement"]] == X[1, col["agreement"]] == pytest.approx(1 / 3)
    assert X[2, col["undefined_names"]] >= 1 and X[3, col["parses"]] == 0


# -- reliability check on constructed predictions --------------------------------------------------

def _draws(n: int, seed: int, distort):
    rng = np.random.default_rng(seed)
    truth = rng.uniform(0.05, 0.95, n)
    outcomes = (rng.random(n) < truth).astype(float)
    return distort(truth), outcomes


def test_calibrated_predictions_are_reliable():
    p, y = _draws(600, 0, lambda t: t)
    assert ReliabilityCheck().check(p, y).verdict == "reliable"


@pytest.mark.parametrize("distort", [lambda t: np.clip(t + 0.25, 0, 1), lambda t: np.clip(t - 0.25, 0, 1),
                                     lambda t: np.clip(0.5 + 2.0 * (t - 0.5), 0.01, 0.99)])
def test_shifted_or_overconfident_predictions_are_off(distort):
    p, y = _draws(600, 1, distort)
    result = ReliabilityCheck().check(p, y)
    assert result.verdict == "off" and result.reasons


def test_a_constant_base_rate_predictor_has_no_skill_and_is_off():
    _, y = _draws(600, 2, lambda t: t)
    result = ReliabilityCheck(min_skill=0.01).check(np.full(600, y.mean()), y)
    assert result.verdict == "off" and any("skill" in r for r in result.reasons)


def test_few_outcomes_or_a_few_huge_weights_are_insufficient_evidence():
    p, y = _draws(600, 3, lambda t: t)
    assert ReliabilityCheck().check(p[:20], y[:20]).verdict == "insufficient evidence"
    weights = np.ones(600)
    weights[:3] = 1e6
    assert ReliabilityCheck().check(p, y, weights).verdict == "insufficient evidence"


# -- the co-update protocol --------------------------------------------------------------------------

def _rows(n: int, seed: int, predicted: float, good_column: int) -> list[LoggedRound]:
    """Rounds whose outcome is feature ``good_column`` of the chosen candidate."""
    rng = np.random.default_rng(seed)
    rows = []
    for t in range(n):
        X = np.zeros((4, len(FEATURE_NAMES)))
        X[:, good_column] = rng.integers(0, 2, 4)
        chosen = int(rng.integers(4))
        rows.append(LoggedRound(t, X, chosen, 0.25, float(X[chosen, good_column]), "wm-0000-static", predicted))
    return rows


def test_adaptation_happens_only_when_off_and_a_worse_pair_is_rejected():
    col = FEATURE_NAMES.index("parses")
    calm = CoUpdateState("logistic", FEATURE_NAMES.index("known_failure"), ReliabilityCheck(min_samples=20))
    calm.rows = [LoggedRound(r.t, r.features, r.chosen, r.propensity, r.outcome, calm.version, 0.5)
                 for r in _rows(10, 0, 0.5, col)]
    calm.adapt(10)
    assert [e["event"] for e in calm.audit] == ["reliability_check", "keep"]
    assert calm.audit[-1]["reason"] == "insufficient evidence"

    # outcomes reversed against the static scorer ("parses" now means fail): off, and a new predictor
    # that predicts the held-out outcomes better (and whose pair is not estimated worse) is accepted
    off = CoUpdateState("logistic", FEATURE_NAMES.index("known_failure"), ReliabilityCheck(min_samples=20))
    off.rows = [LoggedRound(r.t, r.features, r.chosen, r.propensity, 1.0 - r.outcome, off.version, 0.95)
                for r in _rows(200, 1, 0.95, col)]
    off.adapt(200)
    events = [e["event"] for e in off.audit]
    assert events[0] == "reliability_check" and off.audit[0]["result"]["verdict"] == "off"
    assert events[-1] == "accept" and off.version.startswith("wm-0001-")

    # data where the outcome is pure noise: a refit may only be accepted where it predicts the held-out
    # outcomes better than the retained scorer (a recalibration) and its pair is not estimated worse
    noisy = CoUpdateState("logistic", FEATURE_NAMES.index("known_failure"), ReliabilityCheck(min_samples=20))
    rng = np.random.default_rng(5)
    noisy.rows = [LoggedRound(r.t, r.features, r.chosen, r.propensity, float(rng.random() < 0.5), noisy.version, 0.99)
                  for r in _rows(200, 2, 0.99, col)]
    before = noisy.version
    noisy.adapt(200)
    if noisy.audit[-1]["event"] == "reject":
        assert noisy.version == before
    else:
        assert noisy.audit[-1]["loss"]["new_wins"] and noisy.audit[-1]["pair_guard"]["passes"]
        assert noisy.audit[-1]["loss"]["ci"][0] > 0


# -- env, agents, graders ---------------------------------------------------------------------------

def _play(env: CodeRepairEnv, agent, seed: int = 0):
    observation, info = env.reset(seed=seed)
    agent.reset({"info": info}, seed)
    done, calls = False, 0
    while not done:
        observation, reward, done, _, info = env.step(agent.act(observation))
        if hasattr(agent, "observe"):
            agent.observe(reward, observation, info)
        calls += 1
    assert info["budget"]["online_test_calls"] == calls
    return env.snapshot()


def test_env_runs_a_stream_and_records_versioned_predictions_and_propensities():
    env = CodeRepairEnv(sandbox="local", problems=4)
    agent = WorldModelAgent(AgentSpec(id="a", kind="adaptive_world_model", params={"warmup": 1, "check_every": 1}))
    try:
        state = _play(env, agent)
    finally:
        env.close()
    assert len(state["problems"]) == 4
    for problem in state["problems"]:
        assert 1 <= len(problem["rounds"]) <= 3 and problem["final_program"]
        for rnd in problem["rounds"]:
            assert rnd["wm_version"].startswith("wm-00") and 0 < rnd["propensity"] <= 1
            assert len(rnd["predictions"]) == 4
    assert state["wm_decisions"][0]["event"] in {"warmup_fit", "warmup_keep_static", "warmup_fit_skipped"}
    assert state["online_test_calls"] == sum(len(p["rounds"]) for p in state["problems"])


def _record(state: dict, agent: str, seed: int) -> Trajectory:
    return Trajectory(episode_key=f"{agent}-{seed}", env=EnvRef("rsigym/CodeRepair-v0", task_id="humaneval"),
                      agent=AgentSpec(id=agent, kind=agent), seed=seed, rep=0, final=FinalSnapshot.of(state))


@pytest.mark.docker
def test_candidates_and_the_regrade_execute_in_the_docker_sandbox():
    env = CodeRepairEnv(sandbox="docker", problems=2, rounds=2)
    try:
        state = _play(env, RandomPickAgent(AgentSpec(id="r", kind="coderepair_random")))
        assert env.sandbox_info["provider"] == "docker"
    finally:
        env.close()
    record = _record(state, "random", 0)
    grade = HiddenTests(sandbox="docker").grade(record)
    assert grade.details["sandbox"] == "docker"
    assert grade.details["passed"] == {p["problem_id"]: p["hidden_pass"] for p in state["problems"]}


def test_strict_grader_is_a_stricter_ruler_on_the_same_program(suite):
    reference = suite.by_id()["he-000"].reference
    guarded = reference.replace('    for idx, elem in enumerate(numbers):',
                                '    if not numbers:\n        return None\n    for idx, elem in enumerate(numbers):', 1)
    always_true = reference.replace("return False", "return True")
    assert guarded != reference and always_true != reference
    state = {"family": "code-repair", "suite_sha256": suite.dataset_sha256, "problems": [
        {"problem_id": "he-000", "final_program": guarded, "hidden_pass": True},
        {"problem_id": "he-002", "final_program": suite.by_id()["he-002"].reference, "hidden_pass": True}]}
    lenient = HiddenTests(sandbox="local").grade(_record(state, "x", 0))
    strict = HiddenTestsStrict(sandbox="local").grade(_record(state, "x", 0))
    assert lenient.details["passed"] == {"he-000": True, "he-002": True}  # empty input is in no hidden test
    assert strict.details["passed"] == {"he-000": False, "he-002": True}
    state["problems"][0]["final_program"] = always_true
    assert HiddenTests(sandbox="local").grade(_record(state, "x", 0)).details["passed"]["he-000"] is False


# -- analyses and their controls ---------------------------------------------------------------------

def _graded(agent: str, seed: int, passed: dict[str, bool], live: dict[str, bool] | None = None,
            strict: dict[str, bool] | None = None) -> Trajectory:
    state = {"family": "code-repair", "online_test_calls": len(passed), "wm_decisions": [],
             "problems": [{"problem_id": k, "hidden_pass": (live or passed)[k], "final_program": ""} for k in passed]}
    record = _record(state, agent, seed)
    record.grades.append(Grade("hidden_tests", "1", float(np.mean(list(passed.values()))), {"passed": passed}))
    record.grades.append(Grade("hidden_tests_strict", "1-strict", 0.0, {"passed": strict or passed}))
    return record


def _outcomes(rate: float, seed: int, n: int = 30) -> dict[str, bool]:
    rng = np.random.default_rng(seed)
    return {f"he-{i:03d}": bool(rng.random() < rate) for i in range(n)}


def test_compare_withholds_verdicts_when_the_blind_control_is_not_worse(tmp_path: Path):
    base, good = _outcomes(0.5, 1), _outcomes(0.9, 2)
    blind = dict(base)  # a broken control: as good as the baseline
    records = [_graded("static_verifier", 0, base), _graded("adaptive", 0, good), _graded("random", 0, blind)]
    section = coderepair_compare(records, tmp_path, control="random")
    assert "control FAILED" in section.verdict and "adaptive: withheld" in section.verdict


def test_compare_gives_verdicts_when_the_blind_control_is_worse(tmp_path: Path):
    base = {f"he-{i:03d}": True for i in range(30)}
    good = {k: i not in (4, 17) for i, k in enumerate(base)}  # two losses in 30: no difference shown
    blind = {k: i % 3 == 0 for i, k in enumerate(base)}
    records = [_graded(agent, seed, outcome) for seed in (0, 1)
               for agent, outcome in (("static_verifier", base), ("adaptive", good), ("random", blind))]
    section = coderepair_compare(records, tmp_path, control="random")
    assert section.verdict.startswith("control passed") and "adaptive: no difference shown" in section.verdict
    assert "underpowered" in section.verdict and "MDD" in section.verdict


def test_three_agents_against_the_baseline_are_one_holm_family():
    assert holm_adjusted({"a": 0.01, "b": 0.04, "c": 0.03, "d": float("nan")}) == pytest.approx(
        {"a": 0.03, "b": 0.06, "c": 0.06, "d": float("nan")}, nan_ok=True)
    row = {"n_problems": 160, "n_seeds": 10, "ci": (0.004, 0.05), "p": 0.03, "blocks": [0.02, 0.03]}
    assert _verdict(row) == "better"  # alone, p 0.03 with a CI above 0 is a call
    assert _verdict({**row, "p_holm": 0.03}) == "better"
    assert _verdict({**row, "p_holm": 0.06}).startswith("no difference shown after Holm")  # one of three: not


def test_regrade_withholds_its_verdict_when_the_same_ruler_flips(tmp_path: Path):
    passed = _outcomes(0.5, 3)
    strict = {k: v and i % 2 == 0 for i, (k, v) in enumerate(passed.items())}
    stable = coderepair_regrade([_graded("a", 0, passed, strict=strict)], tmp_path)
    assert stable.verdict.startswith("control passed") and "flips" in stable.verdict
    flipped_live = {k: not v for k, v in passed.items()}
    unstable = coderepair_regrade([_graded("a", 0, passed, live=flipped_live, strict=strict)], tmp_path)
    assert unstable.verdict.startswith("withheld")


def test_llm_coder_puts_the_failing_public_tests_in_its_prompt_and_reads_code_blocks(suite):
    from rsigym.envs.coderepair.coders import LLMCoder

    problem = suite.by_id()["he-000"]
    coder = LLMCoder("openai/gpt-4o-mini", api_base="http://127.0.0.1:9", litellm_kwargs={
        "mock_response": "Here:\n```python\ndef has_close_elements(numbers, threshold):\n    return False\n```"})
    first = coder.messages(problem, None)[-1]["content"]
    repair = coder.messages(problem, "assert (has_close_elements([1.0], 0.5)) == False -> fail")[-1]["content"]
    assert "failed these public tests" not in first
    assert "failed these public tests" in repair and "has_close_elements([1.0], 0.5)" in repair
    candidates = coder.propose(problem, None, round_index=1, progress=0.0, feedback="x", n=2,
                               rng=np.random.default_rng(0))
    assert [c.kind for c in candidates] == ["llm", "llm"]
    assert candidates[0].code.startswith("def has_close_elements") and coder.usage.model_calls == 2


@pytest.mark.parametrize("kind", ["logistic", "torch"])
def test_predictors_learn_a_weighted_signal_and_rank_by_it(kind):
    from rsigym.envs.coderepair.predictors import LogisticPredictor, TorchPredictor

    rng = np.random.default_rng(0)
    X = rng.integers(0, 2, (400, len(FEATURE_NAMES))).astype(float)
    y = (rng.random(400) < np.where(X[:, 0] == 1, 0.8, 0.1)).astype(float)
    model = LogisticPredictor() if kind == "logistic" else TorchPredictor(epochs=150, seed=0)
    predictor = model.fit(X, y, np.ones(400))
    p = predictor.predict(X)
    assert p[X[:, 0] == 1].mean() == pytest.approx(0.8, abs=0.1)
    assert p[X[:, 0] == 0].mean() == pytest.approx(0.1, abs=0.1)
