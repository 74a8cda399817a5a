"""Offline stand-ins for the model in MASS: scripted roles, judge and optimiser, served through LiteLLM.

``rsigym/workflow_scripted`` plays any role from its dialogue alone, with the strengths and
weaknesses that make workflow design matter:

* an analyst (a role with ``run_python``) reads task.md, writes an analysis and runs it. It uses
  a sound method only when its instructions ask for rigour (validated, held-out, robust, ...);
  otherwise the quick naive one. It slips one time in four and writes ``result.json``. It
  writes report.md only when told to.
* a writer (instructions mention a report, no ``run_python``) writes report.md from results.json;
* a reviewer (instructions say review or check) reads results.json and lists problems;
* the orchestrator follows the planned call order within its budget, and sends a reviewer's
  issues back to the analyst (then to the reviewer again) while calls are left.

``rsigym/workflow_scripted_v2`` is the same with fewer slips (a scripted variant; the trained
next generation is ``gen_policy.GenerationPolicy``). ``rsigym/workflow_blind`` finishes at once (a control that scores 0).
The judge (``[workflow:judge]``) and optimiser (``[workflow:optimize]``) live in ``mass_policies``.
"""

from __future__ import annotations

import json
import re
from typing import Any

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy
from rsigym.json_space import sample_instance

from .families import FAMILIES
from .tasks import REPORT_SECTIONS

__all__ = ["RIGOUR_CUES", "scripted_role", "report_markdown"]

RIGOUR_CUES = ("validat", "held-out", "robust", "permutation", "cross-valid", "significance")
_VALIDATED_METHODS = ("held-out", "cross-validation", "least squares", "bonferroni", "mahalanobis", "permutation")
_ROLE = re.compile(r"You are the (\w+) of a research team")
_FAMILY = re.compile(r"\(family (\w+)\)")


def _first(messages: list[dict[str, Any]]) -> str:
    users = [str(m.get("content") or "") for m in messages if m.get("role") == "user"]
    return users[0] if users else ""


def _done(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """This call's earlier actions (JSON objects), oldest first."""
    out = []
    for m in messages:
        if m.get("role") == "assistant":
            try:
                value = json.loads(str(m.get("content") or ""))
            except ValueError:
                continue
            if isinstance(value, dict):
                out.append(value)
    return out


def _line(brief: str, prefix: str) -> str:
    for line in brief.splitlines():
        if line.startswith(prefix):
            return line[len(prefix):]
    return ""


def report_markdown(results: dict[str, Any] | None, sections: tuple[str, ...] = REPORT_SECTIONS) -> str:
    method = str((results or {}).get("method", "unknown"))
    answer = {k: v for k, v in (results or {}).items() if k not in ("method",) and not isinstance(v, dict)}
    body = {"Method": f"We used: {method}.",
            "Result": f"Answer: {json.dumps(answer)}" if results else "No results.json was produced.",
            "Validation": ("Checked on data the method was not fitted to." if any(
                w in method.lower() for w in _VALIDATED_METHODS) else "No separate validation was done.")}
    return "# Report\n\n" + "\n\n".join(f"## {s}\n{body[s]}" for s in sections) + "\n"


def _fill_contract(schema: dict[str, Any], known: dict[str, Any], rng: Any) -> dict[str, Any]:
    """An answer to a contract: the fields it knows, the rest drawn valid from the schema."""
    value = sample_instance(schema, rng)
    value = value if isinstance(value, dict) else {}
    for key, v in known.items():
        if key in schema.get("properties", {}):
            value[key] = v
    return value


def _contract(brief: str) -> dict[str, Any]:
    marker = "the result must satisfy this JSON Schema: "
    text = brief[brief.find(marker) + len(marker):].splitlines()[0] if marker in brief else "{}"
    try:
        return json.loads(text)
    except ValueError:
        return {"type": "object"}


def scripted_role(request: OfflineRequest, slip_p: float = 0.25) -> OfflineReply:
    messages = request.messages
    brief = _first(messages)
    match = _ROLE.search(brief)
    role = match.group(1) if match else "unknown"
    instructions = (_line(brief, "Your instructions: ") + " " + _line(brief, "Instruction from the ")).lower()
    tools = _line(brief, "Tools: ").split(";")[0]
    done = _done(messages)
    last = str(messages[-1].get("content") or "") if messages else ""
    if "[workflow]" in brief:
        return OfflineReply(action=_orchestrate(brief, messages, instructions))
    if "run_python" in tools:
        return OfflineReply(action=_analyse(messages, done, last, instructions, request.rng, slip_p))
    if "review" in instructions or "check" in instructions:
        return OfflineReply(action=_review(brief, done, last, instructions, request.rng))
    if "report" in instructions and "write_file" in tools:
        return OfflineReply(action=_write_report(brief, done, last, request.rng))
    return OfflineReply(action={"op": "return", "result": _fill_contract(_contract(brief), {"status": "done"}, request.rng)})


def _orchestrate(brief: str, messages: list[dict[str, Any]], instructions: str) -> dict[str, Any]:
    order = [r.strip() for r in _line(brief, "Planned call order: ").split(",") if r.strip() and r.strip() != "(none)"]
    budget = int(_line(brief, "Call budget: ").split(" ")[0] or 0)
    task = _line(brief, "# Task ").split(" ")[0]
    delegated = [a["role"] for a in _done(messages) if a.get("op") == "delegate"]
    returns = [str(m.get("content") or "") for m in messages if m.get("role") == "user"
               and " returned: " in str(m.get("content") or "")]
    base = f"Work on task {task}; task.md in the workspace states it."
    if len(delegated) >= budget:
        return {"op": "finish", "summary": f"Budget spent after {len(delegated)} calls."}
    pending = order[len(delegated):] if delegated == order[:len(delegated)] else []
    if pending:
        return {"op": "delegate", "role": pending[0], "instruction": base}
    retry_allowed = True  # any orchestrator sends a reviewer's issues back while calls are left
    last_review = next((r for r in reversed(returns) if '"approved": false' in r), None)
    if retry_allowed and last_review and len(delegated) + 2 <= budget and delegated.count(order[0]) < 2:
        issues = last_review.split("returned: ", 1)[1].split("\n")[0]
        return {"op": "delegate", "role": order[0], "instruction": f"{base} Fix these issues: {issues}"}
    if retry_allowed and delegated and delegated[-1] == order[0] and delegated.count(order[0]) == 2:
        reviewer = next((r for r in order if r != order[0] and r in delegated), None)
        if reviewer and len(delegated) < budget:
            return {"op": "delegate", "role": reviewer, "instruction": base + " Review the revised results."}
    return {"op": "finish", "summary": f"Delivered after {len(delegated)} calls."}


def _analyse(messages: list[dict[str, Any]], done: list[dict[str, Any]], last: str, instructions: str, rng: Any,
             slip_p: float) -> dict[str, Any]:
    ops = [a.get("op") for a in done]
    if "read_file" not in ops:
        return {"op": "read_file", "path": "task.md"}
    seen = (_FAMILY.search(str(m.get("content") or "")) for m in messages if m.get("role") == "user")
    family_name = next((m.group(1) for m in seen if m and m.group(1) in FAMILIES), None)
    if "write_file" not in ops:
        if family_name is None:  # task.md did not say: read it again (the turn limit bounds this)
            return {"op": "read_file", "path": "task.md"}
        robust = any(cue in instructions for cue in RIGOUR_CUES) or "method" in instructions and "fix" in instructions
        code = FAMILIES[family_name].code["robust" if robust else "naive"]
        if "fix these issues" not in instructions and rng.random() < slip_p:
            code = code.replace("'results.json'", "'result.json'")  # the slip a reviewer can catch
        return {"op": "write_file", "path": "analysis.py", "content": f"# family {family_name}\n" + code}
    if "run_python" not in ops:
        return {"op": "run_python", "path": "analysis.py"}
    if "report.md" in instructions and ops.count("write_file") < 2:
        sections = REPORT_SECTIONS if "section" in instructions else ("Result",)
        return {"op": "write_file", "path": "report.md", "content": report_markdown(None, sections)
                .replace("No results.json was produced.", "See results.json.")}
    files = [f for f in ("results.json", "result.json", "report.md") if f in last]
    return {"op": "return", "result": _fill_contract(_contract(_first(messages)), {"status": "done", "files": files,
                                                                                   "sections": []}, rng)}


def _review(brief: str, done: list[dict[str, Any]], last: str, instructions: str, rng: Any) -> dict[str, Any]:
    if not done:
        return {"op": "read_file", "path": "results.json"}
    issues = []
    if last.startswith("Error: no file results.json"):
        issues.append("results.json is missing: write it under exactly that name")
    else:
        method = ""
        try:
            method = str(json.loads(last).get("method", ""))
        except (ValueError, AttributeError):
            issues.append("results.json is not valid JSON")
        if method and not any(w in method.lower() for w in _VALIDATED_METHODS):
            issues.append(f"the method ({method}) is not validated: use a robust, validated method "
                          "(held-out data, cross-validation, permutation or significance tests)")
    return {"op": "return", "result": _fill_contract(_contract(brief), {"approved": not issues, "issues": issues,
                                                                         "status": "done"}, rng)}


def _write_report(brief: str, done: list[dict[str, Any]], last: str, rng: Any) -> dict[str, Any]:
    if not done:
        return {"op": "read_file", "path": "results.json"}
    if len(done) == 1:
        try:
            results = json.loads(last)
        except ValueError:
            results = None
        return {"op": "write_file", "path": "report.md",
                "content": report_markdown(results if isinstance(results, dict) else None)}
    return {"op": "return", "result": _fill_contract(_contract(brief), {"status": "done",
                                                                         "sections": list(REPORT_SECTIONS)}, rng)}


@register_offline_policy("workflow_scripted")
def workflow_scripted_policy(request: OfflineRequest) -> OfflineReply:
    """Scripted research-team roles: sound methods only when instructed, a slip one time in four."""
    return scripted_role(request, slip_p=0.25)


@register_offline_policy("workflow_scripted_v2")
def workflow_scripted_v2_policy(request: OfflineRequest) -> OfflineReply:
    """The scripted roles' next generation: the same habits, slips one time in twenty."""
    return scripted_role(request, slip_p=0.05)


@register_offline_policy("workflow_blind")
def workflow_blind_policy(request: OfflineRequest) -> OfflineReply:
    """A control that ignores the task: the entry role finishes at once, any other role returns {}."""
    brief = _first(request.messages)
    if "[workflow]" in brief:
        return OfflineReply(action={"op": "finish", "summary": "done"})
    return OfflineReply(action={"op": "return", "result": {}})
