"""Attacks on the clearing between evolution candidates (issue 27, item 2): a candidate that leaves
what the runner's clearing cannot remove must not break the evaluations after it, and when the
sandbox cannot be cleared, the candidate that left the files is charged, not the next one."""

from __future__ import annotations

import pytest

from rsigym.envs.evolution import SandboxEvaluator, make_task
from rsigym.envs.evolution import evaluator as evaluator_module

from .test_evaluator_attacks import SEED_SCORE, sandbox  # noqa: F401  (the same fixture: a fresh sandbox of each provider)

# 3,000 directories nested in the work dir (past Python's recursion limit and past PATH_MAX), one
# of them locked, a file at the bottom; then the seed program, so the leaver itself scores.
DEEP = '''
import os
_top = os.open(".", os.O_RDONLY)
for _level in range(3000):
    os.mkdir("d")
    os.chdir("d")
    if _level == 1500:
        os.mkdir("locked")
        open("locked/inside", "w").write("x")
        os.chmod("locked", 0)
open("bottom", "w").write("x")
os.fchdir(_top)
'''


def test_a_directory_3000_levels_deep_breaks_no_later_evaluation(sandbox):
    task = make_task("circle_packing_26")
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=30.0)
    left = evaluator.evaluate(DEEP + task.seed_program, "full")
    assert left.score == pytest.approx(SEED_SCORE), left.reason  # cleared after it: nothing to charge
    for _ in range(2):  # the seed program after it, twice: scored as the seed, never "could not be cleared"
        after = evaluator.evaluate(task.seed_program, "full")
        assert after.score == pytest.approx(SEED_SCORE), after.reason
    listing = sandbox.exec(["python3", "-I", "-c", "import os; print(sorted(os.listdir('.')))"])
    assert listing.stdout.strip() == "[]", listing


def test_files_that_cannot_be_cleared_are_charged_to_their_candidate_and_the_sandbox_is_reset(sandbox, monkeypatch):
    """Clearing fails after the first candidate only (a clearing program that reports a survivor,
    standing in for one that cannot remove it): that candidate's evaluation fails with the reason,
    the sandbox is reset before the next one, and the next one scores as it should."""
    task = make_task("circle_packing_26")
    evaluator = SandboxEvaluator(task, sandbox, timeout_s=30.0)
    real_clear = evaluator_module.CLEAR
    monkeypatch.setattr(evaluator_module, "CLEAR", "print('/work/stuck (Device or resource busy)')")
    resets: list[int] = []
    reset = getattr(sandbox, "reset", None)

    def counting_reset() -> None:
        resets.append(1)
        if reset is not None:
            reset()

    monkeypatch.setattr(sandbox, "reset", counting_reset, raising=False)
    leaver = evaluator.evaluate(task.seed_program, "full")
    assert leaver.score is None and "could not be cleared of this candidate's files" in leaver.reason, leaver
    assert "/work/stuck" in leaver.reason and resets == [1]
    monkeypatch.setattr(evaluator_module, "CLEAR", real_clear)
    after = evaluator.evaluate(task.seed_program, "full")
    assert after.score == pytest.approx(SEED_SCORE), after.reason
    assert resets == [1]
