"""The pairwise evaluator: a model shown two workspaces, asked in both orders.

``PairwiseJudge.compare(brief, incumbent, candidate)`` returns a ``Verdict``. The model sees
what a model would see: the task brief and the two workspaces as delivered (analysis code,
``results.json``, ``report.md``), never the grader's checks or the key. It is asked once with
each workspace first; two answers that disagree are a tie, counted as ``inconsistent``. The
caller keeps the incumbent on a tie. Controls (a coin judge) run through the same pipeline.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any, Protocol

from rsigym.llm import complete
from rsigym.records import Usage
from rsigym.records.redact import redacted_excerpt

from .agents import extract_json
from .tasks import WorkflowTask, grade_workspace, make_task

__all__ = ["Verdict", "PairwiseJudge", "OracleJudge", "Comparer", "JUDGE_SCHEMA", "render_workspace", "SHOWN_FILES"]

JUDGE_SCHEMA: dict[str, Any] = {"type": "object", "required": ["winner", "reason"], "additionalProperties": False,
                                "properties": {"winner": {"enum": ["first", "second", "tie"]},
                                               "reason": {"type": "string", "maxLength": 500}}}
_SYSTEM = ("[workflow:judge] You compare two research workspaces delivered for the same task. Judge the "
           "soundness of the method (read the code), the answer, and the report. Say tie when neither is "
           "better. Answer with JSON following ```json\n" + json.dumps(JUDGE_SCHEMA) + "\n```")
SHOWN_FILES = ("analysis.py", "results.json", "report.md")


@dataclass
class Verdict:
    """``winner`` is ``a``, ``b`` or ``tie``; ``decided_by`` names the model."""

    winner: str
    decided_by: str
    inconsistent: bool = False
    orders: list[str] = field(default_factory=list)   # per order, the workspace it preferred
    reasons: list[str] = field(default_factory=list)
    usage: Usage = field(default_factory=Usage)


def render_workspace(files: dict[str, str], max_chars: int = 3000) -> str:
    """The workspace as the judge reads it: the code, the results and the report (or "(missing)")."""
    parts = []
    for name in SHOWN_FILES:
        text = files.get(name)
        parts.append(f"--- {name} ---\n" + (text[:max_chars] if text is not None else "(missing)"))
    return "\n".join(parts)


class PairwiseJudge:
    """Compares two workspaces with ``model``, asked in both orders.

    Args:
        model: LiteLLM model string (offline ``rsigym/workflow_judge``; the coin control
            ``rsigym/workflow_judge_coin``; a trained generation ``rsigym/workflow_gen``).
    """

    def __init__(self, model: str, *, api_base: str | None = None, seed: int = 0, temperature: float = 0.0) -> None:
        self.model, self.api_base, self.seed, self.temperature = model, api_base, int(seed), temperature
        self._requests = 0

    def _ask(self, brief: str, first: dict[str, str], second: dict[str, str]) -> tuple[str, str, Usage]:
        self._requests += 1
        seed = self.seed * 7919 + self._requests
        user = (f"Task:\n{brief}\n\n=== Workspace first ===\n{render_workspace(first)}\n\n"
                f"=== Workspace second ===\n{render_workspace(second)}\n\nWhich workspace is better?")
        reply = complete([{"role": "system", "content": _SYSTEM}, {"role": "user", "content": user}],
                         model=self.model, role="judge", api_base=self.api_base, json_schema=JUDGE_SCHEMA,
                         params={"temperature": self.temperature, "seed": seed}, rng=random.Random(seed))
        answer = extract_json(reply.text)
        winner = answer.get("winner") if isinstance(answer, dict) else None
        reason = str(answer.get("reason", "")) if isinstance(answer, dict) else redacted_excerpt(reply.text, 200)
        return (winner if winner in ("first", "second", "tie") else "tie"), reason, reply.usage

    def compare(self, brief: str, a: dict[str, str], b: dict[str, str]) -> Verdict:
        """``a`` against ``b`` for the task of ``brief`` (its task.md text)."""
        first, reason_1, usage_1 = self._ask(brief, a, b)
        second, reason_2, usage_2 = self._ask(brief, b, a)
        as_ab = {"first": "a", "second": "b", "tie": "tie"}[first]
        as_ba = {"first": "b", "second": "a", "tie": "tie"}[second]
        if as_ab == as_ba:
            return Verdict(as_ab, self.model, False, [as_ab, as_ba], [reason_1, reason_2], usage_1 + usage_2)
        return Verdict("tie", self.model, True, [as_ab, as_ba], [reason_1, reason_2], usage_1 + usage_2)


class Comparer(Protocol):
    """What the MASS loop needs of a judge."""

    def compare(self, brief: str, a: dict[str, str], b: dict[str, str]) -> Verdict: ...


_TASK_ID = re.compile(r"^# Task (\S+) ", re.MULTILINE)


class OracleJudge:
    """The positive control of a search benchmark: prefers the workspace the grader scores higher.

    It reads the hidden key (it is built with the run's salt), so it is a control that shows what
    a judge known to be right does to a search, never a judge an agent could use. Equal scores
    (within ``margin``) are a tie, so the loop keeps its incumbent as it would on a real tie.
    """

    def __init__(self, task_salt: str, margin: float = 1e-9) -> None:
        self.salt, self.margin = task_salt, margin

    @staticmethod
    @lru_cache(maxsize=512)
    def _task(task_id: str, salt: str) -> WorkflowTask:
        return make_task(task_id, salt)

    def compare(self, brief: str, a: dict[str, str], b: dict[str, str]) -> Verdict:
        match = _TASK_ID.search(brief)
        if match is None:
            raise ValueError(f"the brief names no task: {brief[:80]!r}")
        task = self._task(match.group(1), self.salt)
        score_a = grade_workspace(task, {**task.files, **a})[0]
        score_b = grade_workspace(task, {**task.files, **b})[0]
        winner = "tie" if abs(score_a - score_b) <= self.margin else ("b" if score_b > score_a else "a")
        reason = f"oracle: {score_a:.3f} vs {score_b:.3f}"
        return Verdict(winner, "oracle", False, [winner, winner], [reason, reason])
