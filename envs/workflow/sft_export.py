"""SFT export: dialogues of selected workflows as TRL chat-messages JSONL, workflow text stripped.

Each role call (the orchestrator's and every sub-agent's) becomes its own example
``{"messages": [{"role": "system"|"user"|"assistant", "content": str}, ...]}``, the
conversational format TRL's ``SFTTrainer`` reads. Everything the workflow added to what the
model saw is removed: the orchestrator's ``[workflow] ... [/workflow]`` block, each role's
instruction line and its return contract line (and, given the spec, any other occurrence of a
role instruction or contract). A model trained on these learns to act this way without being
told the workflow (MASS's distillation step). ``workflow_added_texts(spec)`` lists what must
not survive; the test counts examples that carry any of it.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any, Iterable

import jsonschema

from .agents import ROLE_SYSTEM_PROMPT

__all__ = ["SFT_SCHEMA", "sft_examples", "write_sft_jsonl", "validate_sft_jsonl", "strip_workflow_prompt",
           "workflow_added_texts"]

SFT_SCHEMA: dict[str, Any] = {
    "$schema": "https://json-schema.org/draft/2020-12/schema",
    "type": "object", "required": ["messages"], "additionalProperties": False,
    "properties": {"messages": {
        "type": "array", "minItems": 3,
        "prefixItems": [{"properties": {"role": {"const": "system"}}}, {"properties": {"role": {"const": "user"}}}],
        "items": {"type": "object", "required": ["role", "content"], "additionalProperties": False,
                  "properties": {"role": {"enum": ["system", "user", "assistant"]},
                                 "content": {"type": "string", "minLength": 1}}},
        "contains": {"properties": {"role": {"const": "assistant"}}},
    }},
}
_WORKFLOW_BLOCK = re.compile(r"\n?\[workflow\].*?\[/workflow\]\n?", re.DOTALL)
# The lines the env writes from the spec into a role's brief (see WorkflowAECEnv._brief).
_SPEC_LINES = re.compile(r"^(?:Your instructions: .*|Return with \{\"op\": \"return\".*the result must satisfy this "
                         r"JSON Schema: .*)\n?", re.MULTILINE)


def workflow_added_texts(spec: dict[str, Any]) -> list[str]:
    """What the workflow ``spec`` adds to a role's view: its instructions and return contracts."""
    texts = ["[workflow]", "[/workflow]"]
    for role in spec["roles"].values():
        texts += [role["instruction"], json.dumps(role["returns"], sort_keys=True)]
    return [t for t in texts if t]


def strip_workflow_prompt(text: str, spec: dict[str, Any] | None = None) -> str:
    """``text`` without the workflow block, the instruction and contract lines, and (given
    ``spec``) any other copy of a role instruction or contract."""
    text = _SPEC_LINES.sub("", _WORKFLOW_BLOCK.sub("\n", text))
    for added in workflow_added_texts(spec) if spec is not None else []:
        text = text.replace(added, "")
    return text


def sft_examples(dialogues: Iterable[dict[str, Any]], spec: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    """One example per role call that has at least one assistant turn, ending on an assistant turn;
    user turns stripped of what the workflow (``spec``, when given) added."""
    examples = []
    for dialogue in dialogues:
        messages = [{"role": "system", "content": ROLE_SYSTEM_PROMPT}]
        for message in dialogue["messages"]:
            content = (strip_workflow_prompt(str(message["content"]), spec) if message["role"] == "user"
                       else str(message["content"]))
            if content:
                messages.append({"role": message["role"], "content": content})
        while messages and messages[-1]["role"] != "assistant":
            messages.pop()
        if len(messages) >= 3:
            examples.append({"messages": messages})
    return examples


def write_sft_jsonl(path: str | Path, examples: list[dict[str, Any]]) -> int:
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    with path.open("w", encoding="utf-8") as handle:
        for example in examples:
            handle.write(json.dumps(example, ensure_ascii=False) + "\n")
    return len(examples)


def validate_sft_jsonl(path: str | Path) -> int:
    """Number of examples; ValueError naming the first line that breaks ``SFT_SCHEMA`` or keeps a workflow block."""
    validator = jsonschema.Draft202012Validator(SFT_SCHEMA)
    count = 0
    for number, line in enumerate(Path(path).read_text(encoding="utf-8").splitlines(), 1):
        example = json.loads(line)
        errors = list(validator.iter_errors(example))
        if errors:
            raise ValueError(f"{path}:{number}: {errors[0].message[:200]}")
        if any("[workflow]" in m["content"] for m in example["messages"]):
            raise ValueError(f"{path}:{number}: the workflow prompt was not stripped")
        count += 1
    return count
