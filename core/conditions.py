"""Conditions as data: named, parameterised interventions on an env family.

A condition changes how an env looks or answers (renamed tools, reversed hints), never the task
itself; what a family varies between tasks (HPO's source-to-target adaptations) is a task.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

from .errors import UserError
from .registry import CONDITIONS

__all__ = ["Condition", "ConditionRegistry"]

T = TypeVar("T")


@dataclass(frozen=True)
class Condition:
    """A condition as the record stores it: ``{"name": ..., "params": {...}}``."""

    name: str
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def parse(cls, value: "Condition | dict[str, Any] | str | None") -> "Condition | None":
        if value is None or isinstance(value, Condition):
            return value
        if isinstance(value, str):
            return cls(value)
        if isinstance(value, dict) and isinstance(value.get("name"), str):
            return cls(value["name"], dict(value.get("params") or {}))
        raise ValueError(f"a condition is a name or {{name, params}}, got {value!r}")

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "params": dict(self.params)}


class ConditionRegistry(Generic[T]):
    """The conditions of one env family: a view of the kernel's ``CONDITIONS`` registry.

    Condition ``name`` of family ``probe`` is registered as ``probe.name``, in-process with
    ``@PROBE_CONDITIONS.register("name")`` or from any package through the entry-point group
    ``rsigym.conditions`` (``"probe.name" = "pkg.module:factory"``). A factory takes the
    condition's params and returns what the family's env applies.
    """

    def __init__(self, family: str) -> None:
        self.family = family

    def key(self, name: str) -> str:
        return f"{self.family}.{name}"

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        return CONDITIONS.register(self.key(name))

    def names(self) -> list[str]:
        prefix = self.family + "."
        return [n[len(prefix):] for n in CONDITIONS if n.startswith(prefix)]

    def build(self, condition: Condition) -> T:
        key = self.key(condition.name)
        if key not in CONDITIONS:
            raise ValueError(f"unknown {self.family} condition {condition.name!r}; "
                             f"known: {', '.join(self.names())}")
        try:
            factory = CONDITIONS[key]
        except UserError as exc:  # a plug-in whose entry point does not load
            raise ValueError(str(exc)) from exc
        try:
            return factory(**condition.params)
        except TypeError as exc:
            raise ValueError(f"{self.family} condition {condition.name!r}: bad params "
                             f"{condition.params}: {exc}") from exc
