"""The task contract of ProgramEvolution-v0 and the task registry, owned apart from the registry's
loader (``tasks``) so that the task modules can register themselves without importing it: a task
module imports this, ``tasks`` imports the task modules. See ``tasks`` for what a task is."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Protocol

__all__ = ["EvalResult", "EvolutionTask", "register_task", "KINDS"]

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
