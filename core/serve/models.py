"""The typed action and observation models of a served env, derived from the env itself.

The action model's fields are the properties of the env's ``action_schema`` (every branch of a
``oneOf``/``anyOf``), and ``GET /schema`` returns that schema unchanged. Its fields accept any JSON
value: the env judges an action against its own schema, so an invalid action is an error
observation that counts against the episode exactly as in-process (``DESIGN.md`` §3), never a
transport error. What the transport refuses with a 4xx is a payload that is no action at all (not
JSON, not an object, too large or too deep; ``rsigym.serve.app``).

The observation model has one field per key of the env's ``Dict`` observation space, typed from
the space, plus ``info``, ``terminated`` and ``truncated`` (OpenEnv's ``done`` is their "or").
"""

from __future__ import annotations

from typing import Annotated, Any, ClassVar

from gymnasium import spaces
from . import openenv_server  # noqa: F401 - first: OpenEnv without Gradio (see openenv_server)
from openenv.core.env_server.types import Action, Observation
from pydantic import ConfigDict, Field, WithJsonSchema, create_model

__all__ = ["ServedAction", "ServedObservation", "action_model", "observation_model", "TEXT_ACTION_FIELD",
           "RESERVED_OBSERVATION_FIELDS"]

# An action that is a string (a ``Text`` action space, or an agent's raw JSON text) travels in this field.
TEXT_ACTION_FIELD = "rsigym_text_action"
RESERVED_OBSERVATION_FIELDS = frozenset({"done", "reward", "metadata", "info", "terminated", "truncated"})


class ServedAction(Action):
    """Base of every served env's action model: unknown keys travel too (the env judges them)."""

    model_config = ConfigDict(extra="allow", validate_assignment=True, arbitrary_types_allowed=True)
    action_schema: ClassVar[dict[str, Any]] = {}

    @classmethod
    def model_json_schema(cls, *args: Any, **kwargs: Any) -> dict[str, Any]:
        """The env's own ``action_schema``: what a trainer prompts its policy with."""
        return {"title": cls.__name__, **cls.action_schema}

    def env_action(self) -> Any:
        """The action as the env's ``step`` takes it (what an in-process agent would have passed)."""
        values = self.model_dump(exclude_unset=True, exclude={"metadata"})
        if set(values) == {TEXT_ACTION_FIELD}:
            return values[TEXT_ACTION_FIELD]
        return values


class ServedObservation(Observation):
    """Base of every served env's observation model."""

    info: dict[str, Any] = Field(default_factory=dict, description="the env's info dict for this step")
    terminated: bool = Field(default=False, description="the episode ended (task done or budget spent)")
    truncated: bool = Field(default=False, description="the episode was cut at the step cap")


def _properties(schema: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """Every property an action may carry: the top level's and those of each oneOf/anyOf branch."""
    found: dict[str, dict[str, Any]] = {}
    for branch in [schema, *schema.get("oneOf", []), *schema.get("anyOf", [])]:
        if not isinstance(branch, dict):
            continue
        for name, sub in (branch.get("properties") or {}).items():
            if name in found and found[name] != sub:
                found[name] = {"anyOf": [found[name], sub]}
            else:
                found.setdefault(name, dict(sub) if isinstance(sub, dict) else {})
    return found


def _class_name(env_id: str, suffix: str) -> str:
    base = "".join(part[:1].upper() + part[1:] for part in env_id.replace("/", "-").split("-") if part)
    return "".join(c for c in base if c.isalnum()) + suffix


def action_model(env_id: str, action_schema: dict[str, Any]) -> type[ServedAction]:
    """The action model of ``env_id``: one optional field per schema property."""
    fields: dict[str, Any] = {}
    for name, sub in _properties(action_schema).items():
        if name == "metadata" or not name.isidentifier():
            continue  # not a Python name (or OpenEnv's own field): it still travels as an extra key
        fields[name] = (Annotated[Any, WithJsonSchema(sub)], Field(default=None, description=sub.get("description")))
    fields[TEXT_ACTION_FIELD] = (str | None, Field(default=None, description="an action that is a string"))
    model = create_model(_class_name(env_id, "Action"), __base__=ServedAction, **fields)
    model.action_schema = dict(action_schema)
    return model


def _field_type(space: spaces.Space[Any]) -> Any:
    if isinstance(space, spaces.Discrete):
        return int
    if isinstance(space, spaces.Text):
        return str
    if isinstance(space, spaces.Box):
        number = {"type": ["number", "string"]}  # non-finite values travel as "nan", "inf", "-inf"
        schema = number if space.shape == () else {"type": "array"}
        return Annotated[Any, WithJsonSchema(schema)]
    return Annotated[Any, WithJsonSchema({"type": ["array", "object"]})]


def observation_model(env_id: str, observation_space: spaces.Space[Any]) -> type[ServedObservation]:
    """The observation model of ``env_id``: a field per key of its ``Dict`` observation space (one
    field ``observation`` for any other space)."""
    if isinstance(observation_space, spaces.Dict):
        keys = {str(k): v for k, v in observation_space.spaces.items()}
    else:
        keys = {"observation": observation_space}
    clash = sorted(set(keys) & RESERVED_OBSERVATION_FIELDS) or sorted(k for k in keys if not k.isidentifier())
    if clash:
        raise ValueError(f"{env_id}: observation key {clash[0]!r} cannot be a field of a served observation")
    fields: dict[str, Any] = {name: (_field_type(space) | None, None) for name, space in keys.items()}
    return create_model(_class_name(env_id, "Observation"), __base__=ServedObservation, **fields)
