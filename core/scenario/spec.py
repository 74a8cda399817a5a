"""Scenario files: YAML batteries validated against ``scenarios/schema.json``, expanded to episodes.

Every mistake a user can make in a scenario file ends in a ``UserError`` whose one line names
the file, the key path and the bad value, before any episode runs.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any

import jsonschema
from ..errors import UserError
from ..records.trajectory import AgentSpec, EnvRef, episode_key
from ..records.redact import register_secrets_in
from .safe_yaml import load_yaml

__all__ = ["Scenario", "EpisodeSpec", "NamedSpec", "load_scenario", "parse_scenario", "expand"]


@dataclass(frozen=True)
class NamedSpec:
    """A grader or analysis named in a scenario, with its parameters."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, value: str | dict[str, Any]) -> "NamedSpec":
        if isinstance(value, str):
            return cls(value)
        return cls(value["name"], dict(value.get("params") or {}))


@dataclass(frozen=True)
class Scenario:
    """A validated scenario. ``source`` is the file it came from (for messages)."""

    name: str
    env_id: str
    env_kwargs: dict[str, Any]
    tasks: list[str] | dict[str, Any] | None
    conditions: list[dict[str, Any] | None]
    agents: list[AgentSpec]
    seeds: list[int]
    reps: int = 1
    max_steps: int | None = None
    graders: list[NamedSpec] = field(default_factory=list)
    analyses: list[NamedSpec] = field(default_factory=list)
    runner: dict[str, Any] = field(default_factory=dict)
    description: str = ""
    source: str = "<scenario>"
    raw: dict[str, Any] = field(default_factory=dict)


@dataclass(frozen=True)
class EpisodeSpec:
    """Everything one worker needs to run one episode; picklable, no live objects."""

    key: str
    env: EnvRef
    agent: AgentSpec
    seed: int
    rep: int
    max_steps: int | None
    graders: tuple[NamedSpec, ...] = ()
    imports: tuple[str, ...] = ()  # modules every worker imports first (``--import``)
    timeout_s: float | None = None  # wall clock from the agent's reset to the last step (--episode-timeout); not in the key
    tool_mode: str | None = None  # tools or json: the endpoint check's probe for a tool_mode auto agent; not in the key
    spend_cap_usd: float | None = None  # its share of --cost-limit, set when the cost guard admits it; not in the key


@lru_cache(maxsize=1)
def _validator() -> jsonschema.protocols.Validator:
    from rsigym.scenarios import SCHEMA_PATH

    schema = json.loads(SCHEMA_PATH.read_text())
    return jsonschema.Draft202012Validator(schema)


def _path(parts: Any) -> str:
    out = ""
    for part in parts:
        out += f"[{part}]" if isinstance(part, int) else (f".{part}" if out else str(part))
    return out or "(top level)"


def _describe(error: jsonschema.ValidationError) -> str:
    """One line naming the key path and the bad value."""
    # oneOf failures report the whole alternative set; the most specific sub-error reads better.
    # An alternative whose type fitted the value is the one the user meant.
    if error.validator == "oneOf" and error.context:
        fitting = [e for e in error.context if e.validator != "type"]
        if fitting:
            return _describe(max(fitting, key=lambda e: len(e.absolute_path)))
    path = list(error.absolute_path)
    if error.validator == "additionalProperties":
        allowed = sorted(error.schema.get("properties", {}))
        extra = sorted(set(error.instance) - set(allowed))
        return f"{_path(path + [extra[0]])}: unknown key {extra[0]!r} (allowed: {', '.join(allowed)})"
    if error.validator == "required":
        missing = [k for k in error.validator_value if k not in error.instance]
        return f"{_path(path + [missing[0]])}: required key is missing"
    if error.validator == "type":
        return f"{_path(path)}: expected {error.validator_value}, got {error.instance!r:.60}"
    if error.validator == "oneOf":
        from rsigym.scenarios import SCHEMA_PATH  # the installed file, wherever it is

        return f"{_path(path)}: {error.instance!r:.60} is not a valid value ({error.schema.get('description', f'see {SCHEMA_PATH}')})"
    return f"{_path(path)}: {error.message}"


def parse_scenario(data: Any, source: str = "<scenario>") -> Scenario:
    """Validate a parsed YAML document and build a ``Scenario``."""
    if not isinstance(data, dict):
        raise UserError(f"{source}: a scenario is a mapping of keys, got {type(data).__name__}")
    register_secrets_in(data)  # a configured key or header value echoed later (an error, a tool) is caught too
    errors = sorted(_validator().iter_errors(data), key=lambda e: (len(e.absolute_path), e.path))
    if errors:
        raise UserError(f"{source}: {_describe(errors[0])}")
    seeds = data["seeds"]
    if isinstance(seeds, dict):
        seeds = list(range(seeds.get("start", 0), seeds.get("start", 0) + seeds["count"]))
    agents = []
    for entry in data["agents"]:
        agents.append(AgentSpec(id=entry.get("id") or entry["kind"], kind=entry["kind"],
                                model=entry.get("model"), params=dict(entry.get("params") or {})))
    ids = [a.id for a in agents]
    if len(set(ids)) != len(ids):
        dup = next(i for i in ids if ids.count(i) > 1)
        raise UserError(f"{source}: agents: two agents have the id {dup!r}; give each a distinct id")
    conditions: list[dict[str, Any] | None] = []
    for entry in data.get("conditions") or [None]:
        if entry is None or entry == "none":
            conditions.append(None)
        elif isinstance(entry, str):
            conditions.append({"name": entry, "params": {}})
        else:
            conditions.append({"name": entry["name"], "params": dict(entry.get("params") or {})})
    return Scenario(
        name=data["name"], env_id=data["env"]["id"], env_kwargs=dict(data["env"].get("kwargs") or {}),
        tasks=data.get("tasks"), conditions=conditions, agents=agents, seeds=list(seeds),
        reps=data.get("reps", 1), max_steps=data.get("max_steps"),
        graders=[NamedSpec.parse(g) for g in data.get("graders") or []],
        analyses=[NamedSpec.parse(a) for a in data.get("analyses") or ["summary"]],
        runner=dict(data.get("runner") or {}), description=data.get("description", ""),
        source=source, raw=data,
    )


def load_scenario(path_or_name: str | Path) -> Scenario:
    """Load a scenario file, or a bundled scenario by name (see ``rsigym list scenarios``)."""
    from rsigym.scenarios import bundled_scenarios

    path = Path(path_or_name)
    if not path.exists():
        bundled = bundled_scenarios()
        if str(path_or_name) not in bundled:
            raise UserError(f"no scenario file {str(path_or_name)!r} (and no bundled scenario of that "
                            f"name; bundled: {', '.join(bundled) or 'none'})")
        path = bundled[str(path_or_name)]
    try:
        text = path.read_text()
    except OSError as exc:
        raise UserError(f"cannot read scenario {path}: {exc.strerror}") from exc
    except UnicodeDecodeError as exc:
        raise UserError(f"cannot read scenario {path}: not UTF-8 text ({exc.reason} at byte {exc.start})") from exc
    data = load_yaml(text, str(path))
    return parse_scenario(data, source=str(path))


def _make_env(scenario: Scenario, condition: dict[str, Any] | None, where: str):
    import gymnasium as gym

    from ..registry import register_gym_envs

    register_gym_envs()
    kwargs = dict(scenario.env_kwargs)
    if condition is not None:
        kwargs["condition"] = condition
    try:
        return gym.make(scenario.env_id, **kwargs)
    except gym.error.Error as exc:
        known = ", ".join(register_gym_envs())
        raise UserError(f"{scenario.source}: env.id: cannot make {scenario.env_id!r}: {exc} "
                        f"(rsigym envs: {known})") from exc
    except (TypeError, ValueError) as exc:
        raise UserError(f"{scenario.source}: {where}: {exc}") from exc


def _task_ids(scenario: Scenario, env: Any) -> list[str | None]:
    tasks = scenario.tasks
    if isinstance(tasks, list):
        return list(tasks)
    lister = getattr(env.unwrapped, "list_tasks", None)
    if lister is None:
        if tasks:
            raise UserError(f"{scenario.source}: tasks: {scenario.env_id} has no task splits; list task ids")
        return [None]
    split = (tasks or {}).get("split")
    try:
        ids = list(lister(split))
    except ValueError as exc:
        raise UserError(f"{scenario.source}: tasks.split: {exc}") from exc
    limit = (tasks or {}).get("limit")
    return ids[:limit] if limit else ids


def expand(scenario: Scenario) -> list[EpisodeSpec]:
    """All episodes of a scenario in a stable order (task, condition, agent, seed, rep).

    Builds each env condition, agent and grader once, so a misspelt name fails here, with its
    key path, rather than inside a worker halfway through the battery.
    """
    from ..agent import make_agent
    from ..grader import get_grader

    task_ids: list[str | None] = []
    for i, condition in enumerate(scenario.conditions):
        env = _make_env(scenario, condition, f"conditions[{i}]" if condition else "env.kwargs")
        try:
            if i == 0:
                task_ids = _task_ids(scenario, env)
        finally:
            env.close()
    for i, agent in enumerate(scenario.agents):
        try:
            make_agent(agent)
        except UserError as exc:
            raise UserError(f"{scenario.source}: agents[{i}]: {exc}") from exc
    for i, grader in enumerate(scenario.graders):
        try:
            get_grader(grader.name, **grader.params)
        except UserError as exc:
            raise UserError(f"{scenario.source}: graders[{i}]: {exc}") from exc

    episodes = []
    for task_id in task_ids:
        for condition in scenario.conditions:
            env_ref = EnvRef(scenario.env_id, scenario.env_kwargs, task_id, condition)
            # seed-major: every agent's episode of a seed before the next seed, so a run stopped
            # part-way holds whole seed blocks (paired across agents) and shared caches warm early
            for seed in scenario.seeds:
                for agent in scenario.agents:
                    for rep in range(scenario.reps):
                        episodes.append(EpisodeSpec(
                            key=episode_key(env_ref, agent, seed, rep), env=env_ref, agent=agent,
                            seed=seed, rep=rep, max_steps=scenario.max_steps,
                            graders=tuple(scenario.graders)))
    seen: dict[str, EpisodeSpec] = {}
    for spec in episodes:  # one record per key: two episodes with one key would pair with each other
        if spec.key in seen:
            tasks: list[Any] = scenario.tasks if isinstance(scenario.tasks, list) else []
            where = "tasks" if tasks.count(spec.env.task_id) > 1 else "seeds" if scenario.seeds.count(spec.seed) > 1 else "conditions"
            raise UserError(f"{scenario.source}: {where}: the episode of task {spec.env.task_id!r}, seed {spec.seed}, "
                            f"agent {spec.agent.id!r} appears twice (one episode key, one record); list each "
                            f"{where[:-1]} once")
        seen[spec.key] = spec
    return episodes
