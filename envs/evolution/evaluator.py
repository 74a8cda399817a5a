"""Running one candidate evaluation in a sandbox and turning what happened into an EvalResult.

A candidate that loops, forks, allocates without bound, floods its output, reaches for the
network or the host's files, fails to import or does not parse is **scored as failed with a
reason**; the run goes on. Only the sandbox itself failing (a dead container) raises, as
``SandboxError``, which the runner records as an infra error, never as the candidate's fault.
"""

from __future__ import annotations

import ast
import hashlib
import json
from dataclasses import asdict
from pathlib import Path

from rsigym.cache import atomic_write_bytes, cache_dir, cache_key
from rsigym.sandbox import Sandbox

from .harness import parse_result
from .tasks import EvalResult, EvolutionTask

__all__ = ["SandboxEvaluator", "CACHE_VERSION"]

CACHE_VERSION = 1  # bump when a harness or a scoring rule changes
# Outcomes that depend on the machine's load or the provider's mechanics, never cached.
_UNCACHED = ("timed out", "killed for exceeding", "the candidate's output exceeded", "no result")


class SandboxEvaluator:
    """Evaluates candidates of one task in one sandbox (which it does not close).

    Args:
        task: The task.
        sandbox: An open sandbox; the task's files are written into it on ``prepare``.
        timeout_s: Overrides the task's per-kind timeout when given.
        cache: Keep results on disk (``$RSIGYM_CACHE/evolution``) keyed by a hash of the task,
            the code, the kind and the provider, so reruns and baselines never evaluate the same
            program twice. Timeouts, memory kills, output floods and crashes without a result
            are never cached: they depend on the machine, not only on the program.
    """

    def __init__(self, task: EvolutionTask, sandbox: Sandbox, timeout_s: float | None = None,
                 cache: bool = False) -> None:
        self.task, self.sandbox, self.timeout_override = task, sandbox, timeout_s
        self.cache = cache
        self.prepared = False
        self.cache_hits = 0
        self._setup_key: str | None = None

    def _cache_path(self, code: str, kind: str) -> str:
        if self._setup_key is None:  # what the sandbox runs besides the candidate, hashed once
            files = {name: hashlib.sha256(data.encode() if isinstance(data, str) else data).hexdigest()
                     for name, data in self.task.sandbox_files().items()}
            spec = {k: v for k, v in self.task.spec().items() if k != "timeout_s"}
            self._setup_key = cache_key("evolution-setup", spec, files, self.sandbox.provider,
                                        self.sandbox.info.get("image"))
        key = cache_key("evolution-eval", CACHE_VERSION, self._setup_key, code, kind)
        return str(cache_dir("evolution") / f"{key}.json")

    def prepare(self) -> None:
        self.sandbox.write_files(self.task.sandbox_files())
        self.prepared = True

    def evaluate(self, code: str, kind: str) -> EvalResult:
        if not self.cache:
            return self._evaluate(code, kind)
        path = self._cache_path(code, kind)
        try:
            with open(path) as fh:
                cached = EvalResult(**json.load(fh))
            self.cache_hits += 1
            return cached
        except (OSError, ValueError, TypeError):
            pass  # missing or unreadable: evaluate
        result = self._evaluate(code, kind)
        if not result.reason.startswith(_UNCACHED):
            atomic_write_bytes(Path(path), json.dumps(asdict(result)).encode())
        return result

    def _evaluate(self, code: str, kind: str) -> EvalResult:
        cost = self.task.cost(kind)
        try:
            ast.parse(code)
        except SyntaxError as exc:  # no need to start a sandbox process for this
            return EvalResult(kind, None, f"syntax error: {exc.msg} (line {exc.lineno})", cost)
        if not self.prepared:
            self.prepare()
        timeout = self.timeout_override or self.task.timeout_s(kind)
        run = self.sandbox.exec(self.task.command(kind), stdin=code, timeout=timeout)
        if "sandbox was restarted" in run.stderr:
            # A runaway program (a fork bomb) forced a container restart, which empties the
            # work dir: write the task's files again before the next evaluation.
            self.prepared = False
        if run.timed_out:
            return EvalResult(kind, None, f"timed out after {timeout:g} s", cost)
        if run.oom_killed:
            return EvalResult(kind, None, "killed for exceeding the memory limit", cost)
        if run.output_truncated:
            return EvalResult(kind, None, "the candidate's output exceeded the sandbox's output cap", cost)
        payload = parse_result(run.stdout)
        if payload is None:
            tail = " ".join(run.stderr.strip().splitlines()[-2:])[-300:]
            return EvalResult(kind, None, f"no result (exit status {run.exit_code}){': ' + tail if tail else ''}", cost)
        if "error" in payload:
            return EvalResult(kind, None, str(payload["error"])[:500], cost)
        result = self.task.score(kind, payload)
        return result
