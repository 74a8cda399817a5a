"""Role players: one model plays every role, one conversation per role call, through ``rsigym.llm``.

``RolePlayer`` keeps a separate chat per role invocation (the AEC env's ``invocation`` field),
starting with a system prompt that carries the action schema, then the env's ``message`` turns
and its own replies: a sub-agent never sees the orchestrator's context, as in MASS. Offline it
talks to ``rsigym/workflow_scripted``; with ``--model`` to any LiteLLM model.
``WorkflowRolesAgent`` is the runner's agent kind ``workflow_roles`` built on it.
"""

from __future__ import annotations

import json
import random
import re
from typing import Any

import rsigym.agents.offline  # noqa: F401  (serves the rsigym/... offline models in this process)
from rsigym.agent import register_agent
from rsigym.llm import RetryPolicy, complete
from rsigym.records import AgentSpec, Usage
from rsigym.records.redact import redacted_excerpt
from rsigym.spaces import invalid_action

from .actions import ACTION_SCHEMA

__all__ = ["RolePlayer", "WorkflowRolesAgent", "WorkflowBlindAgent", "ROLE_SYSTEM_PROMPT", "extract_json"]

ROLE_SYSTEM_PROMPT = (
    "You play one role in a research team working in a shared workspace (files; Python runs in a "
    "sandbox with numpy). Do what your instructions ask, then return your result (or finish, if "
    "you lead). Answer every turn with exactly one JSON action following this schema:\n"
    "```json\n" + json.dumps(ACTION_SCHEMA) + "\n```"
)
_OBJECT = re.compile(r"\{.*\}", re.DOTALL)


def extract_json(text: str) -> Any:
    """The JSON object in a reply (bare, or the outermost ``{...}`` in prose); None if there is none."""
    try:
        return json.loads(text)
    except ValueError:
        match = _OBJECT.search(text or "")
        if match:
            try:
                return json.loads(match.group(0))
            except ValueError:
                return None
    return None


class RolePlayer:
    """Acts for whichever role is on turn; one chat per role call.

    Args:
        model: LiteLLM model string (``rsigym/workflow_scripted`` offline).
        temperature, max_tokens, api_base: sampling and endpoint.
        seed: base of the per-request seeds (so offline runs are reproducible).
    """

    def __init__(self, model: str, *, temperature: float = 0.0, max_tokens: int | None = 2048,
                 api_base: str | None = None, seed: int = 0, max_retries: int = 4) -> None:
        self.model, self.temperature, self.max_tokens, self.api_base = model, temperature, max_tokens, api_base
        self.seed = int(seed)
        self.retry = RetryPolicy(max_retries=max_retries)
        self.chats: dict[str, list[dict[str, str]]] = {}
        self.usage_by_role: dict[str, Usage] = {}
        self._requests = 0

    def reset(self, seed: int) -> None:
        self.seed, self.chats, self.usage_by_role, self._requests = int(seed), {}, {}, 0

    def act(self, observation: dict[str, Any]) -> tuple[Any, Usage]:
        key = f"{observation['role']}#{observation['invocation']}"
        chat = self.chats.setdefault(key, [{"role": "system", "content": ROLE_SYSTEM_PROMPT}])
        chat.append({"role": "user", "content": str(observation["message"])})
        self._requests += 1
        params: dict[str, Any] = {"temperature": self.temperature, "seed": self.seed * 100_003 + self._requests}
        if self.max_tokens:
            params["max_tokens"] = self.max_tokens
        reply = complete(chat, model=self.model, role="agent", api_base=self.api_base, params=params,
                         json_schema=ACTION_SCHEMA, retry=self.retry, rng=random.Random(params["seed"]))
        chat.append({"role": "assistant", "content": reply.text})
        role = str(observation["role"])
        self.usage_by_role[role] = self.usage_by_role.get(role, Usage()) + reply.usage
        action = extract_json(reply.text)
        if not isinstance(action, dict):
            return invalid_action("the reply held no JSON object", redacted_excerpt(reply.text, 500)), reply.usage
        return action, reply.usage


class WorkflowRolesAgent:
    """Plays every role of ``rsigym/Workflow-v0`` with one model (agent kind ``workflow_roles``).

    Params: ``temperature`` (default 0), ``max_tokens``, ``api_base``.
    """

    def __init__(self, spec: AgentSpec) -> None:
        if not spec.model:
            raise TypeError("workflow_roles needs a model (e.g. rsigym/workflow_scripted)")
        unknown = set(spec.params) - {"temperature", "max_tokens", "api_base"}
        if unknown:
            raise TypeError(f"unknown params {sorted(unknown)}")
        self.spec = spec
        self.player = RolePlayer(spec.model, **spec.params)
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        self.player.reset(seed)

    def act(self, observation: dict[str, Any]) -> Any:
        action, self.last_usage = self.player.act(observation)
        return action


register_agent("workflow_roles")(WorkflowRolesAgent)


class WorkflowBlindAgent:
    """A control that ignores the task: the entry role finishes at once, any other role returns {}.

    No model (``--model`` leaves it alone), so the scores' control stays a control in LLM runs.
    """

    def __init__(self, spec: AgentSpec) -> None:
        if spec.params:
            raise TypeError(f"workflow_blind takes no params, got {sorted(spec.params)}")
        self.spec = spec
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        pass

    def act(self, observation: dict[str, Any]) -> Any:
        if "[workflow]" in str(observation.get("text", "")):
            return {"op": "finish", "summary": "done"}
        return {"op": "return", "result": {}}


register_agent("workflow_blind")(WorkflowBlindAgent)
