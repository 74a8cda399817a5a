"""Graders of ``rsigym/CodeRepair-v0``: each problem's final program re-executed in a fresh sandbox.

``hidden_tests`` re-runs every final program of the record against its problem's hidden tests
(the check function's assertions) at grading time, all problems in one exec, instead of trusting
the env's ``hidden_pass``; ``hidden_tests_strict`` adds the edge-case assertions derived from the
reference solution. So a fixed trajectory can be regraded under two rulers (TRACE's regrade), and
the flip table between them (``coderepair_regrade``) separates the ruler from the behaviour.
For the mixture coder's programs the graders' execution memo (``memo``, apart from the env's) answers
a (program, tests) job a grader already ran in the same kind of sandbox; an LLM coder's programs
always run again.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["HiddenTests", "HiddenTestsStrict", "HiddenOnly", "regrade_programs"]


def regrade_programs(state: dict[str, Any], strict: bool, sandbox: str, hidden_only: bool = False
                     ) -> tuple[dict[str, bool], str | None]:
    """Per problem id: whether its final program passes (hidden, hidden + strict, or only the hidden
    assertions that repeat no public call) in a fresh sandbox; a problem with no such assertion is
    left out under ``hidden_only``."""
    from rsigym.sandbox import open_sandbox

    from .execution import CODEREPAIR_LIMITS, Job
    from .memo import ExecMemo, memo_enabled, run_jobs_memo
    from .overlap import overlapping
    from .problems import build_suite

    problems = state["problems"]
    if not problems:
        raise ValueError("the episode finished no problem")
    with open_sandbox(sandbox, CODEREPAIR_LIMITS) as box:
        suite = build_suite(box)
        if state.get("suite_sha256") not in (None, suite.dataset_sha256):
            raise ValueError("the HumanEval data changed since the episode ran")
        by_id = suite.by_id()
        jobs = []
        for row in problems:
            p = by_id[row["problem_id"]]
            tests = p.hidden + (p.strict_extra if strict else [])
            if hidden_only:
                tests = [t for t, repeat in zip(p.hidden, overlapping(p)) if not repeat]
                if not tests:
                    continue
            jobs.append(Job(p.problem_id, row["final_program"], p.entry, tests, prelude=p.prelude, helpers=p.helpers))
        # the mixture coder's programs: a final program a grader already ran on these exact tests in
        # this kind of sandbox is answered from the graders' own memo (never from the env's run,
        # which the regrade's same-ruler control compares with this one)
        memo = ExecMemo(namespace="grader", rename_invariant=True) if memo_enabled(state.get("coder") == "mixture") else None
        results = run_jobs_memo(box, jobs, memo)
        if memo is not None:
            memo.close()
        provider = box.info.get("provider")
    return {pid: r.all_pass for pid, r in results.items()}, provider


@register_grader("hidden_tests")
@dataclass(frozen=True)
class HiddenTests:
    """Share of the stream's problems whose final program passes every hidden test (re-executed)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state", "sandbox"})
    sandbox: str = "auto"
    strict: ClassVar[bool] = False
    hidden_only: ClassVar[bool] = False

    def grade(self, record: Trajectory) -> Grade:
        state = snapshot_state(record, "problems", "code-repair")
        passed, provider = regrade_programs(state, self.strict, self.sandbox, self.hidden_only)
        if not passed:
            raise ValueError("no problem of the episode has a hidden assertion beyond the public calls")
        return Grade(self.name, self.version, sum(passed.values()) / len(passed),
                     {"passed": passed, "problems": len(passed), "strict": self.strict, "hidden_only": self.hidden_only,
                      "left_out": len(state["problems"]) - len(passed), "sandbox": provider})


@register_grader("hidden_tests_strict")
@dataclass(frozen=True)
class HiddenTestsStrict(HiddenTests):
    """``hidden_tests`` plus the reference-derived edge-case assertions (a stricter ruler)."""

    version: ClassVar[str] = "1-strict"
    strict: ClassVar[bool] = True


@register_grader("hidden_only")
@dataclass(frozen=True)
class HiddenOnly(HiddenTests):
    """``hidden_tests`` on the hidden assertions that repeat no public test call (``overlap``);
    problems whose every hidden assertion repeats one are left out (counted in ``left_out``)."""

    version: ClassVar[str] = "1-hidden-only"
    hidden_only: ClassVar[bool] = True
