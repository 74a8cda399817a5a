"""The grader of ``rsigym/ProgramEvolution-v0``: the best full score an episode found."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["EvolutionBestScore"]


@register_grader("evolution_best")
@dataclass(frozen=True)
class EvolutionBestScore:
    """The best full score the episode found (higher is better), with the seed program's."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = snapshot_state(record, "curve", "program-evolution")
        if state.get("best_score") is None:
            raise ValueError("no program was fully evaluated")
        return Grade(self.name, self.version, float(state["best_score"]), {
            "seed_score": state["seed_score"], "full_evaluations": state["counts"]["full"] + state["counts"]["rest"],
            "partial_evaluations": state["counts"]["partial"], "exploration": state["exploration"]})
