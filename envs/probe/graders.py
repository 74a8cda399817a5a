"""Graders of the kernel's Probe-v0 fixture."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader
from rsigym.records import Grade, Trajectory
from rsigym.sandbox import open_sandbox

__all__ = ["ProbeAnswerCheck", "ProbeGuessEfficiency"]


@register_grader("probe_answer")
@dataclass(frozen=True)
class ProbeAnswerCheck:
    """1.0 when the final guess is within ``tolerance`` of the secret, checked in a fresh sandbox.

    It re-runs the task's oracle program on the final guess (and its neighbours when
    ``tolerance > 0``) instead of trusting the env's ``solved`` flag, so a regrade exercises the
    sandbox and a changed ``tolerance`` changes the ruler without changing the trajectory.
    """

    name: ClassVar[str]  # set by register_grader
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state", "sandbox"})
    tolerance: int = 0
    sandbox: str = "auto"

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.envs.probe import check_with_source, make_task

        state = record.final.state if record.final else None
        if not state or state.get("final_guess") is None:
            return Grade(self.name, self.version, 0.0, {"reason": "no guess"})
        task = make_task(state["task_id"], state["low"], state["high"])
        if task.oracle_sha256 != state["oracle_sha256"]:
            raise ValueError(f"oracle of {task.task_id} changed since the episode ran")
        guess = int(state["final_guess"])
        candidates = [g for g in range(guess - self.tolerance, guess + self.tolerance + 1)
                      if task.low <= g <= task.high]
        with open_sandbox(self.sandbox) as sandbox:
            answers = check_with_source(sandbox, task.oracle_source, candidates)  # one exec: write and check
            hits = [g for g, w in zip(candidates, answers) if w == "correct"]
            provider = sandbox.info.get("provider")
        return Grade(self.name, self.version, float(bool(hits)),
                     {"final_guess": guess, "checked": len(candidates), "sandbox": provider})


@register_grader("probe_efficiency")
@dataclass(frozen=True)
class ProbeGuessEfficiency:
    """Share of the guess budget left when the secret was found (0 when it never was)."""

    name: ClassVar[str]  # set by register_grader
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"trajectory", "final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = record.final.state if record.final else {}
        used = len(state.get("guesses", []))
        budget = int(state.get("max_guesses", max(used, 1)))
        solved = bool(state.get("solved"))
        score = (budget - used + 1) / budget if solved else 0.0
        return Grade(self.name, self.version, score, {"guesses_used": used, "solved": solved})
