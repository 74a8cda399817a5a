"""The Grader protocol, grader lookup by name (the ``GRADERS`` registry) and ``grade_record``."""

from __future__ import annotations

import dataclasses
from typing import Any, Callable, ClassVar, Literal, Protocol, runtime_checkable

from rsigym.errors import InfraError, UserError
from rsigym.records.trajectory import Grade, Trajectory, to_jsonable

from .records.redact import redact, redact_text
from .registry import GRADERS

__all__ = [
    "Grader", "NEEDS", "ENTRY_POINT_GROUP", "register_grader", "get_grader", "available_graders",
    "grade_record", "snapshot_state",
]

ENTRY_POINT_GROUP = GRADERS.group
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


def _check_grader(name: str, cls: Any) -> Any:
    """The one check every grader passes, built-in or plug-in, when it is registered or loaded."""
    missing = [a for a in ("version", "needs", "grade") if not hasattr(cls, a)]
    if missing:
        raise TypeError(f"grader {getattr(cls, '__name__', cls)!r} ({name}) lacks {', '.join(missing)}")
    if not isinstance(cls.version, str) or not cls.version:
        raise TypeError(f"grader {cls.__name__} ({name}): version must be a non-empty string, got {cls.version!r}")
    if not callable(getattr(cls, "grade")):
        raise TypeError(f"grader {cls.__name__} ({name}): grade is not a method")
    fits = getattr(cls, "envs", None)
    if fits is not None and (isinstance(fits, str) or not all(isinstance(e, str) for e in fits)):
        raise TypeError(f"grader {cls.__name__} ({name}): envs must be a collection of env ids or patterns")
    if not set(cls.needs) <= NEEDS:
        raise TypeError(f"grader {cls.__name__} needs {set(cls.needs) - NEEDS}; known: {sorted(NEEDS)}")
    cls.name = name  # the registered name is the grader's name, whatever the class says
    return cls


GRADERS.register_check(_check_grader)


def register_grader(name: str) -> Callable[[Any], Any]:
    """Class decorator: make a grader constructible by ``get_grader(name, **params)``.

    From another package, use the entry-point group ``rsigym.graders`` instead (``name =
    "pkg.module:Class"``): it reaches every process, spawned workers included.
    """
    return GRADERS.register(name)


def available_graders() -> dict[str, Callable[..., Grader]]:
    """Every grader by name: registered here or through the ``rsigym.graders`` entry points."""
    return GRADERS.loaded()


def get_grader(name: str, **params: Any) -> Grader:
    """Build the grader registered as ``name`` with ``params``; unknown names are a UserError."""
    cls = GRADERS.lookup(name)
    try:
        return cls(**params)
    except TypeError as exc:
        raise UserError(f"grader {name!r} rejects params {redact(params)}: {redact_text(str(exc))}") from exc


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


def _safe_params(grader: Grader) -> dict[str, Any]:
    try:
        return grader_params(grader)
    except Exception:  # noqa: BLE001 - an odd grader still gets its error recorded
        return {}


def grade_record(grader: Grader, record: Trajectory, *,
                 source: Literal["live", "regrade"] = "live") -> Grade:
    """Grade one record; a grader that raises gives a Grade with ``score=None`` and the error.

    The returned grade always carries the grader's registered name, version and parameters,
    whatever the grader put there, so the record says which rule produced each number.
    """
    name, version = getattr(grader, "name", type(grader).__name__), str(getattr(grader, "version", "?"))
    try:
        grade = grader.grade(record)
        if not isinstance(grade, Grade):
            raise TypeError(f"grade() returned {type(grade).__name__}, not a Grade")
    except InfraError as exc:  # e.g. a judge's provider failed for good: not the record's fault
        usage = getattr(exc, "usage", None)
        return Grade(grader=name, version=version, score=None,
                     details={"usage": to_jsonable(dataclasses.asdict(usage))} if usage is not None else {},
                     params=_safe_params(grader), source=source,
                     error=f"infra_error: {type(exc).__name__}: {exc}")
    except Exception as exc:  # a failing grader is recorded, never fatal to the run
        return Grade(grader=name, version=version, score=None,
                     params=_safe_params(grader), source=source,
                     error=f"{type(exc).__name__}: {exc}")
    return dataclasses.replace(grade, grader=name, version=version,
                               params=grader_params(grader), source=source)
