"""Graders of ``rsigym/ToolUse-v0``: end state, told facts, matched actions, an LLM judge, reward.

All read the record only (the snapshot holds the database hash, the tool calls as displayed and
as executed, the messages and the condition's displayed names), so each can regrade fixed
trajectories. ``action_match`` is deliberately name-bound, the kind of grader that breaks under a
tool rename; ``action_match_mapped`` is its correction.
"""

from __future__ import annotations

import dataclasses
from collections import Counter
from dataclasses import dataclass, field
from typing import Any, ClassVar

from rsigym.grader import get_grader, register_grader, snapshot_state
from rsigym.llm import RetryPolicy, complete
from rsigym.records import Grade, Trajectory, canonical_json, to_jsonable
from rsigym.records.redact import redacted_excerpt

__all__ = ["DbStateMatch", "OutputsTold", "ActionMatch", "ActionMatchMapped", "LLMJudge", "TaskReward"]


def _state(record: Trajectory) -> dict[str, Any]:
    return snapshot_state(record, "task_id", "tool-use")


def _task(state: dict[str, Any]) -> Any:
    from rsigym.envs.tooluse import load_task

    return load_task(state["task_id"])


@register_grader("db_state")
@dataclass(frozen=True)
class DbStateMatch:
    """1.0 when the final database equals the task's gold end state (hash comparison)."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        state = _state(record)
        gold = _task(state).gold_db_sha256
        return Grade(self.name, self.version, float(state["db_sha256"] == gold),
                     {"db_sha256": state["db_sha256"][:16], "gold": gold[:16]})


@register_grader("outputs")
@dataclass(frozen=True)
class OutputsTold:
    """1.0 when every required fact appears (normalised) in the agent's messages to the user."""

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.envs.tooluse import communicated

        state = _state(record)
        required = list(_task(state).required_outputs)
        told = communicated(required, state.get("agent_messages", []))
        missing = [fact for fact, ok in zip(required, told) if not ok]
        return Grade(self.name, self.version, float(not missing), {"required": len(required), "missing": missing})


def _action_key(tool: str, arguments: Any) -> str:
    return f"{tool}:{canonical_json(arguments)}"


@dataclass(frozen=True)
class _ActionMatchBase:
    """1.0 when every gold action appears among the executed tool calls (as a multiset)."""

    only_writes: bool = False

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})
    mapped: ClassVar[bool] = False

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.envs.tooluse import get_domain

        state = _state(record)
        task = _task(state)
        domain = get_domain(task.domain)
        shown_to_canonical = {v: k for k, v in (state.get("tool_names") or {}).items()}
        made: Counter[str] = Counter()
        for call in state.get("tool_calls", []):
            if call.get("ok"):
                name = shown_to_canonical.get(call["tool"], call["tool"]) if self.mapped else call["tool"]
                made[_action_key(name, call["arguments"])] += 1
        gold = [a for a in task.gold_actions if not self.only_writes or domain.tool(a["tool"]).kind == "write"]
        needed = Counter(_action_key(a["tool"], a["arguments"]) for a in gold)
        missing = sorted((needed - made).elements())
        return Grade(self.name, self.version, float(not missing),
                     {"gold_actions": len(gold), "missing": [m.split(":", 1)[0] for m in missing]})


@register_grader("action_match")
@dataclass(frozen=True)
class ActionMatch(_ActionMatchBase):
    """Gold actions matched by the tool name *as called* and the arguments (name-bound)."""


@register_grader("action_match_mapped")
@dataclass(frozen=True)
class ActionMatchMapped(_ActionMatchBase):
    """Gold actions matched after mapping displayed tool names back through the condition."""

    mapped: ClassVar[bool] = True


_JUDGE_PROMPT = {
    "outcome": ("Judge whether the customer-service agent achieved the correct outcome for the "
                "customer under the policy. Consider only the end result."),
    "process": ("Judge whether the customer-service agent followed the policy while working: it "
                "authenticated the user, confirmed before changes, and did not take unrequested actions."),
}


@register_grader("llm_judge")
@dataclass(frozen=True)
class LLMJudge:
    """An LLM (through ``rsigym.llm``, role ``judge``) scores an episode with an ``outcome`` or
    ``process`` rubric.

    The judge reads ``judging.judge_transcript``: the goal, the tools as the agent saw them, the
    conversation with tool results and customer turns, and an end-state summary, in the chosen
    ``presentation`` ("" as run, ``renamed``, ``reordered``). Its grade is named for the judge,
    ``llm_judge/<rubric>[@<presentation>]/<model>`` (``rsigym.graders.judges``), so several
    judges and presentations coexist on one record. Offline judges: ``rsigym/judge_lenient``,
    ``rsigym/judge_strict``, ``rsigym/judge_noisy``. The call's usage (tokens, cost, calls,
    retries) is in the grade's details; a provider that fails for good gives a grade with no
    score and an ``infra_error`` error.
    """

    model: str = "openai/gpt-4o-mini"
    rubric: str = "outcome"
    temperature: float = 0.0
    api_base: str | None = None
    max_retries: int = 4
    backoff_base_s: float = 1.0
    timeout_s: float = 120.0
    presentation: str = ""

    name: ClassVar[str]
    version: ClassVar[str] = "2"
    needs: ClassVar[frozenset[str]] = frozenset({"trajectory", "final_state"})

    def __post_init__(self) -> None:
        from rsigym.graders.judges import judge_grade_name

        from .judging import PRESENTATIONS

        if self.rubric not in _JUDGE_PROMPT:
            raise ValueError(f"rubric must be one of {sorted(_JUDGE_PROMPT)}, got {self.rubric!r}")
        if self.presentation not in PRESENTATIONS:
            raise ValueError(f"presentation must be one of {PRESENTATIONS}, got {self.presentation!r}")
        # the registered name is "llm_judge"; each instance grades under its judge's own name
        object.__setattr__(self, "name", judge_grade_name(type(self).name, self.rubric, self.model,
                                                          self.presentation))

    def grade(self, record: Trajectory) -> Grade:
        from rsigym.agents.llm_messages import extract_json

        from .judging import judge_transcript

        prompt = (f"{_JUDGE_PROMPT[self.rubric]}\n\n{judge_transcript(record, self.presentation)}\n\n"
                  'Answer with JSON only: {"score": a number from 0 to 1, "reason": "one sentence"}.')
        reply = complete([{"role": "user", "content": prompt}], model=self.model, role="judge",
                         api_base=self.api_base, params={"temperature": self.temperature, "seed": 0},
                         retry=RetryPolicy(self.max_retries, self.backoff_base_s), timeout_s=self.timeout_s)
        usage = to_jsonable(dataclasses.asdict(reply.usage))
        try:
            verdict = extract_json(reply.text)
            score = float(verdict["score"])
        except (ValueError, KeyError, TypeError, AttributeError) as exc:
            return Grade(self.name, self.version, None, {"usage": usage, "reply": redacted_excerpt(reply.text, 500)},
                         error=f"the judge gave no score: {type(exc).__name__}: {exc}")
        if not 0.0 <= score <= 1.0:
            return Grade(self.name, self.version, None, {"usage": usage, "reply": redacted_excerpt(reply.text, 500)},
                         error=f"judge score {score} outside [0, 1]")
        return Grade(self.name, self.version, score, {"reason": redacted_excerpt(str(verdict.get("reason", "")), 500), "usage": usage})


@register_grader("reward")
@dataclass(frozen=True)
class TaskReward:
    """tau-bench's reward: the product of the basis graders (default: db_state x outputs)."""

    basis: tuple[str, ...] = ("db_state", "outputs")

    name: ClassVar[str]
    version: ClassVar[str] = "1"
    needs: ClassVar[frozenset[str]] = frozenset({"final_state"})

    def __post_init__(self) -> None:
        object.__setattr__(self, "basis", tuple(self.basis))

    def grade(self, record: Trajectory) -> Grade:
        parts = {name: get_grader(name).grade(record).score for name in self.basis}
        score = 1.0
        for value in parts.values():
            score *= float(value or 0.0)
        return Grade(self.name, self.version, score, {"basis": parts})
