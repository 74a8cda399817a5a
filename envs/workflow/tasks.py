"""Workflow tasks: ids, their generated workspaces and hidden keys, and the deterministic grader.

A task id is ``<family>-NNN``; its data and key come from a generator seeded with the sha256 of
a salt and the id. The salt is a secret of the run (128 bits or more, drawn by the env or passed
to it): the sandbox never sees it, so a program that knows the public id cannot rebuild the key
(a search over salts is a search over 2^128). The record's final state keeps the salt, so a
grader rebuilds the key from the record; the key itself is never in the workspace or the record
(the record holds its sha256 as ``answer_sha256``, a name no redaction rule for secrets
matches). ``grade_workspace`` scores a delivered workspace:
0.8 x the answer's score against the key (0 when ``results.json`` is missing or breaks the
family's schema), 0.1 for a valid ``results.json``, 0.1 for a ``report.md`` with the sections
Method, Result and Validation.
"""

from __future__ import annotations

import copy
import hashlib
import json
import re
import secrets
from dataclasses import dataclass
from functools import lru_cache
from typing import Any

import jsonschema
import numpy as np

from .families import FAMILIES, Family

__all__ = ["WorkflowTask", "make_task", "task_ids", "task_brief", "new_salt", "grade_workspace",
           "check_workspace", "REPORT_SECTIONS", "SPLITS", "SALT_PATTERN"]

SPLITS = {"train": range(0, 50), "test": range(100, 150)}
REPORT_SECTIONS = ("Method", "Result", "Validation")
_HEADING = re.compile(r"^#{1,3}\s*(\w+)", re.MULTILINE)
SALT_PATTERN = re.compile(r"^[0-9a-f]{32,128}$")  # at least 128 bits, as lowercase hex


@dataclass(frozen=True)
class WorkflowTask:
    task_id: str
    family: Family
    files: dict[str, str]        # the starting workspace: data and task.md
    key: dict[str, Any]          # hidden answer key (env and graders only)
    salt: str                    # the run's secret the data and key were drawn with (never in the sandbox)

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


def new_salt() -> str:
    """A fresh secret salt (128 bits from the OS's CSPRNG, hex)."""
    return secrets.token_hex(16)


def _family(task_id: str) -> tuple[str, Family]:
    name, _, index = str(task_id).rpartition("-")
    if name not in FAMILIES or not index.isdigit():
        raise ValueError(f"unknown workflow task {task_id!r}; ids are <family>-NNN with family in "
                         f"{', '.join(FAMILIES)}")
    return name, FAMILIES[name]


def task_brief(task_id: str) -> str:
    """``task.md`` of ``task_id``: the question and the result schema (the same under every salt)."""
    name, family = _family(task_id)
    schema = json.dumps(family.result_schema, sort_keys=True)
    return (f"# Task {task_id} (family {name})\n\n{family.question}\n\n"
            f"results.json must follow this JSON Schema: {schema}\n"
            f"report.md should have the sections {', '.join(REPORT_SECTIONS)}.\n")


def make_task(task_id: str, salt: str) -> WorkflowTask:
    """The task of ``task_id`` under the secret ``salt``; ValueError for an unknown id or a weak salt."""
    _, family = _family(task_id)
    if not isinstance(salt, str) or not SALT_PATTERN.match(salt):
        raise ValueError(f"a workflow task salt is 32 to 128 lowercase hex digits (128 bits or more), "
                         f"got {str(salt)[:20]!r}")
    files, key = _generate(task_id, salt)
    return WorkflowTask(task_id, family, {**files, "task.md": task_brief(task_id)}, copy.deepcopy(key), salt)


@lru_cache(maxsize=256)
def _generate(task_id: str, salt: str) -> tuple[dict[str, str], dict[str, Any]]:
    """The task's data and key (cached: a search runs the same instance hundreds of times; callers copy)."""
    _, family = _family(task_id)
    digest = hashlib.sha256(f"{salt}:{task_id}".encode()).digest()
    return family.generate(np.random.default_rng(int.from_bytes(digest, "big")))


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
