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
    readme = (ROOT / "docs/families/workflow.md").read_text()
    assert workflow_results.readme_block(readme) == workflow_results.render(), (
        "docs/families/workflow.md workflow-results block differs from benchmarks/results/workflow_search_runs.json: "
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
    runs.main(runs.Args(runs=2, replications=1, budget=1, test_per_family=1, out=str(out)))
    result = runs.main(runs.Args(runs=2, replications=1, budget=1, test_per_family=1, out=str(out), append=True))
    first = result["replications"][0]
    assert first["arms"] == list(runs.ARMS) and result["replications"][1]["arms"] == list(runs.CONTROL_ARMS)
    assert all(len(r) == len(runs.ARMS) for r in first["runs"])
    assert result["controls"]["oracle-judge loop"]["n"] == 2
    assert json.loads(out.read_text())["controls"] == result["controls"]
    with pytest.raises(ValueError, match="other settings"):
        runs.main(runs.Args(runs=2, replications=1, budget=2, test_per_family=1, out=str(out), append=True))


def _renamed(code: str) -> str:
    """``code`` with every variable and function name replaced by a meaningless one (imports kept)."""
    import ast

    tree = ast.parse(code)
    keep = {"np", "json", "math", "open", "len", "range", "sorted", "min", "max", "abs", "float", "int", "str",
            "dict", "list", "sum", "enumerate", "zip", "print", "slice", "D", "set", "any", "all"}
    names: dict[str, str] = {}

    class Rename(ast.NodeTransformer):
        def visit_Name(self, node):
            if node.id not in keep:
                node.id = names.setdefault(node.id, f"holdout_cv_{len(names)}")
            return node

        def visit_FunctionDef(self, node):
            node.name = names.setdefault(node.name, f"holdout_cv_{len(names)}")
            for a in node.args.args:
                a.arg = names.setdefault(a.arg, f"holdout_cv_{len(names)}")
            self.generic_visit(node)
            return node

    return ast.unparse(Rename().visit(tree))


def test_the_soundness_evidence_separates_every_shipped_program_and_ignores_names():
    from rsigym.envs.workflow.soundness import missing_evidence, soundness_evidence

    for name, family in FAMILIES.items():
        assert missing_evidence(name, family.code["robust"]) == [], name
        assert missing_evidence(name, family.code["naive"]) != [], name
        for kind in ("robust", "naive"):
            assert soundness_evidence(_renamed(family.code[kind])) == soundness_evidence(family.code[kind]), (name, kind)
    assert soundness_evidence("this is ( not python") == []


def test_the_soundness_judge_reads_the_code_through_the_pairwise_pipeline_and_names_what_is_missing():
    from rsigym.envs.workflow.pairwise_judge import PairwiseJudge

    task = make_task("outlier_rows-100", SALT)
    same = json.dumps({"outlier_rows": task.key["outlier_rows"], "method": "Mahalanobis"})
    report = "# Report\n\n## Method\nx\n\n## Result\ny\n\n## Validation\nz\n"
    robust = {"analysis.py": FAMILIES["outlier_rows"].code["robust"], "results.json": same, "report.md": report}
    naive = {"analysis.py": FAMILIES["outlier_rows"].code["naive"], "results.json": same, "report.md": report}
    verdict = PairwiseJudge("rsigym/workflow_judge_sound").compare(task.brief, naive, robust)
    assert verdict.winner == "b" and not verdict.inconsistent
    assert any("missing joint model in the decision" in r for r in verdict.reasons)
    assert PairwiseJudge("rsigym/workflow_judge_sound").compare(task.brief, robust, dict(robust)).winner == "tie"


def test_on_the_held_apart_set_the_soundness_judge_beats_the_shipped_judge_and_the_coin():
    import workflow_soundness_calibration as calibration

    result = calibration.main(calibration.Args())
    shipped, sound, coin = (result["totals"][m]["k"] for m in calibration.Args().judges)
    assert result["totals"]["rsigym/workflow_judge_sound"]["n"] == 50
    assert sound >= 45 and sound > shipped and sound > coin
    assert result["table"]["rsigym/workflow_judge_sound"]["naive with names"]["k"] == 20
    assert coin <= 25  # a coin is right on a separable pair only when both orders agree by chance


def test_the_control_reading_needs_twenty_replications_and_can_fail():
    import workflow_results

    def p(k, n):
        return {"k": k, "n": n, "rate": k / n}

    assert "insufficient data (5 replications" in workflow_results.control_reading(
        {"oracle-judge loop": p(5, 5), "coin-judge loop": p(0, 5)})
    met = workflow_results.control_reading({"oracle-judge loop": p(17, 20), "coin-judge loop": p(1, 20)})
    assert met.count(": met") == 2 and "not met" not in met
    failed = workflow_results.control_reading({"oracle-judge loop": p(15, 20), "coin-judge loop": p(2, 20)})
    assert failed.count("not met") == 2
