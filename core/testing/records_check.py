"""The episode half of ``check_family``: agents play, graders grade, records round-trip, analyses read.

Episodes run through the runner's own ``run_episode`` (in this process), so what is checked is
what ``rsigym run`` writes: the record must hold no ``infra_error``, read back from JSON and from a
records file unchanged, be graded alike live and again from the read-back record, and every
analysis of the family must turn the records into a ``ReportSection``.
"""

from __future__ import annotations

import math
import tempfile
from collections.abc import Callable, Mapping, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from rsigym.records.trajectory import AgentSpec, EnvRef, Trajectory, episode_key

if TYPE_CHECKING:
    from .family import Family, FamilyReport

__all__ = ["check_episodes", "round_trip"]

Run = Callable[[str, str, Callable[[], "str | None"]], None]


def _first_task(env_id: str, kwargs: dict[str, Any]) -> str | None:
    import gymnasium as gym

    env = gym.make(env_id, **kwargs)
    try:
        lister = getattr(env.unwrapped, "list_tasks", None)
        if lister is None:
            return None
        for split in ("test", None):
            try:
                ids = list(lister(split))
            except (TypeError, ValueError):
                continue
            if ids:
                return str(ids[0])
        return None
    finally:
        env.close()


def round_trip(record: Trajectory, folder: Path) -> Trajectory:
    """``record`` through JSON and through a records file; each must give it back unchanged."""
    from rsigym.records.jsonl import RecordWriter, read_records

    text = record.to_json()
    assert Trajectory.from_json(text).to_json() == text, "Trajectory.from_json(to_json()) changes the record"
    path = folder / f"{record.episode_key}.jsonl"
    with RecordWriter(path) as writer:
        writer.write(record)
    result = read_records(path)
    assert not result.bad_lines and not result.torn_tail, f"the records file has unreadable lines: {result.bad_lines}"
    assert len(result.records) == 1, f"{len(result.records)} records read back from one"
    back = result.records[0]
    assert back.to_json() == text, "the record read back from records.jsonl differs from the one written"
    return back


def _same(a: float | None, b: float | None) -> bool:
    if a is None or b is None:
        return a is b
    return a == b or (math.isnan(a) and math.isnan(b)) or math.isclose(a, b, rel_tol=1e-12, abs_tol=1e-12)


def _agent_specs(family: "Family", agents: Sequence[Mapping[str, Any]] | None) -> list[AgentSpec]:
    if agents is not None:
        return [AgentSpec.from_dict({"id": a.get("id") or a["kind"], **a}) for a in agents]
    kinds = [*family.agents, *(["random"] if "random" not in family.agents else [])]
    return [AgentSpec(id=kind, kind=kind) for kind in kinds]


def check_episodes(family: "Family", report: "FamilyReport", run: Run, kwargs_of: dict[str, dict[str, Any]], *,
                   task_ids: Mapping[str, str | None], agents: Sequence[Mapping[str, Any]] | None,
                   grader_params: Mapping[str, Mapping[str, Any]],
                   seeds: Sequence[int], max_steps: int) -> None:
    """Append the episode, round-trip, regrade and analysis rows of ``family`` to ``report``."""
    from rsigym.grader import get_grader, grade_record
    from rsigym.scenario.preflight import grader_fits
    from rsigym.registry import GRADERS
    from rsigym.runner import run_episode
    from rsigym.scenario.spec import EpisodeSpec, NamedSpec

    records: list[Trajectory] = []
    with tempfile.TemporaryDirectory(prefix="rsigym-check-") as tmp:
        folder = Path(tmp)
        for env_id in family.envs:
            kwargs = kwargs_of.get(env_id) or {}
            graders = [g for g in family.graders if grader_fits(GRADERS[g], env_id)]
            task: list[str | None] = [task_ids.get(env_id)]
            if env_id not in task_ids:
                run("tasks", env_id, lambda: f"first task {_first_task_into(task, env_id, kwargs)!r}")
            specs = tuple(NamedSpec(g, dict(grader_params.get(g) or {})) for g in graders)
            for agent in _agent_specs(family, agents):
                for seed in seeds:
                    def episode(agent: AgentSpec = agent, seed: int = seed) -> str:
                        env = EnvRef(id=env_id, kwargs=kwargs, task_id=task[0])
                        spec = EpisodeSpec(key=episode_key(env, agent, seed, 0), env=env, agent=agent, seed=seed,
                                           rep=0, max_steps=max_steps, graders=specs)
                        record = run_episode(spec)
                        assert record.termination != "infra_error", f"infra_error: {record.error}"
                        assert record.steps, "the episode took no step"
                        back = round_trip(record, folder)
                        records.append(back)
                        assert len(record.grades) == len(specs), f"{len(record.grades)} grades of {len(specs)}"
                        for grader, grade in zip(specs, record.grades):  # the runner grades in this order
                            assert grade.error is None, f"grader {grade.grader}: {grade.error}"
                            again = grade_record(get_grader(grader.name, **grader.params), back, source="regrade")
                            assert _same(again.score, grade.score), \
                                f"grader {grade.grader}: live {grade.score}, regraded {again.score}"
                        return (f"{record.termination}, {len(record.steps)} steps, "
                                f"{len(record.grades)} grades, round trip and regrade equal")

                    run("episode", f"{agent.id} on {env_id} seed {seed}", episode)
        for name in family.analyses:
            run("analysis", name, partial(_analyse, name, records, folder))


def _first_task_into(task: list[str | None], env_id: str, kwargs: dict[str, Any]) -> str | None:
    task[0] = _first_task(env_id, kwargs)
    return task[0]


def _analyse(name: str, records: list[Trajectory], folder: Path) -> str:
    from rsigym.registry import ANALYSES
    from rsigym.report.report import ReportSection

    assert records, "no records to analyse (every episode failed)"
    section = ANALYSES.lookup(name)(records, folder)
    assert isinstance(section, ReportSection), f"returned {type(section).__name__}, not a ReportSection"
    assert isinstance(section.markdown, str) and section.title, "a section needs a title and markdown"
    return f"{section.title!r}: {section.verdict or 'no verdict'}"[:200]
