"""The Grader protocol and the registry that finds graders by name."""

from __future__ import annotations

import dataclasses
import logging
from importlib.metadata import entry_points
from typing import Any, Callable, ClassVar, Literal, Protocol, runtime_checkable

from rsigym.errors import InfraError, UserError
from rsigym.records import Grade, Trajectory, to_jsonable

__all__ = [
    "Grader", "NEEDS", "ENTRY_POINT_GROUP", "register_grader", "get_grader", "available_graders",
    "grade_record", "snapshot_state",
]

log = logging.getLogger(__name__)

ENTRY_POINT_GROUP = "rsigym.graders"
NEEDS = frozenset({"trajectory", "final_state", "sandbox"})


@runtime_checkable
class Grader(Protocol):
    """Scores one trajectory record.

    A grader reads only the record (plus, if ``"sandbox"`` is in ``needs``, a fresh sandbox it
    opens itself), so every grader can regrade a fixed trajectory. ``version`` changes whenever
    the rule changes, so a report never mixes two rules under one name.
    """

    name: ClassVar[str]
    version: ClassVar[str]
    needs: ClassVar[frozenset[str]]

    def grade(self, record: Trajectory) -> Grade: ...


_REGISTRY: dict[str, Callable[..., Grader]] = {}
_entry_points_loaded = False


def register_grader(name: str) -> Callable[[Any], Any]:
    """Class decorator: make a grader constructible by ``get_grader(name, **params)``."""

    def decorate(cls: Any) -> Any:
        if name in _REGISTRY and _REGISTRY[name] is not cls:
            raise ValueError(f"grader name {name!r} is already registered by {_REGISTRY[name]!r}")
        missing = [a for a in ("version", "needs", "grade") if not hasattr(cls, a)]
        if missing:
            raise TypeError(f"grader {cls.__name__} lacks {', '.join(missing)}")
        if not set(cls.needs) <= NEEDS:
            raise TypeError(f"grader {cls.__name__} needs {set(cls.needs) - NEEDS}; known: {sorted(NEEDS)}")
        cls.name = name
        _REGISTRY[name] = cls
        return cls

    return decorate


def _load_entry_points() -> None:
    """Third-party graders: ``[project.entry-points."rsigym.graders"] name = "pkg.mod:Class"``."""
    global _entry_points_loaded
    if _entry_points_loaded:
        return
    _entry_points_loaded = True
    for ep in entry_points(group=ENTRY_POINT_GROUP):
        if ep.name in _REGISTRY:
            continue
        try:
            cls = ep.load()
        except Exception as exc:  # a broken plug-in must not break the built-in graders
            log.warning("could not load grader %r from %s: %s", ep.name, ep.value, exc)
            continue
        if not getattr(cls, "name", None):
            cls.name = ep.name
        _REGISTRY[ep.name] = cls


def available_graders() -> dict[str, Callable[..., Grader]]:
    """Every grader by name: built-in ones and those from the ``rsigym.graders`` entry points."""
    _load_entry_points()
    return dict(sorted(_REGISTRY.items()))


def get_grader(name: str, **params: Any) -> Grader:
    """Build the grader registered as ``name`` with ``params``; unknown names are a UserError."""
    graders = available_graders()
    if name not in graders:
        raise UserError(f"unknown grader {name!r}; known graders: {', '.join(graders) or 'none'}")
    try:
        return graders[name](**params)
    except TypeError as exc:
        raise UserError(f"grader {name!r} rejects params {params}: {exc}") from exc


def snapshot_state(record: Trajectory, key: str, family: str) -> dict[str, Any]:
    """The record's end-state snapshot, checked to be one of ``family`` (it holds ``key``)."""
    state = record.final.state if record.final else None
    if not isinstance(state, dict) or key not in state:
        raise ValueError(f"the record has no {family} snapshot")
    return state


def grader_params(grader: Grader) -> dict[str, Any]:
    if dataclasses.is_dataclass(grader):
        return {f.name: getattr(grader, f.name) for f in dataclasses.fields(grader)}
    return dict(getattr(grader, "params", {}) or {})


def grade_record(grader: Grader, record: Trajectory, *,
                 source: Literal["live", "regrade"] = "live") -> Grade:
    """Grade one record; a grader that raises gives a Grade with ``score=None`` and the error.

    The returned grade always carries the grader's registered name, version and parameters,
    whatever the grader put there, so the record says which rule produced each number.
    """
    try:
        grade = grader.grade(record)
    except InfraError as exc:  # e.g. a judge's provider failed for good: not the record's fault
        usage = getattr(exc, "usage", None)
        return Grade(grader=grader.name, version=grader.version, score=None,
                     details={"usage": to_jsonable(dataclasses.asdict(usage))} if usage is not None else {},
                     params=grader_params(grader), source=source,
                     error=f"infra_error: {type(exc).__name__}: {exc}")
    except Exception as exc:  # a failing grader is recorded, never fatal to the run
        return Grade(grader=grader.name, version=grader.version, score=None,
                     params=grader_params(grader), source=source,
                     error=f"{type(exc).__name__}: {exc}")
    return dataclasses.replace(grade, grader=grader.name, version=grader.version,
                               params=grader_params(grader), source=source)
