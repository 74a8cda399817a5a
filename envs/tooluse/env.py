"""``rsigym/ToolUse-v0``: a customer-service agent with typed tools over an SQLite database."""

from __future__ import annotations

import json
from typing import Any

import gymnasium as gym
import numpy as np
from gymnasium import spaces

from rsigym.records.action_limits import action_limit_error, short_repr
from rsigym.conditions import Condition
from rsigym.json_space import sample_instance
from rsigym.records import Usage
from rsigym.spaces import JsonActions, clean_text, text_space

from .catalog import get_domain, get_tasks, load_task
from .conditions import TOOLUSE_CONDITIONS, identity_view
from .domain import Task, open_episode_db, state_sha256
from .outputs import communicated
from .toolkit import call_tool
from .users import STOP, UserSimulator, make_user

__all__ = ["ToolUseEnv", "TypedToolActions", "EVENTS"]

EVENTS = ("start", "user", "tool", "error")
TEXT_LIMIT = 100_000


class TypedToolActions(spaces.Dict):
    """``Dict(kind, tool, arguments, message)``: the typed form of a ToolUse action.

    ``kind`` 0 is a tool call (``tool`` indexes the tools in their canonical order, ``arguments``
    is JSON text), 1 a message. ``sample()`` draws arguments valid for the drawn tool's schema,
    so a sampled tool call reaches the tool rather than failing on random characters.
    """

    def __init__(self, parameters: list[dict[str, Any]], seed: int | None = None) -> None:
        super().__init__({
            "kind": spaces.Discrete(2),  # 0: tool call, 1: message
            "tool": spaces.Discrete(len(parameters)), "arguments": text_space(2000), "message": text_space(2000),
        }, seed=seed)
        self.parameters = parameters

    def sample(self, mask: Any = None, probability: Any = None) -> dict[str, Any]:
        action = super().sample(mask=mask, probability=probability)
        if mask is None and probability is None:
            arguments = json.dumps(sample_instance(self.parameters[int(action["tool"])], self.np_random))
            if len(arguments) <= 2000:
                action["arguments"] = arguments
        return action


_JSON_SCALARS = (str, int, float, bool, type(None))


def _json_plain(value: Any) -> bool:
    """Whether ``value`` holds only JSON types (a set, a range, a bytearray or a complex from a
    Python agent is not: such an action goes through the schema check, which converts or refuses
    it, so nothing unserialisable reaches the tool-call log of ``snapshot()``)."""
    stack = [value]
    while stack:
        item = stack.pop()
        if type(item) is dict:
            if not all(type(k) is str for k in item):
                return False
            stack.extend(item.values())
        elif type(item) is list:
            stack.extend(item)
        elif type(item) not in _JSON_SCALARS:  # exact types: a bool subclass or str subclass is no JSON either
            return False
    return True


class ToolUseEnv(gym.Env[dict, dict]):
    """Serve a simulated customer with a domain's tools, under the domain's policy.

    ## Description
    A task (``retail-012``) is a customer with a request. The agent reads the policy, calls
    tools (READ and WRITE, over a private in-memory copy of the domain's database) and talks to
    the user. Conditions change how the tools *look* (names, descriptions, output order), never
    what they do, so a score change under a condition is either a behaviour change or a
    measurement artifact (TRACE).

    ## Observation
    ``Dict(text, event, turn)``: ``text`` is what happened since the agent's last action (the
    first one also holds the policy and the tool list), rendered for an LLM; ``event`` indexes
    ``("start", "user", "tool", "error")``.

    ## Action
    JSON ``{"tool": NAME, "arguments": {...}}`` or ``{"message": TEXT}`` (``action_schema``;
    ``tools`` lists the functions as displayed). The typed space ``Dict(kind, tool, arguments,
    message)`` maps onto the same two forms (``arguments`` is JSON text). Invalid actions become
    error observations; after ``max_invalid_actions`` of them the episode ends (``agent_error``).

    ## Reward
    At the end: 1.0 when the database equals the task's gold end state and every required fact
    was told to the user (tau-bench's reward), else 0. Graders score the record in more ways.

    ## Episode End
    The user says ``###STOP###`` (``user_stop``) or the agent transfers to a human
    (``agent_stop``); truncation by the ``TimeLimit`` wrapper (``max_steps``).

    ## Arguments
    ``domain`` (retail, airline), ``user`` ("scripted", ``{kind: llm, model: ...}`` or a
    UserSimulator), ``condition`` (see ``TOOLUSE_CONDITIONS``), ``max_invalid_actions``.

    ## Version History
    v0: initial version.
    """

    metadata = {"render_modes": []}

    def __init__(self, domain: str = "retail", user: str | dict[str, Any] | UserSimulator = "scripted",
                 condition: Condition | dict[str, Any] | str | None = None,
                 max_invalid_actions: int = 5, render_mode: str | None = None) -> None:
        self.domain = get_domain(domain)
        self.condition = Condition.parse(condition)
        self.view = (TOOLUSE_CONDITIONS.build(self.condition)(self.domain) if self.condition
                     else identity_view(self.domain))
        self.user = make_user(user)
        self.max_invalid_actions = max_invalid_actions
        self.render_mode = render_mode
        self._tool_order = [t.name for t in self.domain.tools]  # canonical, stable
        shown = [self.view.names[name] for name in self._tool_order]
        listed = [self.domain.tool(name) for name in (self.view.order or self._tool_order)]
        self.tools = [t.spec(self.view.names[t.name], self.view.descriptions[t.name]) for t in listed]
        self.action_schema = {"oneOf": [
            {"type": "object", "description": "call a tool", "required": ["tool", "arguments"],
             "additionalProperties": False,
             "properties": {"tool": {"enum": shown}, "arguments": {"type": "object"}}},
            {"type": "object", "description": "send a message to the user", "required": ["message"],
             "additionalProperties": False, "properties": {"message": {"type": "string", "minLength": 1}}},
        ]}
        self._actions = JsonActions(self.action_schema)
        # valid actions, as the prompt asks for them (the conformance test checks them against the
        # schema): a message, and a call of the first tool that needs no argument, if any
        self.example_actions: list[dict[str, Any]] = [{"message": "Hello! How can I help you today?"}]
        self.example_actions += [{"tool": self.view.names[t.name], "arguments": {}} for t in self.domain.tools
                                 if not t.parameters.get("required")][:1]
        self._shown_names = frozenset(shown)
        self._tools_text = "\n".join(
            f"- {t['function']['name']}: {t['function']['description']} "
            f"Parameters: {json.dumps(t['function']['parameters'], sort_keys=True)}" for t in self.tools)
        self.observation_space = spaces.Dict({
            "text": text_space(TEXT_LIMIT), "event": spaces.Discrete(len(EVENTS)),
            "turn": spaces.Discrete(10_000),
        })
        self.action_space = TypedToolActions([self.domain.tool(name).parameters for name in self._tool_order])
        self._task: Task | None = None

    def list_tasks(self, split: str | None = None) -> list[str]:
        return [t.task_id for t in get_tasks(self.domain.name, split)]

    @property
    def llm_usage(self) -> dict[str, Usage]:
        """LLM usage of this episode by role (the simulated user's), for the runner's record."""
        usage = getattr(self.user, "usage", None)
        return {"user": usage} if isinstance(usage, Usage) else {}

    # -- gymnasium protocol -----------------------------------------------------------------
    def reset(self, *, seed: int | None = None, options: dict[str, Any] | None = None):
        super().reset(seed=seed)
        task_id = (options or {}).get("task_id")
        if task_id is None:
            ids = self.list_tasks("train")
            task_id = ids[int(self.np_random.integers(len(ids)))]
        task = load_task(task_id)
        if task.domain != self.domain.name:
            raise ValueError(f"task {task_id} belongs to {task.domain}, not {self.domain.name}")
        self._task = task
        self.db = open_episode_db(self.domain)
        self._hash_cache: tuple[int, str] | None = None
        self._turn, self._invalid = 0, 0
        self._tool_calls: list[dict[str, Any]] = []
        self._agent_messages: list[str] = []
        self._user_messages = [self.user.reset(task, int(self.np_random.integers(2**31)))]
        self._ended_by: str | None = None
        return self._observation(self._opening(), "start"), self._info()

    def step(self, action: Any):
        if self._task is None:
            raise RuntimeError("call reset() before step()")
        self._turn += 1
        action, error = self._from_typed(action)
        # limits first: the hand-made check below and jsonschema both recurse into the action
        error = error or action_limit_error(action)
        value: Any = None
        if error is None:
            value, error = (action, None) if self._plainly_valid(action) else self._actions.parse(action)
        if value is None or error is not None:  # a bad agent output is an observation
            self._invalid += 1
            over = self._invalid > self.max_invalid_actions
            if over:
                return self._end("agent_error", f"Error: {error}. Too many invalid actions: the "
                                 "conversation has ended.", error=error)
            return self._observation(f"Error: {error}", "error"), 0.0, False, False, self._info(error=error)
        if "tool" in value:
            return self._call_tool(value["tool"], value["arguments"])
        message = value["message"]
        self._agent_messages.append(message)
        reply = self.user.reply(message)
        self._user_messages.append(reply)
        if STOP in reply:
            return self._end("user_stop", f"User: {reply}")
        return self._observation(f"User: {reply}", "user"), 0.0, False, False, self._info()

    def _plainly_valid(self, action: Any) -> bool:
        """The two well-formed shapes, checked by hand: jsonschema's oneOf costs more than the
        rest of a step, and is still used for anything else (it words the error)."""
        if type(action) is not dict:
            return False
        if len(action) == 2 and type(action.get("arguments")) is dict:
            tool = action.get("tool")  # a list here is unhashable: check the type before the set
            return (type(tool) is str and tool in self._shown_names and all(type(k) is str for k in action["arguments"])
                    and _json_plain(action["arguments"]))
        message = action.get("message")
        return len(action) == 1 and type(message) is str and len(message) > 0

    def _call_tool(self, shown: str, arguments: dict[str, Any]):
        canonical = self.view.canonical(shown)
        assert canonical is not None  # the schema's enum admits displayed names only
        result, error = call_tool(self.domain.tool(canonical), self.db, arguments)
        self._tool_calls.append({"tool": shown, "canonical": canonical, "arguments": arguments,
                                 "ok": error is None})
        if error is not None:
            return (self._observation(f"Tool {shown} error: {error}", "error"), 0.0, False, False,
                    self._info(error=error))
        if self.view.transform_output is not None:
            result = self.view.transform_output(result)
        text = f"Tool {shown} result: {json.dumps(result, default=str)}"
        if canonical.startswith("transfer_to_human"):
            return self._end("agent_stop", text)
        return self._observation(text, "tool"), 0.0, False, False, self._info()

    def _end(self, termination: str, text: str, error: str | None = None):
        reward = self.task_reward() if termination != "agent_error" else 0.0
        self._ended_by = termination
        event = "error" if error else "user" if termination == "user_stop" else "tool"
        return (self._observation(text, event), reward, True, False,
                self._info(error=error, termination=termination))

    def task_reward(self) -> float:
        """tau-bench's reward: gold end state reached and every required fact told."""
        assert self._task is not None
        same_db = self._db_sha256() == self._task.gold_db_sha256
        return float(same_db and all(communicated(self._task.required_outputs, self._agent_messages)))

    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: database hash, tool calls, messages, displayed names."""
        assert self._task is not None, "snapshot() before reset()"
        return {
            "task_id": self._task.task_id, "domain": self.domain.name,
            "db_sha256": self._db_sha256(), "gold_db_sha256": self._task.gold_db_sha256,
            "tool_calls": self._tool_calls, "agent_messages": self._agent_messages,
            "user_messages": self._user_messages, "tool_names": dict(self.view.names),
            "ended_by": self._ended_by,
        }

    def _db_sha256(self) -> str:
        """The database hash, recomputed only after a change (reward and snapshot both ask)."""
        changes = self.db.total_changes
        if self._hash_cache is None or self._hash_cache[0] != changes:
            self._hash_cache = (changes, state_sha256(self.domain, self.db))
        return self._hash_cache[1]

    # -- views ------------------------------------------------------------------------------
    def _from_typed(self, action: Any) -> tuple[Any, str | None]:
        """Map an action of the typed space onto the JSON forms, or say why it is out of that
        space (bad JSON arguments stay a bad action, for the schema check to word)."""
        if not (isinstance(action, dict) and "kind" in action and "message" in action):
            return action, None
        kind, tool = action["kind"], action.get("tool", -1)
        if not _is_index(kind, 2):
            return None, f"invalid typed action: kind must be 0 (tool call) or 1 (message), got {short_repr(kind)}"
        if int(kind) == 1:
            if not isinstance(action["message"], str):
                return None, f"invalid typed action: message must be text, got {short_repr(action['message'])}"
            return {"message": str(action["message"])}, None
        if not _is_index(tool, len(self._tool_order)):
            return None, (f"invalid typed action: tool must be an index in 0..{len(self._tool_order) - 1}, "
                          f"got {short_repr(tool)}")
        text = action.get("arguments", "")
        if not isinstance(text, str):
            return None, f"invalid typed action: arguments must be JSON text, got {short_repr(text)}"
        try:
            arguments = json.loads(text or "{}")
        except (json.JSONDecodeError, RecursionError):  # RecursionError: "[[[[..." nested too deep
            arguments = text
        return {"tool": self.view.names[self._tool_order[int(tool)]], "arguments": arguments}, None

    def _opening(self) -> str:
        assert self._task is not None
        tools = self._tools_text
        return (f"# Task {self._task.task_id} ({self.domain.name} customer service)\n\n"
                f"## Policy\n\n{self.domain.policy.strip()}\n\n## Tools\n\n{tools}\n\n"
                'Act with {"tool": NAME, "arguments": {...}} or reply to the user with {"message": TEXT}.\n\n'
                f"User: {self._user_messages[0]}")

    def _observation(self, text: str, event: str) -> dict[str, Any]:
        return {"text": clean_text(text, TEXT_LIMIT), "event": np.int64(EVENTS.index(event)), "turn": np.int64(min(self._turn, 9_999))}

    def _info(self, error: str | None = None, termination: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {"task_id": self._task.task_id if self._task else None, "turn": self._turn,
                                "tool_calls": len(self._tool_calls), "invalid_actions": self._invalid}
        if error is not None:
            info["error"] = error
        if termination is not None:
            info["termination"] = termination
        return info


def _is_index(value: Any, n: int) -> bool:
    """``value`` is an integer (Python or numpy, not bool) in ``0..n-1``."""
    return isinstance(value, (int, np.integer)) and not isinstance(value, (bool, np.bool_)) and 0 <= int(value) < n
