"""The search-run benchmark's parts: memoised execution, the oracle control, run-level statistics, README agreement."""

from __future__ import annotations

import json
import sys
from pathlib import Path

import pytest

import rsigym.envs.workflow.mass_policies  # noqa: F401
import rsigym.envs.workflow.policies  # noqa: F401
from rsigym.envs.workflow import resolve_spec, seed_spec
from rsigym.envs.workflow.agents import RolePlayer
from rsigym.envs.workflow.aec_workspace import Workspace
from rsigym.envs.workflow.families import FAMILIES
from rsigym.envs.workflow.mass import execute
from rsigym.envs.workflow.memo import ExecutionMemo, workspace_key
from rsigym.envs.workflow.pairwise_judge import OracleJudge
from rsigym.envs.workflow.tasks import make_task, task_brief
from rsigym.sandbox import open_sandbox

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT / "benchmarks"))
SALT = "5ea4c4" * 6


@pytest.fixture(scope="module")
def box():
    with open_sandbox("local") as sandbox:
        yield sandbox


def test_a_memoised_execution_equals_a_fresh_one_and_a_repeated_program_is_not_rerun(box):
    memo = ExecutionMemo()
    player = RolePlayer("rsigym/workflow_scripted", seed=3)
    spec = resolve_spec("evolved_offline")
    first = execute(spec, "ab_test-101", player, seed=3, sandbox=box, task_salt=SALT, memo=memo)
    assert memo.run_misses == 1 and memo.program_misses >= 1
    again = execute(spec, "ab_test-101", player, seed=3, sandbox=box, task_salt=SALT, memo=memo)
    assert memo.run_hits == 1
    fresh = execute(spec, "ab_test-101", player, seed=3, sandbox=box, task_salt=SALT)
    for other in (again, fresh):
        assert (other.files, other.score, other.dialogues) == (first.files, first.score, first.dialogues)
    # another role seed is another run, but the analyst's program on the same files comes from the memo
    executed = memo.program_misses
    other_seed = execute(seed_spec(), "ab_test-101", RolePlayer("rsigym/workflow_scripted", seed=4), seed=4,
                         sandbox=box, task_salt=SALT, memo=memo)
    plain = execute(seed_spec(), "ab_test-101", RolePlayer("rsigym/workflow_scripted", seed=4), seed=4, sandbox=box,
                    task_salt=SALT)
    assert (other_seed.files, other_seed.score) == (plain.files, plain.score)
    assert memo.program_hits + memo.program_misses > executed


def test_the_program_memo_answers_the_same_workspace_and_reruns_a_changed_one(box):
    memo = ExecutionMemo()
    space = Workspace(box, memo=memo)
    space.reset({"a.py": "open('out.txt', 'w').write(str(6 * 7))\n"})
    text = space.run_python("a.py")
    assert space.files["out.txt"] == "42" and memo.program_misses == 1
    space.reset({"a.py": "open('out.txt', 'w').write(str(6 * 7))\n"})
    assert space.run_python("a.py") == text and space.files["out.txt"] == "42" and memo.program_hits == 1
    space.write("a.py", "open('out.txt', 'w').write(str(6 * 8))\n")   # after a hit the sandbox is made level
    space.run_python("a.py")
    assert space.files["out.txt"] == "48" and memo.program_misses == 2
    assert workspace_key({"a": "bc"}, "x") != workspace_key({"ab": "c"}, "x")


def test_the_oracle_judge_prefers_what_the_grader_scores_higher_and_ties_equal_work():
    task = make_task("changepoint-102", SALT)
    right = {"results.json": json.dumps({"changepoint_index": task.key["changepoint_index"], "method": "x"})}
    wrong = {"results.json": json.dumps({"changepoint_index": (task.key["changepoint_index"] + 80) % 240,
                                         "method": "x"})}
    judge = OracleJudge(SALT)
    assert judge.compare(task_brief(task.task_id), wrong, right).winner == "b"
    assert judge.compare(task_brief(task.task_id), right, wrong).winner == "a"
    assert judge.compare(task_brief(task.task_id), right, dict(right)).winner == "tie"


def test_run_level_statistics_match_hand_computed_values_and_say_insufficient_data():
    import workflow_search_runs as runs

    p = runs.proportion(16, 20)
    assert p["rate"] == 0.8 and abs(p["low"] - 0.5634) < 1e-3 and abs(p["high"] - 0.9427) < 1e-3
    s = runs.mean_ci([0.1, 0.2, 0.3, 0.4])
    assert abs(s["mean"] - 0.25) < 1e-12 and abs(s["high"] - (0.25 + 3.182446 * 0.129099 / 2)) < 1e-4
    better = runs.paired([0.5, 0.6, 0.55, 0.7, 0.65, 0.6], [0.2, 0.25, 0.3, 0.2, 0.3, 0.25])
    assert better["verdict"] == "better" and better["mdd"] > 0
    assert runs.paired([0.2, 0.25, 0.3, 0.2, 0.3, 0.25], [0.5, 0.6, 0.55, 0.7, 0.65, 0.6])["verdict"] == "worse"
    noise = runs.paired([0.3, 0.1, 0.3, 0.1, 0.3, 0.1], [0.1, 0.3, 0.1, 0.3, 0.1, 0.3])
    assert noise["verdict"] == "no detectable difference"
    assert runs.paired([0.5, 0.6], [0.1, 0.2])["verdict"].startswith("insufficient data")


def test_the_sound_method_is_recognised_in_the_delivered_code_not_in_its_label():
    import workflow_search_runs as runs
    from rsigym.envs.workflow.mass import Execution

    family = FAMILIES["outlier_rows"]
    def run(code):
        return Execution("outlier_rows-100", "", {"analysis.py": "# family outlier_rows\n" + code}, 0.0, 0, [], None)
    assert runs.wrote_sound_method(run(family.code["robust"]))
    assert runs.wrote_sound_method(run(family.code["robust"].replace("'results.json'", "'result.json'")))
    assert not runs.wrote_sound_method(run(family.code["naive"].replace("per-column z-score", "Mahalanobis")))


def test_readme_workflow_block_equals_what_the_results_file_renders():
    import workflow_results

    assert workflow_results.RESULTS.exists()
    readme = (ROOT / "README.md").read_text()
    assert workflow_results.readme_block(readme) == workflow_results.render(), (
        "README workflow-results block differs from benchmarks/results/workflow_search_runs.json: "
        "run python benchmarks/workflow_results.py --write")


def test_a_changed_number_shows_in_the_rendering_and_missing_markers_are_an_error(tmp_path):
    import workflow_results

    result = json.loads(workflow_results.RESULTS.read_text())
    path = tmp_path / "r.json"
    path.write_text(json.dumps(result))
    readme = tmp_path / "README.md"
    readme.write_text(f"a\n{workflow_results.BEGIN}\nstale\n{workflow_results.END}\nb\n")
    workflow_results.write_readme(readme, path)
    before = workflow_results.readme_block(readme.read_text())
    assert "stale" not in before and before == workflow_results.render(path)
    result["replications"][0]["summary"]["seed"]["score"]["mean"] += 0.25
    path.write_text(json.dumps(result))
    assert workflow_results.render(path) != before
    readme.write_text("no markers")
    with pytest.raises(ValueError, match="workflow-results"):
        workflow_results.write_readme(readme, path)


@pytest.mark.slow
def test_the_search_run_benchmark_runs_every_arm_at_a_tiny_budget(tmp_path):
    import workflow_search_runs as runs

    out = tmp_path / "r.json"
    result = runs.main(runs.Args(runs=2, replications=2, budget=1, test_per_family=1, out=str(out)))
    first = result["replications"][0]
    assert first["arms"] == list(runs.ARMS) and result["replications"][1]["arms"] == list(runs.CONTROL_ARMS)
    assert all(len(r) == len(runs.ARMS) for r in first["runs"])
    assert result["controls"]["oracle-judge loop"]["n"] == 2
    assert json.loads(out.read_text())["controls"] == result["controls"]
