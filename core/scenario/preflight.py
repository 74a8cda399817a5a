"""Preflight: every mistake a scenario can hold, found before any episode runs, listed at once.

``preflight(scenario)`` builds the env once per condition with its kwargs, checks the task ids,
agents, graders (and that each fits the env), analyses, every model string (offline models exist,
hosted ones have credentials) and Docker where the scenario asks for it. It returns one line per
problem, each naming the key path and, for a misspelt name, the closest known ones;
``check_scenario`` raises them together as one ``PreflightError`` (the CLI prints each line and
exits 2).
"""

from __future__ import annotations

import difflib
import fnmatch
import inspect
import os
from functools import partial
from typing import Any, Callable, Iterable, Iterator, Mapping

from ..errors import UserError
from ..records.redact import redact_text
from ..registry import ANALYSES, ENVS, GRADERS, OFFLINE_POLICIES
from .spec import Scenario

__all__ = ["PreflightError", "preflight", "check_scenario", "did_you_mean", "grader_fits", "model_entries"]


class PreflightError(UserError):
    """Several problems found before any episode; ``problems`` holds one line each."""

    def __init__(self, problems: list[str]) -> None:
        super().__init__("\n".join(problems))
        self.problems = problems


def did_you_mean(name: str, known: Iterable[str]) -> str:
    """`` (did you mean 'x'?)`` for the closest known names, or '' when none is close."""
    close = difflib.get_close_matches(name, list(known), n=2, cutoff=0.6)
    return f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""


def _family(module: str) -> str | None:
    """``probe`` for ``rsigym.envs.probe.graders``; None outside ``rsigym.envs``."""
    parts = module.split(".")
    return parts[2] if len(parts) > 2 and parts[:2] == ["rsigym", "envs"] else None


def _env_module(env_id: str) -> str:
    ep = ENVS.entry_point(env_id)
    if ep is not None:
        return ep.value.split(":")[0]
    try:
        return getattr(ENVS[env_id], "__module__", "") or ""
    except (KeyError, UserError):
        return ""


def grader_fits(grader_cls: Any, env_id: str) -> bool:
    """Whether a grader can score records of ``env_id``.

    A grader declares the envs it fits with ``envs`` (env ids or shell patterns such as
    ``rsigym/ToolUse-*``). Without it, a grader defined in a family folder fits that family's
    envs, and any other grader (generic, e.g. an LLM judge) fits every env.
    """
    declared = getattr(grader_cls, "envs", None)
    if declared is not None:
        return any(fnmatch.fnmatchcase(env_id, pattern) for pattern in declared)
    grader_family = _family(getattr(grader_cls, "__module__", "") or "")
    env_family = _family(_env_module(env_id))
    return grader_family is None or env_family is None or grader_family == env_family


def check_scenario(scenario: Scenario, **kwargs: Any) -> None:
    """Raise ``PreflightError`` listing every problem of ``scenario``; see ``preflight``."""
    problems = preflight(scenario, **kwargs)
    if problems:
        raise PreflightError(problems)


def preflight(scenario: Scenario, *, environ: Mapping[str, str] | None = None,
              docker_answers: Callable[[], str | None] | None = None) -> list[str]:
    """Every problem of ``scenario`` that would fail or silently spoil episodes, one line each.

    Args:
        scenario: A scenario that passed the schema.
        environ: Where credentials are looked up (default ``os.environ``; the CLI passes it).
        docker_answers: Returns None when a Docker engine answers, else why not (default: ping).
    """
    environ = os.environ if environ is None else environ
    src = scenario.source
    problems: list[str] = []
    problems += _check_env(scenario)
    for i, agent in enumerate(scenario.agents):
        problems += [f"agents[{i}]: {p}" for p in _build(partial(_make_agent, agent))]
    for i, spec in enumerate(scenario.graders):
        problems += [f"graders[{i}]: {p}" for p in _check_grader(spec.name, spec.params, scenario.env_id)]
    for i, spec in enumerate(scenario.analyses):
        if spec.name not in ANALYSES:
            problems.append(f"analyses[{i}]: unknown analysis {spec.name!r}"
                            f"{did_you_mean(spec.name, ANALYSES)}; known: {', '.join(ANALYSES)}")
    problems += _check_models(scenario.raw, environ)
    # one line per problem: an env that already refused for want of Docker says it better
    said = {p.split(".")[0].split("[")[0].split(":")[0] for p in problems if "Docker" in p}
    problems += [p for p in _check_docker(scenario.raw, docker_answers)
                 if p.split(".")[0].split("[")[0].split(":")[0] not in said]
    return [redact_text(f"{src}: {p}") for p in problems]


def _build(make: Callable[[], Any]) -> list[str]:
    try:
        make()
    except UserError as exc:
        return [str(exc)]
    return []


def _make_agent(agent: Any) -> Any:
    from ..agent import make_agent

    return make_agent(agent)


def _check_grader(name: str, params: dict[str, Any], env_id: str) -> list[str]:
    from ..grader import get_grader

    if name not in GRADERS:
        return [f"unknown grader {name!r}{did_you_mean(name, GRADERS)}; known: {', '.join(GRADERS)}"]
    problems = _build(lambda: get_grader(name, **params))
    if problems:
        return problems
    cls = GRADERS[name]
    if not grader_fits(cls, env_id):
        return [f"grader {name!r} does not fit {env_id} (it scores "
                f"{', '.join(getattr(cls, 'envs', None) or [_family(cls.__module__) or '?'])} records); "
                f"graders that fit: {', '.join(g for g in GRADERS if _fits_by_name(g, env_id)) or 'none'}"]
    return []


def _fits_by_name(name: str, env_id: str) -> bool:
    try:
        return grader_fits(GRADERS[name], env_id)
    except (KeyError, UserError):
        return False


# -- the env, its kwargs, conditions and tasks ----------------------------------------------------
def _check_env(scenario: Scenario) -> list[str]:
    import gymnasium as gym

    from ..registry import register_gym_envs

    known = register_gym_envs()
    if scenario.env_id not in known and scenario.env_id not in gym.registry:
        return [f"env.id: unknown env {scenario.env_id!r}{did_you_mean(scenario.env_id, known)}; "
                f"rsigym envs: {', '.join(known)}"]
    problems, unknown = _unknown_kwargs(scenario.env_id, scenario.env_kwargs)
    known_kwargs = {k: v for k, v in scenario.env_kwargs.items() if k not in unknown}
    task_problems: list[str] = []
    for i, condition in enumerate(scenario.conditions):
        where = f"conditions[{i}]" if condition else "env.kwargs"
        # built without the unknown kwargs (already listed), so the tasks are still checked
        kwargs = dict(known_kwargs, **({"condition": condition} if condition else {}))
        try:
            env = gym.make(scenario.env_id, **kwargs)
        except UserError as exc:
            problems.append(f"{where}: {exc}")
            continue
        except Exception as exc:  # the env's own check of its arguments
            problems.append(f"{where}: {type(exc).__name__}: {exc}".replace("\n", " "))
            continue
        try:
            if i == 0:
                task_problems = _check_tasks(scenario, env)
        finally:
            env.close()
    return problems + task_problems


def _unknown_kwargs(env_id: str, kwargs: dict[str, Any]) -> tuple[list[str], set[str]]:
    """``env.kwargs.KEY`` for each key the env's constructor does not take, and those keys."""
    try:
        cls = ENVS[env_id]
        params = inspect.signature(cls).parameters
    except (KeyError, UserError, TypeError, ValueError):
        return [], set()
    if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values()):
        return [], set()
    names = [n for n, p in params.items() if p.kind is not inspect.Parameter.VAR_POSITIONAL]
    unknown = {key for key in kwargs if key not in names}
    return [f"env.kwargs.{key}: {env_id} takes no argument {key!r}{did_you_mean(key, names)}; "
            f"it takes: {', '.join(names)}" for key in kwargs if key in unknown], unknown


def _check_tasks(scenario: Scenario, env: Any) -> list[str]:
    tasks = scenario.tasks
    lister = getattr(env.unwrapped, "list_tasks", None)
    if isinstance(tasks, list):
        problems = []
        seen: set[str] = set()
        known = list(lister(None)) if lister is not None else None
        for i, task in enumerate(tasks):
            if task in seen:
                problems.append(f"tasks[{i}]: task id {task!r} is listed twice (one record per episode key)")
            seen.add(task)
            if known is not None and task not in known:
                problems.append(f"tasks[{i}]: unknown task id {task!r}{did_you_mean(str(task), known)}; "
                                f"{scenario.env_id} has {len(known)} tasks ({', '.join(known[:5])}, ...)")
        return problems
    if lister is None:
        return [f"tasks: {scenario.env_id} has no task splits; list task ids"] if tasks else []
    try:
        lister((tasks or {}).get("split"))
    except ValueError as exc:
        return [f"tasks.split: {exc}"]
    return []


# -- models and credentials -----------------------------------------------------------------------
def model_entries(value: Any, path: str = "") -> Iterator[tuple[str, dict[str, Any]]]:
    """Every mapping that names a ``model`` (agents, simulated users, judges, candidate sources)."""
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            if isinstance(item.get("model"), str):
                yield where, item
            stack.extend((v, f"{where}.{k}" if where else str(k)) for k, v in reversed(list(item.items())))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in reversed(list(enumerate(item))))


def _check_models(raw: dict[str, Any], environ: Mapping[str, str]) -> list[str]:
    problems = []
    for where, entry in model_entries(raw):
        model = entry["model"]
        params: dict[str, Any] = entry["params"] if isinstance(entry.get("params"), dict) else {}
        problem = check_model(model, api_base=entry.get("api_base") or params.get("api_base"),
                              api_key_env=entry.get("api_key_env") or params.get("api_key_env"),
                              environ=environ)
        if problem:
            problems.append(f"{where}.model: {problem}")
    return problems


def check_model(model: str, *, api_base: str | None = None, api_key_env: str | None = None,
                environ: Mapping[str, str] | None = None) -> str | None:
    """None when ``model`` can be called as configured, else why not (one phrase)."""
    environ = os.environ if environ is None else environ
    provider, _, name = model.partition("/")
    if provider == "rsigym":
        if name in OFFLINE_POLICIES:
            return None
        return (f"unknown offline model {model!r}{did_you_mean(name, OFFLINE_POLICIES)}; offline "
                f"models: {', '.join('rsigym/' + p for p in OFFLINE_POLICIES)}")
    if api_base:
        return None  # a local server (vLLM, Ollama): any key or none
    if api_key_env:
        return None if environ.get(api_key_env) else f"api_key_env names {api_key_env}, which is not set"
    from ..llm.client import load_litellm

    litellm = load_litellm()
    custom = {entry.get("provider") for entry in getattr(litellm, "custom_provider_map", None) or []}
    if provider in custom:
        return None
    try:
        litellm.get_llm_provider(model)
    except Exception:  # noqa: BLE001 - LiteLLM's error text is long; ours names the fix
        return (f"LiteLLM knows no provider for {model!r}; write provider/model (e.g. "
                "openai/gpt-4o-mini), or rsigym/<policy> for an offline model")
    try:
        missing = litellm.validate_environment(model=model).get("missing_keys") or []
    except Exception:  # noqa: BLE001 - a provider LiteLLM cannot check: the call will say
        return None
    missing = [k for k in missing if not environ.get(k)]
    if missing:
        return (f"{model} needs credentials: set {' or '.join(missing)} (or run offline, e.g. "
                "--model rsigym/random)")
    return None


# -- Docker -------------------------------------------------------------------------------------
def _check_docker(raw: dict[str, Any], docker_answers: Callable[[], str | None] | None) -> list[str]:
    from ..sandbox.factory import PROVIDERS

    # a misspelt provider fails every episode the same way: a mistake of the scenario, found here
    unknown = [f"{where}: unknown sandbox provider {value!r}{did_you_mean(value, PROVIDERS)}; "
               f"expected one of {', '.join(PROVIDERS)}"
               for where, value in _sandbox_entries(raw) if value not in PROVIDERS]
    wants = [where for where, value in _sandbox_entries(raw) if value == "docker"]
    if unknown or not wants:
        return unknown
    reason = (docker_answers or _ping_docker)()
    if reason is None:
        return []
    return [f"{where}: sandbox docker asked for, but {reason}; start Docker or use sandbox: auto"
            for where in wants]


def _sandbox_entries(value: Any, path: str = "") -> Iterator[tuple[str, Any]]:
    stack: list[tuple[Any, str]] = [(value, path)]
    while stack:
        item, where = stack.pop()
        if isinstance(item, dict):
            for key, sub in item.items():
                sub_where = f"{where}.{key}" if where else str(key)
                if key == "sandbox" and isinstance(sub, str):
                    yield sub_where, sub
                else:
                    stack.append((sub, sub_where))
        elif isinstance(item, list):
            stack.extend((v, f"{where}[{i}]") for i, v in enumerate(item))


def _ping_docker() -> str | None:
    try:
        import docker

        client = docker.from_env(timeout=10)
        try:
            client.ping()
        finally:
            client.close()
    except Exception as exc:  # noqa: BLE001 - any failure means no engine answers
        return f"no Docker engine answers ({type(exc).__name__})"
    return None
