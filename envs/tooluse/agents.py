"""Scripted tool-use agents for TRACE: the same plan, three ways of finding the tools.

Each agent executes its task's gold plan (it is an instrument, not a contestant: it reads the
task catalogue directly, never through observations) and then tells the user the required
facts. They differ only in how they find the tool for each step among the tools *as displayed*:

* ``role_binding``: by the tool's canonical description, falling back to its canonical name;
  a rename leaves its behaviour unchanged, so any score change is the grader's doing.
* ``name_bound``: by the canonical name alone; a rename is a real behavioural failure.
* ``description_reader``: by keyword overlap with names (weighted double) and descriptions;
  names that point to the wrong tool (``misleading_names``) fool it: the positive control.

``error_rate`` makes an episode slip with that probability (skip its last WRITE, or, with no WRITE
to skip, leave out the facts the user must hear), so every slip fails the task: run-to-run noise
of a known size. The draw is seeded by (task, agent, condition, seed, rep), so the two arms of a
TRACE pair slip independently: a paired delta is -1, 0 or +1 with variance 2p(1 - p). Each agent is also an offline LiteLLM model
(``rsigym/role_binding``, ...), so the LLMAgent code path can be checked against it.
"""

from __future__ import annotations

import random
import re
from typing import Any, Callable

from rsigym.agent import register_agent
from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy
from rsigym.records import AgentSpec, Usage, canonical_json


__all__ = ["ToolUsePlanAgent", "CHOOSERS", "final_message"]

Displayed = dict[str, str]  # displayed name -> displayed description
_WORD = re.compile(r"[a-z]+")


def _words(text: str) -> set[str]:
    return set(_WORD.findall(text.lower().replace("_", " ")))


def _by_role(canonical: str, description: str, shown: Displayed) -> str:
    for name, text in shown.items():
        if text == description:
            return name
    return canonical


def _by_name(canonical: str, description: str, shown: Displayed) -> str:
    return canonical


def _by_keywords(canonical: str, description: str, shown: Displayed) -> str:
    name_words, description_words = _words(canonical), _words(description)

    def score(item: tuple[str, str]) -> tuple[float, str]:
        name, text = item
        overlap = len(_words(name) & name_words) / max(len(name_words), 1)
        return (2.0 * overlap + len(_words(text) & description_words) / max(len(description_words), 1), name)

    return max(shown.items(), key=score)[0]


CHOOSERS: dict[str, Callable[[str, str, Displayed], str]] = {
    "role_binding": _by_role, "name_bound": _by_name, "description_reader": _by_keywords,
}


def final_message(task: Any) -> str:
    """The closing message: the required facts, and a refusal where the policy demands one."""
    facts = "; ".join(task.required_outputs)
    opening = ("I am sorry, but our policy does not allow that request." if task.must_refuse
               else "Your request has been handled.")
    return f"{opening} Details: {facts}." if facts else opening


def _displayed(tools: Any) -> Displayed:
    return {t["function"]["name"]: t["function"]["description"] for t in tools or ()}


class ToolUsePlanAgent:
    """Executes the gold plan of a ToolUse-v0 task, finding tools with one of ``CHOOSERS``."""

    def __init__(self, spec: AgentSpec) -> None:
        unknown = set(spec.params) - {"error_rate"}
        if unknown:
            raise TypeError(f"{spec.kind} takes only error_rate, got {sorted(unknown)}")
        self.error_rate = float(spec.params.get("error_rate", 0.0))
        if not 0.0 <= self.error_rate <= 1.0:
            raise TypeError(f"error_rate must be in [0, 1], got {self.error_rate}")
        self.spec, self.choose = spec, CHOOSERS[spec.kind]
        self.last_usage = Usage()

    def reset(self, task_info: dict[str, Any], seed: int) -> None:
        from rsigym.envs.tooluse import get_domain, load_task

        self.task = load_task(str(task_info["task_id"]))
        self.domain = get_domain(self.task.domain)
        self.shown = _displayed(task_info.get("tools"))
        self.plan = list(self.task.gold_actions)
        # String seeds hash with SHA-512 in random.Random: the same draw in every process. The
        # condition is part of the key, else both arms of a pair would slip together.
        condition = canonical_json(task_info.get("condition"))
        rng = random.Random(f"{seed}/{task_info.get('rep', 0)}/{self.task.task_id}/{self.spec.id}/"
                            f"{self.spec.kind}/{condition}")
        self.slipped = rng.random() < self.error_rate
        self.forget_facts = False
        if self.slipped:  # a slip always costs the task: a missed WRITE, or untold facts
            writes = [i for i, a in enumerate(self.plan) if self.domain.tool(a["tool"]).kind == "write"]
            if writes:
                self.plan.pop(writes[-1])
            else:
                self.forget_facts = True

    def act(self, observation: dict[str, Any]) -> Any:
        if self.plan:
            action = self.plan.pop(0)
            description = self.domain.tool(action["tool"]).description
            return {"tool": self.choose(action["tool"], description, self.shown), "arguments": action["arguments"]}
        if self.forget_facts:
            return {"message": "I have looked into your request."}
        return {"message": final_message(self.task)}


for _kind in CHOOSERS:
    register_agent(_kind)(ToolUsePlanAgent)


_TASK_HEADER = re.compile(r"# Task (\S+) \(")


def _offline_plan_policy(kind: str) -> Callable[[OfflineRequest], OfflineReply]:
    """The same agent as an offline model: it finds its task in the conversation's header."""

    def policy(request: OfflineRequest) -> OfflineReply:
        from rsigym.envs.tooluse import get_domain, load_task

        header = next((m for m in request.messages if _TASK_HEADER.search(str(m.get("content") or ""))), None)
        if header is None:
            return OfflineReply(text="I cannot find the task header in this conversation.")
        task = load_task(_TASK_HEADER.search(str(header["content"])).group(1))  # type: ignore[union-attr]
        domain = get_domain(task.domain)
        done = sum(len(m.get("tool_calls") or ()) for m in request.messages if m.get("role") == "assistant")
        if done >= len(task.gold_actions) or not request.tools:
            return OfflineReply(text=final_message(task))
        action = task.gold_actions[done]
        name = CHOOSERS[kind](action["tool"], domain.tool(action["tool"]).description, _displayed(request.tools))
        # A name that is not offered (name_bound after a rename) is called all the same: the
        # agent's validation rejects it, and the failed call counts as this step being done.
        return OfflineReply(action=action["arguments"], tool=name)

    policy.__doc__ = f"The {kind} tool-use agent as an offline model (finds its task in the conversation)."
    return policy


# One module attribute per offline model, so an entry point can name each.
role_binding_policy = register_offline_policy("role_binding")(_offline_plan_policy("role_binding"))
name_bound_policy = register_offline_policy("name_bound")(_offline_plan_policy("name_bound"))
description_reader_policy = register_offline_policy("description_reader")(_offline_plan_policy("description_reader"))
