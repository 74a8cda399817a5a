"""Graders of ``rsigym/ProgramEvolution-v0``: the best full score an episode found, and the best
program re-executed on held-out instances."""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

from rsigym.grader import register_grader, snapshot_state
from rsigym.records import Grade, Trajectory

__all__ = ["EvolutionBestScore", "EvolutionHeldOut"]


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


@register_grader("evolution_heldout")
@dataclass(frozen=True)
class EvolutionHeldOut:
    """The recorded best program re-executed on held-out instances in a fresh sandbox (higher is better).

    Search and the ``evolution_best`` score use the same instances; this grader rebuilds the task
    from the record's spec with ``instance_seed + seed_offset`` (instances the search never saw),
    runs the recorded best program and the task's seed program there (fully, uncached), and grades
    the best program's held-out score; details carry the seed's held-out score, the gain over it,
    the search-time score and the sandbox that ran. So fixed trajectories can be regraded against a
    ruler the search never saw. A task without generated instances (circle packing: one fixed
    problem) has nothing to hold out: its best program is re-executed on the same problem and the
    details say ``held_out: False``.
    """

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state", "sandbox"})
    seed_offset: int = 1_000_003
    sandbox: str = "docker"

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.sandbox import open_sandbox

        from .env import EVOLUTION_LIMITS
        from .evaluator import SandboxEvaluator
        from .tasks import make_task

        state = snapshot_state(record, "curve", "program-evolution")
        code = state.get("best_program")
        if not code:
            raise ValueError("no program was fully evaluated")
        spec = {k: v for k, v in dict(state["task"]).items() if k != "timeout_s"}
        name = spec.pop("name")
        held_out = "instance_seed" in spec
        if held_out:
            spec["instance_seed"] = int(spec["instance_seed"]) + int(self.seed_offset)
        task = make_task(name, **spec)
        with open_sandbox(self.sandbox, EVOLUTION_LIMITS) as sandbox:
            evaluator = SandboxEvaluator(task, sandbox, cache=False)
            prepare = getattr(evaluator, "prepare", None)
            if callable(prepare):
                prepare()
            best = evaluator.evaluate(code, "full")
            seed = evaluator.evaluate(task.seed_program, "full")
            provider = sandbox.info.get("provider")
        if not best.ok:
            raise ValueError(f"the recorded best program failed on the held-out instances: {best.reason}")
        return Grade(self.name, self.version, float(best.score), {  # type: ignore[arg-type]
            "held_out": held_out, "instance_seed": spec.get("instance_seed"), "search_score": state.get("best_score"),
            "seed_heldout": seed.score, "gain_over_seed": (float(best.score) - float(seed.score))  # type: ignore[arg-type]
            if seed.ok else None, "sandbox": provider})
