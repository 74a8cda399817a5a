"""One registry type for every name a scenario can use, each backed by an entry-point group.

A ``Registry`` maps names to objects of one kind (agent factories, grader classes, analyses,
conditions, offline policies, env classes). Objects join in two ways:

* in-process, with ``registry.register(name)`` as a decorator (tests, notebooks, built-in code
  that is already imported);
* from any installed package, through the registry's entry-point group, e.g.::

      [project.entry-points."rsigym.graders"]
      my_check = "my_package.graders:MyCheck"

  The group is read on the first lookup in each process (the CLI, a spawned worker, a Ray
  actor), and an entry is imported only when its name is looked up, so a scenario that uses one
  family never imports the others. rsigym's own families register through the same groups in its
  ``pyproject.toml``: a third-party family is exactly as first-class as a built-in one.

The kernel's registries (``AGENTS``, ``GRADERS``, ``ANALYSES``, ``CONDITIONS``,
``OFFLINE_POLICIES``, ``ENVS``) live here, so the scenario loader, the runner, reports and the CLI
resolve every name without importing ``rsigym.envs``, ``rsigym.agents`` or ``rsigym.graders``.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator, Mapping
from importlib.metadata import EntryPoint, entry_points
from typing import Any, Callable, Generic, TypeVar

from .errors import UserError

__all__ = ["Registry", "AGENTS", "GRADERS", "ANALYSES", "CONDITIONS", "OFFLINE_POLICIES", "ENVS", "COMMANDS",
           "REGISTRIES", "describe", "register_gym_envs"]

log = logging.getLogger(__name__)

T = TypeVar("T")


def describe(obj: Any) -> str:
    """The first line of ``obj``'s docstring ('' when it has none)."""
    doc = (getattr(obj, "__doc__", None) or getattr(getattr(obj, "__self__", None), "__doc__", None)
           or "").strip().splitlines()  # a classmethod factory without a docstring: its class's
    return doc[0].strip() if doc else ""


class Registry(Mapping[str, T], Generic[T]):
    """Names of one kind -> objects, filled by ``register`` and by the entry-point group ``group``.

    As a ``Mapping`` it lists every name it knows (entry points included, without importing
    them); ``registry[name]`` imports an entry point on first use. ``lookup`` is the same with a
    ``UserError`` that names the known entries. ``aliases`` maps old spellings to names, so
    scenario files written before a rename keep working.
    """

    def __init__(self, kind: str, group: str, *, check: Callable[[str, Any], Any] | None = None,
                 aliases: Mapping[str, str] | None = None) -> None:
        self.kind = kind
        self.group = group
        self._check = check
        self._objects: dict[str, T] = {}
        self._entry_points: dict[str, EntryPoint] | None = None  # read on first lookup
        self.aliases: dict[str, str] = dict(aliases or {})

    # -- registration -------------------------------------------------------------------
    def register_check(self, check: Callable[[str, Any], Any]) -> None:
        """Validate (and possibly adapt) every object as it is registered or loaded."""
        self._check = check
        for name, obj in list(self._objects.items()):
            self._objects[name] = check(name, obj)

    def register(self, name: str, obj: Any = None) -> Any:
        """Register ``obj`` as ``name``; without ``obj``, a decorator that does so."""
        if obj is None:
            def decorate(target: Any) -> Any:
                self.register(name, target)
                return target
            return decorate
        if self._check is not None:
            obj = self._check(name, obj)
        previous = self._objects.get(name)
        if previous is not None and previous is not obj:
            raise ValueError(f"{self.kind} {name!r} is already registered by {previous!r}")
        self._objects[name] = obj
        return obj

    def registered(self) -> dict[str, T]:
        """The entries registered or loaded in this process so far (no entry point is imported)."""
        return dict(self._objects)

    def unregister(self, name: str) -> None:
        """Forget ``name`` (registered in-process); for tests."""
        self._objects.pop(name, None)

    # -- entry points -------------------------------------------------------------------
    def _points(self) -> dict[str, EntryPoint]:
        if self._entry_points is None:
            self._entry_points = {ep.name: ep for ep in entry_points(group=self.group)}
        return self._entry_points

    def reload_entry_points(self) -> None:
        """Read the entry-point group again (after installing a package in this process)."""
        self._entry_points = None

    def _load(self, name: str) -> T:
        ep = self._points()[name]
        try:
            obj = ep.load()
        except Exception as exc:  # a broken plug-in is the user's to fix: say which and why
            raise UserError(f"{self.kind} {name!r}: cannot load entry point {ep.value!r} "
                            f"(group {self.group}): {type(exc).__name__}: {exc}") from exc
        if name not in self._objects:  # loading may have registered it already (a decorator)
            try:
                self.register(name, obj)
            except (TypeError, ValueError) as exc:  # fails the check every built-in passes
                raise UserError(f"{self.kind} {name!r} (entry point {ep.value!r}): {exc}") from exc
        return self._objects[name]

    # -- lookup -------------------------------------------------------------------------
    def canonical(self, name: str) -> str:
        """``name`` with an old spelling replaced by its current one."""
        return self.aliases.get(name, name)

    def __getitem__(self, name: str) -> T:
        name = self.canonical(name)
        if name in self._objects:
            return self._objects[name]
        if name in self._points():
            return self._load(name)
        raise KeyError(name)

    def __contains__(self, name: object) -> bool:
        if not isinstance(name, str):
            return False
        name = self.canonical(name)
        return name in self._objects or name in self._points()

    def __iter__(self) -> Iterator[str]:
        return iter(sorted(set(self._objects) | set(self._points())))

    def __len__(self) -> int:
        return len(set(self._objects) | set(self._points()))

    def lookup(self, name: str) -> T:
        """The object registered as ``name``; an unknown name is a UserError listing the known."""
        if name not in self:
            import difflib

            close = difflib.get_close_matches(name, list(self), n=2, cutoff=0.6)
            hint = f" (did you mean {' or '.join(repr(c) for c in close)}?)" if close else ""
            raise UserError(f"unknown {self.kind} {name!r}{hint}; known: {', '.join(self) or 'none'}")
        return self[name]

    def loaded(self) -> dict[str, T]:
        """Every entry, imported (a broken entry point is logged and left out)."""
        out: dict[str, T] = {}
        for name in self:
            try:
                out[name] = self[name]
            except UserError as exc:
                log.warning("%s", exc)
        return out

    def entry_point(self, name: str) -> EntryPoint | None:
        """The entry point that provides ``name``, or None (registered in-process only)."""
        return self._points().get(self.canonical(name))

    def describe(self, name: str) -> str:
        """One line about ``name``: its docstring's first line."""
        return describe(self[name])


# Agent kinds: ``factory(spec: AgentSpec) -> Agent`` (a class taking the spec, or a function).
AGENTS: Registry[Callable[..., Any]] = Registry(
    "agent kind", "rsigym.agents",
    # spellings used by scenario files before kinds became snake_case
    aliases={"probe-bisect": "probe_bisect", "random-search": "random_search",
             "dataselect-selector": "dataselect_selector"})
# Graders: classes with ``version``, ``needs`` and ``grade(record)`` (see ``rsigym.grader``).
GRADERS: Registry[Callable[..., Any]] = Registry("grader", "rsigym.graders")
# Analyses: ``analyse(records, out_dir, **params) -> ReportSection`` (see ``rsigym.report.report``).
ANALYSES: Registry[Callable[..., Any]] = Registry("analysis", "rsigym.analyses")
# Conditions (interventions), named ``<family>.<condition>``: ``factory(**params) -> what the
# family's env applies``. Each family reads its own through a ``ConditionRegistry``.
CONDITIONS: Registry[Callable[..., Any]] = Registry("condition", "rsigym.conditions")
# Offline models ``rsigym/<name>``: ``policy(OfflineRequest) -> OfflineReply``.
OFFLINE_POLICIES: Registry[Callable[..., Any]] = Registry("offline policy", "rsigym.offline_policies")
# Env ids -> env classes (``"rsigym/Probe-v0" = "rsigym.envs.probe.env:ProbeEnv"``); Gymnasium
# learns each id from the entry point's text, so registering an id imports nothing.
ENVS: Registry[Callable[..., Any]] = Registry("env id", "rsigym.envs")
# CLI sub-commands a family adds (``rsigym archive ...``): modules with ``configure(parser)``,
# ``main(args) -> int`` and a ``HELP`` line; not listed by ``rsigym list``.
COMMANDS: Registry[Any] = Registry("command", "rsigym.commands")

REGISTRIES: dict[str, Registry[Any]] = {
    "envs": ENVS, "agents": AGENTS, "graders": GRADERS, "analyses": ANALYSES,
    "conditions": CONDITIONS, "offline_policies": OFFLINE_POLICIES,
}


def register_gym_envs() -> list[str]:
    """Register every env id of ``ENVS`` with Gymnasium (idempotent); returns the ids.

    An id from an entry point is registered with the entry point's text (``module:Class``), so
    Gymnasium imports a family's env module only when that env is made.
    """
    import gymnasium as gym

    for env_id in ENVS:
        if env_id in gym.registry:
            continue
        ep = ENVS.entry_point(env_id)
        target = ENVS._objects.get(env_id) or (ep.value if ep is not None else None)
        gym.register(id=env_id, entry_point=target)
    return list(ENVS)
