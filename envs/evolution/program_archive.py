"""The archive of evaluated programs and tournament parent selection."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import numpy as np

__all__ = ["Program", "Archive"]


@dataclass
class Program:
    """One program of an episode and what is known of it.

    ``status``: ``pending`` (shown, not decided), ``full``, ``partial`` (only partially
    evaluated), ``failed`` (its evaluation failed), ``discarded``. ``score`` is the full score;
    ``partial_score`` the partial one; ``counterfactual_score`` the full score of a discarded
    program evaluated by counterfactual exploration (never used by the search itself).
    """

    id: int
    code: str
    parent_id: int | None
    generation: int
    operator: str
    status: str = "pending"
    score: float | None = None
    partial_score: float | None = None
    counterfactual_score: float | None = None
    reason: str = ""
    details: dict[str, Any] = field(default_factory=dict)

    def summary(self) -> dict[str, Any]:
        """The program without its code and details, for snapshots."""
        out = asdict(self)
        out.pop("code")
        out.pop("details")
        return out


class Archive:
    """Every program of the episode; parents are drawn from the fully evaluated ones."""

    def __init__(self, tournament_size: int = 3) -> None:
        if tournament_size < 1:
            raise ValueError(f"tournament_size must be >= 1, got {tournament_size}")
        self.tournament_size = tournament_size
        self.programs: list[Program] = []
        self.codes: set[str] = set()

    def add(self, program: Program) -> Program:
        self.programs.append(program)
        self.codes.add(program.code)
        return program

    def evaluated(self) -> list[Program]:
        return [p for p in self.programs if p.status == "full" and p.score is not None]

    def best(self) -> Program | None:
        done = self.evaluated()
        return max(done, key=lambda p: (p.score, -p.id)) if done else None

    def select_parent(self, rng: np.random.Generator) -> Program:
        """Tournament selection among fully evaluated programs (the seed program at least)."""
        pool = self.evaluated()
        if not pool:
            raise RuntimeError("no evaluated program to select a parent from")
        picks = rng.choice(len(pool), size=min(self.tournament_size, len(pool)), replace=False)
        return max((pool[int(i)] for i in picks), key=lambda p: (p.score, -p.id))

    def select_partner(self, parent: Program, rng: np.random.Generator) -> Program | None:
        """Another evaluated program, uniformly, for crossover; None when there is none."""
        others = [p for p in self.evaluated() if p.id != parent.id]
        return others[int(rng.integers(len(others)))] if others else None

    def children(self, parent_id: int) -> list[Program]:
        return [p for p in self.programs if p.parent_id == parent_id]
