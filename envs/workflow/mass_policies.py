"""Offline stand-ins for MASS's judge and optimiser, served through LiteLLM like any model.

* ``rsigym/workflow_judge`` reads two workspaces as a reviewer would: is there a ``results.json``
  that follows the schema the task states, does the analysis *code* (string literals and
  comments removed, so no label it prints counts) validate out of sample, correct for multiple
  tests, model the joint distribution or fit by least squares, and does ``report.md`` have the
  asked-for sections. Equal evidence is a "tie", never "first". It cannot tell a right answer
  from a wrong one that the same code could have printed: the calibration counts that.
* ``rsigym/workflow_judge_sound`` reads what the code *does* (``soundness``: the syntax tree with
  every name ignored, followed through assignments) against what the task's question needs, and
  states what is missing in its reason ("second: no out-of-sample evaluation"). Checked on a
  held-apart program set (``benchmarks/workflow_soundness_calibration.py``).
* ``rsigym/workflow_judge_exec`` judges what the code *does when run* (``exec_soundness``): each
  workspace's ``analysis.py`` runs in a sandbox (``auto``: docker when there, else local) on
  instances the judge draws itself (null data, planted effects, shifted scales), and the workspace
  passing more of them wins. Checked on a program set written apart from it
  (``benchmarks/workflow_exec_judge_calibration.py``).
* ``rsigym/workflow_judge_coin`` answers "first" or "second" at random: the control.
* ``rsigym/workflow_optimizer`` proposes one random edit from the generic operator set
  (``operators``), never one already tried on the spec: judge-filtered random search.
* ``rsigym/workflow_optimizer_reasons`` reads the judge's stated reasons in its feedback: which
  part was found wanting (the method, the results, the report) and the words of the complaint.
  It draws candidate edits from the same generic set and proposes the one aimed at the role that
  produces the wanting part (the role that runs code for the method, one that writes files for
  the report) whose text shares the most word stems with the complaint; ties and a silent judge
  fall back to a random draw. It has no list of winning edits: it takes the judge at its word.
"""

from __future__ import annotations

import io
import json
import re
import tokenize
from typing import Any, Callable

import jsonschema

from rsigym.agents.offline import OfflineReply, OfflineRequest, register_offline_policy
from rsigym.sandbox import open_sandbox

from .exec_soundness import ExecEvidence, execution_evidence
from .mutations import mutation_key
from .operators import edit_pool, random_edit
from .soundness import DESCRIBED, REQUIRED, missing_evidence

__all__ = ["judge_quality", "code_evidence", "strip_literals"]

_BLOCK = re.compile(r"=== Workspace (first|second) ===\n(.*?)(?=\n\n=== Workspace|\n\nWhich workspace)", re.DOTALL)
_FILE = re.compile(r"^--- (\S+) ---\n(.*?)(?=^--- \S+ ---\n|\Z)", re.DOTALL | re.MULTILINE)
_SCHEMA = re.compile(r"results\.json must follow this JSON Schema: (\{.*\})")
_HEADING = re.compile(r"^#{1,3}\s*(\w+)", re.MULTILINE)
# What sound analysis code does, read from its tokens: evaluates on data it was not fitted to,
# corrects a threshold for the number of tests, inverts a covariance, or minimises squared error
# over candidate fits.
_EVIDENCE = {  # matched against the code with blanks removed
    "out-of-sample evaluation": re.compile(r"\bfolds?\b|\btest\b.*\btrain\b|\btrain\b.*\btest\b|permutation"),
    "multiple-testing correction": re.compile(r"0\.05/len\("),
    "covariance model": re.compile(r"linalg\.inv\(np\.cov\("),
    "least-squares search": re.compile(r"\*\*2\)\.sum\(\)(?:.|\n)*\bmin\(range\("),
}


def strip_literals(code: str) -> str:
    """``code`` without string literals and comments (what it does, not what it says); "" if unparsable."""
    try:
        tokens = [t for t in tokenize.generate_tokens(io.StringIO(code).readline)
                  if t.type not in (tokenize.STRING, tokenize.COMMENT)]
        return tokenize.untokenize((t.type, t.string) for t in tokens)
    except (tokenize.TokenError, IndentationError, SyntaxError):
        return ""


def code_evidence(code: str) -> list[str]:
    """The kinds of sound practice found in ``code``'s tokens."""
    body = re.sub(r"[ \t]+", "", strip_literals(code))
    return [name for name, pattern in _EVIDENCE.items() if pattern.search(body)]


def _files(block: str) -> dict[str, str]:
    return {name: text.rstrip("\n") for name, text in _FILE.findall(block + "\n")}


def judge_quality(block: str, schema: dict[str, Any] | None) -> tuple[float, str]:
    """(quality, why) of one rendered workspace; no key, no grader code."""
    files = _files(block)
    valid = False
    results = files.get("results.json", "(missing)")
    if results != "(missing)":
        try:
            value = json.loads(results)
            if schema is not None:
                jsonschema.Draft202012Validator(schema).validate(value)
            valid = True
        except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
            valid = False
    evidence = code_evidence(files.get("analysis.py", "")) if valid else []
    sections = set(_HEADING.findall(files.get("report.md", "")))
    report = sum(0.5 for s in ("Method", "Result", "Validation") if s in sections)
    quality = 3.0 * valid + 2.0 * bool(evidence) + report
    why = f"results {'valid' if valid else 'missing or invalid'}; code: {', '.join(evidence) or 'no validation'}; " \
          f"report sections {report / 0.5:.0f}/3"
    return quality, why


@register_offline_policy("workflow_judge")
def workflow_judge_policy(request: OfflineRequest) -> OfflineReply:
    """Scripted pairwise judge: a valid answer, validated code, a complete report; equal evidence is a tie."""
    text = str(request.messages[-1].get("content") or "")
    blocks = dict(_BLOCK.findall(text))
    match = _SCHEMA.search(text)
    try:
        schema = json.loads(match.group(1)) if match else None
    except ValueError:
        schema = None
    first, why_first = judge_quality(blocks.get("first", ""), schema)
    second, why_second = judge_quality(blocks.get("second", ""), schema)
    if abs(first - second) < 1e-9:
        return OfflineReply(action={"winner": "tie", "reason": f"no difference found: {why_first}"})
    winner = "first" if first > second else "second"
    return OfflineReply(action={"winner": winner, "reason": f"first: {why_first} | second: {why_second}"[:500]})


_FAMILY_OF = re.compile(r"\(family (\w+)\)")


def _valid_results(files: dict[str, str], schema: dict[str, Any] | None) -> bool:
    """Whether the workspace's results.json parses and fits the task's schema."""
    if files.get("results.json", "(missing)") == "(missing)":
        return False
    try:
        value = json.loads(files["results.json"])
        if schema is not None:
            jsonschema.Draft202012Validator(schema).validate(value)
    except (ValueError, jsonschema.ValidationError, jsonschema.SchemaError):
        return False
    return True


def sound_quality(block: str, schema: dict[str, Any] | None, family: str) -> tuple[float, str]:
    """(quality, why) of one rendered workspace by what its code does for the family's question."""
    files = _files(block)
    valid = _valid_results(files, schema)
    code = files.get("analysis.py", "")
    missing = missing_evidence(family, code) if code != "(missing)" else list(REQUIRED.get(family, ("code",)))
    sound = valid and not missing
    sections = set(_HEADING.findall(files.get("report.md", "")))
    report = sum(0.5 for s in ("Method", "Result", "Validation") if s in sections)
    why = (f"results {'valid' if valid else 'missing or invalid'}; method "
           + ("sound" if sound else "missing " + ", ".join(f"{m} ({DESCRIBED[m]})" for m in missing)
              if missing else "unread: no valid results")
           + f"; report sections {report / 0.5:.0f}/3")
    return 3.0 * valid + 2.0 * sound + report, why


@register_offline_policy("workflow_judge_sound")
def workflow_judge_sound_policy(request: OfflineRequest) -> OfflineReply:
    """Pairwise judge on what the code does (syntax tree, names ignored) for the task's question."""
    return _pairwise(request, sound_quality)


def _pairwise(request: OfflineRequest,
              quality: Callable[[str, dict[str, Any] | None, str], tuple[float, str]]) -> OfflineReply:
    """The winner of the two rendered workspaces by ``quality(block, results schema, family)``."""
    text = str(request.messages[-1].get("content") or "")
    blocks = dict(_BLOCK.findall(text))
    match, family = _SCHEMA.search(text), _FAMILY_OF.search(text)
    try:
        schema = json.loads(match.group(1)) if match else None
    except ValueError:
        schema = None
    name = family.group(1) if family else ""
    first, why_first = quality(blocks.get("first", ""), schema, name)
    second, why_second = quality(blocks.get("second", ""), schema, name)
    if abs(first - second) < 1e-9:
        return OfflineReply(action={"winner": "tie", "reason": f"no difference found: {why_first}"})
    winner = "first" if first > second else "second"
    return OfflineReply(action={"winner": winner, "reason": f"first: {why_first} | second: {why_second}"[:500]})


_EXEC_MEMO: dict[tuple[str, str], ExecEvidence] = {}


def _exec_quality(block: str, schema: dict[str, Any] | None, family: str) -> tuple[float, str]:
    """(quality, why) of one rendered workspace by running its analysis on the judge's own instances."""
    files = _files(block)
    valid = _valid_results(files, schema)
    code = files.get("analysis.py", "(missing)")
    share, why = 0.0, "no analysis.py"
    if code != "(missing)" and family:
        key = (family, code)
        if key not in _EXEC_MEMO:  # execution is memoised by program: a search judges the same code often
            with open_sandbox("auto") as sandbox:
                _EXEC_MEMO[key] = execution_evidence(family, code, sandbox)
        evidence = _EXEC_MEMO[key]
        share = evidence.share
        why = f"passed {evidence.passed}/{evidence.total} fresh instances" + (
            f" (first failure: {evidence.failures[0][:120]})" if evidence.failures else "")
    sections = set(_HEADING.findall(files.get("report.md", "")))
    report = sum(0.5 for s in ("Method", "Result", "Validation") if s in sections)
    return 3.0 * valid + 2.0 * share + report, f"results {'valid' if valid else 'missing or invalid'}; method {why}"


@register_offline_policy("workflow_judge_exec")
def workflow_judge_exec_policy(request: OfflineRequest) -> OfflineReply:
    """Pairwise judge on what each workspace's code does when run on instances the judge draws."""
    return _pairwise(request, _exec_quality)


@register_offline_policy("workflow_judge_coin")
def workflow_judge_coin_policy(request: OfflineRequest) -> OfflineReply:
    """A broken judge: first or second at random (the control the calibration must catch)."""
    return OfflineReply(action={"winner": str(request.rng.choice(["first", "second"])), "reason": "coin"})


_STOP = {"with", "that", "this", "from", "missing", "results", "first", "second", "found", "found:", "sections",
         "report", "valid", "invalid", "judge", "difference"}


def _stems(text: str) -> set[str]:
    """Crude stems (first six letters of each word of four or more): 'validation' meets 'validated'."""
    return {w[:6] for w in re.findall(r"[a-z]+", text.lower()) if len(w) >= 4 and w not in _STOP}


def complaint(feedback: str) -> tuple[set[str], set[str]]:
    """(parts found wanting: method / results / report, stems of what was said to be missing)."""
    parts: set[str] = set()
    words: set[str] = set()
    for line in feedback.splitlines():
        if not line.startswith("- judge"):
            continue
        for side in line.split("|"):
            side = side.lower()
            if "method missing" in side or "no validation" in side:
                parts.add("method")
                words |= _stems(side.split("method missing", 1)[-1].split(";")[0] if "method missing" in side
                                else "no validation method")
            if "missing or invalid" in side:
                parts.add("results")
            match = re.search(r"report sections (\d)/3", side)
            if match and int(match.group(1)) < 3:
                parts.add("report")
    return parts, words


def _aims_at(edit: dict[str, Any], spec: dict[str, Any], parts: set[str]) -> bool:
    role = spec["roles"].get(edit.get("role", ""), {})
    tools = set(edit.get("tools", role.get("tools", [])))
    if edit["op"] not in ("edit_instruction", "add_role"):
        return False
    return ("method" in parts and "run_python" in tools) or ("report" in parts and "write_file" in tools) \
        or ("results" in parts and edit["op"] == "add_role")


def reasoned_edit(spec: dict[str, Any], feedback: str, rng: Any, draws: int = 40) -> dict[str, Any] | None:
    """The drawn edit best aimed at the judge's complaint (see the module docstring); None if none is valid."""
    tried = set(re.findall(r"edit ([0-9a-f]{16})", feedback))
    parts, words = complaint(feedback)
    pool = edit_pool(spec, rng, tried, draws)
    if not pool:
        return None
    if not parts:
        return pool[0]

    def fit(edit: dict[str, Any]) -> tuple[int, int]:
        return int(_aims_at(edit, spec, parts)), len(words & _stems(str(edit.get("instruction", ""))))

    best = max(fit(e) for e in pool)
    return [e for e in pool if fit(e) == best][0]


@register_offline_policy("workflow_optimizer_reasons")
def workflow_optimizer_reasons_policy(request: OfflineRequest) -> OfflineReply:
    """Workflow optimiser that aims its edit at what the judge said was missing."""
    text = str(request.messages[-1].get("content") or "")
    spec = json.loads(text.split("Current workflow:\n", 1)[-1].split("\n\nFeedback:\n", 1)[0])
    edit = reasoned_edit(spec, text.split("\n\nFeedback:\n", 1)[-1], request.rng)
    return OfflineReply(action=edit if edit is not None else {"op": "reorder_calls", "order": spec["call_order"]})


@register_offline_policy("workflow_optimizer")
def workflow_optimizer_policy(request: OfflineRequest) -> OfflineReply:
    """Scripted workflow optimiser: one random untried edit from the generic operator set."""
    text = str(request.messages[-1].get("content") or "")
    spec_text = text.split("Current workflow:\n", 1)[-1].split("\n\nFeedback:\n", 1)[0]
    feedback = text.split("\n\nFeedback:\n", 1)[-1]
    spec = json.loads(spec_text)
    tried = set(re.findall(r"edit ([0-9a-f]{16})", feedback))
    found = random_edit(spec, request.rng, tried)
    if found is None:
        return OfflineReply(action={"op": "reorder_calls", "order": spec["call_order"]})  # refused as a no-op
    return OfflineReply(action=found[0])
