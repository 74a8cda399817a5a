"""``WorkflowAECEnv``: a PettingZoo AEC env whose agents are the roles of a workflow spec."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any

import jsonschema
import numpy as np
from gymnasium import spaces
from pettingzoo import AECEnv

from rsigym.records.action_limits import short_repr
from rsigym.sandbox import Sandbox
from rsigym.spaces import clean_text, text_space

from .actions import ACTION_SCHEMA, OPS, action_space, parse_action
from .spec import validate_spec, seed_spec, spec_sha256, workflow_prompt
from .tasks import SALT_PATTERN, WorkflowTask, grade_workspace, make_task, new_salt, task_brief, task_ids
from .aec_workspace import Workspace
from .memo import ExecutionMemo

__all__ = ["WorkflowAECEnv", "OBS_CHARS"]

OBS_CHARS = 8192
MAX_DEPTH = 4


@dataclass
class _Call:
    """One invocation of a role: who called it, with what, and its dialogue so far."""

    role: str
    caller: str | None
    instruction: str
    index: int
    turns: int = 0
    messages: list[dict[str, str]] = field(default_factory=list)  # user/assistant turns, as seen


class WorkflowAECEnv(AECEnv):
    """Roles of a workflow spec collaborate on a research task in a shared sandboxed workspace.

    ## Description
    The entry role (the orchestrator) sees the task and the workflow (team, planned call order,
    call budget) and delegates with local instructions; a called role acts in the workspace with
    the tools its spec grants (write files, run Python in the sandbox, read files) and returns a
    result that must satisfy its return contract (a JSON Schema), which goes back to its caller.
    Only the role on top of the call stack acts: ``agent_selection``.

    ## Observation
    Per role, ``Dict(role, invocation, message, text)`` of ``Text``: ``message`` is what is new
    since the role last acted (the whole brief at the start of a call), ``text`` the prompt-ready
    view (brief plus this call's transcript tail).

    ## Action
    See ``rsigym.envs.workflow.actions``: JSON (``action_schema``) or the typed ``Dict``.
    Invalid actions are error observations; after ``max_invalid_actions`` the run ends.

    ## Reward
    At the end, every role gets the deterministic score of the delivered workspace (0..1).

    ## Episode End
    All roles terminate when the entry role finishes, or on ``max_invalid_actions``; all are
    truncated after ``max_steps`` turns.

    ## Arguments
    ``spec`` (a workflow spec dict; default the seed spec), ``task_id`` (default: drawn from the
    train split at reset, or ``options["task_id"]``), ``sandbox``, ``max_steps``,
    ``max_invalid_actions``, ``python_timeout_s``, ``task_salt`` (the secret the task's data and
    key are drawn with: 32+ hex digits shared by the runs that must see the same instances, e.g.
    the arms of one benchmark; default a fresh one per episode from the OS's CSPRNG). The salt
    is kept in ``snapshot()`` for the graders and never written to the sandbox. ``memo`` (an
    ``ExecutionMemo``): program runs answered from earlier runs of the same program on the same
    workspace (search benchmarks).

    ## Version History
    v0: initial version.
    """

    metadata = {"name": "workflow_v0", "render_modes": ["ansi"], "is_parallelizable": False}

    def __init__(self, spec: dict[str, Any] | None = None, task_id: str | None = None,
                 sandbox: str | Sandbox = "auto", max_steps: int = 80, max_invalid_actions: int = 10,
                 python_timeout_s: float = 60.0, render_mode: str | None = None,
                 task_salt: str | None = None, memo: ExecutionMemo | None = None) -> None:
        super().__init__()
        self.spec = validate_spec(spec if spec is not None else seed_spec())
        if task_id is not None:
            task_brief(task_id)  # an unknown id fails here, not at reset
        if task_salt is not None and not (isinstance(task_salt, str) and SALT_PATTERN.match(task_salt)):
            raise ValueError(f"task_salt must be 32 to 128 lowercase hex digits, got {str(task_salt)[:20]!r}")
        self.task_salt = task_salt
        self.task_id = task_id
        self.max_steps, self.max_invalid_actions = int(max_steps), int(max_invalid_actions)
        self.render_mode = render_mode
        self.workspace = Workspace(sandbox, python_timeout_s, memo)
        entry = self.spec["entry_role"]
        self.possible_agents = [entry] + [r for r in self.spec["roles"] if r != entry]
        self.action_schema = ACTION_SCHEMA
        self._action_space = action_space(self.possible_agents)
        self._observation_space = spaces.Dict({"role": text_space(64), "invocation": text_space(16),
                                               "message": text_space(OBS_CHARS), "text": text_space(OBS_CHARS)})
        self.task: WorkflowTask | None = None
        self.agents: list[str] = []

    def observation_space(self, agent: str) -> spaces.Space:
        return self._observation_space

    def action_space(self, agent: str) -> spaces.Space:
        return self._action_space

    # -- AEC protocol ----------------------------------------------------------------------
    def reset(self, seed: int | None = None, options: dict[str, Any] | None = None) -> None:
        if seed is not None or not hasattr(self, "_rng"):
            self._rng = np.random.default_rng(seed)
        task_id = (options or {}).get("task_id") or self.task_id
        if task_id is None:
            ids = task_ids("train")
            task_id = ids[int(self._rng.integers(len(ids)))]
        self.task = make_task(task_id, self.task_salt or new_salt())
        self.workspace.reset(self.task.files)
        self.agents = list(self.possible_agents)
        self.rewards = {a: 0.0 for a in self.agents}
        self._cumulative_rewards = {a: 0.0 for a in self.agents}
        self.terminations = {a: False for a in self.agents}
        self.truncations = {a: False for a in self.agents}
        self._steps, self._invalid, self._calls_used = 0, 0, 0
        self._score: float | None = None
        self._grade: dict[str, Any] = {}
        self._summary: str | None = None
        self._termination: str | None = None
        self.calls: list[_Call] = []      # every invocation, in the order they started
        self._stack: list[_Call] = []
        self._last_obs: dict[str, dict[str, str]] = {}
        self._push(self.spec["entry_role"], None, self.task.brief)
        self.infos = {a: self._info(a) for a in self.agents}

    def observe(self, agent: str) -> dict[str, str]:
        seen = self._last_obs.get(agent)
        return dict(seen) if seen else {"role": agent, "invocation": "-", "message": "(idle)",
                                             "text": f"You are the {agent}. You have not been called yet."}

    def step(self, action: Any) -> None:
        agent = self.agent_selection
        if self.terminations[agent] or self.truncations[agent]:
            self._was_dead_step(action)
            return
        self._cumulative_rewards[agent] = 0.0
        self._clear_rewards()
        self._steps += 1
        call = self._stack[-1]
        call.turns += 1
        value, error = parse_action(action, self.possible_agents)
        call.messages.append({"role": "assistant", "content": json.dumps(value) if value is not None
                              else clean_text(short_repr(action, 2000))})
        message = f"Error: {error}" if value is None else self._apply(call, value)
        error = message if message is not None and message.startswith("Error") else None
        if error is not None:
            self._invalid += 1
            if self._invalid > self.max_invalid_actions:
                self._end("agent_error")
        if self._termination is None and self._steps >= self.max_steps:
            self._end("max_steps")
        if self._termination is None and message is not None:
            self._tell(call, message)
        self.infos = {a: self._info(a, error if a == agent else None) for a in self.agents}
        self._accumulate_rewards()

    # -- the workflow ----------------------------------------------------------------------
    def _apply(self, call: _Call, action: dict[str, Any]) -> str | None:
        """Carry out one valid-shaped action; a string is the message back to the acting role."""
        op, role_spec = action["op"], self.spec["roles"][call.role]
        if op in ("write_file", "run_python", "read_file"):
            if op not in role_spec["tools"]:
                return f"Error: the {call.role} has no {op} tool (tools: {', '.join(role_spec['tools']) or 'none'})"
            if op == "write_file":
                return self.workspace.write(action["path"], action["content"])
            if op == "read_file":
                return self.workspace.read(action["path"])
            return self.workspace.run_python(action["path"])
        if op == "delegate":
            callee = action["role"]
            allowed = self.spec["allowed_calls"].get(call.role, [])
            if callee not in allowed:
                return f"Error: the {call.role} may not call {callee!r} (may call: {', '.join(allowed) or 'nobody'})"
            if self._calls_used >= self.spec["call_budget"]:
                return f"Error: the call budget of {self.spec['call_budget']} is spent; finish or return"
            if len(self._stack) >= MAX_DEPTH:
                return f"Error: calls nest at most {MAX_DEPTH} deep"
            self._calls_used += 1
            self._push(callee, call.role, action["instruction"])
            return None
        if op == "return":
            if call.caller is None:
                return "Error: the entry role ends the workflow with finish, not return"
            errors = list(jsonschema.Draft202012Validator(role_spec["returns"]).iter_errors(action["result"]))
            if errors:
                return f"Error: the result breaks your return contract: {errors[0].message[:300]}"
            self._pop(call, json.dumps(action["result"], sort_keys=True))
            return None
        # finish
        if call.caller is not None:
            return "Error: only the entry role can finish; return your result instead"
        self._summary = action["summary"]
        self._end("agent_stop")
        return None

    def _push(self, role: str, caller: str | None, instruction: str) -> None:
        call = _Call(role, caller, instruction, index=len(self.calls))
        self.calls.append(call)
        self._stack.append(call)
        self.agent_selection = role
        self._tell(call, self._brief(call))

    def _pop(self, call: _Call, result_text: str, forced: bool = False) -> None:
        self._stack.pop()
        caller = self._stack[-1]
        self.agent_selection = caller.role
        what = "was stopped at its turn limit" if forced else "returned"
        self._tell(caller, f"The {call.role} {what}: {result_text}\nCalls left: "
                           f"{self.spec['call_budget'] - self._calls_used}")

    def _tell(self, call: _Call, message: str) -> None:
        """Show ``message`` to the role of ``call`` (it becomes the next user turn of its dialogue)."""
        if call.caller is not None and call.turns >= self.spec.get("max_turns_per_call", 8) and call is self._stack[-1]:
            self._pop(call, json.dumps({"error": "turn limit reached"}), forced=True)
            return
        message = clean_text(message, OBS_CHARS)
        call.messages.append({"role": "user", "content": message})
        self._last_obs[call.role] = self._view(call, message)

    def _brief(self, call: _Call) -> str:
        role = self.spec["roles"][call.role]
        lines = [f"You are the {call.role} of a research team.", f"Your instructions: {role['instruction']}"]
        if call.caller is None:
            lines += [workflow_prompt(self.spec), "", self.task.brief if self.task else ""]
            lines.append('End the workflow with {"op": "finish", "summary": "..."} once the workspace is delivered.')
        else:
            lines += [f"Instruction from the {call.caller}: {call.instruction}",
                      f"Return with {{\"op\": \"return\", \"result\": ...}}; the result must satisfy this JSON "
                      f"Schema: {json.dumps(role['returns'], sort_keys=True)}"]
        callees = self.spec["allowed_calls"].get(call.role, [])
        lines.append(f"Tools: {', '.join(role['tools']) or 'none'}; you may call: {', '.join(callees) or 'nobody'}.")
        lines.append(f"Workspace files: {', '.join(sorted(self.workspace.files))}")
        lines.append("Answer with one JSON action per turn: " + ", ".join(OPS) + ".")
        return "\n".join(lines)

    def _view(self, call: _Call, message: str) -> dict[str, str]:
        head = call.messages[0]["content"]
        tail = "\n".join(f"[{m['role']}] {m['content'][:1200]}" for m in call.messages[1:][-6:])
        text = head if not tail else head[:OBS_CHARS // 2] + "\n\nThis call so far:\n" + tail
        return {"role": call.role, "invocation": str(call.index), "message": message[:OBS_CHARS],
                "text": clean_text(text, OBS_CHARS)}

    def _end(self, termination: str) -> None:
        self._termination = termination
        if self.task is not None:
            self._score, self._grade = grade_workspace(self.task, self.workspace.files)
        for agent in self.agents:
            self.rewards[agent] = float(self._score or 0.0) if termination == "agent_stop" else 0.0
            if termination == "max_steps":
                self.truncations[agent] = True
            else:
                self.terminations[agent] = True

    def _info(self, agent: str, error: str | None = None) -> dict[str, Any]:
        info: dict[str, Any] = {
            "task_id": self.task.task_id if self.task else None,
            "budget": {"calls_used": self._calls_used, "calls_left": self.spec["call_budget"] - self._calls_used,
                       "turns_used": self._steps, "turns_left": self.max_steps - self._steps},
            "invalid_actions": self._invalid, "acting_role": self.agent_selection,
        }
        if error is not None:
            info["error"] = error
        if self._termination is not None:
            info["termination"] = self._termination
            info["score"] = self._score
        return info

    # -- end state -------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        """The end state graders read: spec, delivered files, dialogues, checks and score."""
        assert self.task is not None, "snapshot() before reset()"
        return {
            "task_id": self.task.task_id, "family": self.task.family.name, "answer_sha256": self.task.key_sha256,
            "task_salt": self.task.salt,
            "spec": self.spec, "spec_sha256": spec_sha256(self.spec),
            "files": {k: v for k, v in sorted(self.workspace.files.items()) if k not in self.task.files
                      or v != self.task.files[k]},
            "dialogues": [{"role": c.role, "caller": c.caller, "index": c.index, "messages": c.messages}
                          for c in self.calls],
            "calls_used": self._calls_used, "python_runs": self.workspace.python_runs,
            "summary": self._summary, "termination": self._termination, "score": self._score,
            "grade": self._grade,
        }

    @property
    def sandbox_info(self) -> dict[str, Any] | None:
        return self.workspace.sandbox_info

    def render(self) -> str | None:
        if self.render_mode != "ansi" or self.task is None:
            return None
        return f"{self.task.task_id}: {self.agent_selection} to act; calls {self._calls_used}; files " \
               f"{', '.join(sorted(self.workspace.files))}"

    def close(self) -> None:
        self.workspace.close()
