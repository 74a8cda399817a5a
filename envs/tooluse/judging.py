"""What an LLM judge of a tool-use episode reads, in several presentations, and offline judges.

``judge_transcript`` renders one record for a judge: the customer's goal, the tools as the agent
saw them (READ/WRITE), the conversation with every tool result, error and customer turn, and an
end-state summary (the changes that succeeded, the failed calls, how the conversation ended).
Never the gold end state: a judge must judge, not look up the answer. A *presentation* re-renders
the same trajectory: ``renamed`` gives the tools other names (the domain's rename mapping),
``reordered`` lists the tools and each call's arguments in reverse order. A judge that reads the
trajectory and not its wording grades every presentation alike.

Offline judges (LiteLLM models ``rsigym/judge_lenient``, ``rsigym/judge_strict``,
``rsigym/judge_noisy``) read that rendering, so the judge study runs with no key:

* ``judge_lenient`` (an outcome reading): passes when a change went through, or the agent
  refused, and the agent closed the conversation with a message.
* ``judge_strict`` (a process reading): passes only when no tool call failed, every change came
  after a lookup, and the agent closed with a message.
* ``judge_noisy``: the lenient reading flipped with probability 0.25, drawn from the request
  (the rendering included), so it is neither stable across presentations nor in agreement.
"""

from __future__ import annotations

import json
import re
from typing import Callable

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy
from rsigym.records import Trajectory

__all__ = ["PRESENTATIONS", "judge_transcript"]

PRESENTATIONS = ("", "renamed", "reordered")  # "" = as run
_LINE = re.compile(r"^- Agent calls \S+ \[(read|write|unknown)\] .* -> (ok|error)|^- Agent: ", re.MULTILINE)
_REFUSAL = re.compile(r"\b(sorry|cannot|can't|not allow)", re.IGNORECASE)


def _renamer(names: dict[str, str]) -> Callable[[str], str]:
    if not names:
        return lambda text: text
    pattern = re.compile(r"(?<![\w])(" + "|".join(map(re.escape, sorted(names, key=len, reverse=True))) + r")(?![\w])")
    return lambda text: pattern.sub(lambda m: names[m.group(1)], text)


def judge_transcript(record: Trajectory, presentation: str = "") -> str:
    """The judge's view of a ToolUse-v0 record (see the module docstring)."""
    from rsigym.envs.tooluse import get_domain, load_task

    if presentation not in PRESENTATIONS:
        raise ValueError(f"presentation must be one of {PRESENTATIONS}, got {presentation!r}")
    state = record.final.state if record.final is not None else None
    if not isinstance(state, dict) or "task_id" not in state:
        raise ValueError(f"record {record.episode_key} has no tool-use end state to judge")
    task, domain = load_task(state["task_id"]), get_domain(state["domain"])
    shown = dict(state.get("tool_names") or {t.name: t.name for t in domain.tools})  # canonical -> shown
    if presentation == "renamed":
        names = {s: domain.default_renames.get(c, f"{c}_tool") for c, s in shown.items()}
    else:
        names = {}
    rename = _renamer({k: v for k, v in names.items() if k != v})
    order = -1 if presentation == "reordered" else 1
    kinds = {s: domain.tool(c).kind for c, s in shown.items()}

    catalogue = [f"- {rename(s)} [{domain.tool(c).kind}]: {domain.tool(c).description}"
                 for c, s in list(shown.items())[::order]]
    lines = [f"- Customer: {state['user_messages'][0]}"] if state.get("user_messages") else []
    for t, step in enumerate(record.steps):
        outcome = record.steps[t + 1].observation if t + 1 < len(record.steps) else None
        text = str(outcome.get("text", "")) if isinstance(outcome, dict) else ""
        action = step.action
        if isinstance(action, dict) and "tool" in action:
            given = action.get("arguments")  # an invalid action may carry any value here
            arguments = (dict(list(given.items())[::order]) if isinstance(given, dict)
                         else {} if given is None else {"(not an object)": given})
            kind = kinds.get(str(action["tool"]), "unknown")  # a name the agent was not offered
            status = "error" if " error: " in text or text.startswith("Error") else "ok"
            lines.append(f"- Agent calls {rename(str(action['tool']))} [{kind}] {json.dumps(arguments, default=repr)} -> "
                         f"{status}: {rename(text)[:400]}")
        elif isinstance(action, dict) and "message" in action:
            lines.append(f"- Agent: {action['message']}")
            if text.startswith("User: "):
                lines.append(f"- Customer: {text[6:]}")
    if state.get("user_messages") and record.steps and "message" in (record.steps[-1].action or {}):
        lines.append(f"- Customer: {state['user_messages'][-1]}")
    calls = state.get("tool_calls") or []
    writes = [c for c in calls if c.get("ok") and domain.tool(c["canonical"]).kind == "write"]
    failed = sum(line.startswith("- Agent calls") and "] {" in line and " -> error: " in line for line in lines)
    summary = [f"Changes that went through: {len(writes)}"
               + "".join(f"\n- {rename(c['tool'])} {json.dumps(dict(list(c['arguments'].items())[::order]))}"
                         for c in writes),
               f"Failed tool calls (invalid ones included): {failed}",
               f"Conversation ended by: {state.get('ended_by') or record.termination}"]
    return "\n".join([f"Customer's goal: {task.instructions.get('intent')}",
                      f"Request: {task.instructions.get('request')}", "", "## Tools the agent had",
                      *catalogue, "", "## Conversation", *lines, "", "## End state", *summary])


def _verdicts(text: str) -> tuple[bool, bool]:
    """(lenient pass, strict pass) read off a rendering."""
    conversation = text.split("## Conversation", 1)[-1].split("## End state", 1)[0]
    events = [(m.group(1) or "message", m.group(2)) for m in _LINE.finditer(conversation)]
    closed = bool(events) and events[-1][0] == "message"
    changed = any(kind == "write" and status == "ok" for kind, status in events)
    agent_lines = [line for line in conversation.splitlines() if line.startswith("- Agent: ")]
    refused = any(_REFUSAL.search(line) for line in agent_lines)
    looked_up = asked = False
    orderly = True
    for kind, status in events:
        if kind == "message":
            asked = True
        elif kind == "read":
            looked_up = True
        elif kind == "write":
            orderly = orderly and looked_up and asked
            asked = False  # each change needs its own confirmation
    strict = closed and orderly and all(status in (None, "ok") for _, status in events)
    return closed and (changed or refused), strict


def _judge_policy(kind: str) -> Callable[[OfflineRequest], OfflineReply]:
    def policy(request: OfflineRequest) -> OfflineReply:
        text = "\n".join(str(m.get("content") or "") for m in request.messages)
        if "## Conversation" not in text:
            return OfflineReply(text='{"score": 0, "reason": "no transcript to judge"}')
        lenient, strict = _verdicts(text)
        passed = {"judge_lenient": lenient, "judge_strict": strict}.get(kind, lenient)
        if kind == "judge_noisy" and request.rng.random() < 0.25:
            passed = not passed
        reason = f"{kind}: {'pass' if passed else 'fail'}"
        return OfflineReply(text=json.dumps({"score": float(passed), "reason": reason}))

    policy.__doc__ = {"judge_lenient": "Offline outcome judge: a change went through or the agent refused, and it closed.",
                      "judge_strict": "Offline process judge: no failed call, each change after a lookup and a confirmation.",
                      "judge_noisy": "Offline judge: the lenient reading flipped with probability 0.25."}[kind]
    return policy


# One module attribute per offline judge, so that an entry point (pyproject.toml,
# ``rsigym.offline_policies``) can name each.
judge_lenient_policy = register_offline_policy("judge_lenient")(_judge_policy("judge_lenient"))
judge_strict_policy = register_offline_policy("judge_strict")(_judge_policy("judge_strict"))
judge_noisy_policy = register_offline_policy("judge_noisy")(_judge_policy("judge_noisy"))
