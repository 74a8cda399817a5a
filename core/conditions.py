"""Conditions (interventions) as data: named, parameterised transformations per env family."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Callable, Generic, TypeVar

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
    """Maps condition names of one env family to factories ``params -> T``."""

    def __init__(self, family: str) -> None:
        self.family = family
        self._factories: dict[str, Callable[..., T]] = {}

    def register(self, name: str) -> Callable[[Callable[..., T]], Callable[..., T]]:
        def decorate(factory: Callable[..., T]) -> Callable[..., T]:
            self._factories[name] = factory
            return factory
        return decorate

    def names(self) -> list[str]:
        return sorted(self._factories)

    def build(self, condition: Condition) -> T:
        if condition.name not in self._factories:
            raise ValueError(f"unknown {self.family} condition {condition.name!r}; "
                             f"known: {', '.join(self.names())}")
        try:
            return self._factories[condition.name](**condition.params)
        except TypeError as exc:
            raise ValueError(f"{self.family} condition {condition.name!r}: bad params "
                             f"{condition.params}: {exc}") from exc
