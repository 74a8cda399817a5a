"""The execution judge on programs of the set written apart from it (benchmarks/workflow_exec_judge_set)."""

from __future__ import annotations

import sys
from pathlib import Path

import pytest

from rsigym.envs.workflow.exec_soundness import execution_evidence, missing_by_execution
from rsigym.envs.workflow.soundness import missing_evidence
from rsigym.sandbox import LocalSandbox, SandboxLimits

PROGRAMS = Path(__file__).resolve().parents[2] / "benchmarks" / "workflow_exec_judge_set" / "programs"


def _program(name: str) -> tuple[str, str]:
    return name.split("__")[0], (PROGRAMS / f"{name}.py").read_text()


@pytest.fixture(scope="module")
def sandbox():
    with LocalSandbox(SandboxLimits(memory_mb=4096, pids=4096)) as box:
        yield box


def test_naive_program_with_train_test_names_is_judged_naive(sandbox):
    family, code = _program("irrelevant_features__corr_train_test")
    assert missing_evidence(family, code) == []          # the syntax-tree judge is fooled by its split
    evidence = execution_evidence(family, code, sandbox, instances=3, interpreter=sys.executable)
    assert not evidence.sound and evidence.passed == 0
    assert "effects on" in evidence.failures[0]


def test_dead_covariance_line_does_not_make_euclidean_outliers_sound(sandbox):
    family, code = _program("outlier_rows__euclid_dead_cov")
    assert missing_by_execution(family, code, sandbox, instances=3, interpreter=sys.executable) != []


def test_cusum_in_an_idiom_the_shipped_programs_do_not_use_is_judged_sound(sandbox):
    family, code = _program("changepoint__cusum")
    assert missing_evidence(family, code) != []          # the syntax-tree judge misses CUSUM
    assert missing_by_execution(family, code, sandbox, instances=3, interpreter=sys.executable) == []


def test_uncorrected_pooled_t_fails_the_null_instance_and_welch_passes_it(sandbox):
    pooled = execution_evidence("ab_test", _program("ab_test__pooled_t_uncorrected")[1], sandbox, instances=1,
                             interpreter=sys.executable)
    assert pooled.passed == 0 and "null data" in pooled.failures[0]
    welch = execution_evidence("ab_test", _program("ab_test__welch_scipy")[1], sandbox, instances=4,
                               interpreter=sys.executable)
    assert welch.sound  # Bonferroni holds the family-wise error at 5%, so a null instance may still fail


def test_a_crashing_program_fails_every_instance(sandbox):
    evidence = execution_evidence("changepoint", "raise SystemExit(3)\n", sandbox, instances=2,
                                  interpreter=sys.executable)
    assert evidence.passed == 0 and "exit 3" in evidence.failures[0]


@pytest.mark.filterwarnings("ignore::RuntimeWarning")  # "auto" falls back to the local sandbox without docker
def test_registered_exec_judge_prefers_cusum_over_a_validated_largest_jump_in_both_orders():
    from rsigym.envs.workflow.pairwise_judge import PairwiseJudge
    from rsigym.envs.workflow.tasks import task_brief

    results = '{"changepoint_index": 120, "method": "m"}'
    report = "# Method\nm\n# Result\nr\n# Validation\nv\n"
    sound = {"analysis.py": _program("changepoint__cusum")[1], "results.json": results, "report.md": report}
    naive = {"analysis.py": _program("changepoint__largest_jump_validated")[1], "results.json": results,
             "report.md": report}
    verdict = PairwiseJudge("rsigym/workflow_judge_exec").compare(task_brief("changepoint-000"), sound, naive)
    assert verdict.winner == "a" and not verdict.inconsistent
    assert "passed 0/4" in " ".join(verdict.reasons)
