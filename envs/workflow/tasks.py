"""Workflow tasks: ids, their generated workspaces and hidden keys, and the deterministic grader.

A task id is ``<family>-NNN``; its data come from a generator seeded with the crc32 of the id,
so a grader rebuilds the key from the id alone (the key is never in the workspace or the
record; the record holds its sha256). ``grade_workspace`` scores a delivered workspace:
0.8 x the answer's score against the key (0 when ``results.json`` is missing or breaks the
family's schema), 0.1 for a valid ``results.json``, 0.1 for a ``report.md`` with the sections
Method, Result and Validation.
"""

from __future__ import annotations

import hashlib
import json
import re
import zlib
from dataclasses import dataclass
from typing import Any

import jsonschema
import numpy as np

from .families import FAMILIES, Family

__all__ = ["WorkflowTask", "make_task", "task_ids", "grade_workspace", "check_workspace",
           "REPORT_SECTIONS", "SPLITS"]

SPLITS = {"train": range(0, 50), "test": range(100, 150)}
REPORT_SECTIONS = ("Method", "Result", "Validation")
_HEADING = re.compile(r"^#{1,3}\s*(\w+)", re.MULTILINE)


@dataclass(frozen=True)
class WorkflowTask:
    task_id: str
    family: Family
    files: dict[str, str]        # the starting workspace: data and task.md
    key: dict[str, Any]          # hidden answer key (env and graders only)

    @property
    def key_sha256(self) -> str:
        return hashlib.sha256(json.dumps(self.key, sort_keys=True).encode()).hexdigest()

    @property
    def brief(self) -> str:
        return self.files["task.md"]


def task_ids(split: str | None = None, families: list[str] | None = None) -> list[str]:
    """``<family>-NNN`` for every family (or those named) and the split's indices."""
    if split not in (None, "all", *SPLITS):
        raise ValueError(f"unknown workflow split {split!r}; known: all, {', '.join(SPLITS)}")
    indices = [i for name, r in SPLITS.items() if split in (None, "all", name) for i in r]
    names = families or list(FAMILIES)
    return [f"{name}-{i:03d}" for i in indices for name in names]


def make_task(task_id: str) -> WorkflowTask:
    """The task of ``task_id``; ValueError for an unknown family or a malformed id."""
    name, _, index = str(task_id).rpartition("-")
    if name not in FAMILIES or not index.isdigit():
        raise ValueError(f"unknown workflow task {task_id!r}; ids are <family>-NNN with family in "
                         f"{', '.join(FAMILIES)}")
    family = FAMILIES[name]
    files, key = family.generate(np.random.default_rng(zlib.crc32(task_id.encode())))
    schema = json.dumps(family.result_schema, sort_keys=True)
    brief = (f"# Task {task_id} (family {name})\n\n{family.question}\n\n"
             f"results.json must follow this JSON Schema: {schema}\n"
             f"report.md should have the sections {', '.join(REPORT_SECTIONS)}.\n")
    return WorkflowTask(task_id, family, {**files, "task.md": brief}, key)


def check_workspace(task: WorkflowTask, files: dict[str, str]) -> dict[str, Any]:
    """The deterministic checks that need no key: parsed results, schema errors, report sections."""
    results, error = None, None
    text = files.get("results.json")
    if text is None:
        error = "results.json missing"
    else:
        try:
            results = json.loads(text)
            jsonschema.Draft202012Validator(task.family.result_schema).validate(results)
        except (ValueError, jsonschema.ValidationError) as exc:
            error = f"results.json invalid: {str(exc).splitlines()[0][:160]}"
            results = None
    headings = set(_HEADING.findall(files.get("report.md", "")))
    missing = [s for s in REPORT_SECTIONS if s not in headings]
    return {"results": results, "results_error": error, "report_present": "report.md" in files,
            "report_missing_sections": missing}


def grade_workspace(task: WorkflowTask, files: dict[str, str]) -> tuple[float, dict[str, Any]]:
    """The deterministic score of a delivered workspace against the hidden key, with details."""
    checks = check_workspace(task, files)
    answer = 0.0
    if checks["results"] is not None:
        answer = float(task.family.score(checks["results"], task.key))
    report_ok = checks["report_present"] and not checks["report_missing_sections"]
    score = 0.8 * answer + 0.1 * (checks["results"] is not None) + 0.1 * report_ok
    details = {"answer_score": answer, "results_valid": checks["results"] is not None,
               "results_error": checks["results_error"], "report_ok": report_ok,
               "method": (checks["results"] or {}).get("method")}
    return round(score, 6), details
