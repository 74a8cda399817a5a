"""Trajectory records: the one JSON object per episode that every analysis and regrade reads.

A record is written once, when its episode ends, as one line of a JSONL file (see
``rsigym.records.jsonl``). Graders read records, never live objects, so any grader can regrade a fixed
trajectory later. ``core/schemas/trajectory.schema.json`` is the wire contract; the dataclasses
here are its typed view and round-trip through ``to_dict``/``from_dict`` without loss. (On disk,
what a run's records share may be a reference into the run's ``shared.jsonl``, resolved on
reading: see ``rsigym.records.shared_text``.)
"""

from __future__ import annotations

import datetime as _dt
import hashlib
import json
import math
from dataclasses import asdict, dataclass, field, fields
from typing import Any, Literal

import numpy as np

from .action_limits import short_repr
from .record_numbers import non_finite_marker, read_int, read_number
from .redact import redact

__all__ = [
    "SCHEMA_VERSION",
    "TERMINATIONS",
    "AgentSpec",
    "EnvRef",
    "Step",
    "Grade",
    "FinalSnapshot",
    "Usage",
    "Trajectory",
    "episode_key",
    "canonical_json",
    "to_jsonable",
    "read_number",
    "read_int",
    "non_finite_marker",
    "MAX_RECORD_DEPTH",
    "state_sha256",
    "utc_now",
]

SCHEMA_VERSION = "rsigym.trajectory/1"

Termination = Literal[
    "agent_stop", "user_stop", "budget_exhausted", "max_steps", "agent_error", "infra_error"
]
TERMINATIONS: tuple[str, ...] = (
    "agent_stop", "user_stop", "budget_exhausted", "max_steps", "agent_error", "infra_error",
)


def utc_now() -> str:
    return _dt.datetime.now(_dt.timezone.utc).isoformat(timespec="milliseconds")


# Records nest a few levels (a step's info, a snapshot's programs); anything deeper came from an
# agent or a bug, and would overflow the stack of every recursive reader (json, repr, asdict).
MAX_RECORD_DEPTH = 100


def to_jsonable(value: Any) -> Any:
    """Convert observations, actions and infos (numpy scalars and arrays, tuples, sets) to JSON.

    Non-finite floats become the strings "nan", "inf", "-inf" so that records stay strict JSON.
    A value nested deeper than ``MAX_RECORD_DEPTH`` is a ``TypeError`` (as is an unknown type),
    never a ``RecursionError``.
    """
    return _jsonable(value, 0)


def _jsonable(value: Any, depth: int) -> Any:
    if depth > MAX_RECORD_DEPTH:
        raise TypeError(f"cannot store a value nested deeper than {MAX_RECORD_DEPTH} levels in a trajectory record")
    if isinstance(value, dict):
        return {_utf8(str(k)): _jsonable(v, depth + 1) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [_jsonable(v, depth + 1) for v in value]
    if isinstance(value, (set, frozenset)):
        return sorted((_jsonable(v, depth + 1) for v in value), key=repr)
    if isinstance(value, np.ndarray):
        return _jsonable(value.tolist(), depth)
    if isinstance(value, np.generic):
        return _jsonable(value.item(), depth)
    if isinstance(value, float):
        if math.isfinite(value):
            return value
        return "nan" if math.isnan(value) else ("inf" if value > 0 else "-inf")
    if isinstance(value, int) and not isinstance(value, bool) and value.bit_length() > 1000:
        # json cannot write an int of more than 4,300 digits; nothing in a record needs 1,000 bits
        raise TypeError(f"cannot store an integer of {value.bit_length()} bits in a trajectory record")
    if isinstance(value, str):
        return _utf8(value)
    if value is None or isinstance(value, (int, bool)):
        return value
    if isinstance(value, bytes):
        return value.decode("utf-8", errors="replace")
    raise TypeError(f"cannot store a {type(value).__name__} in a trajectory record: {short_repr(value)}")


def _utf8(text: str) -> str:
    """``text``, with lone surrogates (which no UTF-8 file can hold) replaced by ``?``."""
    if text.isascii():
        return text
    try:
        text.encode("utf-8")
        return text
    except UnicodeEncodeError:  # e.g. "\ud800" from an agent: the record line would not encode
        return text.encode("utf-8", "replace").decode("utf-8")


def canonical_json(value: Any) -> str:
    """Deterministic JSON text: sorted keys, no spaces, ASCII only."""
    return json.dumps(to_jsonable(value), sort_keys=True, separators=(",", ":"), ensure_ascii=True)


def state_sha256(state: Any) -> str:
    return hashlib.sha256(canonical_json(state).encode()).hexdigest()


@dataclass(frozen=True)
class AgentSpec:
    """What built the agent: enough to build it again. ``id`` names it in reports."""

    id: str
    kind: str
    model: str | None = None
    params: dict[str, Any] = field(default_factory=dict)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "AgentSpec":
        return cls(id=data["id"], kind=data["kind"], model=data.get("model"),
                   params=dict(data.get("params") or {}))


@dataclass(frozen=True)
class EnvRef:
    """Which environment, task and condition an episode ran."""

    id: str
    kwargs: dict[str, Any] = field(default_factory=dict)
    task_id: str | None = None
    condition: dict[str, Any] | None = None  # {"name": ..., "params": {...}}; None = unmodified

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "EnvRef":
        return cls(id=data["id"], kwargs=dict(data.get("kwargs") or {}),
                   task_id=data.get("task_id"), condition=data.get("condition"))


def episode_key(env: EnvRef, agent: AgentSpec, seed: int, rep: int) -> str:
    """Stable hash of everything that defines an episode: the join key for pairing and resume.

    Two episodes share a key exactly when env id, env kwargs, task, condition, agent spec, seed
    and repetition are equal. 128 bits of sha256 over canonical JSON.
    """
    payload = {
        "env": env.id, "kwargs": env.kwargs, "task": env.task_id, "condition": env.condition,
        "agent": asdict(agent), "seed": seed, "rep": rep,
    }
    return hashlib.sha256(canonical_json(payload).encode()).hexdigest()[:32]


@dataclass
class Usage:
    """Resources one step (or a whole episode) used. Cost in USD from LiteLLM's map, 0 if unknown."""

    prompt_tokens: int = 0
    completion_tokens: int = 0
    cost_usd: float = 0.0
    latency_s: float = 0.0
    env_s: float = 0.0
    model_calls: int = 0        # LLM requests, retries included
    provider_retries: int = 0   # requests retried after a provider error
    invalid_replies: int = 0    # replies that failed validation and were fed back
    text_replies: int = 0       # replies without a tool call where native tools were offered
    usage_estimated: int = 0    # calls whose provider usage was missing or invalid: tokens counted locally

    def __add__(self, other: "Usage") -> "Usage":
        return Usage(*(getattr(self, f.name) + getattr(other, f.name) for f in fields(self)))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "Usage":
        data = data or {}
        if not isinstance(data, dict):
            raise ValueError(f"usage is not a mapping: {short_repr(data)}")
        return cls(**{f.name: read_number(data.get(f.name, f.default), f"usage.{f.name}") for f in fields(cls)})


@dataclass
class Step:
    """One env.step: what the agent saw before acting, what it did, what came back."""

    t: int
    observation: Any
    action: Any
    reward: float
    terminated: bool
    truncated: bool
    info: dict[str, Any] = field(default_factory=dict)
    usage: Usage = field(default_factory=Usage)

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Step":
        return cls(t=read_int(data["t"], "step t"), observation=data["observation"], action=data["action"],
                   reward=float(read_number(data["reward"], "step reward")), terminated=data["terminated"],
                   truncated=data["truncated"], info=data.get("info") or {},
                   usage=Usage.from_dict(data.get("usage")))


@dataclass
class Grade:
    """One grader's verdict on one record. ``score`` is None when the grader itself failed."""

    grader: str
    version: str
    score: float | None
    details: dict[str, Any] = field(default_factory=dict)
    params: dict[str, Any] = field(default_factory=dict)
    source: Literal["live", "regrade"] = "live"
    computed_at: str = field(default_factory=utc_now)
    error: str | None = None

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Grade":
        return cls(grader=data["grader"], version=data["version"],
                   score=None if data["score"] is None else float(read_number(data["score"], "grade score")),
                   details=data.get("details") or {}, params=data.get("params") or {},
                   source=data.get("source", "live"), computed_at=data.get("computed_at", ""),
                   error=data.get("error"))


@dataclass
class FinalSnapshot:
    """The env's end state (``env.unwrapped.snapshot()``), its hash, and artifact references."""

    state: Any
    sha256: str
    artifacts: dict[str, str] = field(default_factory=dict)

    @classmethod
    def of(cls, state: Any, artifacts: dict[str, str] | None = None) -> "FinalSnapshot":
        state = to_jsonable(state)
        return cls(state=state, sha256=state_sha256(state), artifacts=dict(artifacts or {}))

    @classmethod
    def from_dict(cls, data: dict[str, Any] | None) -> "FinalSnapshot | None":
        if data is None:
            return None
        return cls(state=data["state"], sha256=data["sha256"], artifacts=data.get("artifacts") or {})


@dataclass
class Trajectory:
    """One episode, end to end. ``to_dict()`` is exactly what goes on disk."""

    episode_key: str
    env: EnvRef
    agent: AgentSpec
    seed: int
    rep: int
    steps: list[Step] = field(default_factory=list)
    final: FinalSnapshot | None = None
    termination: str = "agent_stop"
    error: str | None = None
    usage: Usage = field(default_factory=Usage)  # the whole episode: every role below together
    # LLM usage by role (agent, user, candidate_source, ...), for roles that called a model.
    usage_by_role: dict[str, Usage] = field(default_factory=dict)
    grades: list[Grade] = field(default_factory=list)
    sandbox: dict[str, Any] | None = None
    started_at: str = field(default_factory=utc_now)
    finished_at: str | None = None
    rsigym_version: str = ""
    schema: str = SCHEMA_VERSION
    # how the agent's model was asked for actions: tools (the `act` function), env_tools (the env's
    # own functions, text goes to its user), json_schema (a structured response_format), json_text
    # (the schema in the prompt only); None for agents that call no model
    tool_mode: str | None = None
    # the system prompt the agent's model was given (None for agents that call no model): the one
    # part of the conversation no step holds; exports show it (inspect's system message)
    system_prompt: str | None = None
    # the Ray node that ran the episode (its node id); None on the local backend and in records
    # written before the field existed
    node_id: str | None = None

    @property
    def total_reward(self) -> float:
        return float(sum(s.reward for s in self.steps))

    def grade(self, grader: str, version: str | None = None) -> Grade | None:
        """The latest grade of ``grader`` (of ``version`` if given), or None."""
        for g in reversed(self.grades):
            if g.grader == grader and (version is None or g.version == version):
                return g
        return None

    def to_dict(self) -> dict[str, Any]:
        return to_jsonable(asdict(self))

    def to_json(self) -> str:
        """The record's line on disk, secrets redacted (``rsigym.records.redact``)."""
        return json.dumps(redact(self.to_dict()), ensure_ascii=False, separators=(",", ":"))

    @classmethod
    def from_dict(cls, data: dict[str, Any]) -> "Trajectory":
        if data.get("schema") != SCHEMA_VERSION:
            raise ValueError(f"unsupported record schema {data.get('schema')!r}; expected {SCHEMA_VERSION!r}")
        return cls(
            episode_key=data["episode_key"], env=EnvRef.from_dict(data["env"]),
            agent=AgentSpec.from_dict(data["agent"]), seed=read_int(data["seed"], "seed"),
            rep=read_int(data["rep"], "rep"),
            steps=[Step.from_dict(s) for s in data.get("steps") or []],
            final=FinalSnapshot.from_dict(data.get("final")),
            termination=data["termination"], error=data.get("error"),
            usage=Usage.from_dict(data.get("usage")),
            usage_by_role={role: Usage.from_dict(u) for role, u in (data.get("usage_by_role") or {}).items()},
            grades=[Grade.from_dict(g) for g in data.get("grades") or []],
            sandbox=data.get("sandbox"), started_at=data.get("started_at", ""),
            finished_at=data.get("finished_at"), rsigym_version=data.get("rsigym_version", ""),
            schema=data["schema"], tool_mode=data.get("tool_mode"),
            system_prompt=data.get("system_prompt"), node_id=data.get("node_id"),
        )

    @classmethod
    def from_json(cls, text: str) -> "Trajectory":
        return cls.from_dict(json.loads(text, parse_constant=non_finite_marker))
