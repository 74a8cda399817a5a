"""``check_family``: every check rsigym runs on its own families, on any family (a plug-in's too).

A family is what a package or a module adds through rsigym's entry-point groups: env ids, agent
kinds, graders, analyses, conditions. ``check_family("my_family")`` finds them (by distribution
name, or by the module their entry points live in), then runs:

- the env conformance checks (``rsigym.testing.env_checks``) on each env id;
- each condition, applied to the family's env: reset and one example action;
- episodes of each agent kind (and the generic ``random`` agent) on each env through the
  runner's own ``run_episode``, graded live by every grader of the family that fits the env:
  no ``infra_error``; the record survives JSON and a records file unchanged; each grader, run
  again on the record read back, gives the live score (a grader reads only the record);
- each analysis on those records: a ``ReportSection``, never an exception.

It returns a ``FamilyReport`` (one row per check) and raises ``AssertionError`` listing every
failure unless ``raise_on_failure=False``.
"""

from __future__ import annotations

import math
import time
import traceback
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import partial
from importlib.metadata import entry_points
from pathlib import Path
from types import ModuleType
from typing import Any

__all__ = ["Family", "CheckResult", "FamilyReport", "family_members", "check_family", "GROUPS"]

GROUPS = ("envs", "agents", "graders", "analyses", "conditions", "offline_policies")


@dataclass
class Family:
    """The names one family adds, per kind (``GROUPS``)."""

    source: str
    envs: list[str] = field(default_factory=list)
    agents: list[str] = field(default_factory=list)
    graders: list[str] = field(default_factory=list)
    analyses: list[str] = field(default_factory=list)
    conditions: list[str] = field(default_factory=list)
    offline_policies: list[str] = field(default_factory=list)


@dataclass(frozen=True)
class CheckResult:
    check: str
    target: str
    ok: bool
    detail: str = ""
    seconds: float = 0.0


@dataclass
class FamilyReport:
    family: Family
    results: list[CheckResult] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return bool(self.results) and all(r.ok for r in self.results)

    @property
    def failures(self) -> list[CheckResult]:
        return [r for r in self.results if not r.ok]

    def text(self) -> str:
        """One line per check: ok or FAIL, the check, its target, what went wrong."""
        lines = [f"check_family({self.family.source!r}): {len(self.results) - len(self.failures)} of "
                 f"{len(self.results)} checks passed"]
        lines += [f"{'ok  ' if r.ok else 'FAIL'} {r.check:16} {r.target:40} {r.seconds:6.1f} s  {r.detail}".rstrip()
                  for r in self.results]
        return "\n".join(lines)


def _normal(name: str) -> str:
    return name.lower().replace("-", "_").replace(".", "_")


def family_members(source: str | ModuleType) -> Family:
    """The entry points of ``source``: an installed distribution's name, or a module (or its name)
    whose entry points live in it or below it (``"rsigym.envs.probe"``); plus what that module
    registered in this process (``register_grader``, ``ENVS.register``, ...: a notebook, a script)."""
    from rsigym.registry import REGISTRIES

    name = source.__name__ if isinstance(source, ModuleType) else source
    family = Family(name)
    for kind in GROUPS:
        for key, obj in sorted(REGISTRIES[kind].registered().items()):
            module = getattr(obj, "__module__", None) or ""
            if (module == name or module.startswith(name + ".")) and key not in getattr(family, kind):
                getattr(family, kind).append(key)
        for ep in entry_points(group=f"rsigym.{kind}"):
            dist = getattr(ep, "dist", None)
            in_dist = dist is not None and _normal(dist.name) == _normal(name)
            in_module = ep.module == name or ep.module.startswith(name + ".")
            if (in_dist or in_module) and ep.name not in getattr(family, kind):
                getattr(family, kind).append(ep.name)
    if not any(getattr(family, kind) for kind in GROUPS):
        raise ValueError(f"{name!r} adds nothing through rsigym's entry points (groups "
                         f"{', '.join('rsigym.' + k for k in GROUPS)}); is it installed?")
    return family


KwargsSpec = Mapping[str, Any] | Callable[[], Mapping[str, Any]]


def _kwargs(spec: KwargsSpec | None) -> dict[str, Any]:
    if spec is None:
        return {}
    return dict(spec() if callable(spec) else spec)


def check_family(source: str | ModuleType, *, env_kwargs: Mapping[str, KwargsSpec] | None = None,
                 episode_kwargs: Mapping[str, Mapping[str, Any]] | None = None,
                 task_ids: Mapping[str, str | None] | None = None, agents: Sequence[Mapping[str, Any]] | None = None,
                 grader_params: Mapping[str, Mapping[str, Any]] | None = None, skip: Sequence[str] = (),
                 seeds: Sequence[int] = (0,), max_steps: int = 20, fuzz_actions: int = 50,
                 checks: Sequence[str] | None = None, raise_on_failure: bool = True) -> FamilyReport:
    """Run the conformance, fuzz and record round-trip checks on one family.

    Args:
        source: The family: a distribution name or a module (name), see ``family_members``.
        env_kwargs: Keyword arguments per env id (a mapping, or a function returning one), for
            small settings; env ids not named are made with none.
        episode_kwargs: Keyword arguments per env id for the episodes, where they must differ
            from ``env_kwargs`` (a record stores them, so they must be JSON).
        grader_params: Parameters per grader name (e.g. an offline model for a judge).
        skip: Names (env ids, agent kinds, graders, analyses, conditions) left out; each is
            reported as a skipped row, never silently.
        task_ids: The task the episodes of an env id run (default: the first of its ``test`` split,
            else of ``list_tasks()``; None where the env lists no tasks).
        agents: Agent specs (``{"id", "kind", "model", "params"}``) to run instead of the family's
            agent kinds with no parameters plus ``random``.
        seeds: Seeds of the episodes each agent runs on each env.
        max_steps: Step cap of those episodes.
        fuzz_actions: Fuzzed actions per env id (0: no fuzz).
        checks: Only these env checks (names of ``ENV_CHECKS``); the episode checks always run.
        raise_on_failure: Raise ``AssertionError`` with ``FamilyReport.text()`` when a check fails.
    """
    import gymnasium as gym

    from rsigym.registry import register_gym_envs

    from .env_checks import ENV_CHECKS

    family = family_members(source)
    report = FamilyReport(family)
    for kind in GROUPS:
        for name in [n for n in getattr(family, kind) if n in skip]:
            getattr(family, kind).remove(name)
            report.results.append(CheckResult("skipped", name, True, f"{kind[:-1]} left out by skip="))
    register_gym_envs()
    kwargs_of = {env_id: (env_kwargs or {}).get(env_id) for env_id in family.envs}

    def run(check: str, target: str, fn: Callable[[], str | None]) -> None:
        started = time.perf_counter()
        try:
            detail, ok = fn() or "", True
        except Exception as exc:  # noqa: BLE001 - every failure is a row of the report
            frame = traceback.extract_tb(exc.__traceback__)[-1]
            detail, ok = (f"{type(exc).__name__}: {str(exc)[:300]} [{Path(frame.filename).name}:{frame.lineno}]"
                          .replace("\n", " "), False)
        report.results.append(CheckResult(check, target, ok, detail, time.perf_counter() - started))

    for env_id in family.envs:
        def make(env_id: str = env_id) -> gym.Env[Any, Any]:
            return gym.make(env_id, **_kwargs(kwargs_of[env_id]))

        for name, check in ENV_CHECKS.items():
            if checks is not None and name not in checks:
                continue
            if name == "fuzz":
                if fuzz_actions:
                    run(name, env_id, partial(check, make, actions=fuzz_actions))
                continue
            run(name, env_id, partial(check, make))
    for condition in family.conditions:
        for env_id in family.envs[:1]:
            run("condition", condition, partial(_check_condition, env_id, _kwargs(kwargs_of[env_id]), condition))
    if family.envs:
        from .records_check import check_episodes

        kwargs = {e: dict((episode_kwargs or {}).get(e) or _kwargs(k)) for e, k in kwargs_of.items()}
        check_episodes(family, report, run, kwargs, task_ids=task_ids or {}, agents=agents,
                       grader_params=grader_params or {},
                       seeds=seeds, max_steps=max_steps)
    if raise_on_failure and not report.ok:
        raise AssertionError(report.text())
    return report


def _check_condition(env_id: str, kwargs: dict[str, Any], condition: str) -> str:
    """The env made under ``condition`` resets and takes an example action."""
    import gymnasium as gym

    from .steps import step_checked

    short = condition.split(".", 1)[-1]
    env = gym.make(env_id, **kwargs, condition=short)
    try:
        env.reset(seed=0)
        examples = getattr(env.unwrapped, "example_actions", None) or [env.action_space.sample()]
        step_checked(env, examples[0])
    finally:
        env.close()
    return f"on {env_id}"


def finite_or_none(score: float | None) -> bool:
    return score is None or math.isfinite(score)


