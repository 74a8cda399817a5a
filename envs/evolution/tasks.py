"""Evaluation tasks of ProgramEvolution-v0: what a candidate defines and how it is scored.

A task owns three things: the program the candidate runs in (``candidate_program``, run as the
sandbox's user), optionally a harness program run as the sandbox's harness identity with its
input (``harness_program``, ``harness_input``), and the **trusted, host-side** check of the
result (``score``). Nothing is trusted as a score: the result is raw output (a packing, a bin
assignment) and the host recomputes validity and score itself; where the candidate's process
could make up that output (an offline bin packing), a harness process it cannot reach produces
it instead.

Scores are maximised. Kinds: ``full``; ``partial`` (a cheaper subset, when the task has one);
``rest`` (the part of a full evaluation a partial one did not cover, so a cascade that upgrades
a candidate pays only the difference).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

__all__ = ["EvalResult", "EvolutionTask", "register_task", "make_task", "task_names", "KINDS"]

KINDS = ("partial", "full", "rest")


@dataclass(frozen=True)
class EvalResult:
    """One evaluation. ``score`` is None when the candidate failed; ``reason`` then says why.

    ``details`` holds the per-part numbers the score came from (per-instance excess bins, the
    per-circle radii sum), so a later ``rest`` evaluation can be merged with a ``partial`` one.
    """

    kind: str
    score: float | None
    reason: str = ""
    cost: float = 0.0  # in full-evaluation equivalents
    details: dict[str, Any] = field(default_factory=dict)

    @property
    def ok(self) -> bool:
        return self.score is not None


class EvolutionTask(Protocol):
    """What the env needs from a task."""

    name: str
    entry_point: str          # the function a candidate must define
    has_partial: bool
    partial_cost: float       # full-evaluation equivalents of a partial evaluation
    seed_program: str         # the initial program of every episode
    library: dict[str, str]   # hand-written programs (the seed among them) for crossover
    description: str
    candidate_program: str    # run as the user: ``python3 -I -c``, a header line and the candidate on stdin
    harness_program: str | None  # run as the harness identity at the same time, or None

    def harness_input(self, kind: str) -> bytes: ...

    def check_kind(self, kind: str) -> None: ...

    def timeout_s(self, kind: str) -> float: ...

    def cost(self, kind: str) -> float: ...

    def score(self, kind: str, payload: dict[str, Any]) -> EvalResult: ...

    def merge(self, partial: EvalResult, rest: EvalResult) -> EvalResult: ...

    def spec(self) -> dict[str, Any]: ...


_TASKS: dict[str, Callable[..., EvolutionTask]] = {}


def register_task(name: str) -> Callable[[Callable[..., EvolutionTask]], Callable[..., EvolutionTask]]:
    def decorate(factory: Callable[..., EvolutionTask]) -> Callable[..., EvolutionTask]:
        _TASKS[name] = factory
        return factory
    return decorate


def task_names() -> list[str]:
    from . import bin_packing, circle_packing, noisy  # noqa: F401  (register on import)

    return sorted(_TASKS)


def make_task(name: str, **params: Any) -> EvolutionTask:
    """Build a task by name; unknown names and bad parameters raise ValueError with the value."""
    names = task_names()
    if name not in _TASKS:
        raise ValueError(f"unknown program-evolution task {name!r}; known: {', '.join(names)}")
    try:
        return _TASKS[name](**params)
    except TypeError as exc:
        raise ValueError(f"task {name!r} rejects params {params}: {exc}") from exc
