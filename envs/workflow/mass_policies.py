"""Offline stand-ins for MASS's judge and optimiser, served through LiteLLM like any model.

* ``rsigym/workflow_judge`` reads two workspaces and prefers a validated method, then a complete
  report; when it sees no difference it says "first" (a position bias that asking in both orders
  exposes as an inconsistent verdict).
* ``rsigym/workflow_judge_coin`` answers at random: the broken judge of the agreement control.
* ``rsigym/workflow_optimizer`` revises a spec from the feedback: the edit that addresses the
  most frequent problem first, but one time in four an exploratory edit that may hurt (drop a
  role, reverse the call order, a sloppier instruction); it never repeats a refused edit.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy

from .mutations import mutation_key
from .spec import FINDINGS_CONTRACT, REPORT_CONTRACT, REVIEW_CONTRACT

__all__ = ["candidate_edits", "judge_quality"]

_VALIDATED = ("held-out", "cross-validation", "least squares", "bonferroni", "mahalanobis", "permutation")
_BLOCK = re.compile(r"=== Workspace (first|second) ===\n(.*?)(?==== Workspace|\n\nWhich workspace)", re.DOTALL)

ANALYST_RIGOROUS = ("Analyse the data with a robust, validated method (held-out data, cross-validation, "
                    "permutation or significance tests, not a quick threshold) and answer the question in "
                    "results.json.")
WRITER = "Write report.md with the sections Method, Result and Validation from results.json."
REVIEWER = ("Check results.json against task.md: it exists under that name, follows the schema, and its "
            "method is validated. List every issue.")


def judge_quality(workspace: str) -> float:
    """What the scripted judge values, read from the workspace text alone (no key)."""
    results = workspace.split("--- report.md ---")[0]
    report = workspace.split("--- report.md ---")[-1]
    method = re.search(r'"method":\s*"([^"]*)"', results)
    quality = 2.0 if method and any(w in method.group(1).lower() for w in _VALIDATED) else 0.0
    quality += sum(0.5 for s in ("## Method", "## Result", "## Validation") if s in report)
    return quality


@register_offline_policy("workflow_judge")
def workflow_judge_policy(request: OfflineRequest) -> OfflineReply:
    """Scripted pairwise judge: validated method first, then report completeness; ties go to "first"."""
    text = str(request.messages[-1].get("content") or "")
    blocks = dict(_BLOCK.findall(text))
    first, second = judge_quality(blocks.get("first", "")), judge_quality(blocks.get("second", ""))
    if abs(first - second) < 1e-9:
        return OfflineReply(action={"winner": "first", "reason": "no clear difference; the first reads well"})
    winner = "first" if first > second else "second"
    return OfflineReply(action={"winner": winner, "reason": f"quality {first:.1f} vs {second:.1f} (method, report)"})


@register_offline_policy("workflow_judge_coin")
def workflow_judge_coin_policy(request: OfflineRequest) -> OfflineReply:
    """A broken judge: first, second or tie at random (the control the agreement analysis must catch)."""
    return OfflineReply(action={"winner": str(request.rng.choice(["first", "second", "tie"])), "reason": "coin"})


def candidate_edits(spec: dict[str, Any], feedback: str) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """(edits addressing the feedback, most pressing first; exploratory edits)."""
    roles = spec["roles"]
    entry = spec["entry_role"]
    worker = next((r for r in spec["call_order"] if "run_python" in roles[r]["tools"]), None)
    lower = feedback.lower()
    needs = {"method": lower.count("not validated"), "report": lower.count("report"),
             "missing": lower.count("results.json missing") + lower.count("results.json invalid")}
    fixes: list[tuple[int, dict[str, Any]]] = []
    if worker and "validated" not in roles[worker]["instruction"]:
        fixes.append((needs["method"], {"op": "edit_instruction", "role": worker, "instruction": ANALYST_RIGOROUS}))
    if "writer" not in roles:
        fixes.append((needs["report"], {"op": "add_role", "role": "writer", "instruction": WRITER,
                                        "tools": ["read_file", "write_file"], "returns": REPORT_CONTRACT}))
    if "reviewer" not in roles and worker:
        position = spec["call_order"].index(worker) + 1
        fixes.append((needs["missing"], {"op": "add_role", "role": "reviewer", "instruction": REVIEWER,
                                         "tools": ["read_file"], "returns": REVIEW_CONTRACT, "position": position}))
    fixes.sort(key=lambda item: -item[0])
    explore: list[dict[str, Any]] = [
        {"op": "reorder_calls", "order": list(reversed(spec["call_order"]))},
        {"op": "change_contract", "role": worker or entry, "returns": FINDINGS_CONTRACT},
    ]
    explore += [{"op": "remove_role", "role": r} for r in roles if r not in (entry, worker)]
    if worker:
        explore.append({"op": "edit_instruction", "role": worker,
                        "instruction": "Answer the question in results.json; keep the code short and quick."})
    return [edit for _, edit in fixes], explore


@register_offline_policy("workflow_optimizer")
def workflow_optimizer_policy(request: OfflineRequest) -> OfflineReply:
    """Scripted workflow optimiser: fixes the most frequent problem, explores one time in four."""
    text = str(request.messages[-1].get("content") or "")
    spec_text = text.split("Current workflow:\n", 1)[-1].split("\n\nFeedback:\n", 1)[0]
    feedback = text.split("\n\nFeedback:\n", 1)[-1]
    spec = json.loads(spec_text)
    tried = set(spec.get("edit_log", [])) | set(re.findall(r"edit ([0-9a-f]{16})", feedback))
    fixes, explore = candidate_edits(spec, feedback)
    fixes = [e for e in fixes if mutation_key(e) not in tried]
    explore = [e for e in explore if mutation_key(e) not in tried]
    pool = explore if (not fixes or request.rng.random() < 0.25) and explore else fixes
    if not pool:
        return OfflineReply(action={"op": "reorder_calls", "order": spec["call_order"]})  # refused as a no-op
    choice = pool[0] if pool is fixes else pool[int(request.rng.integers(len(pool)))]
    return OfflineReply(action=choice)
