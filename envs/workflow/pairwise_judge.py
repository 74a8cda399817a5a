"""The pairwise evaluator: deterministic checks first, then a model asked in both orders.

``PairwiseJudge.compare(task, incumbent, candidate)`` returns a ``Verdict``. Checks that need no
key decide first (a valid ``results.json`` beats none; then a complete ``report.md``). Only when
they tie is the model asked, once with each workspace first; two answers that disagree are a
tie, counted as ``inconsistent``. The caller keeps the incumbent on a tie.
"""

from __future__ import annotations

import json
import random
from dataclasses import dataclass, field
from typing import Any

from rsigym.llm import complete
from rsigym.records import Usage

from .agents import extract_json
from .tasks import WorkflowTask, check_workspace

__all__ = ["Verdict", "PairwiseJudge", "JUDGE_SCHEMA", "render_workspace", "deterministic_rank"]

JUDGE_SCHEMA: dict[str, Any] = {"type": "object", "required": ["winner", "reason"], "additionalProperties": False,
                                "properties": {"winner": {"enum": ["first", "second", "tie"]},
                                               "reason": {"type": "string", "maxLength": 500}}}
_SYSTEM = ("[workflow:judge] You compare two research workspaces delivered for the same task. Judge the "
           "soundness of the method and the answer, and the report. Answer with JSON following "
           "```json\n" + json.dumps(JUDGE_SCHEMA) + "\n```")


@dataclass
class Verdict:
    """``winner`` is ``a``, ``b`` or ``tie``; ``decided_by`` ``deterministic`` or ``judge``."""

    winner: str
    decided_by: str
    inconsistent: bool = False
    orders: list[str] = field(default_factory=list)   # per order, the workspace it preferred
    reasons: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def deterministic_rank(task: WorkflowTask, files: dict[str, str]) -> tuple[int, int]:
    """(valid results.json, complete report.md): compared as a tuple, no key needed."""
    checks = check_workspace(task, files)
    return (int(checks["results"] is not None),
            int(checks["report_present"] and not checks["report_missing_sections"]))


def render_workspace(files: dict[str, str], max_chars: int = 1500) -> str:
    parts = []
    for name in ("results.json", "report.md"):
        text = files.get(name)
        parts.append(f"--- {name} ---\n" + (text[:max_chars] if text is not None else "(missing)"))
    return "\n".join(parts)


class PairwiseJudge:
    """Compares two workspaces; deterministic checks first, then ``model`` in both orders.

    Args:
        model: LiteLLM model string (offline ``rsigym/workflow_judge``).
        deterministic_first: False skips the checks (for measuring the model alone).
    """

    def __init__(self, model: str, *, api_base: str | None = None, seed: int = 0,
                 deterministic_first: bool = True, temperature: float = 0.0) -> None:
        self.model, self.api_base, self.seed = model, api_base, int(seed)
        self.deterministic_first, self.temperature = deterministic_first, temperature
        self._requests = 0

    def _ask(self, task: WorkflowTask, first: dict[str, str], second: dict[str, str]) -> tuple[str, str, Usage]:
        self._requests += 1
        seed = self.seed * 7919 + self._requests
        user = (f"Task:\n{task.brief}\n\n=== Workspace first ===\n{render_workspace(first)}\n\n"
                f"=== Workspace second ===\n{render_workspace(second)}\n\nWhich workspace is better?")
        reply = complete([{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
                         model=self.model, role="judge", api_base=self.api_base, json_schema=JUDGE_SCHEMA,
                         params={"temperature": self.temperature, "seed": seed}, rng=random.Random(seed))
        answer = extract_json(reply.text)
        winner = answer.get("winner") if isinstance(answer, dict) else None
        reason = str(answer.get("reason", "")) if isinstance(answer, dict) else reply.text[:200]
        return (winner if winner in ("first", "second", "tie") else "tie"), reason, reply.usage

    def compare(self, task: WorkflowTask, a: dict[str, str], b: dict[str, str]) -> Verdict:
        if self.deterministic_first:
            rank_a, rank_b = deterministic_rank(task, a), deterministic_rank(task, b)
            if rank_a != rank_b:
                return Verdict("a" if rank_a > rank_b else "b", "deterministic",
                               reasons=[f"checks {rank_a} vs {rank_b}"])
        first, reason_1, usage_1 = self._ask(task, a, b)
        second, reason_2, usage_2 = self._ask(task, b, a)
        as_ab = {"first": "a", "second": "b", "tie": "tie"}[first]
        as_ba = {"first": "b", "second": "a", "tie": "tie"}[second]
        if as_ab == as_ba:
            return Verdict(as_ab, "judge", False, [as_ab, as_ba], [reason_1, reason_2], usage_1 + usage_2)
        return Verdict("tie", "judge", True, [as_ab, as_ba], [reason_1, reason_2], usage_1 + usage_2)
