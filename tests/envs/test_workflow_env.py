"""Workflow-v0: PettingZoo API, determinism, the spec and its mutations, the five task families."""

from __future__ import annotations

import copy
import json

import pytest
from pettingzoo.test import api_test

import rsigym.envs.workflow as wf
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.mutations import apply_mutation
from rsigym.envs.workflow.spec import REVIEW_CONTRACT, SpecError, seed_spec, validate_spec
from rsigym.envs.workflow.tasks import grade_workspace, make_task, task_ids
from rsigym.sandbox import docker_available, open_sandbox

REPORT = "# Report\n\n## Method\nx\n\n## Result\ny\n\n## Validation\nz\n"
SALT = "5eed" * 8


def test_pettingzoo_api_test_passes():
    env = wf.env(sandbox="local", task_id="changepoint-000")
    try:
        api_test(env, num_cycles=100)
    finally:
        env.close()


def test_pettingzoo_api_test_passes_on_an_evolved_spec_with_four_roles():
    env = wf.env(spec=wf.resolve_spec("evolved_offline"), sandbox="local", task_id="ab_test-000")
    assert len(env.possible_agents) == 4
    try:
        api_test(env, num_cycles=50)
    finally:
        env.close()


def _play(actions, seed=3):
    env = wf.raw_env(sandbox="local", task_id="outlier_rows-001", task_salt=SALT)
    env.reset(seed=seed)
    trace = [json.dumps(env.observe(env.agent_selection), sort_keys=True)]
    for action in actions:
        if env.terminations[env.agent_selection]:
            break
        env.step(action)
        trace.append(json.dumps([env.observe(env.agent_selection), env.rewards, env.infos], sort_keys=True))
    snap = env.snapshot()
    env.close()
    return trace, snap


def test_a_fixed_action_sequence_is_deterministic_under_a_seed_and_returns_travel_by_contract():
    code = FAMILIES["outlier_rows"].code["robust"]
    actions = [{"op": "delegate", "role": "analyst", "instruction": "do it"},
               {"op": "write_file", "path": "analysis.py", "content": code},
               {"op": "run_python", "path": "analysis.py"},
               {"op": "return", "result": {"status": "maybe"}},          # breaks the contract: an error
               {"op": "return", "result": {"status": "done", "files": ["results.json"]}},
               {"op": "finish", "summary": "done"}]
    first, snap = _play(actions)
    second, _ = _play(actions)
    assert first == second
    assert "breaks your return contract" in first[4]
    assert snap["termination"] == "agent_stop" and "results.json" in snap["files"]
    assert snap["grade"]["answer_score"] == 1.0 and snap["score"] == pytest.approx(0.9)
    assert [d["role"] for d in snap["dialogues"]] == ["orchestrator", "analyst"]


def test_roles_may_only_call_and_use_what_the_spec_allows():
    env = wf.raw_env(sandbox="local", task_id="changepoint-000")
    env.reset(seed=0)
    env.step({"op": "write_file", "path": "x.py", "content": "1"})
    assert "no write_file tool" in env.infos["orchestrator"]["error"]
    env.step({"op": "delegate", "role": "orchestrator", "instruction": "x"})
    assert "may not call" in env.infos["orchestrator"]["error"]
    env.step({"op": "delegate", "role": "analyst", "instruction": "x"})
    assert env.agent_selection == "analyst"
    env.step({"op": "finish", "summary": "x"})
    assert "only the entry role" in env.infos["analyst"]["error"]
    env.close()


def test_the_call_budget_is_enforced():
    spec = dict(seed_spec(), call_budget=1)
    env = wf.raw_env(spec=spec, sandbox="local", task_id="changepoint-000")
    env.reset(seed=0)
    env.step({"op": "delegate", "role": "analyst", "instruction": "x"})
    env.step({"op": "return", "result": {"status": "failed", "files": []}})
    env.step({"op": "delegate", "role": "analyst", "instruction": "again"})
    assert "budget" in env.infos["orchestrator"]["error"]
    env.close()


def test_spec_validation_names_the_problem():
    spec = seed_spec()
    for change, message in [({"entry_role": "boss"}, "entry_role"),
                            ({"call_order": ["ghost"]}, "call_order"),
                            ({"allowed_calls": {"orchestrator": ["orchestrator"]}}, "itself"),
                            ({"call_budget": 0}, "call_budget")]:
        with pytest.raises(SpecError, match=message):
            validate_spec({**copy.deepcopy(spec), **change})
    broken = copy.deepcopy(spec)
    broken["roles"]["analyst"]["returns"] = {"type": 12}
    with pytest.raises(SpecError, match="no JSON Schema"):
        validate_spec(broken)


def test_each_mutation_operator_applies_and_a_repeated_edit_is_refused():
    spec = seed_spec()
    add = {"op": "add_role", "role": "reviewer", "instruction": "check", "tools": ["read_file"],
           "returns": REVIEW_CONTRACT, "position": 1}
    revised, error = apply_mutation(spec, add)
    assert error is None and revised["call_order"] == ["analyst", "reviewer"]
    for edit in ({"op": "edit_instruction", "role": "analyst", "instruction": "be careful"},
                 {"op": "change_contract", "role": "reviewer", "returns": {"type": "object"}},
                 {"op": "reorder_calls", "order": ["reviewer", "analyst"]},
                 {"op": "remove_role", "role": "reviewer"}):
        after, error = apply_mutation(revised, edit)
        assert error is None, (edit, error)
    removed, _ = apply_mutation(revised, {"op": "remove_role", "role": "reviewer"})
    again, error = apply_mutation(removed, add)
    assert again is None and "already tried" in error
    assert "changes nothing" in apply_mutation(spec, {"op": "reorder_calls", "order": ["analyst"]})[1]
    assert "breaks the spec" in apply_mutation(spec, {"op": "reorder_calls", "order": ["nobody"]})[1]
    assert "cannot remove" in apply_mutation(spec, {"op": "remove_role", "role": "orchestrator"})[1]
    assert "invalid edit" in apply_mutation(spec, {"op": "explode"})[1]
    assert apply_mutation(spec, "add a role")[0] is None


def _good_results(family, key):
    return {**key, "method": "sound"} if family != "model_comparison" else {"best_model": key["best_model"], "method": "cv"}


def _bad_results(family, key):
    wrong = {"irrelevant_features": {"irrelevant_features": ["x0"]}, "model_comparison": {"best_model": "linear" if key.get("best_model") != "linear" else "knn1"},
             "changepoint": {"changepoint_index": (key.get("changepoint_index", 0) + 60) % 240},
             "ab_test": {"significant_variants": []}, "outlier_rows": {"outlier_rows": [0, 1]}}[family]
    return {**wrong, "method": "naive"}


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_each_family_grader_separates_a_good_from_a_bad_workspace(family):
    task = make_task(f"{family}-000", SALT)
    good = {"results.json": json.dumps(_good_results(family, task.key)), "report.md": REPORT}
    bad = {"results.json": json.dumps(_bad_results(family, task.key))}
    good_score, details = grade_workspace(task, good)
    bad_score, _ = grade_workspace(task, bad)
    assert good_score == pytest.approx(1.0), details
    assert bad_score <= 0.5
    assert grade_workspace(task, {})[0] == 0.0
    assert grade_workspace(task, {"results.json": "{not json"})[1]["results_error"]


def test_task_ids_cover_five_families_and_unknown_ids_fail():
    assert len({t.rsplit("-", 1)[0] for t in task_ids("test")}) == 5
    with pytest.raises(ValueError, match="unknown workflow task"):
        make_task("astrology-000", SALT)
    with pytest.raises(ValueError, match="128 bits"):
        make_task("ab_test-007", "abc")
    assert make_task("ab_test-007", SALT).key == make_task("ab_test-007", SALT).key
    assert make_task("ab_test-007", SALT).files != make_task("ab_test-007", "0" * 32).files


@pytest.mark.parametrize("family", sorted(FAMILIES))
def test_no_family_has_a_constant_answer_and_a_blind_constant_scores_at_chance(family):
    tasks = [make_task(f"{family}-{i:03d}", SALT) for i in range(30)]
    answers = [json.dumps(t.key[t.family.result_schema["required"][0]], sort_keys=True) for t in tasks]
    assert len(set(answers)) >= 2, answers[:3]
    if family == "model_comparison":  # chance is 1/3: no model is the answer blind
        counts = {m: answers.count(json.dumps(m)) for m in ("linear", "poly5", "knn1")}
        assert max(counts.values()) <= 15, counts


def test_the_salt_reaches_no_observation_and_no_sandbox_file():
    env = wf.raw_env(sandbox="local", task_id="changepoint-003")
    env.reset(seed=0)
    seen = [json.dumps(env.observe(env.agent_selection))]
    for action in ({"op": "delegate", "role": "analyst", "instruction": "go"},
                   {"op": "write_file", "path": "analysis.py", "content": "import os\nprint(sorted(os.environ))"},
                   {"op": "run_python", "path": "analysis.py"}):
        env.step(action)
        seen.append(json.dumps([env.observe(env.agent_selection), env.infos]))
    salt = env.task.salt
    files = dict(env.workspace.files)
    env.close()
    assert salt not in "".join(seen) and all(salt not in text for text in files.values())
    assert len(salt) == 32 and env.snapshot()["task_salt"] == salt


@pytest.mark.docker
@pytest.mark.skipif(not docker_available(), reason="needs a Docker engine and the sandbox image")
def test_every_family_is_solved_in_the_docker_sandbox_within_a_minute_and_the_naive_method_is_not():
    with open_sandbox("docker") as box:
        for name, family in sorted(FAMILIES.items()):
            scores: dict[str, list[float]] = {"robust": [], "naive": []}
            for index in (101, 102, 103):  # the sound methods are reliable, not infallible: three instances
                task = make_task(f"{name}-{index}", SALT)
                for kind in ("robust", "naive"):
                    box.exec(["sh", "-c", "find . -mindepth 1 -delete"], timeout=30)
                    box.write_files({**task.files, "analysis.py": family.code[kind]})
                    result = box.exec(["python3", "analysis.py"], timeout=60)  # the minute is the limit
                    assert result.ok, (name, kind, result.stderr[-300:])
                    files = {"results.json": box.read_file("results.json").decode()}
                    scores[kind].append(grade_workspace(task, files)[1]["answer_score"])
            mean = {kind: sum(v) / len(v) for kind, v in scores.items()}
            assert mean["robust"] >= 0.6 and mean["naive"] < mean["robust"], (name, scores)


class _GarbledListing:
    """A local sandbox whose workspace listing prints something that is not a listing."""

    provider = "garbled"  # not "local": the listing runs in the sandbox, where this garbles it

    def __init__(self, inner, reply):
        self.inner, self.reply = inner, reply

    def __getattr__(self, name):
        return getattr(self.inner, name)

    def exec(self, argv, **kwargs):
        if argv[:2] == ["python3", "-I"]:
            from rsigym.sandbox import ExecResult
            return ExecResult(self.reply, "", 0, False, 0.0)
        return self.inner.exec(argv, **kwargs)


@pytest.mark.parametrize("reply", ["not json", "[1, 2]", '{"files": {"a": 3}, "kept": [], "truncated": false}'])
def test_a_bad_listing_is_an_error_observation_for_the_agent_not_an_env_failure(reply):
    with open_sandbox("local") as inner:
        env = wf.raw_env(sandbox=_GarbledListing(inner, reply), task_id="changepoint-001", task_salt=SALT)
        env.reset(seed=0)
        env.step({"op": "delegate", "role": "analyst", "instruction": "go"})
        env.step({"op": "write_file", "path": "analysis.py", "content": "print(1)"})
        env.step({"op": "run_python", "path": "analysis.py"})
        assert "could not be read back" in env.infos["analyst"]["error"] and env.infos["analyst"]["invalid_actions"] == 1
        assert "analysis.py" in env.workspace.files  # the mirror keeps its last good state
        env.close()
