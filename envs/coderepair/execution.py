"""Host side of a test run: batches of jobs sent to the sandbox in one exec (see ``sandbox_program``)."""

from __future__ import annotations

import json
from dataclasses import dataclass, field
from typing import Any, Sequence

from rsigym.errors import InfraError
from rsigym.sandbox import Sandbox, SandboxLimits

from .sandbox_program import RUNNER, parse_batch

__all__ = ["CODEREPAIR_LIMITS", "Job", "JobResult", "run_jobs"]

# Candidates are small pure functions; the runner forks one child per job.
CODEREPAIR_LIMITS = SandboxLimits(memory_mb=512, pids=64, file_size_mb=8, output_bytes=8_000_000)


@dataclass(frozen=True)
class Job:
    """One program and its tests, run in its own forked child. See ``sandbox_program``."""

    key: str
    source: str
    entry: str
    tests: Sequence[str]
    prelude: str = ""
    mode: str = "check"
    timeout_s: float = 3.0

    def to_json(self) -> dict[str, Any]:
        return {"key": self.key, "source": self.source, "entry": self.entry, "tests": list(self.tests),
                "prelude": self.prelude, "mode": self.mode, "timeout_s": float(self.timeout_s)}


@dataclass(frozen=True)
class JobResult:
    """Per-test outcomes of one job: ``status`` pass | fail | error | timeout (check mode), ok (eval)."""

    key: str
    tests: list[dict[str, Any]] = field(default_factory=list)
    load_error: str | None = None

    @property
    def passed(self) -> list[bool]:
        return [t.get("status") == "pass" for t in self.tests]

    @property
    def all_pass(self) -> bool:
        return bool(self.tests) and all(self.passed)

    def failure_type(self) -> str | None:
        """None when every test passed; else ``load``, ``timeout``, ``error:<Type>`` or ``wrong``."""
        if self.load_error is not None:
            return "load"
        for test in self.tests:
            status = test.get("status")
            if status == "timeout":
                return "timeout"
            if status == "error":
                return f"error:{test.get('type')}"
        return None if self.all_pass else "wrong"


def run_jobs(sandbox: Sandbox, jobs: Sequence[Job]) -> dict[str, JobResult]:
    """Run ``jobs`` in one sandbox exec; a sandbox that returns no result raises ``InfraError``."""
    if not jobs:
        return {}
    if len({job.key for job in jobs}) != len(jobs):
        raise ValueError("job keys must be unique within a batch")
    budget_s = sum(job.timeout_s * (len(job.tests) + 1) + 1.5 for job in jobs) + 10.0
    payload = json.dumps({"jobs": [job.to_json() for job in jobs]}).encode("utf-8", "surrogatepass")
    run = sandbox.exec(["python3", "-I", "-c", RUNNER], stdin=payload, timeout=budget_s)
    results = parse_batch(run.stdout)
    if results is None:
        tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
        raise InfraError(f"coderepair test runner returned no result (exit {run.exit_code}, timed out "
                         f"{run.timed_out}, {len(jobs)} jobs): {tail}")
    out = {}
    for job in jobs:
        raw = results.get(job.key) or {}
        load = raw.get("load") or {}
        load_error = None if load.get("load") == "ok" else f"{load.get('load')}: {load.get('detail', '')}".strip()
        out[job.key] = JobResult(job.key, list(raw.get("tests") or []), load_error)
    return out
