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

from typing import Any

from .task_base import _TASKS, KINDS, EvalResult, EvolutionTask, register_task

__all__ = ["EvalResult", "EvolutionTask", "register_task", "make_task", "task_names", "KINDS"]


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
